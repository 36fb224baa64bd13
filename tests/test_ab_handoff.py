"""The board lock's hand-off token is bound to the holder's direct child.

It travels through a pipe given to that child alone: never in an environment, so not in
``/proc/PID/environ`` of the session; the child takes it once (the pipe read and closed,
the variable removed); a process whose parent is not the holder does not get in, given the
token or not. End to end: test code inside a session of ``edgeenergy ab`` cannot run a
session of its own inside ab's lock, whatever it copies from its process's environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_edgeenergy.control.state import StateLock, choose_state_path, new_handoff_token
from pytest_edgeenergy.handoff import HANDOFF_ENV, give, take
from pytest_edgeenergy.sim.tree import create

RUN_TIMEOUT_S = 300

ATTEMPT = """
import sys
from pathlib import Path
from pytest_edgeenergy.control.errors import SessionBusy
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.state import Session
from pytest_edgeenergy.handoff import take

s = Session(knobs_at(Path(sys.argv[1])), lock_timeout_s=0, handle_signals=False, handoff=take())
try:
    s.start()
except SessionBusy:
    print("BUSY")
    sys.exit(3)
print("INSIDE" if s._lock.borrowed is not None else "OWN LOCK")
s.close()
"""
"""A session that tries the board at once: INSIDE the holder's lock, or BUSY."""

CHILD = """
import os, subprocess, sys
from pathlib import Path
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.state import Session
from pytest_edgeenergy.handoff import HANDOFF_ENV, give, take

board, attempt = sys.argv[1], sys.argv[2]
token = take()
s = Session(knobs_at(Path(board)), lock_timeout_s=0, handle_signals=False, handoff=token)
s.start()
print("CHILD", "INSIDE" if s._lock.borrowed is not None else "OUTSIDE")
initial = Path("/proc/self/environ").read_bytes().split(b"\\0")
print("TOKEN IN ITS ENVIRONMENT", any(token.encode() in v for v in initial))
print("VARIABLE LEFT", HANDOFF_ENV in os.environ)


def grandchild(env, fds=()):
    done = subprocess.run(
        [sys.executable, "-c", attempt, board], env=env, pass_fds=fds,
        capture_output=True, text=True, timeout=60,
    )
    return done.stdout.strip() or done.stderr


# As code reading /proc/self/environ could start it: this process's initial environment.
copied = dict(v.decode().split("=", 1) for v in initial if b"=" in v)
print("GRANDCHILD WITH THE INITIAL ENVIRONMENT", grandchild(copied))
# Given the token itself, the way a holder gives it.
env = dict(os.environ)
fd = give(token, env)
print("GRANDCHILD GIVEN THE TOKEN", grandchild(env, (fd,)))
s.close()
"""


@pytest.fixture
def board(tmp_path: Path) -> Path:
    return create("orin-nano", tmp_path / "board", load=0.3)


def test_only_the_direct_child_gets_in_and_its_environment_holds_no_token(board: Path) -> None:
    token = new_handoff_token()
    lock = StateLock(choose_state_path(board), root=board, handoff=token)
    lock.acquire()
    env = {k: v for k, v in os.environ.items() if k != HANDOFF_ENV}
    fd = give(token, env)
    try:
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(board), ATTEMPT],
            env=env,
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
    finally:
        os.close(fd)
        lock.release(remove=True)
    said = child.stdout + child.stderr
    assert child.returncode == 0, said
    assert "CHILD INSIDE" in said
    assert "TOKEN IN ITS ENVIRONMENT False" in said
    assert "VARIABLE LEFT False" in said
    assert "GRANDCHILD WITH THE INITIAL ENVIRONMENT BUSY" in said
    assert "GRANDCHILD GIVEN THE TOKEN BUSY" in said  # its parent is not the holder


def test_take_reads_the_pipe_once_and_leaves_other_descriptors_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The variable as a grandchild inherits it: another process's pipe, this one's fd.
    other = tmp_path / "other"
    other.write_text("x")
    fd = os.open(other, os.O_RDONLY)
    try:
        monkeypatch.setenv(HANDOFF_ENV, f"{fd}:{os.getpid()}")  # the giver is not our parent
        assert take() is None
        assert HANDOFF_ENV not in os.environ
        os.fstat(fd)  # still open
        monkeypatch.setenv(HANDOFF_ENV, f"{fd}:{os.getppid()}")  # not a pipe
        assert take() is None
        os.fstat(fd)
    finally:
        os.close(fd)


# -- end to end: inside a session of edgeenergy ab -----------------------------------------

NESTED = """
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def test_tries_to_get_in(edge_bench, request):
    root = Path(request.config.getoption("edge_root"))
    record = json.loads((root / "var/lib/edgeenergy/state.json.lock").read_text())
    initial = Path("/proc/self/environ").read_bytes().split(b"\\0")
    values = [v.partition(b"=")[2] for v in initial]
    print("TOKEN IN THE SESSION'S ENVIRONMENT",
          any(hashlib.sha256(v).hexdigest() == record["handoff"] for v in values))
    copied = dict(v.decode().split("=", 1) for v in initial if b"=" in v)
    nested = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_nested.py",
         f"--edge-root={root}", "--edge-lock-timeout=0", "--edge-idle-s=0"],
        env=copied, capture_output=True, text=True, timeout=120,
    )
    said = nested.stdout + nested.stderr
    print("NESTED SESSION EXIT", nested.returncode)
    print("NESTED SAYS", "held by another pytest-edgeenergy session" in said)
    edge_bench.run(lambda: time.sleep(0.01), items_per_call=1)
"""

NESTED_TARGET = """
def test_measures(energy):
    with energy.window("w"):
        pass
"""

SMALL = [
    "--edge-repeats=2",
    "--edge-items=4",
    "--edge-warmup=0",
    "--edge-min-window-s=0.05",
    "--edge-idle-s=0",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
    "-s",
]


def test_code_in_a_session_of_ab_cannot_run_a_session_inside_abs_lock(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    (side / "test_work.py").write_text(NESTED, encoding="utf-8")
    (side / "test_nested.py").write_text(NESTED_TARGET, encoding="utf-8")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")}
    code = "import sys; from pytest_edgeenergy.commands import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "ab", "--base", str(side), "--head", str(side),
         "--rounds", "2", "--max-rounds", "2", "--fail", "energy_per_item:mean:50%",
         "--out", str(out), "--", "test_work.py", "--edge-board=sim:orin-nano",
         "--edge-sim-load=0.3", *SMALL],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    for name in ("A-1", "B-1", "B-2", "A-2"):
        log = (out / f"{name}.log").read_text()
        assert "running inside the board lock of pid" in log, log
        assert "TOKEN IN THE SESSION'S ENVIRONMENT False" in log, log
        assert "NESTED SESSION EXIT 4" in log and "NESTED SAYS True" in log, log
