"""The operating-point search inside a pytest run (``--edge-search``): the pytest side.

A test taking ``operating_point`` is parametrized ``dvfs`` (the reference, nothing pinned)
then ``trial0..trialN-1``. When trial k's ``operating_point`` fixture starts, the search
(:class:`pytest_edgeenergy.run.search.SessionSearch`, pytest-free) proposes its point from
every earlier result of the same test (tests run in order) and pins it through the session;
at the fixture's teardown the test's measured windows become the trial: ``edge_bench`` runs
give time and energy per item, ``energy`` windows per window of work. This module adds the
parametrization slots, the search's key of a test item, the terminal summary, and turns the
search's typed errors into usage errors and skips. Imported only when ``--edge-search`` is
given (the search package with it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from ..bench.scenarios import Scenario
from ..run.errors import PointError, SearchSetupError, TrialSkipped
from ..run.search import SessionSearch, function_id
from .options import SearchSettings

if TYPE_CHECKING:
    from ..control.knobset import KnobSet
    from ..control.operating_point import OperatingPoint
    from .pinning import GridRequest
    from .session import PluginSession

__all__ = ["LiveSearch", "Slot", "search_key"]


@dataclass(frozen=True)
class Slot:
    """One parametrization of a searched test: the dvfs reference (index None) or a trial."""

    index: int | None

    @property
    def id(self) -> str:
        return "dvfs" if self.index is None else f"trial{self.index}"


def search_key(item: pytest.Item) -> str:
    """The test a search belongs to: the function and its parameters but the point."""
    base = function_id(item.nodeid)
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return base
    others = [
        f"{k}={v if isinstance(v, (str, int, float, bool)) else '#' + str(callspec.indices[k])}"
        for k, v in sorted(callspec.params.items())
        if k != "operating_point"
    ]
    return f"{base}[{','.join(others)}]" if others else base


class LiveSearch:
    """Every search of a pytest run (see the module docstring): a pytest adapter over
    :class:`~pytest_edgeenergy.run.search.SessionSearch` (``engine``)."""

    def __init__(
        self, settings: SearchSettings, *, force: bool = False, scenario: Scenario | None = None
    ) -> None:
        """Raises the search's setup errors (the caller makes them usage errors)."""
        self.settings = settings
        self.engine = SessionSearch(settings, force=force, scenario=scenario)

    def slots(self) -> list[Slot]:
        return [Slot(None)] + [Slot(k) for k in range(self.settings.trials)]

    def prepare(
        self,
        function: str,
        request: GridRequest,
        knobs: KnobSet,
        batch_sizes: Sequence[int] = (),
    ) -> None:
        """Build and check the search space of one test function (usage error when it has
        nothing to search or the strategy cannot serve it)."""
        try:
            self.engine.prepare(function, request, knobs, batch_sizes)
        except (SearchSetupError, PointError) as e:
            raise pytest.UsageError(str(e)) from None

    def check_idle(self, idle_w: float | None) -> None:
        """A power budget under the board's idle power cannot be met: a usage error."""
        try:
            self.engine.check_idle(idle_w)
        except SearchSetupError as e:
            raise pytest.UsageError(str(e)) from None

    @contextmanager
    def trial(
        self, es: PluginSession, request: pytest.FixtureRequest, slot: Slot
    ) -> Iterator[OperatingPoint]:
        """Propose, pin and (at teardown) record one trial of the requesting test; a slot
        that runs nothing is skipped, saying why."""
        item = request.node
        nodeid = item.nodeid
        with ExitStack() as stack:
            try:
                point = stack.enter_context(
                    self.engine.trial(
                        es.engine,
                        nodeid,
                        search_key(item),
                        slot.index,
                        bench_results=lambda: es.bench_results_of(nodeid),
                        bench_notes=lambda: es.bench_notes_of(nodeid),
                    )
                )
            except TrialSkipped as e:
                pytest.skip(e.reason)
            yield point

    def batch_size_of(self, item: pytest.Item) -> int:
        """The batch size the running slot of ``item``'s search uses (its operating point
        set up first)."""
        size = self.engine.batch_size(search_key(item), function_id(item.nodeid))
        if size is None:
            raise pytest.UsageError(
                f"{item.nodeid}: batch_size is not a dimension of this search; give "
                "--batch-size several values"
            )
        return size

    def summary_lines(self) -> list[str]:
        """The terminal summary: each search's trials, best point, saving, front."""
        from ..present.search import session_lines

        return session_lines(self.engine)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = self.summary_lines()
        if lines:
            terminalreporter.write_sep("=", "energy search")
            for line in lines:
                terminalreporter.write_line(line)

