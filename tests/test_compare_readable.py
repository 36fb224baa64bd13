"""Comparisons people can read (issue 20, section 2).

- Power-mode roles ``max``, ``min``, ``default`` mean the same on every board, are recorded
  in the report as the clocks' ``min``/``max`` are, and join across boards.
- ``compare --join workload`` lines up each board's own point; rows that cannot join say why.
- Tables fit a terminal and a PR comment: what every row shares goes into a header line, a
  parameter that tells no rows apart is left to CSV, window figures get their own table;
  CSV keeps every column.
- A passing gate shows baseline, new and change of the rows it judged.

Reports come from real pytest sessions on virtual boards where it matters.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.board.detect import detect
from pytest_edgeenergy.board.nvpmodel import parse_conf
from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.control.grid import expand
from pytest_edgeenergy.control.knobset import knob_set
from pytest_edgeenergy.control.values import (
    POWER_MODE_ROLES,
    UnknownMode,
    is_maxn,
    mode_for_role,
    mode_watts,
    resolve_power_mode,
)
from pytest_edgeenergy.present import compare
from pytest_edgeenergy.present.compare import Source, compare_display, digest
from pytest_edgeenergy.present.tables import render_markdown
from pytest_edgeenergy.present.verdict import WITHIN_SHOWN, render_verdict, verdict_table
from pytest_edgeenergy.report.keys import MODE_ROLES, op_label, params_key, split_params
from pytest_edgeenergy.report.load import load_report
from pytest_edgeenergy.report.model import make_metric
from pytest_edgeenergy.verdict.independent import evaluate

tree = pytest.importorskip("pytest_edgeenergy.sim.tree", reason="virtual boards not available")

DATA = Path(__file__).parent / "data"

# -- 1. power-mode roles ----------------------------------------------------------------------

ROLES = {
    # model: (max, min, default) as each board's nvpmodel.conf names them
    "nano": ("MAXN", "5W", "MAXN"),
    "orin-nano": ("MAXN_SUPER", "7W", "25W"),
    "agx-orin": ("MAXN", "MODE_15W", "MODE_30W"),
    "thor": ("MAXN", "120W", "120W"),
    # no MAXN: the highest budget its names state, then the most cores
    "xavier-nx": ("MODE_20W_6CORE", "MODE_10W_DESKTOP", "MODE_15W_6CORE"),
}


@pytest.mark.parametrize("model", sorted(ROLES))
def test_each_role_resolves_to_the_boards_own_mode(model: str, tmp_path: Path) -> None:
    board = detect(tree.create(model, tmp_path / model))
    assert board.nvpmodel is not None
    names = tuple(resolve_power_mode(role, board.nvpmodel).name for role in POWER_MODE_ROLES)
    assert names == ROLES[model]
    assert resolve_power_mode("MAX", board.nvpmodel).name == ROLES[model][0]  # any case
    # the grid keeps the word beside the mode, as for clock min/max
    (point,) = expand({"power_mode": ["max"]}, knob_set(board), force=True)
    assert point.power_mode == ROLES[model][0] and point.id == ROLES[model][0]
    assert point.to_json()["as"] == {"power_mode": "max"}


CONF_WITHOUT_MAXN = """
< POWER_MODEL ID=1 NAME=MODE_10W >
CPU_ONLINE CORE_0 1
CPU_ONLINE CORE_1 1
GPU MAX_FREQ 520000000
< POWER_MODEL ID=2 NAME=MODE_15W >
CPU_ONLINE CORE_0 1
CPU_ONLINE CORE_1 1
CPU_ONLINE CORE_2 1
CPU_ONLINE CORE_3 1
GPU MAX_FREQ 670000000
< POWER_MODEL ID=3 NAME=MODE_30W_ALL >
CPU_ONLINE CORE_0 1
CPU_ONLINE CORE_1 1
CPU_ONLINE CORE_2 1
CPU_ONLINE CORE_3 1
CPU_ONLINE CORE_4 1
CPU_ONLINE CORE_5 1
CPU_ONLINE CORE_6 1
CPU_ONLINE CORE_7 1
CPU_DENVER_0 MAX_FREQ 1190400
GPU MAX_FREQ 905000000
< POWER_MODEL ID=4 NAME=MODE_30W_2CORE >
CPU_ONLINE CORE_0 1
CPU_ONLINE CORE_1 1
CPU_DENVER_0 MAX_FREQ 2112000
GPU MAX_FREQ 905000000
"""


def test_max_without_maxn_is_the_highest_budget_with_the_most_cpu() -> None:
    conf = parse_conf(CONF_WITHOUT_MAXN)
    assert mode_for_role("max", conf, source="--power-mode").name == "MODE_30W_ALL"
    assert mode_for_role("min", conf, source="--power-mode").name == "MODE_10W"


_MODE_NAMES = st.one_of(
    st.sampled_from(["MAXN", "MAXN_SUPER"]),
    st.integers(5, 130).map(lambda w: f"{w}W"),
    st.tuples(st.integers(5, 60), st.sampled_from(["2CORE", "ALL"])).map(
        lambda t: f"MODE_{t[0]}W_{t[1]}"
    ),
)


@given(
    st.lists(
        st.tuples(_MODE_NAMES, st.integers(1, 12), st.integers(100, 1300)),
        min_size=1,
        max_size=6,
        unique_by=lambda m: m[0],
    ),
    st.data(),
)
def test_roles_follow_the_rule_on_any_conf(
    modes: list[tuple[str, int, int]], data: st.DataObject
) -> None:
    default = data.draw(st.integers(0, len(modes) - 1))
    text = "".join(
        f"< POWER_MODEL ID={i} NAME={name} >\n"
        + "".join(f"CPU_ONLINE CORE_{c} 1\n" for c in range(cores))
        + f"GPU MAX_FREQ {mhz * 1_000_000}\n"
        for i, (name, cores, mhz) in enumerate(modes)
    )
    conf = parse_conf(text + f"< PM_CONFIG DEFAULT={default} >\n")
    top = mode_for_role("max", conf, source="--power-mode")
    low = mode_for_role("min", conf, source="--power-mode")
    assert mode_for_role("default", conf, source="--power-mode").id == default
    if any(is_maxn(m) for m in conf.modes):
        assert is_maxn(top)
    else:
        assert mode_watts(top) == max(mode_watts(m) or 0 for m in conf.modes)
    if not all(is_maxn(m) for m in conf.modes):
        named = [mode_watts(m) for m in conf.modes if not is_maxn(m)]
        assert not is_maxn(low) and mode_watts(low) == min(w or 0 for w in named)


@given(
    st.dictionaries(
        st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(
            lambda k: (
                k
                not in {
                    "workload",
                    "batch_size",
                    "graph_mode",
                    "precision",
                    "operating_point",
                    "runtime",
                    "export_cache",
                    "onnx_opset",
                }
            )
        ),
        st.one_of(
            st.integers(-5, 10**6),
            st.text(st.characters(blacklist_characters="=,\n"), max_size=12),
            st.lists(st.integers(0, 9), max_size=3),
        ),
        max_size=5,
    )
)
def test_parameters_split_back_into_columns(params: dict[str, Any]) -> None:
    pairs = split_params(params_key(params))
    assert [name for name, _ in pairs] == sorted(params)
    for name, value in pairs:  # a JSON list keeps its commas in its value
        if isinstance(params[name], list):
            assert value == json.dumps(params[name], separators=(",", ":"))


def test_unknown_role_or_missing_default_is_a_clear_error(tmp_path: Path) -> None:
    conf = detect(tree.create("orin-nano", tmp_path / "b")).nvpmodel
    with pytest.raises(UnknownMode) as info:
        resolve_power_mode("maximum", conf, source="--power-mode")
    message = str(info.value)
    assert message.startswith("--power-mode maximum: power mode 'maximum' is not defined")
    assert "0 15W, 1 25W, 2 MAXN_SUPER, 3 7W" in message
    assert "or a role: max (MAXN_SUPER), min (7W), default (25W)" in message
    assert message.endswith("(did you mean 'max'?)")
    no_default = parse_conf(CONF_WITHOUT_MAXN)  # no PM_CONFIG line
    with pytest.raises(UnknownMode, match=r"--power-mode default: .* names no default mode "):
        resolve_power_mode("default", no_default, source="--power-mode")


def test_role_labels_join_across_boards() -> None:
    assert MODE_ROLES == POWER_MODE_ROLES  # the report layer's copy of the words
    assert op_label("power_mode=max") == "mode max"
    assert op_label("gpu_freq_hz=min,power_mode=default") == "mode default gpu min"
    assert op_label("power_mode=MAXN_SUPER") == "MAXN_SUPER"


# -- real reports from pytest sessions on virtual boards ------------------------------------

DEMO = """
import time
import zlib


def test_compress(energy, operating_point):
    data = bytes(range(256)) * 1024
    with energy.window("compress"):
        end = time.monotonic() + 0.2
        while time.monotonic() < end:
            zlib.compress(data)
"""


def _session(folder: Path, model: str, report: str, *options: str) -> Path:
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "test_demo.py", f"--edge-board=sim:{model}",
            f"--edge-report={report}", "--edge-idle-s=0.2", "--edge-sim-load=0.3",
            "-p", "no:cacheprovider", "-p", "no:randomly", "-q", *options,
        ],
        cwd=folder, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / report


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each board at its own mode (15W, MODE_30W), and both at the roles default and max."""
    folder = tmp_path_factory.mktemp("runs")
    (folder / "test_demo.py").write_text(DEMO)
    return {
        "nano15": _session(folder, "orin-nano", "orin-nano.json", "--power-mode=15W"),
        "agx30": _session(folder, "agx-orin", "agx-orin.json", "--power-mode=MODE_30W"),
        "nano_roles": _session(
            folder, "orin-nano", "orin-nano-roles.json", "--power-mode=default,max"
        ),
        # MODE_30W -> MAXN changes GPU power gating: forced (a virtual board just does it)
        "agx_roles": _session(
            folder,
            "agx-orin",
            "agx-orin-roles.json",
            "--power-mode=default,max",
            "--edge-force-mode",
        ),
    }


def _compare(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = compare_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _unwrapped(text: str) -> str:
    """``text`` with each wrapped line's continuations (indented) joined back to it."""
    return re.sub(r"\n {2,}", " ", text)


def _table_lines(text: str, rows: int) -> list[str]:
    """Title, header, column and ``rows`` row lines of a rendered text table (no notes)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line) <= {"-", " "} and line)
    return lines[: rule + 1 + rows]


def test_the_role_is_recorded_beside_the_mode_read_back(runs: dict[str, Path]) -> None:
    report = load_report(runs["agx_roles"])
    points = {
        t["params"]["operating_point"]["requested"]["as"]["power_mode"]: t["params"][
            "operating_point"
        ]
        for t in report["tests"]
    }
    assert points["max"]["requested"]["power_mode"] == "MAXN"
    assert points["max"]["read_back"]["power_mode"]["name"] == "MAXN"
    assert points["default"]["requested"]["power_mode"] == "MODE_30W"
    assert points["default"]["read_back"]["power_mode"]["id"] == 2


def test_roles_join_across_boards_naming_each_boards_mode(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _compare(capsys, runs["nano_roles"], runs["agx_roles"], "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted(r["operating point"] for r in rows) == [
        "mode default", "mode default", "mode max", "mode max",
    ]  # fmt: skip
    assert all(r["ratio"] for r in rows)  # every row joined: a ratio, none missing
    code, out, _ = _compare(capsys, runs["nano_roles"], runs["agx_roles"])
    assert "#1 points: mode default = 25W, mode max = MAXN_SUPER" in out
    assert "#2 points: mode default = MODE_30W, mode max = MAXN" in out


def test_own_points_do_not_join_by_default_and_say_why(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _compare(capsys, runs["nano15"], runs["agx30"])
    assert code == 0
    agx_row = next(line for line in out.splitlines() if "#2 agx-orin" in line)
    assert "MODE_30W" in agx_row and agx_row.split()[-1] == "-"  # no ratio
    assert (
        f"{runs['agx30']} has no result at operating point 15W of #1 (its points: MODE_30W): "
        "1 row without ratio; use --join workload to line up each board's own point"
    ) in _unwrapped(out)


def test_join_workload_lines_up_each_boards_own_point(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _compare(capsys, runs["nano15"], runs["agx30"], "--join", "workload")
    assert code == 0
    assert "point per report: #1 15W, #2 MODE_30W" in out
    agx_row = next(line for line in out.splitlines() if line.startswith("#2 agx-orin"))
    assert agx_row.split()[-1].endswith("x")  # a ratio to the Orin Nano's 15W row
    assert "has no result at operating point" not in out
    assert "each report at its own operating point (--join workload)" in _unwrapped(out)
    code, out, _ = _compare(
        capsys, runs["nano15"], runs["agx30"], "--join", "workload", "--format", "csv"
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["operating point"] for r in rows] == ["15W", "MODE_30W"]
    assert float(rows[1]["ratio"]) > 0


def test_join_workload_needs_one_point_per_test(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _compare(capsys, runs["nano_roles"], runs["agx30"], "--join", "workload")
    assert code == 2 and out == ""
    assert f"{runs['nano_roles']}: --join workload lines up one operating point" in err
    assert "test_compress[25W] (mode default)" in err and "(mode max)" in err


def test_readme_example_fits_a_terminal_and_a_pr_comment(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _compare(capsys, runs["nano_roles"], runs["agx_roles"])
    assert code == 0
    assert max(map(len, _table_lines(out, 4))) < 120
    assert "same on every row: workload test_demo.py::test_compress; status passed" in out
    code, out, _ = _compare(capsys, runs["nano_roles"], runs["agx_roles"], "--format", "markdown")
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + 4 and max(map(len, rows)) < 120
    assert len({line.count(" | ") for line in rows[2:]}) == 1  # one cell per column


# -- 3. tables that fit -----------------------------------------------------------------------


def _suite_like(sim_model: str = "agx-orin", seed: int = 1) -> dict[str, Any]:
    """A report whose tests carry parameters as the suites' do: some the same everywhere,
    one following from the workload, one telling two tests of a workload apart."""
    report = synthetic_report(sim_model=sim_model, seed=seed, gpu_freqs_hz=(612e6,))
    tests = []
    for test in report["tests"]:
        for runtime in ("torch", "onnxruntime"):
            copy_ = copy.deepcopy(test)
            copy_["id"] = test["id"].replace("]", f"-{runtime}]")
            params = copy_["params"]
            params.update(
                input="3x224x224 image",
                weights="random",
                model_params={"resnet18": 11689512, "mobilenet_v2": 3504872}[params["workload"]],
                runtime=runtime,
            )
            tests.append(copy_)
    report["tests"] = tests
    return report


def test_shared_parameters_go_to_a_header_and_dependent_ones_to_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_suite_like()))
    b.write_text(json.dumps(_suite_like("orin-nano", seed=2)))
    code, out, _ = _compare(capsys, a, b)
    assert code == 0
    lines = out.splitlines()
    assert " ".join(" ".join(lines[1:3]).split()) == (
        "same on every row: precision fp16; point gpu612MHz; "
        "input=3x224x224 image; weights=random; status passed"
    )
    # the runtime in the graph column's place where it is not torch, as the run table says
    assert lines[3].split()[:4] == ["workload", "batch", "graph", "report"]
    assert {line.split()[2] for line in lines[5:21]} == {"eager", "onnxruntime"}
    assert "in CSV only (each follows from the columns shown): model_params, runtime" in out
    assert max(map(len, _table_lines(out, 16))) < 120
    code, out, _ = _compare(capsys, a, b, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 16
    assert all("model_params=" in r["params"] and "input=" in r["params"] for r in rows)
    assert {r["graph"] for r in rows} == {"eager"} and all(r["status"] for r in rows)


def test_window_figures_get_their_own_table_and_csv_keeps_every_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = DATA / "report_v1_energy_and_bench.json"
    code, out, _ = _compare(capsys, report, report)
    assert code == 0
    first, windows = out.split("Energy comparison: windows\n")
    assert "J/item" in first and "energy [J]" not in first
    assert "J/item" not in windows and "energy [J]" in windows
    assert windows.splitlines()[0].startswith("same on every row: workload test_v1.py::")
    assert windows.splitlines()[1].split()[:3] == ["n", "window", "report"]
    code, out, _ = _compare(capsys, report, report, "--format", "csv")
    columns = next(csv.reader(io.StringIO(out)))
    assert columns[:9] == [
        "workload", "batch", "graph", "precision", "operating point", "params", "report",
        "device", "status",
    ]  # fmt: skip
    assert "J/item" in columns and "energy [J]" in columns and "time [s]" in columns


def test_markdown_of_one_report_rendered_ahead_equals_the_whole_table() -> None:
    report = load_report(DATA / "report_v1_energy_and_bench.json")
    whole = compare.TableBuilder()
    ahead = compare.TableBuilder(markdown=True)
    whole.add("r.json", digest(report))
    ahead.add("r.json", digest(report))
    shown = ahead.display()
    for (table, _), (section, lines) in zip(whole.display(), shown, strict=True):
        assert "ratio" not in table.columns  # one report: no ratios
        assert render_markdown(section, rendered=lines) == render_markdown(table)
    tables = compare_display([Source("r.json", report)])
    assert [t.title for t in tables] == ["Energy comparison", "Energy comparison: windows"]


# -- a passing gate shows what it judged ------------------------------------------------------


def _scaled(report: dict[str, Any], factor: float) -> dict[str, Any]:
    out = copy.deepcopy(report)
    for test in out["tests"]:
        samples = test["metrics"]["energy_per_item"]["samples"]
        test["metrics"]["energy_per_item"] = make_metric(
            "energy_per_item", [x * factor for x in samples]
        )
    return out


def test_passing_gate_rows_have_baseline_new_and_change() -> None:
    base = synthetic_report(repeats=8, noise=0.01, seed=3)
    verdict = evaluate(base, _scaled(base, 1.01), ["energy_per_item:mean:5%"])
    assert not verdict.failed
    table = verdict_table(verdict)
    assert table.columns[:4] == ["test", "baseline", "new", "change %"]
    assert len(table.rows) == len(verdict.rows) == 8
    for row in table.rows:
        assert row[1] > 0 and row[2] > 0 and row[3] == pytest.approx(1.0, abs=0.01)
    assert table.header == ["same on every row: metric energy_per_item:mean; threshold 5%"]
    text = render_verdict(verdict)  # the signature other callers use, unchanged
    assert "+1.00" in text and text.rstrip().endswith("gate passed: 8 within")


def test_many_within_rows_show_those_that_changed_most() -> None:
    base = synthetic_report(repeats=8, noise=0.01, seed=3, n_tests=WITHIN_SHOWN + 10)
    new = _scaled(base, 1.0)
    moved = new["tests"][5]
    moved["metrics"]["energy_per_item"] = make_metric(
        "energy_per_item", [x * 1.03 for x in moved["metrics"]["energy_per_item"]["samples"]]
    )
    verdict = evaluate(base, new, ["energy_per_item:mean:5%"])
    table = verdict_table(verdict)
    tests = [row for row in table.rows if "::" in row[0]]
    assert len(tests) == WITHIN_SHOWN and moved["id"] in {row[0] for row in tests}
    assert "10 more rows within the threshold not shown (change +0.00 % .. +0.00 %)" in table.notes
    every = verdict_table(verdict, all_rows=True)
    assert len(every.rows) == len(base["tests"]) + len(verdict.suite)


def test_failing_gate_keeps_every_regression_with_p_value_and_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = synthetic_report(repeats=8, noise=0.01, seed=3)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(base))
    b.write_text(json.dumps(_scaled(base, 1.2)))
    code, out, _ = _compare(capsys, a, b, "--fail", "energy_per_item:mean:5%")
    assert code == 1
    gate = out[out.index("Energy gate:") :].splitlines()
    assert gate[2].split() == ["test", "baseline", "new", "change", "%", "p-value", "verdict"]
    regressions = [line for line in gate if line.endswith("REGRESSION")]
    assert len(regressions) == 8
    assert all("+20.00" in line for line in regressions)
    # CSV keeps every column, and the verdict goes to stderr beside it
    verdict = evaluate(base, _scaled(base, 1.2), ["energy_per_item:mean:5%"])
    rows = list(csv.DictReader(io.StringIO(render_verdict(verdict, "csv"))))
    assert len(rows) == 8 and {"metric", "threshold", "p-value", "note"} <= set(rows[0])
    code, _, err = _compare(capsys, a, b, "--fail", "energy_per_item:mean:5%", "--format", "csv")
    assert code == 1 and err.count("REGRESSION") == 8
