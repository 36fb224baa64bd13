"""End to end: ``pytest suites/ --edge-quick`` on two different virtual boards, then the two
reports compared across devices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from suite_runs import ONE_ITEM_BATCHES, SUITES, needs, run_suites

pytestmark = needs("torch", "torchvision", reason="the suites need torch and torchvision")

WORKLOADS = "resnet18,bert_tiny,lstm_lm_train"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    out: dict[str, tuple[Path, str]] = {}
    for board in ("orin-nano", "agx-orin"):
        folder = tmp_path_factory.mktemp(board)
        report = folder / "report.json"
        proc = run_suites(
            str(SUITES),
            f"--edge-board=sim:{board}",
            "--edge-quick",
            ONE_ITEM_BATCHES,
            f"--workload={WORKLOADS}",
            "--runtime=torch",  # onnxruntime's quick runs: test_runtimes_e2e
            f"--edge-report={report}",
            cwd=folder,
        )
        out[board] = (report, proc.stdout)
    return out


@pytest.mark.parametrize("board", ["orin-nano", "agx-orin"])
def test_report_and_summary(runs: dict[str, tuple[Path, str]], board: str) -> None:
    report, stdout = runs[board]
    data = json.loads(report.read_text())
    assert data["simulated"] is True and data["device"]["sim_model"] == board
    assert data["device"]["total"]["method"] == ("sum" if board == "agx-orin" else "rail")
    measured = {
        t["params"]["workload"]: t
        for t in data["tests"]
        if t["status"] == "passed"
        and t["params"]["workload"] in WORKLOADS.split(",")
        and t["params"].get("runtime", "torch") == "torch"  # onnxruntime: test_runtimes_e2e
    }
    assert set(WORKLOADS.split(",")) <= set(measured)
    for name, entry in measured.items():
        m = entry["metrics"]
        assert m["energy_per_item"]["unit"] == "J/item" and m["energy_per_item"]["value"] > 0
        assert m["latency_p90"]["value"] > 0 and m["throughput"]["value"] > 0, name
        assert "load.energy_j" in m, name  # the load phase has its own window
        assert entry["params"]["graph_mode"] == "eager" and entry["params"]["device"] == "cpu"
    skipped = [t for t in data["tests"] if t["status"] == "skipped"]
    assert skipped and all(t["reason"] for t in skipped)  # skipped with the reason
    training = measured["lstm_lm_train"]["extra"]
    assert training  # fetch/compute/end-to-end breakdown travels with the result
    assert "energy benchmarks (SIMULATED)" in stdout
    for name in WORKLOADS.split(","):
        assert any(line.startswith(name) and "valid" in line for line in stdout.splitlines())


def test_compare_two_devices(
    runs: dict[str, tuple[Path, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_edgeenergy.commands import main

    paths = [str(runs[b][0]) for b in ("orin-nano", "agx-orin")]
    assert main(["compare", *paths, "--format", "csv"]) == 0
    text = capsys.readouterr().out
    assert "resnet18" in text and "bert_tiny" in text
    assert text.count("simulated") >= 2


def test_training_runs_offline_under_a_scenario(tmp_path: Path) -> None:
    """--edge-scenario paces the inference suites' queries; a training step serves none, so
    the training suite runs back to back and its entry records no scenario."""
    report = tmp_path / "report.json"
    run_suites(
        str(SUITES / "test_training.py"),
        "--edge-board=sim:orin-nano",
        "--edge-quick",
        ONE_ITEM_BATCHES,
        "--workload=lstm_lm_train",
        "--edge-scenario=fixed-rate",
        "--edge-rate=1000",
        f"--edge-report={report}",
        cwd=tmp_path,
    )
    (entry,) = [t for t in json.loads(report.read_text())["tests"] if t["status"] == "passed"]
    assert entry["params"]["workload"] == "lstm_lm_train"
    assert "scenario" not in entry["params"] and "rate_hz" not in entry["params"]
    assert "deadline_misses" not in entry["metrics"]
