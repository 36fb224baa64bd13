"""Board safety against a careful attacker and an unlucky set-up (issue 19, items 1 and 2).

One lock per board whoever runs the session (the state directory in the board, never a
per-user fallback), and no write that leaves the board: a knob file, the lock, the state
file or its directory planted as a link to a file outside, and an nvpmodel PARAM path that
climbs out with ``..``. Each case runs the real control code on a virtual board tree, as
root where the tests run as root, and checks the outside file byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_edgeenergy.control.errors import RestoreError, StateDirError, UnknownKnobFile
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.operating_point import resolve
from pytest_edgeenergy.control.state import STATE_IN_ROOT, Session
from pytest_edgeenergy.control.steps import write_bytes
from pytest_edgeenergy.safefs import OutsideError
from pytest_edgeenergy.sim.tree import create

GPU = "sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu"
STATE_DIR = Path(STATE_IN_ROOT).parent
OUTSIDE = b"precious outside content\n"

TEST_FILE = """
import os, time
from pathlib import Path

def test_pin(energy, operating_point):
    mark = os.environ.get("READY_FILE")
    if mark:
        Path(mark).write_text("ready")
        deadline = time.monotonic() + 60
        while not Path(os.environ["RELEASE_FILE"]).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
"""


def knob_bytes(root: Path) -> dict[str, bytes]:
    """Every regular file of the tree (links as their target text), the state dir aside."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, files in os.walk(root):
        if Path(dirpath) == root / STATE_DIR:
            dirnames[:] = []
            continue
        for name in files:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            out[rel] = (
                ("->" + os.readlink(path)).encode() if path.is_symlink() else path.read_bytes()
            )
    return out


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(create("orin-nano", tmp_path_factory.mktemp("pristine") / "board"))


@pytest.fixture
def board(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "board", symlinks=True))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "file"
    path.parent.mkdir()
    path.write_bytes(OUTSIDE)
    return path


def _pytest(
    pytester: pytest.Pytester, root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    pytester.makepyfile(test_pin=TEST_FILE)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"--edge-root={root}",
            "--edge-idle-s=0",
            "-p",
            "no:cacheprovider",
            "--edge-lock-timeout=0",
            *args,
            "test_pin.py",
        ],
        cwd=pytester.path,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# ---------------------------------------------------------------- 1. one lock per board


def test_two_users_share_one_lock_whatever_their_state_home(
    pytester: pytest.Pytester, board: Path, tmp_path: Path
) -> None:
    """A session with another XDG_STATE_HOME still meets the first one's lock."""
    before = knob_bytes(board)
    ready, release = tmp_path / "ready", tmp_path / "release"
    pytester.makepyfile(test_pin=TEST_FILE)
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            f"--edge-root={board}",
            "--edge-idle-s=0",
            "-p",
            "no:cacheprovider",
            "--gpu-freq=min",
            "test_pin.py",
        ],
        cwd=pytester.path,
        env={
            **os.environ,
            "XDG_STATE_HOME": str(tmp_path / "root-home"),
            "READY_FILE": str(ready),
            "RELEASE_FILE": str(release),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not ready.exists():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()[0]
            time.sleep(0.05)
        second = _pytest(
            pytester, board, "--gpu-freq=max", env={"XDG_STATE_HOME": str(tmp_path / "user")}
        )
        assert second.returncode != 0
        assert "held by another pytest-edgeenergy session" in second.stdout + second.stderr
        assert (board / GPU / "max_freq").read_text().strip() == "306000000"  # first's pin
    finally:
        release.touch()
        out = first.communicate(timeout=120)[0]
    assert first.returncode == 0, out
    assert knob_bytes(board) == before


@contextlib.contextmanager
def _read_only_state_dir(board: Path, how: str) -> Iterator[None]:
    """The board's state directory made unwritable, even for root."""
    state_dir = board / STATE_DIR
    if how == "not a directory":
        state_dir.parent.mkdir(parents=True, exist_ok=True)
        state_dir.write_text("")
        yield
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(state_dir)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(state_dir)], check=False)


@pytest.mark.parametrize("how", ["not a directory", "read-only tmpfs"])
def test_unwritable_state_dir_pins_nothing_and_measures_unprotected(
    pytester: pytest.Pytester, board: Path, tmp_path: Path, how: str
) -> None:
    with _read_only_state_dir(board, how):
        before = knob_bytes(board)
        runs = [
            _pytest(pytester, board, "--gpu-freq=min", env={"XDG_STATE_HOME": str(tmp_path / h)})
            for h in ("root-home", "user-home")
        ]
        for run in runs:  # neither may pin: they could not see each other
            assert run.returncode == 4, run.stdout + run.stderr  # pytest's usage error
            assert f"refusing to pin the board under {board}" in run.stderr
            assert str(board / STATE_DIR) in run.stderr
            assert "d /var/lib/edgeenergy 2775 root edgeenergy -" in run.stderr
        measuring = _pytest(pytester, board)
        assert measuring.returncode == 0, measuring.stdout + measuring.stderr
        assert "NOT protected against a concurrent session that pins" in measuring.stderr
        assert "WARNING: the board's lock and journal directory" in measuring.stdout
        (report,) = (pytester.path / "reports").glob("*.json")
        kinds = [w["kind"] for w in json.loads(report.read_text()).get("warnings", [])]
        assert "unprotected" in kinds
        assert knob_bytes(board) == before
    assert not list((tmp_path).glob("*-home/edgeenergy/*"))  # no per-user fallback


def test_unprotected_session_refuses_every_change(board: Path) -> None:
    (board / STATE_DIR.parent).mkdir(parents=True, exist_ok=True)
    (board / STATE_DIR).write_text("")
    before = knob_bytes(board)
    with Session(knobs_at(board), handle_signals=False) as session:
        assert session.unprotected is not None and "is not a directory" in session.unprotected
        with pytest.raises(StateDirError, match="refusing to pin"):
            session.apply(resolve({"gpu_freq": "max"}, knobs_at(board)))
        with pytest.raises(StateDirError):
            session.check_privileges([resolve({"power_mode": "15W"}, knobs_at(board))])
    assert knob_bytes(board) == before


# ---------------------------------------------------------------- 2. no write leaves the board


def test_knob_file_linked_outside_is_refused(
    pytester: pytest.Pytester, board: Path, outside: Path
) -> None:
    link = board / GPU / "max_freq"
    link.unlink()
    link.symlink_to(outside)
    before = knob_bytes(board)
    run = _pytest(pytester, board, "--gpu-freq=max")
    assert run.returncode == 4, run.stdout + run.stderr
    assert f"refusing to write {link}" in run.stderr
    assert "symbolic link" in run.stderr and "Traceback" not in run.stderr
    assert outside.read_bytes() == OUTSIDE
    assert knob_bytes(board) == before
    assert str(link) in knobs_at(board).refused  # never even captured


def test_knob_file_swapped_for_a_link_after_discovery_is_not_followed(
    board: Path, outside: Path
) -> None:
    """The write itself does not follow a final link (O_NOFOLLOW), whatever the allow-list."""
    target = board / GPU / "max_freq"
    target.unlink()
    target.symlink_to(outside)
    with pytest.raises(OutsideError, match="symbolic link"):
        write_bytes(target, b"1020000000\n")
    assert outside.read_bytes() == OUTSIDE


def test_directory_linked_outside_is_refused(board: Path, tmp_path: Path) -> None:
    """A knob file reached through a directory link that leaves the board."""
    away = tmp_path / "away"
    shutil.copytree(board / GPU, away, symlinks=True)
    shutil.rmtree(board / GPU)
    (board / GPU).symlink_to(away)
    knobs = knobs_at(board)
    assert knobs.gpu is not None
    assert str(knobs.gpu.max_file) in knobs.refused
    assert knobs.gpu.max_file not in knobs.files
    with pytest.raises(UnknownKnobFile, match="outside the board"):
        knobs.check_writable(knobs.gpu.max_file)


def test_lock_file_linked_outside_is_refused_and_left_alone(
    pytester: pytest.Pytester, board: Path, outside: Path
) -> None:
    (board / STATE_DIR).mkdir(parents=True)
    (board / STATE_DIR / "state.json.lock").symlink_to(outside)
    run = _pytest(pytester, board)  # pins nothing
    assert run.returncode != 0
    assert "the lock file" in run.stdout + run.stderr and "symbolic link" in run.stdout + run.stderr
    assert outside.read_bytes() == OUTSIDE


def test_state_file_linked_outside_is_never_read_or_written(board: Path, outside: Path) -> None:
    (board / STATE_DIR).mkdir(parents=True)
    (board / STATE_IN_ROOT).symlink_to(outside)
    with pytest.raises(Exception, match="symbolic link"):
        Session(knobs_at(board), handle_signals=False).start()
    assert outside.read_bytes() == OUTSIDE


def test_state_dir_linked_outside_keeps_the_session_from_pinning(
    board: Path, tmp_path: Path
) -> None:
    away = tmp_path / "away"
    away.mkdir()
    (board / STATE_DIR.parent).mkdir(parents=True, exist_ok=True)
    (board / STATE_DIR).symlink_to(away)
    with Session(knobs_at(board), handle_signals=False) as session:
        assert session.unprotected is not None and "outside the board" in session.unprotected
        with pytest.raises(StateDirError):
            session.apply(resolve({"gpu_freq": "max"}, knobs_at(board)))
    assert list(away.iterdir()) == []


def _climb_out(board: Path, outside: Path) -> None:
    """nvpmodel.conf's GPU power-control PARAM path made to climb out of the tree."""
    conf = board / "etc/nvpmodel.conf"
    up = "/sys" + "/.." * (len(board.parts) + 2) + str(outside)
    text = conf.read_text().replace(
        "GPU_PWR_CNTL_EN /sys/devices/platform/gpu.0/power/control", f"GPU_PWR_CNTL_EN {up}"
    )
    assert up in text
    conf.write_text(text)


def test_nvpmodel_param_climbing_out_is_refused(
    pytester: pytest.Pytester, board: Path, outside: Path
) -> None:
    _climb_out(board, outside)
    before = knob_bytes(board)
    run = _pytest(pytester, board, "--power-mode=15W")
    assert run.returncode == 4, run.stdout + run.stderr
    assert "refusing to run nvpmodel -m 0" in run.stderr
    assert f"resolves to {outside}" in run.stderr and "GPU_PWR_CNTL_EN" in run.stderr
    assert outside.read_bytes() == OUTSIDE
    assert knob_bytes(board) == before


def test_virtual_nvpmodel_never_writes_outside_its_tree(board: Path, outside: Path) -> None:
    _climb_out(board, outside)
    before = knob_bytes(board)
    run = subprocess.run(
        [str(board / "usr/bin/nvpmodel"), "-m", "0"],
        input="NO\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert "resolves outside the virtual board" in run.stdout + run.stderr
    assert outside.read_bytes() == OUTSIDE
    assert knob_bytes(board) == before


def test_restore_never_skips_a_file_it_changed(board: Path, outside: Path) -> None:
    """A knob file the session wrote and that became a link meanwhile: restore fails loudly,
    keeps the state file, and writes nothing outside."""
    session = Session(knobs_at(board), handle_signals=False)
    session.start()
    session.apply(resolve({"gpu_freq": "max"}, knobs_at(board)))
    target = board / GPU / "max_freq"
    target.unlink()
    target.symlink_to(outside)
    with pytest.raises(RestoreError, match="max_freq: changed by this session"):
        session.close()
    assert outside.read_bytes() == OUTSIDE
    assert (board / STATE_IN_ROOT).exists()  # kept for a later `edgeenergy board restore`


def test_state_file_temp_leftovers_are_removed(board: Path) -> None:
    """A temp file of a killed writer (its pid gone) is cleaned at the next session."""
    (board / STATE_DIR).mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = board / STATE_DIR / f".state.json.{dead.pid}.tmp"
    stale.write_text("{}")
    with Session(knobs_at(board), handle_signals=False):
        pass
    assert not stale.exists()
