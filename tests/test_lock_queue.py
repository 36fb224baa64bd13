"""One board, one measuring session: a second session on the same board waits its turn
(``--edge-lock-timeout``), names the holder when it gives up, and takes over the lock of a
killed one.

Two concurrent pytest processes measure one virtual board tree through ``--edge-root``.
The first holds the board inside its test until this test creates ``release``; the order
of events comes from a log both write, never from timings.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from pytest_edgeenergy.control.errors import SessionBusy
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.operating_point import resolve
from pytest_edgeenergy.control.state import STATE_IN_ROOT, Session
from pytest_edgeenergy.sim.tree import create

RUN_TIMEOUT_S = 120.0
HOLD_LIMIT_S = 60.0
"""A safety net: a holder never released (a failed test) ends by itself."""

TEST_FILE = """
import time
from pathlib import Path


def _log(event):
    with open("events.log", "a") as f:
        f.write("{name} " + event + "\\n")


def test_{name}({fixtures}):
    _log("start")
    deadline = time.monotonic() + {limit}
    while {hold} and not Path("release").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    _log("end")
"""

PINS = ["--gpu-freq=min"]
LOCK_FILE = STATE_IN_ROOT + ".lock"


def tree_digest(root: Path) -> dict[str, bytes]:
    """Every file's bytes but the session state directory's."""
    state_dir = (root / STATE_IN_ROOT).parent
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and state_dir not in p.parents
    }


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create("orin-nano", tmp_path_factory.mktemp("pristine") / "board")


@pytest.fixture
def board(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "board", symlinks=True))


def write_tests(pytester: pytest.Pytester, pin: bool) -> None:
    """``test_a.py`` holds the board until released (pinning it when ``pin``), ``test_b.py``
    only measures and does not hold."""
    fixtures = "energy, operating_point" if pin else "energy"
    pytester.makepyfile(
        test_a=TEST_FILE.format(name="a", fixtures=fixtures, hold=True, limit=HOLD_LIMIT_S),
        test_b=TEST_FILE.format(name="b", fixtures="energy", hold=False, limit=0),
    )


def args(board: Path, name: str, *extra: str) -> list[str]:
    return [
        f"--edge-root={board}",
        "--edge-idle-s=0",
        f"--edge-report=report-{name}.json",
        "-p",
        "no:cacheprovider",
        *extra,
        f"test_{name}.py",
    ]


def events(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "events.log"
    return log.read_text().splitlines() if log.exists() else []


def start(pytester: pytest.Pytester, argv: list[str]) -> subprocess.Popen[str]:
    proc: subprocess.Popen[str] = pytester.popen(
        [sys.executable, "-m", "pytest", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    return proc


def read_until(stream: IO[str] | None, needle: str) -> str:
    """Lines of ``stream`` up to the first holding ``needle`` (all of it if none does)."""
    assert stream is not None
    seen = []
    for line in stream:
        seen.append(line)
        if needle in line:
            break
    return "".join(seen)


@contextmanager
def holder(pytester: pytest.Pytester, board: Path, *extra: str) -> Iterator[subprocess.Popen[str]]:
    """Session A inside its test, holding the board; released and finished on exit."""
    proc = start(pytester, args(board, "a", *extra))
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while "a start" not in events(pytester):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                out, err = proc.communicate()
                pytest.fail(f"the holding session never reached its test:\n{out}\n{err}")
            time.sleep(0.05)
        yield proc
    finally:
        (pytester.path / "release").touch()
        try:
            if proc.returncode is None:
                proc.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            proc.kill()


def lock_record(board: Path) -> dict[str, object]:
    data = json.loads((board / LOCK_FILE).read_text())
    assert isinstance(data, dict)
    return data


# ------------------------------------------------------------------ two pytest processes


def test_second_session_waits_then_runs(pytester: pytest.Pytester, board: Path) -> None:
    write_tests(pytester, pin=True)
    before = tree_digest(board)
    with holder(pytester, board, *PINS) as a:
        b = start(pytester, args(board, "b", "--edge-lock-timeout=60"))
        told = read_until(b.stderr, "waiting up to")
        assert events(pytester) == ["a start"]  # b waits while a is inside its test
        (pytester.path / "release").touch()
        a_out, a_err = a.communicate(timeout=RUN_TIMEOUT_S)
        b_out, b_err = b.communicate(timeout=RUN_TIMEOUT_S)
    assert a.returncode == 0, a_out + a_err
    assert b.returncode == 0, b_out + b_err
    assert f"is held by pid {a.pid} (python -m pytest --edge-root=" in told
    assert "test_a.py), which pins it; waiting up to 60 s (--edge-lock-timeout)" in told
    assert events(pytester) == ["a start", "a end", "b start", "b end"]
    assert tree_digest(board) == before


@pytest.mark.parametrize(("extra", "use"), [(PINS, "pins it"), ([], "only measures it")])
def test_timeout_names_the_holder(
    pytester: pytest.Pytester, board: Path, extra: list[str], use: str
) -> None:
    write_tests(pytester, pin=bool(extra))
    with holder(pytester, board, *extra) as a:
        result = pytester.runpytest_subprocess(
            *args(board, "b", "--edge-lock-timeout=1"), timeout=RUN_TIMEOUT_S
        )
        assert events(pytester) == ["a start"]
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"pid {a.pid} (python -m pytest" in err and f"test_a.py), which {use}" in err
    assert "waiting up to 1 s (--edge-lock-timeout)" in err
    assert "gave up after waiting 1 s" in err and "--edge-lock-timeout=SECONDS" in err
    assert "Traceback" not in err
    assert a.returncode == 0
    assert "b start" not in events(pytester)
    assert not (pytester.path / "report-b.json").exists()


def test_zero_refuses_at_once(pytester: pytest.Pytester, board: Path) -> None:
    write_tests(pytester, pin=True)
    with holder(pytester, board, *PINS) as a:
        result = pytester.runpytest_subprocess(
            *args(board, "b", "--edge-lock-timeout=0"), timeout=RUN_TIMEOUT_S
        )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"pid {a.pid}" in err and "which pins it" in err
    assert "wait for it to end before starting a session" in err
    assert "waiting up to" not in err
    assert "b start" not in events(pytester)


def test_killed_holder_is_taken_over_and_restored(pytester: pytest.Pytester, board: Path) -> None:
    write_tests(pytester, pin=True)
    before = tree_digest(board)
    with holder(pytester, board, *PINS) as a:
        b = start(pytester, args(board, "b", "--edge-lock-timeout=60"))
        told = read_until(b.stderr, "waiting up to")
        # Checked before the kill: once a is gone, b may restore the board at any moment.
        assert tree_digest(board) != before  # a pinned the board; SIGKILL leaves it so
        a.kill()
        a.wait(timeout=RUN_TIMEOUT_S)
        b_out, b_err = b.communicate(timeout=RUN_TIMEOUT_S)
    assert f"pid {a.pid}" in told and "which pins it" in told
    assert b.returncode == 0, b_out + b_err
    assert "restored the board" in b_err
    assert events(pytester) == ["a start", "b start", "b end"]
    assert tree_digest(board) == before


def test_ctrl_c_while_waiting_changes_nothing(pytester: pytest.Pytester, board: Path) -> None:
    write_tests(pytester, pin=True)
    before = tree_digest(board)
    with holder(pytester, board, *PINS) as a:
        pinned = tree_digest(board)
        state = (board / STATE_IN_ROOT).read_bytes()
        b = start(pytester, args(board, "b", "--edge-lock-timeout=60"))
        read_until(b.stderr, "waiting up to")
        b.send_signal(signal.SIGINT)
        b.communicate(timeout=RUN_TIMEOUT_S)
        assert b.returncode == pytest.ExitCode.INTERRUPTED
        assert tree_digest(board) == pinned
        assert (board / STATE_IN_ROOT).read_bytes() == state
        assert lock_record(board)["pid"] == a.pid
    assert a.returncode == 0
    assert events(pytester) == ["a start", "a end"]
    assert not (pytester.path / "report-b.json").exists()
    assert tree_digest(board) == before


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("cli", "-1", "--edge-lock-timeout (command line): '-1' must be >= 0"),
        ("env", "soon", "EDGEENERGY_LOCK_TIMEOUT (environment): 'soon' is not a number"),
        ("ini", "-5", "edge_lock_timeout (ini file): '-5' must be >= 0"),
    ],
)
def test_bad_value_is_a_usage_error(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    value: str,
    message: str,
) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    argv = ["-p", "no:cacheprovider"]
    if where == "cli":
        argv.append(f"--edge-lock-timeout={value}")
    elif where == "env":
        monkeypatch.setenv("EDGEENERGY_LOCK_TIMEOUT", value)
    else:
        pytester.makeini(f"[pytest]\nedge_lock_timeout = {value}\n")
    result = pytester.runpytest_subprocess(*argv, timeout=RUN_TIMEOUT_S)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


# ------------------------------------------------------------------ the lock in-process


def test_lock_records_pins_then_measures(board: Path) -> None:
    with Session(knobs_at(board), handle_signals=False) as session:
        record = lock_record(board)
        assert record["pid"] == os.getpid() and record["pins"] is False
        # the command that runs this test (pytest, or an xdist worker's `-c`), as typed
        argv0 = Path(sys.argv[0])
        program = "python -m pytest" if argv0.name == "__main__.py" else argv0.name
        assert str(record["command"]).startswith(program)
        session.apply(resolve({"gpu_freq": "min"}, knobs_at(board)))
        assert lock_record(board)["pins"] is True
        session.restore()
        assert lock_record(board)["pins"] is False
    assert not (board / LOCK_FILE).exists()


def test_session_waits_at_least_the_timeout(board: Path) -> None:
    lines: list[str] = []
    with Session(knobs_at(board), handle_signals=False) as first:
        first.apply(resolve({"gpu_freq": "min"}, knobs_at(board)))
        began = time.monotonic()
        with pytest.raises(SessionBusy) as info:
            Session(knobs_at(board), lock_timeout_s=0.3, on_lock_wait=lines.append).start()
        waited_s = time.monotonic() - began
    assert waited_s >= 0.3
    assert len(lines) == 1 and f"held by pid {os.getpid()}" in lines[0]
    assert lines[0].endswith("which pins it; waiting up to 0.3 s")
    assert "gave up after waiting 0.3 s" in str(info.value)
