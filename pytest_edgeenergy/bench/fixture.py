"""What plugin.py calls to offer ``edge_bench``: settings, markers, the workload filter,
building the fixture's object, progress lines and the session's results.

Progress: with ``-v`` one line per measured repeat; without it, lines start once a run has
taken :data:`~.runner.PROGRESS_AFTER_S` seconds (long runs never look hung). Lines go to the
terminal reporter with output capture suspended, as pytest-benchmark does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from .options import BenchSettings, settings_for
from .pytest_benchmark_bridge import benchmark_fixture
from .result import BenchResult
from .runner import EdgeBench

if TYPE_CHECKING:
    from ..session import EnergySession

__all__ = [
    "EDGE_BENCH_KEY",
    "MARKERS",
    "all_results",
    "bench_of",
    "configure",
    "deselect",
    "item_workload",
    "make_edge_bench",
    "terminal_progress",
]

EDGE_BENCH_KEY = pytest.StashKey[EdgeBench]()
_BENCHES_KEY = pytest.StashKey[list[EdgeBench]]()

MARKERS = (
    "workload(name): the workload this benchmark runs; --workload NAME,... deselects others",
)


def configure(config: pytest.Config) -> BenchSettings:
    """Register the markers and build the settings (raises ``BenchSettingsError``, a
    ``SettingsError``: turn it into ``pytest.UsageError``)."""
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    return settings_for(config)


def item_workload(item: pytest.Item) -> str | None:
    """The item's workload: ``@pytest.mark.workload("x")`` or a ``workload`` parameter."""
    marker = item.get_closest_marker("workload")
    if marker is not None and marker.args:
        value: object = marker.args[0]
    else:
        callspec = getattr(item, "callspec", None)
        params = getattr(callspec, "params", {})
        if "workload" not in params:
            return None
        value = params["workload"]
    name = getattr(value, "name", value)
    return str(name)


def deselect(config: pytest.Config, items: list[pytest.Item]) -> None:
    """For ``pytest_collection_modifyitems``: drop items whose workload ``--workload`` does
    not select (items without a workload stay)."""
    settings = settings_for(config)
    if not settings.workloads:
        return
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        workload = item_workload(item)
        (keep if workload is None or settings.selects(workload) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def terminal_progress(config: pytest.Config) -> Callable[[str], None] | None:
    """A callable writing one line to the terminal past output capture; None without a
    terminal reporter (e.g. ``-p no:terminal``)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return None
    capman = config.pluginmanager.get_plugin("capturemanager")

    def write(line: str) -> None:
        if capman is not None:
            with capman.global_and_fixture_disabled():
                reporter.write_line(line)
        else:
            reporter.write_line(line)

    return write


def make_edge_bench(request: pytest.FixtureRequest, session: EnergySession) -> EdgeBench:
    """The ``edge_bench`` fixture's value for the requesting test.

    Opens the session, marks the test ``edge_energy``, passes pytest-benchmark's
    ``benchmark`` fixture when the test uses it (the first run drives it when it is unused;
    energy figures go to its ``extra_info``), and keeps the object on the item
    (:func:`bench_of`) and the session (:func:`all_results`).
    """
    config = request.config
    settings = settings_for(config)
    session.open()
    nodeid = request.node.nodeid
    session.record(nodeid)
    request.node.add_marker("edge_energy")
    benchmark = benchmark_fixture(request)
    verbose = int(config.getoption("verbose", 0) or 0)
    bench = EdgeBench(
        session,
        nodeid,
        settings,
        benchmark_fixture=benchmark,
        progress=terminal_progress(config),
        progress_always=verbose >= 1,
    )
    request.node.stash[EDGE_BENCH_KEY] = bench
    config.stash.setdefault(_BENCHES_KEY, []).append(bench)
    return bench


def bench_of(item: pytest.Item) -> EdgeBench | None:
    """The ``edge_bench`` object a test used, for its report entry (``bench.report()``)."""
    return item.stash.get(EDGE_BENCH_KEY, None)


def all_results(config: pytest.Config) -> list[BenchResult]:
    """Every run of every test in this session, in order (for ``summary_rows``)."""
    return [r for bench in config.stash.get(_BENCHES_KEY, []) for r in bench.results]
