"""Fault tests on virtual boards: whatever ends a session (an exception, Ctrl-C, SIGTERM,
SIGKILL followed by a new session or `restore_leftover`), every knob file of the tree is
byte-identical to before."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_edgeenergy.control.errors import SessionBusy, StateFileError
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.operating_point import resolve
from pytest_edgeenergy.control.state import (
    STATE_IN_ROOT,
    Session,
    choose_state_path,
    load_state,
    restore_leftover,
    state_locations,
)

tree = pytest.importorskip("pytest_edgeenergy.sim.tree", reason="virtual boards not available")

POINT = {"power_mode": "15W", "gpu_freq": "min", "cpu_freq": "max", "cpu_cores": "2"}


def tree_hash(root: Path) -> str:
    """Every file's path and bytes; the state dir and the simulator's own dir excluded."""
    digest = hashlib.sha256()
    skip = {root / Path(STATE_IN_ROOT).parent, root / "var/lib/edgeenergy-sim"}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) in skip:
            dirnames[:] = []
            continue
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if not path.is_symlink():
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tree.create("orin-nano", tmp_path_factory.mktemp("pristine") / "orin-nano"))


@pytest.fixture
def board(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "orin-nano", symlinks=True))


CHILD = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from pytest_edgeenergy.control.knobset import knobs_at
    from pytest_edgeenergy.control.operating_point import resolve
    from pytest_edgeenergy.control.state import Session

    root = Path(sys.argv[1])
    if sys.argv[2] == "chain":
        def handler(signum, frame):
            print("previous handler ran", flush=True)
            sys.exit(3)
        signal.signal(signal.SIGTERM, handler)
    point = resolve({points!r}, knobs_at(root))
    with Session(knobs_at(root)) as session:
        result = session.apply(point)
        assert result.ok, result.describe()
        print("READY", flush=True)
        while True:
            time.sleep(0.05)
    """
).replace("{points!r}", repr(POINT))


def run_child(board: Path, signum: int, mode: str = "plain") -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(board), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "READY", line + proc.stdout.read()
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out


def test_exception_restores(board: Path) -> None:
    before = tree_hash(board)
    with pytest.raises(ZeroDivisionError), Session(knobs_at(board)) as session:
        assert session.apply(resolve(POINT, knobs_at(board))).ok
        assert tree_hash(board) != before
        _ = 1 / 0
    assert tree_hash(board) == before
    assert not (board / STATE_IN_ROOT).exists()


def test_ctrl_c_restores(board: Path) -> None:
    before = tree_hash(board)
    code, out = run_child(board, signal.SIGINT)
    assert code in (-signal.SIGINT, 130, 1), out
    assert "KeyboardInterrupt" in out or code == -signal.SIGINT
    assert tree_hash(board) == before
    assert not (board / STATE_IN_ROOT).exists()


def test_sigterm_restores_and_dies_of_sigterm(board: Path) -> None:
    before = tree_hash(board)
    code, out = run_child(board, signal.SIGTERM)
    assert code == -signal.SIGTERM, out
    assert tree_hash(board) == before
    assert not (board / STATE_IN_ROOT).parent.exists()


def test_sigterm_chains_the_previous_handler(board: Path) -> None:
    before = tree_hash(board)
    code, out = run_child(board, signal.SIGTERM, "chain")
    assert code == 3 and "previous handler ran" in out, out
    assert tree_hash(board) == before


def test_sigkill_then_restore_leftover(board: Path) -> None:
    before = tree_hash(board)
    code, _ = run_child(board, signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert tree_hash(board) != before
    state = load_state(board / STATE_IN_ROOT)
    assert state is not None and state.power_mode is not None and state.writes
    report = restore_leftover(board)
    assert report.found and report.ok, report.message
    assert "power mode 1 25W selected" in report.message
    assert tree_hash(board) == before
    assert restore_leftover(board).message == f"nothing to restore under {board}"


def test_sigkill_then_new_session_restores_first(board: Path) -> None:
    before = tree_hash(board)
    run_child(board, signal.SIGKILL)
    out = io.StringIO()
    with Session(knobs_at(board), out=out) as session:
        assert session.leftover is not None and session.leftover.ok
        assert tree_hash(board) == before  # before anything else happens
        assert session.apply(resolve({"gpu_freq": "max"}, knobs_at(board))).ok
    assert "restored the board" in out.getvalue()
    assert tree_hash(board) == before


def test_relocated_tree_finds_its_state(board: Path, tmp_path: Path) -> None:
    before = tree_hash(board)
    run_child(board, signal.SIGKILL)
    moved = Path(shutil.move(str(board), str(tmp_path / "moved")))
    assert restore_leftover(moved).ok
    assert tree_hash(moved) == before


def test_a_live_session_is_not_trampled(board: Path) -> None:
    with Session(knobs_at(board)) as session:
        session.apply(resolve({"gpu_freq": "max"}, knobs_at(board)))
        with pytest.raises(SessionBusy, match="which pins it"):
            restore_leftover(board)
        with pytest.raises(SessionBusy):
            Session(knobs_at(board)).start()


def test_corrupt_state_file_is_named(board: Path) -> None:
    state = board / STATE_IN_ROOT
    state.parent.mkdir(parents=True)
    state.write_text("{not json")
    with pytest.raises(StateFileError, match=str(state)):
        restore_leftover(board)
    state.write_text('{"tool": "something-else"}')
    with pytest.raises(StateFileError, match="not a pytest-edgeenergy state file"):
        restore_leftover(board)


def test_state_location_falls_back_to_xdg(
    board: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    in_root, per_user = state_locations(board)
    assert choose_state_path(board) == in_root
    assert per_user.parent == tmp_path / "xdg" / "edgeenergy"
    # A state file kept per user (as for a non-root user on a board) is found too.
    before = tree_hash(board)
    session = Session(knobs_at(board), state_path=per_user, handle_signals=False)
    session.start()
    session.apply(resolve({"gpu_freq": "min"}, knobs_at(board)))
    session._lock.release(remove=False)  # die without restoring
    session._active = False
    assert per_user.exists() and not in_root.exists()
    assert restore_leftover(board).ok
    assert tree_hash(board) == before and not per_user.exists()


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"power_mode": "MODE_99W"}, "allowed (ID NAME): 0 15W, 1 25W, 2 MAXN_SUPER, 3 7W"),
        ({"power_mode": "17"}, "--power-mode 17:"),
        ({"power_mode": "7W"}, "needs a reboot"),
        ({"gpu_freq": "700MHz"}, "--gpu-freq 700MHz: not offered; offered: 306, 408"),
        ({"cpu_cores": "-1"}, "--cpu-cores -1: a core count cannot be negative"),
        ({"cpu_cores": "7"}, "--cpu-cores 7: more cores than the board has (6 present"),
        ({"governor": "interactive"}, "--governor interactive: not an available governor"),
    ],
)
def test_bad_input_writes_nothing(board: Path, spec: dict[str, str], needle: str) -> None:
    before = tree_hash(board)
    with pytest.raises(ValueError) as info, Session(knobs_at(board)) as session:
        session.apply(resolve({"gpu_freq": "max", **spec}, knobs_at(board)))
    assert needle in str(info.value)
    assert tree_hash(board) == before
    assert not (board / STATE_IN_ROOT).exists()


def test_dry_run_on_a_virtual_board(board: Path) -> None:
    before = tree_hash(board)
    out = io.StringIO()
    with Session(knobs_at(board), dry_run=True, out=out) as session:
        result = session.apply(resolve(POINT, knobs_at(board)))
    assert tree_hash(board) == before
    text = out.getvalue()
    assert "usr/bin/nvpmodel -m 0" in text and "scaling_max_freq" in text
    assert result.dry_run and result.ok
