"""Wording that says what it means (issue 28, section 2): no float dust shown for a figure
(``-1.4e-14`` J), compare names a runtime as the benchmark table does, its notes wrap at the
table's width, and a figure not drawn for want of a batch size says why for any test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_helpers import virtual_report
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.present.plots import render_all
from pytest_edgeenergy.present.summary import _fmt
from pytest_edgeenergy.present.tables import (
    Change,
    Table,
    render_html_table,
    render_markdown,
    render_text,
    wrapped_notes,
)
from pytest_edgeenergy.report.load import frame_from_rows, long_rows
from pytest_edgeenergy.report.model import (
    build_operating_point,
    build_params,
    build_result,
    build_validity,
    make_metric,
)

DUST_J = -1.4e-14


# -- float dust ------------------------------------------------------------------------------


def _energy_table() -> Table:
    return Table(
        ["part", "energy [J]", "p-value"],
        [["train", 262.61, 0.5], ["infer", 48.43, 1e-15], ["other", DUST_J, 0.02]],
    )


def test_float_dust_reads_zero_in_every_rendered_table() -> None:
    text = render_text(_energy_table())
    [other] = [line for line in text.splitlines() if line.startswith("other")]
    assert other.split()[1] == "0"
    markdown = render_markdown(_energy_table())
    assert "| other | 0 |" in markdown
    html = render_html_table(_energy_table())
    assert "e-14" not in text + markdown + html


def test_a_tiny_p_value_is_shown_as_it_is() -> None:
    text = render_text(_energy_table())
    [infer] = [line for line in text.splitlines() if line.startswith("infer")]
    assert infer.split()[2] == "1.000e-15"


def test_a_small_figure_that_is_not_dust_is_shown_as_it_is() -> None:
    table = Table(["metric", "value"], [["energy_per_item", 2.5e-06], ["energy_net_j", -0.0173]])
    assert render_text(table).split()[-3:] == ["2.500e-06", "energy_net_j", "-0.01730"]


def test_a_fixed_width_figure_rounding_to_zero_has_no_sign() -> None:
    assert (_fmt(DUST_J, ".4f"), _fmt(-0.0173, ".4f"), _fmt(None, ".4f")) == (
        "0.0000",
        "-0.0173",
        "-",
    )
    table = Table(["metric", "change %"], [["energy_j", Change(DUST_J)], ["power", Change(-1.5)]])
    assert render_text(table).split()[-3:] == ["+0.00", "power", "-1.50"]


# -- compare: the runtime named as the benchmark table names it; notes wrapped ---------------


def _report(runs: list[tuple[dict[str, Any], float]]) -> dict[str, Any]:
    """One mobilenet_v2 result at batch 8 per run: (its parameters, energy per item J)."""
    tests = []
    for i, (params, per_item_j) in enumerate(runs):
        tests.append(
            build_result(
                f"suites/test_x.py::test_x[{i}]",
                status="passed",
                params=build_params(
                    workload="mobilenet_v2",
                    batch_size=8,
                    operating_point=build_operating_point({}, {}),
                    **params,
                ),
                metrics={"energy_per_item": make_metric("energy_per_item", [per_item_j] * 3)},
                validity=build_validity(samples=150, valid=True),
                duration_s=1.0,
            )
        )
    return virtual_report(tests)


EAGER = {"graph_mode": "eager", "precision": "fp32"}
ONNX = {"graph_mode": "onnx", "precision": "fp32", "runtime": "onnxruntime"}


def _compare(capsys: pytest.CaptureFixture[str], *paths: Path) -> str:
    assert compare_main([str(p) for p in paths]) == 0
    return capsys.readouterr().out


def test_compare_names_the_runtime_in_the_graph_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_report([(EAGER, 0.125), (ONNX, 0.031)])))
    lines = _compare(capsys, path).splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    assert lines[rule - 1].split()[0] == "graph"
    assert [line.split()[0] for line in lines[rule + 1 : rule + 3]] == ["eager", "onnxruntime"]


def test_compare_notes_wrap_at_the_tables_width(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "energy-reports"  # pytest's tmp path: about 80 characters here
    folder.mkdir()
    paths = []
    for name in ("base", "new"):
        paths.append(folder / f"{name}.json")
        paths[-1].write_text(json.dumps(synthetic_report(workloads=("resnet18",))))
    lines = _compare(capsys, *paths).splitlines()
    rule = next(line for line in lines if line.startswith("---"))
    notes = lines[lines.index(rule) + 1 :]
    notes = notes[next(i for i, line in enumerate(notes) if line.startswith("#1")) :]
    width = max(len(rule), 100)
    # a word longer than the width (a path) stays whole on a line of its own
    assert all(len(line) <= width or " " not in line.strip() for line in notes), notes
    assert len(notes) > 3  # the report lines were wrapped
    said = " ".join(line.strip() for line in notes)
    assert f"#1 {paths[0]}: sim:agx-orin (simulated)" in said  # nothing lost in the wrapping
    assert notes[1].startswith("  ")  # a continuation is indented


@pytest.mark.parametrize("width", range(20, 80))
def test_a_device_label_and_a_count_stay_on_one_line_whatever_the_width(width: int) -> None:
    """Where a note breaks depends on a path's length (a temporary directory's): the
    device label ``sim:agx-orin (simulated)`` was split across lines at some lengths."""
    note = "#1 /tmp/a/b/orin.json: sim:agx-orin (simulated), L4T 36.4.3, 8 tests"
    lines = [line.strip() for line in wrapped_notes([note], width)]
    assert not any(line.startswith("(simulated)") for line in lines), lines
    assert not any(line.startswith("tests") for line in lines), lines
    assert " ".join(lines) == note


# -- plots -----------------------------------------------------------------------------------


def test_a_bench_result_without_a_batch_size_is_not_called_an_energy_fixture_test(
    tmp_path: Path,
) -> None:
    report = synthetic_report(workloads=("resnet18",), batch_sizes=(8,))
    for test in report["tests"]:
        test["params"]["batch_size"] = None
    done = render_all(frame_from_rows(long_rows(report, "r.json")), tmp_path)
    [note] = [n.reason for n in done.notes if n.plot == "energy_vs_batch"]
    assert note == "these results carry no batch size (no test took the batch_size parameter)"


# -- counted nouns ---------------------------------------------------------------------------


def test_one_item_one_sample_one_window_are_singular() -> None:
    from pytest_edgeenergy.report.load import _stats_problem

    assert _stats_problem([1.0], None) == "has 1 sample but no stats"
    stats = {"n": 2, "min": 1.0, "max": 1.0, "mean": 1.0, "median": 1.0, "stdev": 0.0}
    assert _stats_problem([1.0], stats) == "stats.n is 2 but there is 1 sample"
