"""The pytest sessions of an A/B run, in ABBA order.

Round r runs A then B when r is odd, B then A when it is even. Each session is
``python -m pytest`` with this interpreter, in its side's checkout, with the run's pytest
arguments and ab's own: ``--edge-root`` of the one board, ``--edge-report=OUT/A-r.json``
and, in an extra round, ``--edge-only=OUT/only-r.txt``. It gets the board lock's hand-off
token through a pipe of its own (:mod:`pytest_edgeenergy.handoff`: not in its environment,
and nothing it starts gets it), and the report's ``ab`` object in ``EDGEENERGY_AB``. Its
output goes to ``OUT/A-r.log`` through ab, line by line, with secrets hidden (pytest may
echo an argument holding a URL's password).

A session runs in a process group of its own, so a Ctrl-C at the terminal reaches ab only:
ab passes one SIGINT on (SIGTERM when it got SIGTERM) and waits for the session to restore
the board and write its report, then cleans up. Should ab die without that (SIGKILL), the
kernel sends the session SIGTERM (Linux ``PR_SET_PDEATHSIG``), which restores the board and
ends it: it never measures on outside the lock.

Exit statuses: 0, and 1 (failed tests: their rows are judged insufficient), are a session
that ran; anything else, or no report, is bad input for ab (:class:`SessionFailed`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..handoff import give
from ..redact import redact_text
from ..report.load import ReportError, load_report
from ..report.model import AB_ENV, AbSide, build_ab
from ..words import counted
from . import AbError, Terminated
from .checkout import Checkout

STOP_WAIT_S = 120.0
"""After passing on a Ctrl-C: how long a session may take to restore the board and write
its report before it is terminated."""
COPY_WAIT_S = 30.0
"""After a session ended: how long its output may still take to reach its log (a process it
left running may hold the pipe open)."""
TAIL_LINES = 25
"""The last lines of a failed session's output shown."""
_PR_SET_PDEATHSIG = 1
_EXIT_MEANINGS = {
    2: "interrupted",
    3: "internal error",
    4: "usage error",
    5: "no tests collected",
}


class SessionFailed(AbError):
    """A session did not run to the end (exit status other than 0 and 1, or no report)."""


def side_order(round_no: int) -> tuple[AbSide, AbSide]:
    """``("A", "B")`` in odd rounds, ``("B", "A")`` in even ones."""
    return ("A", "B") if round_no % 2 == 1 else ("B", "A")


@dataclass(frozen=True)
class SessionResult:
    """One finished session."""

    side: AbSide
    round_no: int
    report_path: Path
    report: dict[str, Any]
    status: int
    seconds: float


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    def preexec() -> None:
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent_pid:  # ab died before the prctl above
            os._exit(1)

    return preexec


def _meaning(status: int) -> str:
    if status < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-status).name}"
        return f"killed by signal {-status}"
    return _EXIT_MEANINGS.get(status, "an error")


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        return f"  (its output {log} cannot be read: {e.strerror or e})"
    return "\n".join(f"  | {line}" for line in lines[-TAIL_LINES:]) or "  (no output)"


def _copy_redacted(output: IO[bytes], log: IO[bytes]) -> None:
    """A session's output into its log, line by line as it comes, secrets hidden."""
    with contextlib.suppress(OSError, ValueError):  # the log closed after COPY_WAIT_S
        for line in iter(output.readline, b""):
            text = redact_text(line.decode("utf-8", "surrogateescape"))
            log.write(text.encode("utf-8", "surrogateescape"))
            log.flush()


class Sessions:
    """Runs the sessions of one A/B run (see the module docstring)."""

    def __init__(
        self,
        *,
        sides: Mapping[AbSide, Checkout],
        out: Path,
        board_root: Path,
        token: str,
        pytest_args: Sequence[str],
        environ: Mapping[str, str],
        session_id: str,
        say: Callable[[str], None],
    ) -> None:
        self.sides = dict(sides)
        self.out = out
        self.board_root = board_root
        self.token = token
        self.pytest_args = list(pytest_args)
        self.environ = dict(environ)
        self.session_id = session_id
        self.say = say
        self.count = 0
        """Sessions run so far."""

    def run_round(
        self, round_no: int, only: Sequence[str] | None = None
    ) -> tuple[SessionResult, SessionResult]:
        """Both sessions of round ``round_no`` in its order; returns (A, B). ``only``: the
        node ids this round runs (an extra round)."""
        only_file = None
        if only is not None:
            only_file = self.out / f"only-{round_no}.txt"
            only_file.write_text("".join(f"{test_id}\n" for test_id in only), encoding="utf-8")
        done: dict[AbSide, SessionResult] = {}
        for side in side_order(round_no):
            done[side] = self.run_one(side, round_no, only_file)
        return done["A"], done["B"]

    def command(self, side: AbSide, round_no: int, only_file: Path | None) -> list[str]:
        """The session's command line."""
        argv = [
            sys.executable,
            "-m",
            "pytest",
            f"--edge-root={self.board_root}",
            f"--edge-report={self.report_path(side, round_no)}",
        ]
        if only_file is not None:
            argv.append(f"--edge-only={only_file}")
        return argv + self.pytest_args

    def report_path(self, side: AbSide, round_no: int) -> Path:
        return self.out / f"{side}-{round_no}.json"

    def run_one(self, side: AbSide, round_no: int, only_file: Path | None) -> SessionResult:
        """Run one session; :class:`SessionFailed` when it did not run to the end."""
        checkout = self.sides[side]
        ab = build_ab(self.session_id, side, round_no, checkout.spec)
        env = {**self.environ, AB_ENV: json.dumps(ab)}
        log = self.out / f"{side}-{round_no}.log"
        started = time.monotonic()
        with open(log, "wb") as output:
            token_fd = give(self.token, env)  # to this session alone, not in its environment
            try:
                proc = subprocess.Popen(
                    self.command(side, round_no, only_file),
                    cwd=checkout.path,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    pass_fds=(token_fd,),
                    preexec_fn=_die_with_parent(os.getpid()),
                )
            finally:
                os.close(token_fd)
            assert proc.stdout is not None
            copier = threading.Thread(
                target=_copy_redacted, args=(proc.stdout, output), daemon=True
            )
            copier.start()
            try:
                status = _wait(proc)
            finally:
                copier.join(COPY_WAIT_S)
                if not copier.is_alive():
                    proc.stdout.close()
        seconds = time.monotonic() - started
        self.count += 1
        where = f"round {round_no}, side {side} ({checkout.spec})"
        report_path = self.report_path(side, round_no)
        if status not in (0, 1):
            raise SessionFailed(
                f"{where}: pytest exited with status {status} ({_meaning(status)}); the last "
                f"lines of its output {log}:\n{_tail(log)}"
            )
        if not report_path.exists():
            raise SessionFailed(
                f"{where}: pytest wrote no report: no test measured energy (ab compares the "
                f"reports of energy tests); the last lines of its output {log}:\n{_tail(log)}"
            )
        try:
            report = load_report(report_path)
        except ReportError as e:
            raise SessionFailed(f"{where}: {e}") from None
        tests = report["tests"]
        failed = sum(1 for t in tests if t.get("status") in ("failed", "error"))
        line = f"round {round_no} {side} ({checkout.spec}): {counted(len(tests), 'test')}"
        line += f", {failed} failed" if failed else ""
        self.say(f"{line}, {seconds:.1f} s -> {report_path}")
        return SessionResult(side, round_no, report_path, report, status, seconds)


def _wait(proc: subprocess.Popen[bytes]) -> int:
    """The session's exit status; on Ctrl-C (SIGTERM) pass a SIGINT (SIGTERM) on, let it
    finish its restore and report, then re-raise."""
    try:
        return proc.wait()
    except Terminated:
        _stop(proc, signal.SIGTERM)
        raise
    except KeyboardInterrupt:
        _stop(proc, signal.SIGINT)
        raise


def _stop(proc: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signum)
    try:
        proc.wait(STOP_WAIT_S)
        return
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        pass
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()  # its session restores the board on SIGTERM too
    try:
        proc.wait(30.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
