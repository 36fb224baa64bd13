"""What the plugin needs to offer ``edge_bench``: the workload filter, progress lines and
building the fixture's object (kept by the session, :meth:`.session.PluginSession.edge_bench`).

Progress: with ``-v`` one line per measured repeat; without it, lines start once a run has
taken :data:`~pytest_edgeenergy.bench.runner.PROGRESS_AFTER_S` seconds (long runs never
look hung). Lines go to the terminal reporter with output capture suspended, as
pytest-benchmark does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..bench.measuring import MeasuringSession
    from ..bench.runner import EdgeBench
    from ..bench.settings import BenchSettings

__all__ = ["MARKERS", "deselect", "item_workload", "make_edge_bench", "terminal_progress"]

MARKERS = (
    "workload(name): the workload this benchmark runs; --workload NAME,... deselects others",
)


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


def _selected(settings: BenchSettings, item: pytest.Item) -> bool:
    workload = item_workload(item)
    if workload is not None and not settings.selects(workload):
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    return all(
        settings.selects_param(name, str(params[name]))
        for name in ("runtime", "precision")
        if name in params
    )


def deselect(config: pytest.Config, settings: BenchSettings, items: list[pytest.Item]) -> None:
    """For ``pytest_collection_modifyitems``: drop items whose workload ``--workload`` does
    not select, or whose ``runtime``/``precision`` parameter ``--runtime``/``--precision``
    does not list (items without that workload or parameter stay)."""
    if not settings.filters_items:
        return
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (keep if _selected(settings, item) else dropped).append(item)
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


def make_edge_bench(
    request: pytest.FixtureRequest,
    session: MeasuringSession,
    settings: BenchSettings,
    *,
    benchmark: Any | None,
) -> EdgeBench:
    """The ``edge_bench`` object for the requesting test: it measures on ``session``'s board
    and drives pytest-benchmark's ``benchmark`` (when given and unused by the test; energy
    figures go to its ``extra_info``)."""
    from ..bench.runner import EdgeBench

    config = request.config
    verbose = int(config.getoption("verbose", 0) or 0)
    return EdgeBench(
        session,
        request.node.nodeid,
        settings,
        benchmark_fixture=benchmark,
        progress=terminal_progress(config),
        progress_always=verbose >= 1,
    )
