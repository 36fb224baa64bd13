"""The pytest plugin on virtual boards: ``--edge-board=sim:MODEL`` and ``--edge-root=DIR``.

Each test runs a real pytest session in a subprocess (``pytester.runpytest_subprocess``),
the plugin loaded through its entry point, and reads back what the inner tests printed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create
from pytest_edgeenergy.sim.truth import read_truth

ENV_VARS = (
    "EDGEENERGY_BOARD",
    "EDGEENERGY_ROOT",
    "EDGEENERGY_INTERVAL_MS",
    "EDGEENERGY_SOURCE",
    "EDGEENERGY_REPORT",
    "EDGEENERGY_IDLE_S",
)
RUN_TIMEOUT_S = 120.0

# The inner test module. It prints one tagged JSON line per fact the outer test checks.
INNER = '''
import json
import time
from pathlib import Path


def _emit(tag, value):
    print(f"EDGE-{tag} " + json.dumps(value))


def _sim_pids(root):
    """Pids of processes whose command line names the virtual board's root."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\\0")
        except OSError:
            continue
        if b"pytest_edgeenergy.sim" in argv and str(root).encode() in argv:
            pids.append(int(d.name))
    return pids


def test_measures(energy):
    with energy.window("work") as w:
        time.sleep(0.3)
    _emit("RESULT", w.result.to_json())
    _emit("ROOT", str(energy.board.root))
    _emit("SIMULATED", energy.simulated)
    _emit("SIMPIDS", _sim_pids(energy.board.root))
    _emit("IDLE", None if energy.idle is None else energy.idle.to_json())
    assert [r.label for r in energy.results] == ["work"]


def test_short_window(energy):
    with energy.window("short") as w:
        pass
    _emit("SHORT", w.result.to_json())


def test_fails_after_measuring(energy):
    with energy.window("doomed"):
        time.sleep(0.1)
    assert False, "deliberate failure"
'''


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's own EDGEENERGY_* settings must not leak into the inner sessions."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def tagged(stdout: str, tag: str) -> list[Any]:
    """Every JSON value printed by the inner tests after ``EDGE-<tag> ``."""
    prefix = f"EDGE-{tag} "
    # With -s the first print shares its line with pytest's progress ("test_x.py EDGE-...").
    return [
        json.loads(line[line.index(prefix) + len(prefix) :])
        for line in stdout.splitlines()
        if prefix in line
    ]


def one(stdout: str, tag: str) -> Any:
    values = tagged(stdout, tag)
    assert len(values) == 1, f"expected one EDGE-{tag} line, got {len(values)}:\n{stdout}"
    return values[0]


def summary_section(stdout: str) -> list[str]:
    """The lines of the energy summary section (after its ``=== energy ... ===`` header)."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("=") and " energy" in line]
    assert starts, f"no energy summary section in:\n{stdout}"
    out: list[str] = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith("="):
            break
        out.append(line)
    return out


def summary_row(section: list[str], test_name: str, label: str) -> list[str]:
    """The whitespace-split summary row of window ``label`` of test ``test_name``."""
    rows = [line.split() for line in section if f"::{test_name} " in line]
    rows = [r for r in rows if len(r) > 1 and r[1] == label]
    assert len(rows) == 1, f"no single row for {test_name}/{label} in:\n" + "\n".join(section)
    return rows[0]


def process_alive_for(pid: int, root: str) -> bool:
    """True when ``pid`` is still a process whose command line names ``root``."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return root.encode() in argv


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/cmdline").exists(), reason="needs /proc to find the simulator process"
)

EXPECTED_TOTAL = {
    # model: (total rail or None for the sum of rails, text in the board line)
    "nano": ("POM_5V_IN", "total = rail POM_5V_IN"),
    "agx-orin": (None, "sum of rails"),
    "thor": ("VIN", "total = rail VIN"),
}


@needs_proc
@pytest.mark.parametrize("model", sorted(EXPECTED_TOTAL))
def test_sim_board_session(pytester: pytest.Pytester, model: str) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess(
        f"--edge-board=sim:{model}", "--edge-idle-s=0.3", "-s", "-rA", timeout=RUN_TIMEOUT_S
    )
    out = result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)
    assert "Traceback" not in result.stderr.str()

    # The window is valid, has energy on every rail, and the total is formed as the board's.
    total_rail, board_text = EXPECTED_TOTAL[model]
    r = one(out, "RESULT")
    assert r["valid"] is True and r["invalid_reason"] is None
    assert r["simulated"] is True
    assert r["samples"] >= 5
    assert r["total"]["energy_j"] > 0
    assert r["total"]["mean_w"] > 0
    assert r["rails"], "no rails measured"
    assert all(rail["energy_j"] > 0 for rail in r["rails"].values())
    assert r["total"]["rail"] == total_rail
    if total_rail is None:
        assert r["total"]["method"] == "sum"
        rails_sum = sum(rail["energy_j"] for rail in r["rails"].values())
        assert r["total"]["energy_j"] == pytest.approx(rails_sum, rel=1e-9)
    else:
        assert r["total"]["method"] == "rail"
        assert r["total"]["energy_j"] == pytest.approx(r["rails"][total_rail]["energy_j"])
    # An idle baseline was measured, so net energy is reported.
    idle = one(out, "IDLE")
    assert idle is not None and idle["valid"] is True and idle["power_w"] > 0
    assert r["net_energy_j"] is not None
    assert r["net_energy_j"] == pytest.approx(r["total"]["energy_j"] - r["idle_energy_j"])
    assert one(out, "SIMULATED") is True

    # A window too short for the sensor is INVALID with a reason, never 0 J.
    short = one(out, "SHORT")
    assert short["valid"] is False
    assert short["invalid_reason"]
    assert short["total"]["energy_j"] is None
    assert short["net_energy_j"] is None

    # The summary: title, board line, one row per window with its energy.
    section = summary_section(out)
    assert any("energy (SIMULATED: virtual board)" in line for line in out.splitlines())
    board_line = next(line for line in section if line.startswith("board:"))
    assert f"virtual {model}" in board_line
    assert "SIMULATED" in board_line
    assert board_text in board_line
    assert "idle" in board_line
    row = summary_row(section, "test_measures", "work")
    assert row[2] == "passed"
    assert float(row[4]) == pytest.approx(r["total"]["energy_j"], abs=1e-4)
    assert row[-1] == "yes"
    short_line = next(line for line in section if "::test_short_window " in line)
    assert "INVALID: " + short["invalid_reason"] in short_line
    short_row = summary_row(section, "test_short_window", "short")
    assert short_row[4] == "-", "an invalid window must not show a number of joules"
    doomed = summary_row(section, "test_fails_after_measuring", "doomed")
    assert doomed[2] == "failed"

    # The temporary virtual board and its simulator are gone after the session.
    root = one(out, "ROOT")
    assert Path(root).name.startswith(f"edgeenergy-sim-{model}-")
    pids = one(out, "SIMPIDS")
    assert len(pids) == 1, f"expected one simulator process for {root}, found {pids}"
    assert not Path(root).exists(), f"virtual board {root} was left behind"
    assert not process_alive_for(pids[0], root), f"simulator {pids[0]} still running"


@pytest.fixture
def animated_board(tmp_path: Path) -> Any:
    """An orin-nano tree made like ``edgeenergy sim create`` does, animated at a pinned load."""
    root = create("orin-nano", tmp_path / "board")
    (root / LOAD_OVERRIDE).write_text("0.5\n")
    with SimProcess(root) as proc:
        yield root, proc


def test_edge_root_on_created_tree(pytester: pytest.Pytester, animated_board: Any) -> None:
    root, proc = animated_board
    pytester.makepyfile(test_inner=INNER)
    before = read_truth(root)
    result = pytester.runpytest_subprocess(
        f"--edge-root={root}", "--edge-idle-s=0.3", "-s", timeout=RUN_TIMEOUT_S
    )
    after = read_truth(root)
    out = result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)

    r = one(out, "RESULT")
    assert r["valid"] is True
    assert r["simulated"] is True
    assert r["total"]["method"] == "rail" and r["total"]["rail"] == "VDD_IN"
    assert one(out, "ROOT") == str(root)
    # At a pinned load the board's power is steady: the window's mean power matches the
    # simulator's ground truth over the whole session.
    truth_w = (after.total_energy_j - before.total_energy_j) / (after.t_s - before.t_s)
    assert r["total"]["mean_w"] == pytest.approx(truth_w, rel=0.05)

    board_line = next(line for line in summary_section(out) if line.startswith("board:"))
    assert "SIMULATED" in board_line and "total = rail VDD_IN" in board_line
    # A tree the user made is the user's: it stays, and its simulator keeps running.
    assert root.is_dir() and (root / "etc").is_dir()
    assert proc.running
    assert os.access(root / LOAD_OVERRIDE, os.R_OK)


def test_begin_end_records_like_the_context_manager(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_be="""
import time

def test_be(energy):
    w = energy.begin("manual")
    time.sleep(0.3)
    r = w.end()
    assert w.end() is r  # ending twice gives the same result
    assert r.valid and r.total.energy_j > 0 and r.label == "manual"
    assert energy.results == [r]
"""
    )
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:xavier-nx", "--edge-idle-s=0.2", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_be.py::test_be*manual*passed*yes*"])
