"""What the plugin loads in a run that measures nothing, and that it works without
pytest-benchmark (an optional extra). No timing here: ``benchmarks/bench_plugin_cost.py``
times it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

RUN_TIMEOUT_S = 180.0

# The project's modules a run with no measuring test may import: the plugin, its option
# tables (their help names the virtual boards), the edge_bench settings they build and the
# session's class.
INERT_MODULES = {
    "pytest_edgeenergy",
    "pytest_edgeenergy._version",  # the version (a leaf: one constant)
    "pytest_edgeenergy.bench",
    "pytest_edgeenergy.bench.scenarios",  # the Scenario of the settings (stdlib only)
    "pytest_edgeenergy.bench.settings",
    "pytest_edgeenergy.board",
    "pytest_edgeenergy.board.generations",
    "pytest_edgeenergy.errors",
    "pytest_edgeenergy.handoff",  # the board lock's hand-off: is this a session of ab? (stdlib)
    "pytest_edgeenergy.options_spec",  # every option's one description (stdlib only)
    "pytest_edgeenergy.plugin",
    "pytest_edgeenergy.plugin.bench_options",
    "pytest_edgeenergy.plugin.options",
    "pytest_edgeenergy.plugin.session",
    "pytest_edgeenergy.ranges",  # the options' allowed ranges (stdlib only)
    "pytest_edgeenergy.registry",  # built-in strategy/source names for help (one metadata file)
}
HEAVY = (
    "numpy",
    "pandas",
    "matplotlib",
    "scipy",
    "torch",
    "jtop",
    "pynvml",
    "jsonschema",
    "pytest_benchmark",
)

# Written at the very end of the inner run (after every hook of ours has run).
PROBE_CONFTEST = """
import json
import sys


def pytest_unconfigure(config):
    top = {m.partition(".")[0] for m in sys.modules}
    state = {
        "project": sorted(m for m in sys.modules if m.startswith("pytest_edgeenergy")),
        "present": sorted(top),
        "session_plugin": config.pluginmanager.get_plugin("edgeenergy-session") is not None,
    }
    (config.rootpath / "probe.json").write_text(json.dumps(state))
"""

PLAIN = """
import pytest

@pytest.mark.parametrize("n", [1, 2])
def test_plain(n, tmp_path):
    assert n in (1, 2)
"""

MEASURING = """
import time


def test_window(energy):
    with energy.window("w") as w:
        time.sleep(0.1)
    assert w.result.samples > 0


def test_bench(edge_bench):
    r = edge_bench.run(lambda: time.sleep(0.02), items_per_call=1)
    assert len(r.repeats) == 2  # --edge-quick
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


def _probe(pytester: pytest.Pytester) -> dict[str, object]:
    return json.loads((pytester.path / "probe.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("benchmark_plugin", [True, False], ids=["benchmark", "no-benchmark"])
def test_run_without_measuring_tests_imports_little(
    pytester: pytest.Pytester, benchmark_plugin: bool
) -> None:
    pytester.makeconftest(PROBE_CONFTEST)
    pytester.makepyfile(test_inner=PLAIN)
    args = ["-p", "no:cacheprovider"] + ([] if benchmark_plugin else ["-p", "no:benchmark"])
    result = pytester.runpytest_subprocess(*args, timeout=RUN_TIMEOUT_S)
    result.assert_outcomes(passed=2)
    probe = _probe(pytester)
    assert set(probe["project"]) <= INERT_MODULES, sorted(  # type: ignore[arg-type]
        set(probe["project"]) - INERT_MODULES  # type: ignore[arg-type]
    )
    assert "pytest_edgeenergy.plugin" in probe["project"]  # type: ignore[operator]
    heavy = [m for m in HEAVY if m in probe["present"]]  # type: ignore[operator]
    if benchmark_plugin:
        heavy = [m for m in heavy if m != "pytest_benchmark"]  # pytest loads its plugin
    assert heavy == []
    assert probe["session_plugin"] is False


def test_measuring_run_registers_the_session(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE_CONFTEST)
    pytester.makepyfile(test_inner=MEASURING)
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:orin-nano",
        "--edge-idle-s=0",
        "--edge-quick",
        f"--edge-report={pytester.path / 'r.json'}",
        "-p",
        "no:cacheprovider",
        timeout=RUN_TIMEOUT_S,
    )
    result.assert_outcomes(passed=2)
    assert _probe(pytester)["session_plugin"] is True


def test_works_without_pytest_benchmark(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pytest-benchmark disabled, and unimportable: ``energy`` and ``edge_bench`` still
    measure, print their tables and write the report."""
    shadow = tmp_path / "shadow" / "pytest_benchmark"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("pytest-benchmark is not installed")\n')
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))
    pytester.makeconftest(PROBE_CONFTEST)
    pytester.makepyfile(test_inner=MEASURING)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:orin-nano",
        "--edge-idle-s=0",
        "--edge-quick",
        f"--edge-report={report}",
        "-p",
        "no:benchmark",
        "-p",
        "no:cacheprovider",
        timeout=RUN_TIMEOUT_S,
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*= energy (SIMULATED: virtual board) =*",
            "*test_inner.py::test_window*w*passed*",
            "*= energy benchmarks (SIMULATED) =*",
        ]
    )
    entries = {t["id"]: t for t in json.loads(report.read_text())["tests"]}
    assert entries["test_inner.py::test_window"]["metrics"]["energy_j"]["value"] > 0
    assert entries["test_inner.py::test_bench"]["status"] == "passed"
    assert entries["test_inner.py::test_bench"]["metrics"]["energy_per_item"]["value"] > 0
    assert "pytest_benchmark" not in _probe(pytester)["present"]  # type: ignore[operator]
