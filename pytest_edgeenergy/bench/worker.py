"""The harness's side of a workload worker: a process running :mod:`.workload_worker` in
another interpreter or a container, spoken to over its stdin and stdout.

The worker's source travels on its stdin (its length first), so nothing of this package
needs to be installed where it runs. It is started in a session of its own (its own
process group); whatever ends it, a failure or :meth:`WorkerProcess.close`, the whole group
is signalled (SIGTERM, then SIGKILL after :data:`KILL_GRACE_S`) and reaped, and a worker
left at interpreter exit is killed the same way. Its stderr is drained by a thread into
this process's stderr (pytest captures it per test) and the last lines are kept for the
one-line message of a failure.

Errors: :class:`WorkerUnavailable` (the workload cannot run there: torch does not import,
a module or an API is missing; the test is skipped), :class:`WorkerFailed` (the worker
died, hung past ``--edge-workload-timeout``, broke the protocol, or its workload raised;
the test fails). Each message is one line naming the interpreter and the cause.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn

from ..errors import EdgeEnergyError
from .settings import WorkloadPlacement

__all__ = [
    "BOOTSTRAP",
    "KILL_GRACE_S",
    "WORKER_SOURCE",
    "WorkerFailed",
    "WorkerProcess",
    "WorkerUnavailable",
    "worker_environment",
]

WORKER_SOURCE = Path(__file__).with_name("workload_worker.py")
"""The worker: a standard-library script for Python 3.6+, sent to the interpreter."""
BOOTSTRAP = (
    "import sys;n=int(sys.stdin.buffer.readline());"
    "exec(compile(sys.stdin.buffer.read(n),'edgeenergy-workload-worker','exec'))"
)
"""``python -c BOOTSTRAP``: read the worker's source from stdin and run it."""
PROTOCOL = 1
START_TIMEOUT_S = 120.0
"""The least time a starting worker has for its hello (an interpreter or a container
starting on a busy board), whatever ``--edge-workload-timeout`` says."""
BEAT_S = 1.0
"""The longest a worker making calls waits between beats; a quarter of the timeout when
that is less, so calls shorter than three quarters of it never look hung."""
KILL_GRACE_S = 2.0
"""After SIGTERM, how long the group has before SIGKILL (a container's CLI forwards TERM)."""
CLOSE_WAIT_S = 10.0
"""How long a polite ``close`` waits for the worker's answer and its exit."""
STDERR_LINES_KEPT = 200
STDERR_LINES_SHOWN = 3
MESSAGE_CHARS = 600
DROPPED_ENV = ("PYTHONHOME", "PYTHONEXECUTABLE", "__PYVENV_LAUNCHER__")
"""Variables of this interpreter that would mislead another one."""

_LIVE: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()


class WorkerFailed(EdgeEnergyError):
    """The worker died, hung, broke the protocol, or its workload raised: the test fails."""


class WorkerUnavailable(EdgeEnergyError):
    """The workload cannot run in the worker's interpreter: the test is skipped."""


def worker_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The worker's environment: this one without the variables that tie it to this
    interpreter (:data:`DROPPED_ENV`)."""
    return {k: v for k, v in environ.items() if k not in DROPPED_ENV}


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class WorkerProcess:
    """A started worker: :meth:`request` sends one request and returns its reply."""

    def __init__(self, placement: WorkloadPlacement) -> None:
        """Start the worker, send it its source and read its hello (unmeasured: call it
        before any window). Raises :class:`WorkerFailed` when it does not answer."""
        self.placement = placement
        self.where = placement.where()
        self.hello: dict[str, Any] = {}
        self.info: dict[str, Any] | None = None
        """What :meth:`probe` found (torch, modules, CUDA); None before."""
        self.memory_peak_bytes: int | None = None
        """The worker's memory peak in its latest reply that had one (build or calls)."""
        self.closed = False
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES_KEPT)
        self._buffer = b""
        argv = [*placement.argv(), "-u", "-c", BOOTSTRAP]
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=worker_environment(os.environ),
                bufsize=0,
            )
        except OSError as e:
            raise WorkerFailed(f"workload worker {self.where}: cannot start: {e}") from None
        _LIVE.add(self)
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdin = self._proc.stdin
        self._stdout_fd = self._proc.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout_fd, selectors.EVENT_READ)
        self._drain = threading.Thread(
            target=self._drain_stderr, name="edgeenergy-worker-stderr", daemon=True
        )
        self._drain.start()
        source = WORKER_SOURCE.read_bytes()
        self._send_bytes(f"{len(source)}\n".encode("ascii") + source, "start")
        first = self._receive("start", max(placement.timeout_s, START_TIMEOUT_S))
        hello = first.get("hello")
        if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL:
            self._fail(f"answered {_shown(first)} instead of its hello (protocol {PROTOCOL})")
        self.hello = hello
        version = hello.get("python_version")
        if version:
            self.where = f"{placement.where()} (Python {version})"

    # -- what it is ------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The pid of the process started (behind a prefix, the prefix's command)."""
        return self._proc.pid

    def describe(self) -> dict[str, Any]:
        """Where the workload runs, for the report (``extra.workload_process``): the
        worker's interpreter and version, whether a prefix ran it (the prefix itself is in
        the report's settings), and once probed torch, torchvision and CUDA."""
        hello, info = self.hello, self.info or {}
        modules = info.get("modules") or {}
        out: dict[str, Any] = {
            "python": hello.get("python") or self.placement.interpreter,
            "python_given": self.placement.interpreter,
            "python_version": hello.get("python_version"),
            "implementation": hello.get("implementation"),
            "machine": hello.get("machine"),
            "pid": hello.get("pid"),
            "prefixed": bool(self.placement.prefix),
        }
        if self.info is not None:
            out.update(
                torch=info.get("torch"),
                torchvision=(modules.get("torchvision") or {}).get("version"),
                cuda_available=info.get("cuda_available"),
                cuda_device=info.get("cuda_device"),
            )
            if "transformers" in modules:
                out["transformers"] = modules["transformers"].get("version")
        return out

    # -- requests --------------------------------------------------------------------

    def request(self, op: str, what: str | None = None, **fields: Any) -> dict[str, Any]:
        """Send request ``op`` and return its reply. A reply saying the workload cannot
        run there raises :class:`WorkerUnavailable`; any other failure
        :class:`WorkerFailed` (a dead or hung worker is killed first)."""
        what = what or op
        if op == "calls":
            fields.setdefault("beat_s", min(BEAT_S, self.placement.timeout_s / 4))
        if self.closed:
            raise WorkerFailed(f"workload worker {self.where}: already ended ({what})")
        payload = json.dumps({"op": op, **fields}, separators=(",", ":")) + "\n"
        self._send_bytes(payload.encode("utf-8"), what)
        reply = self._receive(what)
        if reply.get("ok") is True:
            peak = reply.get("memory_peak_bytes")
            if isinstance(peak, int):
                self.memory_peak_bytes = peak
            return reply
        error = str(reply.get("error") or f"no answer to {op}")
        if reply.get("unsupported"):
            raise WorkerUnavailable(f"workload worker {self.where}: {error}")
        tb = str(reply.get("traceback") or "").strip().splitlines()
        where = f" ({tb[-3].strip()})" if len(tb) >= 3 else ""
        raise WorkerFailed(f"workload worker {self.where}: {what} raised {error}{where}")

    def probe(self, modules: Sequence[str] = ()) -> dict[str, Any]:
        """Import torch, torchvision and ``modules`` in the worker (unmeasured): their
        versions and CUDA. Raises :class:`WorkerUnavailable` when torch does not import
        there (a module that does not is recorded with its error)."""
        wanted = list(dict.fromkeys(["torchvision", *modules]))
        if self.info is None or not set(wanted) <= set(self.info.get("modules") or {}):
            found = self.request("probe", "importing torch", modules=wanted).get("info")
            if not isinstance(found, dict):
                self._fail(f"answered its probe with {_shown(found)}")
            self.info = found
        info: dict[str, Any] = self.info
        if info.get("torch") is None:
            raise WorkerUnavailable(
                f"workload worker {self.where}: cannot import torch: {info.get('torch_error')}"
                + self._stderr_tail()
            )
        return info

    def build(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """Build the workload of ``spec`` and make its first call; its reply (``facts``,
        ``output``, ``device``, ``build_s``)."""
        return self.request("build", f"building {spec.get('kind')}", spec=dict(spec))

    def close(self) -> None:
        """Ask the worker to end, then end its process group whatever it does."""
        if self.closed:
            return
        with suppress(EdgeEnergyError):  # it is killed below, as a failed one is
            self.request("close", "closing")
        with suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=CLOSE_WAIT_S)
        self.kill()

    def kill(self) -> None:
        """End the worker's whole process group (SIGTERM, SIGKILL after a grace) and reap
        it. Idempotent."""
        self.closed = True
        _LIVE.discard(self)
        with suppress(OSError):
            self._stdin.close()
        self._signal_group(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=KILL_GRACE_S)
        self._signal_group(signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):  # unkillable (D state): nothing more to do
            self._proc.wait(timeout=KILL_GRACE_S)
        self._selector.close()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._drain.join(timeout=KILL_GRACE_S)

    # -- plumbing --------------------------------------------------------------------

    def _signal_group(self, sig: signal.Signals) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    def _send_bytes(self, data: bytes, what: str) -> None:
        try:
            self._stdin.write(data)
            self._stdin.flush()
        except OSError:  # its stdin closed: it is gone
            self._died(what)

    def _receive(self, what: str, timeout_s: float | None = None) -> dict[str, Any]:
        """The next reply; beats (calls still finishing) restart the silence clock."""
        timeout_s = self.placement.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            line, sep, rest = self._buffer.partition(b"\n")
            if sep:
                self._buffer = rest
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if not isinstance(message, dict):
                    self._fail(f"wrote {_shown(line)} on its protocol channel during {what}")
                if "beat" in message:
                    deadline = time.monotonic() + timeout_s
                    continue
                reply: dict[str, Any] = message
                return reply
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                if time.monotonic() < deadline:
                    continue
                self._hung(what, timeout_s)
            chunk = os.read(self._stdout_fd, 1 << 20)
            if not chunk:
                self._died(what)
            self._buffer += chunk

    def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            self._stderr.append(line)
            with suppress(OSError, ValueError):  # a closed capture at the end of a session
                sys.stderr.write(f"workload worker: {line}\n")
        stream.close()

    def _stderr_tail(self) -> str:
        self._drain.join(timeout=0.2 if self._proc.poll() is None else KILL_GRACE_S)
        lines = [line.strip() for line in list(self._stderr) if line.strip()]
        if not lines:
            return ""
        return "; last stderr: " + " | ".join(lines[-STDERR_LINES_SHOWN:])

    def _fail(self, cause: str) -> NoReturn:
        self.kill()
        raise WorkerFailed(_one_line(f"workload worker {self.where}: {cause}"))

    def _died(self, what: str) -> NoReturn:
        try:
            code = self._proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            code = None
        self.kill()
        if code is None:
            how = "closed its pipe"
        elif code < 0:
            how = f"was killed by {_signal_name(code)}"
            if code == -signal.SIGKILL:
                how += " (out of memory?)"
        else:
            how = f"exited with status {code}"
        message = f"workload worker {self.where}: {how} during {what}{self._stderr_tail()}"
        raise WorkerFailed(_one_line(message))

    def _hung(self, what: str, timeout_s: float) -> NoReturn:
        self.kill()
        message = (
            f"workload worker {self.where}: no answer for {timeout_s:g} s during {what} "
            f"(--edge-workload-timeout); its process group was killed{self._stderr_tail()}"
        )
        raise WorkerFailed(_one_line(message))


def _shown(data: object) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else json.dumps(data)
    return repr(text[:120])


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 3] + "..."


@atexit.register
def _kill_left() -> None:
    """Workers still running when this interpreter exits (a crashed session) are killed."""
    for worker in list(_LIVE):
        worker.kill()
