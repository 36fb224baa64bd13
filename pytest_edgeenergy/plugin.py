"""pytest hooks for pytest-edgeenergy: options, the ``energy`` fixture, summary, report.

Thin by design: the work happens in :mod:`.session` and the layers below it, which are
imported only when a test measures energy or a board option is given.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

from . import settings as settings_mod

if TYPE_CHECKING:
    from .board.detect import Board
    from .meters.meter import IdleBaseline, Window, WindowResult
    from .session import EnergySession

SESSION_KEY = pytest.StashKey["EnergySession"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    settings_mod.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "edge_energy: the test measures energy (set by the energy fixture)"
    )
    try:
        s = settings_mod.build(config)
    except settings_mod.SettingsError as e:
        raise pytest.UsageError(str(e)) from None
    if s.requested and _xdist_workers(config):
        raise pytest.UsageError(
            "pytest-xdist runs tests in parallel, but whole-board energy cannot be shared "
            "between concurrent tests: run without -n when measuring energy"
        )
    from .session import EnergySession

    config.stash[SESSION_KEY] = EnergySession(s)


def _xdist_workers(config: pytest.Config) -> bool:
    n = getattr(config.option, "numprocesses", None)
    return bool(n) and n != 0


def pytest_sessionstart(session: pytest.Session) -> None:
    es = session.config.stash.get(SESSION_KEY, None)
    if es is not None and es.settings.requested:
        es.open()


def pytest_unconfigure(config: pytest.Config) -> None:
    es = config.stash.get(SESSION_KEY, None)
    if es is not None:
        es.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    es = item.config.stash.get(SESSION_KEY, None)
    if es is None or item.nodeid not in es.tests:
        return report
    rec = es.tests[item.nodeid]
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        rec.status = "skipped" if report.skipped else report.outcome
        rec.duration_s = report.duration
        if report.skipped and isinstance(report.longrepr, tuple):
            rec.reason = str(report.longrepr[2])
        elif report.failed:
            rec.reason = (
                report.longreprtext.strip().splitlines()[-1] if report.longreprtext else None
            )
    if report.when == "teardown":
        es.finish_test(item.nodeid)
    return report


class EnergyFixture:
    """What a test gets from the ``energy`` fixture: energy windows on the session's board.

    ``with energy.window("inference") as w: run()`` then ``w.result`` holds joules per rail
    and in total, mean/peak watts, sample count and validity.
    """

    def __init__(self, session: EnergySession, nodeid: str) -> None:
        self._session = session
        self._nodeid = nodeid

    @property
    def board(self) -> Board:
        assert self._session.board is not None
        return self._session.board

    @property
    def simulated(self) -> bool:
        return self._session.simulated

    @property
    def idle(self) -> IdleBaseline | None:
        return self._session.idle

    @property
    def results(self) -> list[WindowResult]:
        return self._session.record(self._nodeid).windows

    @contextmanager
    def window(self, label: str = "window") -> Iterator[Window]:
        with self._session.window(self._nodeid, label) as w:
            yield w


@pytest.fixture
def energy(request: pytest.FixtureRequest) -> EnergyFixture:
    """Energy windows on the board (a Jetson, a board tree, or a virtual board)."""
    es = request.config.stash[SESSION_KEY]
    es.open()
    es.record(request.node.nodeid)
    request.node.add_marker("edge_energy")
    return EnergyFixture(es, request.node.nodeid)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    es = terminalreporter.config.stash.get(SESSION_KEY, None)
    if es is None or not es.tests:
        return
    from .summary import summary_lines

    title = "energy (SIMULATED: virtual board)" if es.simulated else "energy"
    terminalreporter.write_sep("=", title)
    for line in summary_lines(es):
        terminalreporter.write_line(line)
