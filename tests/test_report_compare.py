"""``edgeenergy compare``: formats, gate exit status, and bad input (exit 2, no traceback)."""

from __future__ import annotations

import base64
import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.present.compare import Source, compare_table

FAIL = "energy_per_item:mean:5%"


def _save(path: Path, report: dict[str, Any]) -> Path:
    path.write_text(json.dumps(report))
    return path


@pytest.fixture
def reports(tmp_path: Path) -> dict[str, Path]:
    return {
        "orin": _save(tmp_path / "orin.json", synthetic_report(seed=1, repeats=10)),
        "orin_worse": _save(
            tmp_path / "orin2.json", synthetic_report(seed=2, repeats=10, energy_scale=1.1)
        ),
        "orin_same": _save(tmp_path / "orin3.json", synthetic_report(seed=3, repeats=10)),
        "nano": _save(
            tmp_path / "nano.json", synthetic_report(sim_model="nano", seed=4, energy_scale=3.0)
        ),
    }


def _run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = compare_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_marks_simulated_and_ratios(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, reports["orin"], reports["nano"])
    assert code == 0 and err == ""
    assert "sim:nano (simulated)" in out and "sim:agx-orin (simulated)" in out
    # every row passed: said once above the table, not in a column
    assert out.splitlines()[1].startswith("same on every row: ") and "status passed" in out
    lines = [ln for ln in out.splitlines() if " #2 nano " in ln]
    assert len(lines) == 8
    for line in lines:
        after_device = line.split(" #2 nano ", 1)[1].split()
        assert after_device[1].endswith("x")  # J/item, then its ratio
        assert 2.7 < float(after_device[1][:-1]) < 3.3
    header = out.splitlines()[2]
    assert header.index("J/item") < header.index("p90 [ms]") < header.index("items/s")
    assert "#1 " + str(reports["orin"]) in out


def test_compare_table_joins_on_the_canonical_key() -> None:
    a = synthetic_report(seed=1, gpu_freqs_hz=(612e6,))
    b = synthetic_report(sim_model="nano", seed=2, gpu_freqs_hz=(612e6, 918e6), energy_scale=2)
    table = compare_table([Source("a", a), Source("b", b)])
    ratio_col = table.columns.index("J/item") + 1
    rows_b = [r for r in table.rows if r[6] == "#2"]
    assert len(rows_b) == len(b["tests"])
    matched = [r for r in rows_b if r[4] == "gpu612MHz"]
    unmatched = [r for r in rows_b if r[4] == "gpu918MHz"]
    assert matched and unmatched
    assert all(r[ratio_col] == pytest.approx(2.0, rel=0.1) for r in matched)
    assert all(r[ratio_col] is None for r in unmatched)


def test_gate_exit_status(reports: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, reports["orin"], reports["orin_worse"], "--fail", FAIL)
    assert code == 1 and "REGRESSION" in out and "gate FAILED" in out
    code, out, _ = _run(capsys, reports["orin"], reports["orin_same"], "--fail", FAIL)
    assert code == 0 and "gate passed" in out
    # across devices nothing is gated
    code, out, _ = _run(capsys, reports["orin"], reports["nano"], "--fail", FAIL)
    assert code == 0 and "no baseline for this device" in out


def test_baseline_option_file_and_directory(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = _run(capsys, reports["orin_worse"], "--baseline", reports["orin"], "--fail", FAIL)
    assert code == 1
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    (baselines / "nano.json").write_bytes(reports["nano"].read_bytes())
    code, out, _ = _run(capsys, reports["orin_worse"], "--baseline", baselines, "--fail", FAIL)
    assert code == 0 and "no baseline for this device" in out
    (baselines / "orin.json").write_bytes(reports["orin"].read_bytes())
    code, _, _ = _run(capsys, reports["orin_worse"], "--baseline", baselines, "--fail", FAIL)
    assert code == 1


def test_markdown_is_appended_to_github_step_summary(
    reports: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("previous step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = _run(
        capsys, reports["orin"], reports["orin_worse"], "--format", "markdown", "--fail", FAIL
    )
    assert code == 1
    assert out.startswith("### Energy comparison")
    assert "|---|" in out and "(simulated)" in out
    text = summary.read_text()
    assert text.startswith("previous step\n### Energy comparison")
    assert "| REGRESSION |" in text
    _run(capsys, reports["orin"], "--format", "csv")
    assert summary.read_text().count("### Energy comparison") == 2


def test_csv_parses_back(reports: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, reports["orin"], reports["nano"], "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 16
    for row in rows:
        assert float(row["J/item"]) > 0
        assert float(row["items/s"]) > 0
        assert row["device"].endswith("(simulated)")
    nano = [r for r in rows if r["report"] == "#2"]
    assert all(2.5 < float(r["ratio"]) < 3.5 for r in nano)


def test_html_is_self_contained_with_plots(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "out" / "compare.html"
    code, out, _ = _run(
        capsys, reports["orin"], reports["orin_worse"], "--format", "html", "--output", out_file,
        "--fail", FAIL,
    )  # fmt: skip
    assert code == 1 and out == ""
    page = out_file.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page and "REGRESSION" in page
    assert page.count("<img") >= 2
    payload = page.split('src="data:image/png;base64,', 1)[1].split('"', 1)[0]
    assert base64.b64decode(payload).startswith(b"\x89PNG\r\n\x1a\n")
    assert "http://" not in page and "https://" not in page


def test_plots_directory(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, reports["orin"], reports["nano"], "--plots", tmp_path / "png")
    assert code == 0
    pngs = sorted((tmp_path / "png").glob("*.png"))
    assert any(p.name == "cross_device.png" for p in pngs)
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert f"wrote {tmp_path / 'png' / 'cross_device.png'}" in err


def test_different_tool_versions_are_noted(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    report = json.loads(reports["nano"].read_text())
    report["tool"]["version"] = "0.0.1"
    reports["nano"].write_text(json.dumps(report))
    code, out, _ = _run(capsys, reports["orin"], reports["nano"])
    assert code == 0 and "different pytest-edgeenergy versions" in out


# -- bad input: exit 2, the file named, no traceback, nothing overwritten ------------------


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good = json.dumps(synthetic_report())
    newer = synthetic_report()
    newer["schema_version"] = 7
    cases = {
        "truncated": (good[: len(good) // 3], "truncated JSON"),
        "corrupt": (good.replace('"tests"', '"tests" x', 1), "corrupt JSON at line 1"),
        "foreign": ('{"benchmarks": [], "machine_info": {}}', "pytest-benchmark"),
        "newer": (json.dumps(newer), "newer pytest-edgeenergy (schema 7); this version reads 2"),
        "empty": (json.dumps(synthetic_report(n_tests=0)), "has no test results"),
    }
    out = {}
    for name, (text, message) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        out[name] = (path, message)
    out["missing"] = (tmp_path / "missing.json", "no such file")
    return out


def test_bad_reports_exit_2_naming_the_file_and_keep_output(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "keep.md"
    output.write_text("old output")
    for path, message in _bad_inputs(tmp_path).values():
        code, out, err = _run(
            capsys, reports["orin"], path, "--output", output, "--plots", tmp_path / "p"
        )
        assert code == 2, path
        assert out == ""
        assert err.startswith("edgeenergy compare: error: ") and str(path) in err
        assert message in err
        assert "Traceback" not in err
    assert output.read_text() == "old output"
    assert not (tmp_path / "p").exists()


def test_bad_expression_exit_2_lists_forms(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, reports["orin"], reports["orin_same"], "--fail", "energy:5%")
    assert code == 2 and out == ""
    assert "allowed gate expressions" in err


def test_baseline_without_matching_tests_exit_2(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other_tests = _save(
        tmp_path / "other.json", synthetic_report(seed=5, repeats=10, workloads=("alexnet",))
    )
    code, _, err = _run(capsys, reports["orin"], "--baseline", other_tests, "--fail", FAIL)
    assert code == 2
    assert f"{other_tests}: baseline has no results matching {reports['orin']}" in err


def test_output_may_not_overwrite_an_input(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before = reports["orin"].read_bytes()
    code, _, err = _run(capsys, reports["orin"], reports["nano"], "--output", reports["orin"])
    assert code == 2 and "is one of the input reports" in err
    assert reports["orin"].read_bytes() == before


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main([]) == 2
    assert compare_main(["a.json", "--format", "pdf"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert compare_main(["--help"]) == 0


def test_fail_needs_something_to_compare(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, reports["orin"], "--fail", FAIL)
    assert code == 2 and "needs a --baseline or at least two reports" in err


def test_command_line_process_never_prints_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "tool": ')
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_edgeenergy.commands", "compare", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{bad}: truncated JSON" in proc.stderr
