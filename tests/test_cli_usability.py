"""What users of the ``edgeenergy`` command see (issue 9): board clocks in the text form,
frozen virtual boards, unusable tegrastats logs, complete JSON errors, counted nouns, and
a missing ``[analysis]`` extra named instead of a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.plugin.options import Settings
from pytest_edgeenergy.plugin.session import PluginSession
from pytest_edgeenergy.present.summary import summary_lines
from pytest_edgeenergy.report.load import ReportError, load_report
from pytest_edgeenergy.run.records import TestEnergy as Record
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create

ROOT = Path(__file__).resolve().parents[1]
EXTRA_HINT = "pip install 'pytest-edgeenergy[analysis]'"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- board: clocks and offered frequencies in the text form ----------------------------


def test_board_text_shows_clocks_cores_and_offered_frequencies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = create("orin-nano", tmp_path / "board")
    code, out, _ = run_cli(capsys, "board", "--root", str(root))
    assert code == 0
    knobs = json.loads(run_cli(capsys, "board", "--root", str(root), "--json")[1])["knobs"]
    policy = knobs["cpufreq"][0]
    lines = out.splitlines()
    cpu = next(line for line in lines if line.strip().startswith(policy["name"]))
    assert policy["governor"] in cpu
    assert f"min {policy['min_freq_hz'] / 1e6:g}" in cpu
    assert f"max {policy['max_freq_hz'] / 1e6:g}" in cpu
    assert f"cur {policy['cur_freq_hz'] / 1e6:g}" in cpu
    offered = policy["available_freqs_hz"]
    assert len(offered) > 8  # a long table: count and range
    assert f"{len(offered)} steps, {min(offered) / 1e6:g}..{max(offered) / 1e6:g} MHz" in cpu
    gpu = knobs["gpu"]
    gpu_line = next(line for line in lines if line.strip().startswith(gpu["name"]))
    assert len(gpu["available_freqs_hz"]) <= 8  # a short table: every value
    listed = ", ".join(f"{f / 1e6:g}" for f in sorted(gpu["available_freqs_hz"]))
    assert f"offers {listed} MHz" in gpu_line and gpu["governor"] in gpu_line
    online = len(knobs["cpu"]["online"])
    assert f"cpu:     {online} of {len(knobs['cpu']['present'])} cores online" in out
    assert f"emc:     {knobs['emc']['rate_hz'] / 1e6:g} MHz" in out


# -- measure: a virtual board nothing animates ------------------------------------------


def test_measure_warns_when_the_virtual_board_is_frozen(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = create("orin-nano", tmp_path / "board")
    code, out, err = run_cli(capsys, "measure", "--root", str(root), "--seconds", "0.2")
    assert code == 0
    assert "SIMULATED" in out
    assert "warning" in err and "not animated" in err and "edgeenergy sim run" in err
    code, out, err = run_cli(
        capsys, "measure", "--root", str(root), "--seconds", "0.2", "--json"
    )
    data = json.loads(out)
    assert code == 0 and data["simulated"] is True and "total" in data
    assert len(data["warnings"]) == 1 and "frozen" in data["warnings"][0]


def test_measure_on_an_animated_board_has_no_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = create("orin-nano", tmp_path / "board")
    (root / LOAD_OVERRIDE).write_text("0.3\n")
    with SimProcess(root):
        code, out, err = run_cli(
            capsys, "measure", "--root", str(root), "--seconds", "0.3", "--json"
        )
    assert code == 0, err
    assert json.loads(out)["warnings"] == []
    assert "warning" not in err


# -- tegrastats-energy: an unusable log is bad input -------------------------------------


def test_tegrastats_energy_on_an_unusable_log_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "not-tegrastats.log"
    log.write_text("hello\nthis is no tegrastats output\n")
    code, out, err = run_cli(capsys, "tegrastats-energy", str(log), "--interval-ms", "100")
    assert code == 2
    assert str(log) in err and "not a usable tegrastats log" in err
    assert "2 unusable lines" in err and "Traceback" not in err
    assert "2 unusable lines" in out  # the table is still printed


# -- JSON errors say the file, truncated or corrupt, and where --------------------------


@pytest.mark.parametrize(
    ("tail", "inside"),
    [
        ('"workload": "resn', "inside a string that starts at line 3, column 16"),
        ('"valid": tr', "inside the value 'tr' at line 3, column 13"),
        ('"value": 1.', "inside a number"),
        ('"id": "x\\u00', "inside a \\u escape at line 3, column 13"),
    ],
)
def test_a_report_cut_inside_a_value_reads_as_truncated(
    tmp_path: Path, tail: str, inside: str
) -> None:
    path = tmp_path / "cut.json"
    path.write_text('{\n "tests": [\n  {' + tail)
    with pytest.raises(ReportError) as info:
        load_report(path)
    message = str(info.value)
    assert message.startswith(f"{path}: truncated JSON: the text ends early at line 3, column ")
    assert message.endswith(f"({inside})")


def test_a_report_cut_inside_a_utf8_character_reads_as_truncated(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    text = '{"model": "Jetson Orin \u00e9"}'.encode()  # e-acute: 2 bytes in UTF-8
    path.write_bytes(text[: text.index(b"\xc3") + 1])
    with pytest.raises(ReportError, match=r"cut.json: truncated JSON.*UTF-8 character at byte"):
        load_report(path)


def test_corrupt_json_messages_end_complete(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"a": "b\x01c"}')
    with pytest.raises(ReportError) as info:
        load_report(path)
    assert str(info.value) == f"{path}: corrupt JSON at line 1, column 9: Invalid control character"


# -- counted nouns in the summary ---------------------------------------------------------


def test_summary_counts_one_test_in_the_singular() -> None:
    es = PluginSession(Settings(None, None, 0.01, "auto", None, 0.0, requested=False))
    es.engine.tests["t.py::test_a"] = Record("t.py::test_a", status="skipped")
    # an edge_bench test counts there when it has a run in the benchmark table
    es.engine.tests["t.py::test_b"] = Record(
        "t.py::test_b", status="passed", metrics={}, extra={"runs": [{"label": "steady"}]}
    )
    lines = summary_lines(es)
    assert "1 test skipped before measuring (reasons: pytest -rs)" in lines
    assert "1 test measured with edge_bench: 1 run, one row in the benchmark table below" in lines
    es.engine.tests["t.py::test_c"] = Record("t.py::test_c", status="skipped")
    assert "2 tests skipped before measuring (reasons: pytest -rs)" in summary_lines(es)


# -- a missing [analysis] extra -----------------------------------------------------------

WITHOUT = textwrap.dedent(
    """
    import sys
    for name in sys.argv[1].split(","):
        sys.modules[name] = None  # as if not installed
    from pytest_edgeenergy.commands import main
    sys.exit(main(sys.argv[2:]))
    """
)


def cli_without(modules: str, *argv: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "without.py"
    script.write_text(WITHOUT)
    return subprocess.run(
        [sys.executable, str(script), modules, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


@pytest.fixture
def two_reports(tmp_path: Path) -> list[str]:
    paths = []
    for seed, scale in ((1, 1.0), (2, 1.5)):  # 50 % more energy: the gate runs its test
        path = tmp_path / f"r{seed}.json"
        path.write_text(json.dumps(synthetic_report(seed=seed, repeats=5, energy_scale=scale)))
        paths.append(str(path))
    return paths


@pytest.mark.parametrize(
    ("missing", "args", "needs"),
    [
        ("matplotlib", ["--plots", "PLOTS"], "needs matplotlib"),
        ("matplotlib", ["--format", "html"], "needs matplotlib"),
        ("pandas", ["--format", "html"], "needs pandas"),
        ("scipy", ["--fail", "energy_per_item:mean:5%"], "needs scipy"),
    ],
)
def test_compare_without_the_analysis_extra_exits_2_naming_it(
    tmp_path: Path, two_reports: list[str], missing: str, args: list[str], needs: str
) -> None:
    args = [str(tmp_path / "plots") if a == "PLOTS" else a for a in args]
    done = cli_without(missing, "compare", *two_reports, *args, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert needs in done.stderr and EXTRA_HINT in done.stderr
    assert "Traceback" not in done.stderr


def test_load_without_pandas_names_the_extra(tmp_path: Path, two_reports: list[str]) -> None:
    script = tmp_path / "load.py"
    script.write_text(
        "import sys\nsys.modules['pandas'] = None\n"
        "from pytest_edgeenergy.extras import MissingExtra\n"
        "from pytest_edgeenergy.report.load import load\n"
        "try:\n    load(sys.argv[1:])\nexcept MissingExtra as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script), *two_reports],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "needs pandas" in done.stdout and EXTRA_HINT in done.stdout
