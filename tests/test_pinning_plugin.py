"""Operating points through pytest: the grid from options, pinning seen by the test, and the
board tree byte-identical afterwards on every exit path (normal, failure, SIGTERM, SIGKILL
followed by a new session).

The tree is a virtual board made with ``sim create`` and measured through ``--edge-root``
without animating it, so every file but the session's own state file must come back exactly.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_edgeenergy.sim.tree import create

STATE_DIR = "var/lib/edgeenergy"


def tree_digest(root: Path) -> dict[str, str]:
    """Hash of every regular file (and link target) under root, but the session state."""
    out: dict[str, str] = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if rel.startswith(STATE_DIR):
                continue
            if path.is_symlink():
                out[rel] = "->" + os.readlink(path)
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


GPU_TEST = """
import os, time
from pathlib import Path

def gpu_dir(root):
    for d in ("sys/devices/platform/17000000.gpu/devfreq_dev",):
        if (root / d).is_dir():
            return root / d
    raise AssertionError("no gpu dir")

def test_pinned(energy, operating_point, batch_size):
    root = energy.board.root
    g = gpu_dir(root)
    if operating_point.gpu_freq_hz is not None:
        assert int((g / "max_freq").read_text()) == operating_point.gpu_freq_hz
        assert int((g / "min_freq").read_text()) == operating_point.gpu_freq_hz
    mark = os.environ.get("READY_FILE")
    if mark:
        Path(mark).write_text("ready")
        time.sleep(float(os.environ.get("HOLD_S", "0")))
    if os.environ.get("FAIL_TEST"):
        raise RuntimeError("the workload crashed")
"""


@pytest.fixture
def board(tmp_path: Path) -> Path:
    return create("orin-nano", tmp_path / "board")


def _args(root: Path, *extra: str) -> list[str]:
    return [
        f"--edge-root={root}",
        "--edge-idle-s=0",
        "--power-mode=15W",
        "--gpu-freq=min,612MHz",
        "--batch-size=4",
        "-p",
        "no:cacheprovider",
        *extra,
    ]


def test_grid_pins_each_point_and_restores(pytester: pytest.Pytester, board: Path) -> None:
    pytester.makepyfile(test_pin=GPU_TEST)
    before = tree_digest(board)
    result = pytester.runpytest_subprocess(*_args(board), "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*2 tests over 2 operating points*order: 15W-gpu306MHz -> 15W-gpu612MHz*",
            "*test_pinned?bs4-15W-gpu306MHz? PASSED*",
            "*test_pinned?bs4-15W-gpu612MHz? PASSED*",
        ]
    )
    assert changed(before, tree_digest(board)) == []


def test_failing_test_still_restores(pytester: pytest.Pytester, board: Path) -> None:
    pytester.makepyfile(test_pin=GPU_TEST)
    before = tree_digest(board)
    result = pytester.runpytest_subprocess(*_args(board))
    result.assert_outcomes(passed=2)
    os.environ["FAIL_TEST"] = "1"
    try:
        result = pytester.runpytest_subprocess(*_args(board))
    finally:
        del os.environ["FAIL_TEST"]
    result.assert_outcomes(failed=2)
    assert changed(before, tree_digest(board)) == []


def _start_held(pytester: pytest.Pytester, root: Path, ready: Path) -> subprocess.Popen[bytes]:
    pytester.makepyfile(test_pin=GPU_TEST)
    env = dict(os.environ, READY_FILE=str(ready), HOLD_S="60")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *_args(root), str(pytester.path / "test_pin.py")],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.communicate()[0].decode() if proc.poll() is not None else ""
            proc.kill()
            pytest.fail(f"pytest never reached the pinned test:\n{out}")
        time.sleep(0.05)
    return proc


def _pinned_now(root: Path) -> str:
    return (root / "sys/devices/platform/17000000.gpu/devfreq_dev/max_freq").read_text().strip()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_test_restores(
    pytester: pytest.Pytester, board: Path, tmp_path: Path, signum: int
) -> None:
    before = tree_digest(board)
    proc = _start_held(pytester, board, tmp_path / "ready")
    assert _pinned_now(board) == "306000000"  # the board really was changed
    proc.send_signal(signum)
    proc.communicate(timeout=60)
    assert changed(before, tree_digest(board)) == []


def test_sigkill_then_next_session_restores_first(
    pytester: pytest.Pytester, board: Path, tmp_path: Path
) -> None:
    before = tree_digest(board)
    proc = _start_held(pytester, board, tmp_path / "ready")
    proc.kill()
    proc.wait(timeout=30)
    assert changed(before, tree_digest(board)) != []  # SIGKILL leaves the board pinned
    pytester.makepyfile(test_other="def test_nothing(energy):\n    pass\n")
    result = pytester.runpytest_subprocess(
        f"--edge-root={board}", "--edge-idle-s=0", "test_other.py", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    result.stderr.fnmatch_lines(["*restored the board*"])
    assert changed(before, tree_digest(board)) == []


def test_cli_board_restore_after_sigkill(
    pytester: pytest.Pytester, board: Path, tmp_path: Path
) -> None:
    from pytest_edgeenergy.commands import main

    before = tree_digest(board)
    proc = _start_held(pytester, board, tmp_path / "ready")
    proc.kill()
    proc.wait(timeout=30)
    assert main(["board", "restore", "--root", str(board)]) == 0
    assert changed(before, tree_digest(board)) == []
    assert main(["board", "restore", "--root", str(board)]) == 0  # nothing left: still 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--power-mode=TURBO"], "*TURBO*"),
        (["--power-mode=15W", "--gpu-freq=700MHz"], "*--gpu-freq*700MHz*not offered*nearest*"),
        (["--cpu-cores=-1"], "*--cpu-cores*"),
        (["--cpu-cores=64"], "*--cpu-cores*64*"),
        (["--governor=warp"], "*--governor*warp*"),
        (["--batch-size=0"], "*--batch-size*0*not a positive integer*"),
    ],
)
def test_bad_grid_values_write_nothing(
    pytester: pytest.Pytester, board: Path, args: list[str], message: str
) -> None:
    pytester.makepyfile(test_pin=GPU_TEST)
    before = tree_digest(board)
    result = pytester.runpytest_subprocess(
        f"--edge-root={board}", "--edge-idle-s=0", *args, "-p", "no:cacheprovider"
    )
    assert result.ret != 0
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()
    assert changed(before, tree_digest(board)) == []


def test_precedence_cli_env_ini_marker(pytester: pytest.Pytester, board: Path) -> None:
    pytester.makepyfile(
        test_pin="""
import pytest

@pytest.mark.edge_grid(gpu_freq=["max"], batch_size=[2])
def test_p(energy, operating_point, batch_size):
    print("POINT", operating_point.id, "BS", batch_size)
"""
    )
    pytester.makeini("[pytest]\nedge_gpu_freq = 408MHz\n")
    base = [f"--edge-root={board}", "--edge-idle-s=0", "-s", "-p", "no:cacheprovider"]
    # ini beats the marker; the marker still gives the batch size
    pytester.runpytest_subprocess(*base).stdout.fnmatch_lines(["*POINT gpu408MHz BS 2*"])
    os.environ["EDGEENERGY_GPU_FREQ"] = "510MHz"
    try:
        pytester.runpytest_subprocess(*base).stdout.fnmatch_lines(["*POINT gpu510MHz BS 2*"])
        r = pytester.runpytest_subprocess(*base, "--gpu-freq=min")
        r.stdout.fnmatch_lines(["*POINT gpu306MHz BS 2*"])
        os.environ["EDGEENERGY_GPU_FREQ"] = "123MHz"
        r = pytester.runpytest_subprocess(*base)
        r.stderr.fnmatch_lines(["*EDGEENERGY_GPU_FREQ*(environment)*123MHz*"])
    finally:
        del os.environ["EDGEENERGY_GPU_FREQ"]


def test_dry_run_prints_writes_and_changes_nothing(pytester: pytest.Pytester, board: Path) -> None:
    pytester.makepyfile(test_p="def test_p(energy, operating_point):\n    pass\n")
    before = tree_digest(board)
    result = pytester.runpytest_subprocess(
        f"--edge-root={board}",
        "--edge-idle-s=0",
        "--gpu-freq=max",
        "--edge-dry-run",
        "-s",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)
    assert "max_freq" in result.stdout.str() + result.stderr.str()
    assert changed(before, tree_digest(board)) == []


def test_window_records_frequency_residency(pytester: pytest.Pytester, tmp_path: Path) -> None:
    import json

    pytester.makepyfile(
        test_r="""
import time

def test_r(energy, operating_point):
    time.sleep(0.3)  # let the virtual board's DVFS settle on the pinned clock
    with energy.window("w"):
        time.sleep(0.5)
"""
    )
    report = tmp_path / "r.json"
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:orin-nano",
        "--edge-idle-s=0",
        "--gpu-freq=612MHz",
        f"--edge-report={report}",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)
    entry = json.loads(report.read_text())["tests"][0]
    (window,) = entry["extra"]["residency"]
    assert window["window"] == "w"
    assert window["shares"]["gpu"] == {"612000000": 1.0}
    assert (
        abs(sum(window["shares"]["cpu0"].values()) - 1.0) < 1e-6
        if "cpu0" in window["shares"]
        else True
    )
