"""End to end: the classification suite's quick run on a virtual Orin Nano measures
MobileNet-V2 on torch and on ONNX Runtime; compare shows both runtimes side by side, and
a report written before the runtime dimension still matches the torch result."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from suite_runs import ONE_ITEM_BATCHES, SUITES, clean_env, needs, run_suites

pytestmark = needs(
    "torch",
    "torchvision",
    "onnxruntime",
    "onnx",
    "onnxscript",
    reason="the ONNX Runtime suites need torch and the [onnx] extra",
)

SUITE = SUITES / "test_classification.py"
TORCH_ID = "mobilenet_v2-eager-fp32-cpu"
ORT_ID = "mobilenet_v2-onnxruntime-fp32-cpu"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    """One quick run (module scope: the export and both measurements take ~30 s)."""
    folder = tmp_path_factory.mktemp("runtimes")
    report = folder / "report.json"
    proc = run_suites(
        str(SUITE),
        "--workload",
        "mobilenet_v2",
        "--edge-board=sim:orin-nano",
        "--edge-quick",
        ONE_ITEM_BATCHES,
        f"--edge-report={report}",
        "-rs",
        cwd=folder,
        env=clean_env(EDGEENERGY_CACHE=str(folder / "cache")),  # a fresh export cache
    )
    return json.loads(report.read_text()), proc.stdout, report


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Tests by their parameter id (``bs1-dvfs-mobilenet_v2-eager-fp32-cpu``)."""
    return {t["id"].rsplit("[", 1)[1].rstrip("]"): t for t in report["tests"]}


def test_quick_run_measures_torch_and_onnxruntime(
    run: tuple[dict[str, Any], str, Path],
) -> None:
    report, stdout, _ = run
    tests = _by_id(report)
    passed = {i for i, t in tests.items() if t["status"] == "passed"}
    assert passed == {f"bs1-dvfs-{TORCH_ID}", f"bs1-dvfs-{ORT_ID}"}
    ort = tests[f"bs1-dvfs-{ORT_ID}"]
    assert ort["params"]["runtime"] == "onnxruntime"
    assert ort["params"]["provider"] == "CPUExecutionProvider"
    assert ort["params"]["graph_mode"] == "onnx" and ort["params"]["export_cache"] == "miss"
    assert tests[f"bs1-dvfs-{TORCH_ID}"]["params"]["runtime"] == "torch"
    for entry in (ort, tests[f"bs1-dvfs-{TORCH_ID}"]):
        metrics = entry["metrics"]
        assert metrics["energy_per_item"]["unit"] == "J/item"
        assert metrics["energy_per_item"]["value"] > 0
        assert metrics["load.energy_j"]["value"] > 0  # export + session inside load
    assert any("onnxruntime/fp32/cpu" in line for line in stdout.splitlines())
    skipped = [t for t in report["tests"] if t["status"] == "skipped"]
    assert any("tensorrt" in t["id"] and "cuda" in t["reason"] for t in skipped)


def test_compare_of_one_report_shows_both_runtimes(
    run: tuple[dict[str, Any], str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_edgeenergy.commands import main

    _, _, path = run
    assert main(["compare", str(path), "--format", "csv"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("mobilenet_v2,")]
    steady = [r for r in rows if "[load]" not in r]
    assert len(steady) == 2
    (ort_row,) = [r for r in steady if "runtime=onnxruntime" in r]
    assert ",onnx,fp32," in ort_row and "provider=CPUExecutionProvider" in ort_row
    (torch_row,) = [r for r in steady if "runtime=" not in r]
    assert ",eager,fp32," in torch_row


def test_a_report_without_runtimes_still_matches_the_torch_result(
    run: tuple[dict[str, Any], str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pytest_edgeenergy.commands import main

    report, _, path = run
    old = copy.deepcopy(report)  # as written before the runtime dimension existed
    old["tests"] = [t for t in old["tests"] if t["params"].get("runtime") in (None, "torch")]
    for t in old["tests"]:
        t["params"].pop("runtime", None)
    old_path = tmp_path / "old.json"
    old_path.write_text(json.dumps(old))
    assert main(["compare", str(old_path), str(path), "--format", "csv"]) == 0
    rows = [r.split(",") for r in capsys.readouterr().out.splitlines()]
    steady = [r for r in rows if r[0] == "mobilenet_v2" and "[load]" not in r[5]]
    torch_rows = [r for r in steady if r[2] == "eager"]
    # one key, a row from each report: the old result joined the new torch one
    assert [r[6] for r in torch_rows] == ["#1", "#2"]
    assert torch_rows[0][:6] == torch_rows[1][:6]
    (ort_row,) = [r for r in steady if r[2] == "onnx"]
    assert ort_row[6] == "#2"  # the new runtime has no counterpart in the old report
    pytest.importorskip("scipy", reason="the gate needs the [analysis] extra")
    from pytest_edgeenergy.verdict.independent import evaluate

    verdict = evaluate(old, report, ["energy_per_item:mean:1000%"])
    verdicts = {r.test_id.rsplit("-dvfs-", 1)[1].rstrip("]"): r.verdict for r in verdict.rows}
    assert verdicts[TORCH_ID] != "no-baseline"  # judged against the old result
    assert verdicts[ORT_ID] == "no-baseline"
