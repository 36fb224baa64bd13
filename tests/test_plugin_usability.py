"""What users of the plugin see (issue 9): dry-run writes without ``-s``, the report path
checked before any test runs, ``--edge-report-overwrite``, no empty report, counted nouns,
option placeholders in ``--help``, a missing ``[analysis]`` extra named.

Each test runs a real pytest session in a subprocess (``pytester.runpytest_subprocess``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

RUN_TIMEOUT_S = 120.0
SIM = "--edge-board=sim:orin-nano"
QUIET = ("--edge-idle-s=0", "-p", "no:cacheprovider")

MEASURES = """
import time

def test_measures(energy):
    with energy.window("work"):
        time.sleep(0.3)
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in [n for n in os.environ if n.startswith("EDGEENERGY_")]:
        monkeypatch.delenv(name)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*args, *QUIET, timeout=RUN_TIMEOUT_S)


def test_dry_run_writes_show_without_dash_s(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_p="def test_p(energy, operating_point):\n    pass\n")
    result = run(pytester, SIM, "--gpu-freq=max", "--edge-dry-run")
    result.assert_outcomes(passed=1)
    out = result.stdout.str() + result.stderr.str()
    assert re.search(r"edgeenergy dry-run: .*max_freq", out), out


def test_unwritable_report_path_is_a_usage_error_naming_option_and_path(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_m=MEASURES)
    result = run(pytester, SIM, "--edge-report=/proc/x.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--edge-report (command line)*/proc/x.json*no file can be*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    # Given in the environment, without a board option (the board would be set up lazily
    # by the first test): still refused before any test runs.
    monkeypatch.setenv("EDGEENERGY_REPORT", "/proc/x.json")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*EDGEENERGY_REPORT (environment)*/proc/x.json*"])
    assert "test_measures" not in result.stdout.str()


def test_existing_report_is_refused_early_then_replaced_with_overwrite(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_m=MEASURES)
    report = tmp_path / "r.json"
    report.write_text('{"mine": true}')
    refused = run(pytester, SIM, f"--edge-report={report}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines([f"*{report}*exists*--edge-report-overwrite*"])
    assert report.read_text() == '{"mine": true}'

    replaced = run(pytester, SIM, f"--edge-report={report}", "--edge-report-overwrite")
    replaced.assert_outcomes(passed=1)
    data = json.loads(report.read_text())
    assert [t["id"] for t in data["tests"]] == ["test_m.py::test_measures"]


def test_overwrite_from_environment_keeps_the_old_file_when_nothing_is_measured(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    report = tmp_path / "r.json"
    report.write_text('{"mine": true}')
    monkeypatch.setenv("EDGEENERGY_REPORT_OVERWRITE", "yes")
    run(pytester, SIM, f"--edge-report={report}").assert_outcomes(passed=1)
    assert report.read_text() == '{"mine": true}'  # replaced only by a finished test
    monkeypatch.setenv("EDGEENERGY_REPORT_OVERWRITE", "maybe")
    bad = run(pytester, SIM, f"--edge-report={report}")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*EDGEENERGY_REPORT_OVERWRITE (environment)*'maybe'*"])


def test_a_session_that_measures_nothing_leaves_no_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = run(pytester, SIM)
    result.assert_outcomes(passed=1)
    reports = pytester.path / "reports"
    assert not list(reports.glob("*.json"))
    assert "report:" not in result.stdout.str()

    pytester.makepyfile(test_m=MEASURES)
    result = run(pytester, SIM, "test_m.py")
    result.assert_outcomes(passed=1)
    (written,) = reports.glob("*.json")
    data = json.loads(written.read_text())
    assert data["finished_at"] is not None and len(data["tests"]) == 1


def test_reboot_mode_refusal_names_the_force_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_p="def test_p(operating_point):\n    pass\n")
    result = run(pytester, SIM, "--power-mode=7W")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*7W*needs a reboot*--edge-force-mode*"])


def test_collection_line_counts_in_the_singular(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_p="def test_p(operating_point):\n    pass\n")
    result = run(pytester, SIM, "--gpu-freq=max")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["edgeenergy: 1 test over 1 operating point, 0 knob changes;*"])


def test_help_shows_named_placeholders(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help", timeout=RUN_TIMEOUT_S)
    text = result.stdout.str()
    section = text[text.index("energy measurement on Jetson boards:") :]
    section = section[: section.index("\n\n")]
    assert "--edge-report-overwrite" in section
    placeholders = set(re.findall(r"^  --[\w-]+=(\S+)", section, flags=re.MULTILINE))
    assert placeholders, section
    assert not {p for p in placeholders if p.startswith("EDGE_")}, placeholders
    assert {"SECONDS", "PATH", "DIR", "N", "EXPR", "MS", "FREQS"} <= placeholders
    assert "5%%" not in text  # ini help is not %-formatted


def test_missing_scipy_for_the_gate_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makeconftest("import sys\nsys.modules['scipy'] = None\n")
    pytester.makepyfile(test_m=MEASURES)
    result = run(pytester, SIM, f"--edge-baseline={tmp_path}", "--edge-fail=energy_j:mean:5%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "needs scipy" in err and "pip install 'pytest-edgeenergy[analysis]'" in err
    assert "Traceback" not in err
