"""``edgeenergy measure`` on animated virtual boards and ``edgeenergy tegrastats-energy``."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create
from pytest_edgeenergy.sim.truth import read_truth

CONSOLE_SCRIPT = Path(sys.executable).parent / "edgeenergy"
SHARED = Path(__file__).resolve().parent / "shared"
SAMPLES = SHARED / "reference" / "samples"
TEGRASTATS_SAMPLE = SAMPLES / "tegrastats_orin-nano_jp6.txt"

MEASURE_KEYS = {
    "seconds",
    "interval_ms",
    "samples",
    "valid",
    "invalid_reason",
    "read_errors",
    "sampler_cpu_s",
    "rails",
    "total",
}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``edgeenergy ARGV`` in-process: (exit status, stdout, stderr)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors
        code = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_script(*argv: str) -> subprocess.CompletedProcess[str]:
    if not CONSOLE_SCRIPT.exists():
        pytest.skip(f"console script {CONSOLE_SCRIPT} not installed")
    return subprocess.run(
        [str(CONSOLE_SCRIPT), *argv], capture_output=True, text=True, timeout=120, check=False
    )


def assert_contract_shape(data: dict[str, Any]) -> None:
    """The ``measure --json`` / ``tegrastats-energy --json`` contract keys."""
    assert set(data) >= MEASURE_KEYS, f"missing: {MEASURE_KEYS - set(data)}"
    assert {"energy_j", "mean_w", "method"} <= set(data["total"])
    assert data["total"]["method"] in ("rail", "sum")
    assert data["rails"]
    for name, rail in data["rails"].items():
        assert {"energy_j", "mean_w"} <= set(rail), name


@pytest.fixture
def animated(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A virtual board of model ``request.param`` animated at a pinned load of 0.5."""
    root = create(request.param, tmp_path / "board")
    # Pinned: the simulated power must not follow this shared machine's real load.
    (root / LOAD_OVERRIDE).write_text("0.5\n")
    with SimProcess(root):
        yield root


@pytest.mark.parametrize("animated", ["orin-nano", "agx-orin"], indirect=True)
def test_measure_json_matches_ground_truth(
    capsys: pytest.CaptureFixture[str], animated: Path
) -> None:
    root = animated
    t0 = time.monotonic()
    before = read_truth(root)
    code, out, err = run_cli(capsys, "measure", "--root", str(root), "--seconds", "0.5", "--json")
    after = read_truth(root)
    t1 = time.monotonic()
    assert code == 0, err
    data = json.loads(out)
    assert_contract_shape(data)
    assert data["valid"] is True and data["invalid_reason"] is None
    assert data["samples"] > 0
    assert data["seconds"] >= 0.5
    assert data["interval_ms"] > 0
    assert data["sampler_cpu_s"] >= 0
    assert data["read_errors"] == {}
    assert set(data["rails"]) == set(before.energy_j)
    assert data["total"]["method"] == before.total_method
    assert data["total"]["energy_j"] == pytest.approx(
        data["total"]["mean_w"] * data["seconds"], rel=1e-6
    )

    # Ground truth: at a pinned load the power is steady, so the truth's mean power over
    # the span around the command, times the window's length, is the window's energy.
    span_s = after.t_s - before.t_s
    assert span_s > 0 and t1 > t0
    truth_total_w = (after.total_energy_j - before.total_energy_j) / span_s
    assert data["total"]["energy_j"] == pytest.approx(truth_total_w * data["seconds"], rel=0.05)
    for name, rail in data["rails"].items():
        truth_w = (after.energy_j[name] - before.energy_j[name]) / span_s
        assert rail["energy_j"] == pytest.approx(truth_w * data["seconds"], rel=0.05), name


def test_measure_human_output_says_simulated(tmp_path: Path) -> None:
    root = create("nano", tmp_path / "board")
    (root / LOAD_OVERRIDE).write_text("0.2\n")
    with SimProcess(root):
        done = run_script("measure", "--root", str(root), "--seconds", "0.3")
    assert done.returncode == 0, done.stderr
    assert "SIMULATED" in done.stdout
    assert "POM_5V_IN" in done.stdout
    assert "INVALID" not in done.stdout


def test_measure_root_without_rails_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "no-rails"
    empty.mkdir()
    code, out, err = run_cli(capsys, "measure", "--root", str(empty), "--seconds", "0.2")
    assert code == 2
    assert str(empty) in err
    assert out == ""


def test_measure_root_without_rails_console_script_no_traceback(tmp_path: Path) -> None:
    empty = tmp_path / "no-rails"
    empty.mkdir()
    done = run_script("measure", "--root", str(empty), "--seconds", "0.2", "--json")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert str(empty) in done.stderr


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [("--seconds", "0", "> 0"), ("--seconds", "-1", "> 0"), ("--interval-ms", "0", ">= 0.1")],
)
def test_measure_bad_numbers_are_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str, allowed: str
) -> None:
    root = create("orin-nano", tmp_path / "board")
    argv = ["measure", "--root", str(root), "--seconds", "0.2", flag, value]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert flag in err and allowed in err
    assert out == ""


def test_measure_missing_root_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    code, _, err = run_cli(capsys, "measure", "--root", str(missing), "--seconds", "0.2")
    assert code == 2
    assert str(missing) in err


@pytest.fixture
def tegrastats_log(tmp_path: Path) -> Path:
    """The real Orin Nano sample lines as a log file, without the ``# source`` line."""
    if not TEGRASTATS_SAMPLE.is_file():
        pytest.skip(f"shared reference sample missing: {TEGRASTATS_SAMPLE}")
    lines = [
        line
        for line in TEGRASTATS_SAMPLE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    log = tmp_path / "tegrastats.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_tegrastats_energy_json(capsys: pytest.CaptureFixture[str], tegrastats_log: Path) -> None:
    code, out, err = run_cli(
        capsys, "tegrastats-energy", str(tegrastats_log), "--interval-ms", "1000", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert_contract_shape(data)
    assert data["valid"] is True
    assert data["samples"] == 4
    assert set(data["rails"]) == {"VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"}
    assert data["total"]["method"] == "rail"
    assert data["total"]["energy_j"] == pytest.approx(data["rails"]["VDD_IN"]["energy_j"])
    # The sample's stamps are not in order, so time comes from the given interval: 3 gaps
    # of 1 s, trapezoids over the current (first) mW values of VDD_IN.
    vdd_in_w = [5.263, 5.251, 16.321, 5.832]
    expected_j = sum((a + b) / 2 for a, b in itertools.pairwise(vdd_in_w))
    assert data["seconds"] == pytest.approx(3.0)
    assert data["total"]["energy_j"] == pytest.approx(expected_j)
    assert data["total"]["mean_w"] == pytest.approx(expected_j / 3.0)


def test_tegrastats_energy_console_script(tegrastats_log: Path) -> None:
    done = run_script("tegrastats-energy", str(tegrastats_log), "--interval-ms", "1000", "--json")
    assert done.returncode == 0, done.stderr
    assert_contract_shape(json.loads(done.stdout))


def test_tegrastats_energy_missing_file_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "absent.log"
    code, out, err = run_cli(capsys, "tegrastats-energy", str(missing), "--json")
    assert code == 2
    assert str(missing) in err
    assert out == ""


@pytest.mark.parametrize("command", ["compare", "tegrastats-energy"])
def test_passthrough_commands_answer_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_edgeenergy.commands import main

    try:
        code = main([command, "--help"])
    except SystemExit as exc:  # argparse's own exit
        code = int(exc.code or 0)
    assert code == 0
    assert f"usage: edgeenergy {command}" in capsys.readouterr().out


# -- --board sim:MODEL: the words of --edge-board ------------------------------------------


def test_measure_board_sim_makes_and_removes_a_virtual_board(tmp_path: Path) -> None:
    report = tmp_path / "m.json"
    done = run_script(
        "measure", "--board", "sim:orin-nano", "--seconds", "0.5", "--sim-load", "0.5",
        "--report", str(report), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert_contract_shape(data)
    assert data["simulated"] is True and data["valid"] is True
    assert "VDD_IN" in data["rails"] and data["total"]["energy_j"] > 0
    assert data["warnings"] == []  # animated by the command itself: never frozen
    saved = json.loads(report.read_text())
    assert saved["device"]["simulated"] is True and saved["device"]["sim_model"] == "orin-nano"
    [entry] = saved["tests"]
    assert entry["id"] == "measure" and entry["status"] == "passed"
    assert entry["metrics"]["energy_j"]["value"] == pytest.approx(data["total"]["energy_j"])


def test_measure_board_sim_writes_no_report_unless_asked(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "measure", "--board", "sim:nano", "--seconds", "0.2"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "SIMULATED" in done.stdout and "POM_5V_IN" in done.stdout
    assert list(tmp_path.iterdir()) == []  # no reports/ directory, no temporary board left


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--board", "sim:orin"], "'sim:orin' is not a board"),
        (["--board", "jetson"], "'jetson' is not a board"),
        (["--board", "sim:thor", "--root", "/"], "not allowed with argument --board"),
    ],
)
def test_measure_bad_board_is_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run_cli(capsys, "measure", *argv, "--seconds", "0.2")
    assert code == 2 and out == ""
    assert message in err
