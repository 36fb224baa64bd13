"""Plugin options: bad values are usage errors naming option and allowed values; precedence.

Precedence is CLI > environment > ini > default. It is observed through the error message
(which names where the bad value came from) and through the sampling interval a window
reports (``interval_ms_target``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ENV_VARS = (
    "EDGEENERGY_BOARD",
    "EDGEENERGY_ROOT",
    "EDGEENERGY_INTERVAL_MS",
    "EDGEENERGY_SOURCE",
    "EDGEENERGY_REPORT",
    "EDGEENERGY_IDLE_S",
)
RUN_TIMEOUT_S = 120.0
MODELS_TEXT = "nano, tx2, xavier-nx, agx-xavier, orin-nano, orin-nx, agx-orin, thor"
SOURCES_TEXT = "auto, ina, jtop, nvml, rapl, tegrastats"

INNER = """
import json
import time


def test_interval(energy):
    with energy.window("w") as w:
        time.sleep(0.1)
    print("\\nEDGE-RESULT " + json.dumps(w.result.to_json()))
"""

PLAIN = """
def test_plain():
    assert True
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's own EDGEENERGY_* settings must not leak into the inner sessions."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def result_json(stdout: str) -> Any:
    prefix = "EDGE-RESULT "
    found = [line[len(prefix) :] for line in stdout.splitlines() if line.startswith(prefix)]
    assert len(found) == 1, f"expected one result line in:\n{stdout}"
    return json.loads(found[0])


def assert_usage_error(result: pytest.RunResult, *fragments: str) -> str:
    """The run stopped with a usage error whose message holds every fragment; no traceback."""
    err = result.stderr.str()
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, f"exit {result.ret}\n{out}\n{err}"
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in:\n{err}"
    assert "Traceback" not in err + out
    assert "INTERNALERROR" not in err + out
    return err


BAD_OPTIONS = [
    ("--edge-board=sim:foo", ("--edge-board", "'sim:foo'", "sim:MODEL", MODELS_TEXT)),
    ("--edge-board=xyz", ("--edge-board", "'xyz'", "'auto'", MODELS_TEXT)),
    ("--edge-interval-ms=abc", ("--edge-interval-ms", "'abc'", "not a number")),
    ("--edge-interval-ms=0", ("--edge-interval-ms", "'0'", ">= 0.1 and <= 1000 ms")),
    ("--edge-interval-ms=-5", ("--edge-interval-ms", "'-5'", ">= 0.1 and <= 1000 ms")),
    ("--edge-interval-ms=nan", ("--edge-interval-ms", "'nan'")),
    ("--edge-source=nope", ("--edge-source", "'nope'", SOURCES_TEXT)),
    (
        "--edge-root=/nonexistent/edgeenergy",
        ("--edge-root", "/nonexistent/edgeenergy", "directory"),
    ),
    ("--edge-idle-s=-1", ("--edge-idle-s", "'-1'", ">= 0")),
]


@pytest.mark.parametrize(("option", "fragments"), BAD_OPTIONS, ids=[o for o, _ in BAD_OPTIONS])
def test_bad_option_is_usage_error(
    pytester: pytest.Pytester, option: str, fragments: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_inner=PLAIN)
    result = pytester.runpytest_subprocess(option, timeout=RUN_TIMEOUT_S)
    err = assert_usage_error(result, "(command line)", *fragments)
    assert "test_plain" not in result.stdout.str() + err


def test_sim_board_and_root_together_is_usage_error(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_inner=PLAIN)
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:nano", f"--edge-root={tmp_path}", timeout=RUN_TIMEOUT_S
    )
    assert_usage_error(result, "--edge-board=sim:MODEL", "--edge-root")


def test_bad_env_value_names_the_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_inner=PLAIN)
    monkeypatch.setenv("EDGEENERGY_INTERVAL_MS", "abc")
    result = pytester.runpytest_subprocess(timeout=RUN_TIMEOUT_S)
    assert_usage_error(result, "EDGEENERGY_INTERVAL_MS", "(environment)", "'abc'")


def test_bad_ini_value_names_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=PLAIN)
    pytester.makeini("[pytest]\nedge_source = nope\n")
    result = pytester.runpytest_subprocess(timeout=RUN_TIMEOUT_S)
    assert_usage_error(result, "edge_source", "(ini file)", "'nope'", SOURCES_TEXT)


def test_env_beats_ini_when_env_is_bad(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_inner=PLAIN)
    pytester.makeini("[pytest]\nedge_interval_ms = 20\n")
    monkeypatch.setenv("EDGEENERGY_INTERVAL_MS", "abc")
    result = pytester.runpytest_subprocess(timeout=RUN_TIMEOUT_S)
    err = assert_usage_error(result, "EDGEENERGY_INTERVAL_MS", "(environment)")
    assert "ini file" not in err


def test_env_beats_ini(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_inner=INNER)
    pytester.makeini("[pytest]\nedge_interval_ms = abc\nedge_board = sim:foo\n")
    monkeypatch.setenv("EDGEENERGY_INTERVAL_MS", "20")
    monkeypatch.setenv("EDGEENERGY_BOARD", "sim:nano")
    monkeypatch.setenv("EDGEENERGY_IDLE_S", "0")
    result = pytester.runpytest_subprocess("-s", timeout=RUN_TIMEOUT_S)
    result.assert_outcomes(passed=1)
    r = result_json(result.stdout.str())
    assert r["interval_ms_target"] == pytest.approx(20.0)
    assert r["simulated"] is True


def test_cli_beats_env_and_ini(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_inner=INNER)
    pytester.makeini("[pytest]\nedge_interval_ms = abc\n")
    monkeypatch.setenv("EDGEENERGY_INTERVAL_MS", "abc")
    monkeypatch.setenv("EDGEENERGY_BOARD", "sim:foo")
    result = pytester.runpytest_subprocess(
        "-s",
        "--edge-board=sim:nano",
        "--edge-interval-ms=25",
        "--edge-idle-s=0",
        timeout=RUN_TIMEOUT_S,
    )
    result.assert_outcomes(passed=1)
    r = result_json(result.stdout.str())
    assert r["interval_ms_target"] == pytest.approx(25.0)


def test_ini_alone_sets_the_interval(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    pytester.makeini("[pytest]\nedge_board = sim:nano\nedge_interval_ms = 15\nedge_idle_s = 0\n")
    result = pytester.runpytest_subprocess("-s", timeout=RUN_TIMEOUT_S)
    result.assert_outcomes(passed=1)
    assert result_json(result.stdout.str())["interval_ms_target"] == pytest.approx(15.0)


def test_xdist_is_refused_when_measuring(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    pytester.makepyfile(test_inner=PLAIN)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--edge-board=sim:nano", timeout=RUN_TIMEOUT_S
    )
    assert_usage_error(result, "-n")


def test_flag_from_environment_must_be_a_yes_or_no_word(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    monkeypatch.setenv("EDGEENERGY_DRY_RUN", "maybe")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*EDGEENERGY_DRY_RUN (environment): 'maybe' is not a yes/no value; use one of 1, true,*"]
    )
    monkeypatch.setenv("EDGEENERGY_DRY_RUN", "no")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
