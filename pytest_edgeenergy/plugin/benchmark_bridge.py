"""pytest-benchmark's ``benchmark`` fixture beside ``energy`` and ``edge_bench``.

Used only when the ``benchmark`` plugin is present (pytest-benchmark is optional: the
``benchmark`` extra). The fixture object is duck-typed; the figures it gets are made by
:mod:`pytest_edgeenergy.bench.extra_info`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..run.records import TestEnergy

__all__ = ["benchmark_fixture", "fill_at_teardown"]


def benchmark_fixture(request: pytest.FixtureRequest) -> Any | None:
    """The test's ``benchmark`` fixture when it uses one, else None."""
    if "benchmark" not in request.fixturenames:
        return None
    return request.getfixturevalue("benchmark")


def fill_at_teardown(benchmark: object, rec: TestEnergy, *, simulated: bool) -> None:
    """After a test's teardown: its report entry's figures into ``benchmark.extra_info``."""
    from ..bench.extra_info import fill, flat_figures
    from ..run.report import test_entry

    try:
        entry = test_entry(rec)
    except ValueError:
        return  # the report write fails the same way and says so (REPORT ERROR)
    if not entry["metrics"] and entry["validity"] is None:
        return  # nothing measured
    fill(benchmark, flat_figures(entry["metrics"], entry["validity"], simulated=simulated))
