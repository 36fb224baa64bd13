"""pytest hooks for pytest-edgeenergy: options, the ``energy`` fixture, summary, report.

Thin by design: the work happens in :mod:`.session` and the layers below it, which are
imported only when a test measures energy or a board option is given.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

import pytest

from . import settings as settings_mod
from .errors import EdgeEnergyError

if TYPE_CHECKING:
    from .bench.runner import EdgeBench
    from .board.detect import Board
    from .control.operating_point import OperatingPoint
    from .meters.meter import IdleBaseline, Window, WindowResult
    from .session import EnergySession, OpenWindow

SESSION_KEY = pytest.StashKey["EnergySession"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    settings_mod.add_options(parser)
    settings_mod.add_grid_options(parser)
    settings_mod.add_gate_options(parser)
    from .bench.options import add_options as add_bench_options

    add_bench_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "edge_energy: the test measures energy (set by the energy fixture)"
    )
    config.addinivalue_line(
        "markers",
        "edge_grid(power_mode=..., cpu_freq=..., gpu_freq=..., emc_freq=..., cpu_cores=..., "
        "governor=..., batch_size=...): this test's grid where no option, env or ini gives one",
    )
    config.addinivalue_line(
        "markers",
        "edge_gate(*exprs): this test's own gate thresholds, e.g. "
        "edge_gate('energy_per_item:mean:3%'); they replace --edge-fail on the same metric",
    )
    from .bench.fixture import configure as configure_bench

    try:
        s = settings_mod.build(config)
        control = settings_mod.build_control(config)
        gate = settings_mod.build_gate(config)
        configure_bench(config)
    except settings_mod.SettingsError as e:
        raise pytest.UsageError(str(e)) from None
    from .gating import check_options

    check_options(gate)
    if gate.baseline is not None:
        from .extras import MissingExtra, require

        try:
            require("scipy", "analysis", "the regression gate (--edge-baseline)")
        except MissingExtra as e:
            raise pytest.UsageError(str(e)) from None
    if s.requested and _xdist_workers(config):
        raise pytest.UsageError(
            "pytest-xdist runs tests in parallel, but whole-board energy cannot be shared "
            "between concurrent tests: run without -n when measuring energy"
        )
    from .session import EnergySession

    es = EnergySession(s, control)
    es.notify = lambda line: _say_now(config, line)
    es.gate = gate
    es.reports_dir = config.rootpath / "reports"
    es.report_settings = _report_settings(config)
    config.stash[SESSION_KEY] = es


def _report_settings(config: pytest.Config) -> dict[str, object]:
    """The options that shaped this run (every ``edge_*`` option given), for the report."""
    return {
        key: value
        for key, value in sorted(vars(config.option).items())
        if key.startswith("edge_") and value not in (None, False, [])
    }


def _say_now(config: pytest.Config, line: str) -> None:
    """Print a line the user sees at once, even while pytest captures output."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
        print(line, file=sys.stderr, flush=True)


def _open_or_stop(es: EnergySession) -> None:
    """Open the board; a board held by another session stops the run (usage error, exit 4)
    rather than failing every test."""
    from .control.errors import SessionBusy

    try:
        es.open()
    except SessionBusy as e:
        pytest.exit(f"edgeenergy: {e}", returncode=pytest.ExitCode.USAGE_ERROR)


def _xdist_workers(config: pytest.Config) -> bool:
    n = getattr(config.option, "numprocesses", None)
    return bool(n) and n != 0


def pytest_sessionstart(session: pytest.Session) -> None:
    """Set up the board now when asked, and check the grid options before collection."""
    es = session.config.stash.get(SESSION_KEY, None)
    if es is None:
        return
    from .pinning import validate_options

    if validate_options(session.config, es) or es.settings.requested:
        try:
            es.open()
        except (EdgeEnergyError, OSError) as e:
            raise pytest.UsageError(str(e)) from None


def _grid_marker(metafunc: pytest.Metafunc) -> dict[str, object]:
    marker = metafunc.definition.get_closest_marker("edge_grid")
    if marker is None:
        return {}
    unknown = sorted(set(marker.kwargs) - set(settings_mod.GRID_OPTIONS))
    if unknown:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: edge_grid({', '.join(unknown)}=...) is not a grid "
            f"dimension; allowed: {', '.join(settings_mod.GRID_OPTIONS)}"
        )
    return dict(marker.kwargs)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``batch_size`` and ``operating_point`` from options, env, ini, marker."""
    config = metafunc.config
    marker = _grid_marker(metafunc)
    try:
        if "batch_size" in metafunc.fixturenames:
            v = settings_mod.grid_value(config, "batch_size", marker.get("batch_size"))
            sizes = settings_mod.parse_batch_sizes(v)
            metafunc.parametrize("batch_size", sizes, ids=[f"bs{n}" for n in sizes])
    except settings_mod.SettingsError as e:
        raise pytest.UsageError(str(e)) from None
    if "operating_point" not in metafunc.fixturenames:
        return
    from .pinning import points_for

    try:
        points = points_for(config, config.stash[SESSION_KEY], marker)
    except pytest.UsageError as e:
        pytest.fail(f"{metafunc.definition.nodeid}: {e}", pytrace=False)
    metafunc.parametrize(
        "operating_point", points, ids=[p.id for p in points], indirect=True, scope="function"
    )


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Drop tests of workloads not selected (``--workload``); order tests so the board
    changes state as few times as possible; check privileges and `edge_gate` markers."""
    from .bench.fixture import deselect

    deselect(config, items)
    es = config.stash.get(SESSION_KEY, None)
    if es is not None and es.gate is not None and es.gate.baseline is not None:
        from .gating import check_markers

        check_markers(items)
    if not any("operating_point" in getattr(i, "fixturenames", ()) for i in items):
        return
    from .pinning import order_and_check

    order_and_check(config, config.stash[SESSION_KEY], items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Restore the board before the summary, so a failed restore is reported loudly."""
    es = session.config.stash.get(SESSION_KEY, None)
    if es is None:
        return
    from .control.errors import RestoreError

    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    try:
        es.restore_board()
    except RestoreError as e:
        if tr is not None:
            tr.write_line(f"edgeenergy: BOARD NOT RESTORED: {e}", red=True, bold=True)
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
    path = es.finish_report()
    if path is None:
        return
    from .gating import exit_status, run_gate

    session.exitstatus = exit_status(run_gate(es, path), session.exitstatus)


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
    if report.when == "setup":
        callspec = getattr(item, "callspec", None)
        if callspec is not None:
            # Every parameter is part of the result's key: a value JSON cannot hold is
            # recorded by its position in the parametrize list, stable from run to run.
            rec.params.update(
                {
                    k: v if isinstance(v, (str, int, float, bool)) else f"#{callspec.indices[k]}"
                    for k, v in callspec.params.items()
                    if k != "operating_point" and v is not None
                }
            )
        marker = item.get_closest_marker("edge_gate")
        if marker is not None:
            es.gate_overrides[item.nodeid] = [str(a) for a in marker.args]
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        rec.status = (
            "skipped"
            if report.skipped
            else "error"
            if report.when == "setup"  # a fixture failed: the test never ran
            else report.outcome
        )
        rec.duration_s = report.duration
        if report.skipped and isinstance(report.longrepr, tuple):
            rec.reason = str(report.longrepr[2])
        elif report.failed and call.excinfo is not None:
            rec.reason = call.excinfo.exconly().strip().splitlines()[0]
    if report.when == "teardown":
        from .bench.fixture import bench_of

        bench = bench_of(item)
        if bench is not None and (bench.results or bench.phases or bench.preflights):
            br = bench.report()
            rec.metrics, rec.validity = br["metrics"], br["validity"]
            rec.params.update(br["params"])
            rec.extra.update(br["extra"])
            if rec.status == "passed" and not br["valid"]:
                rec.status, rec.reason = "invalid", br["reason"]
        from .bench.pytest_benchmark_bridge import fill_at_teardown

        fill_at_teardown(item, rec, simulated=es.simulated)
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
        """``with energy.window("x") as w: ...`` then ``w.result``."""
        with self._session.window(self._nodeid, label) as w:
            yield w

    def begin(self, label: str = "window") -> OpenWindow:
        """``w = energy.begin("x")`` ... ``result = w.end()``."""
        return self._session.begin(self._nodeid, label)


@pytest.fixture
def energy(request: pytest.FixtureRequest) -> EnergyFixture:
    """Energy windows on the board (a Jetson, a board tree, or a virtual board)."""
    es = request.config.stash[SESSION_KEY]
    try:
        _open_or_stop(es)
    except (EdgeEnergyError, OSError) as e:
        pytest.fail(f"edgeenergy: {e}", pytrace=False)
    es.record(request.node.nodeid)
    request.node.add_marker("edge_energy")
    from .bench.pytest_benchmark_bridge import benchmark_fixture

    benchmark_fixture(request)  # its extra_info gets the test's energy figures at teardown
    return EnergyFixture(es, request.node.nodeid)


@pytest.fixture
def operating_point(request: pytest.FixtureRequest) -> Iterator[OperatingPoint]:
    """The operating point this test runs at, pinned, read back and verified.

    Parametrized from ``--power-mode``, ``--cpu-freq``, ``--gpu-freq``, ``--emc-freq``,
    ``--cpu-cores``, ``--governor`` (or env, ini, the ``edge_grid`` marker); without any of
    them it is ``dvfs``: nothing pinned.
    """
    from .pinning import pinned

    es = request.config.stash[SESSION_KEY]
    try:
        _open_or_stop(es)
    except (EdgeEnergyError, OSError) as e:
        pytest.fail(f"edgeenergy: {e}", pytrace=False)
    with pinned(es, request.node.nodeid, getattr(request, "param", None)) as point:
        yield point


@pytest.fixture
def edge_bench(request: pytest.FixtureRequest) -> EdgeBench:
    """Measure a callable in energy windows, like pytest-benchmark's pedantic mode:
    warm-up, a fixed amount of work per repeat, repeats, latency and energy per item.

    ``edge_bench.run(lambda: model(x), items_per_call=batch_size, params={...})``.
    """
    from .bench.fixture import make_edge_bench

    es = request.config.stash[SESSION_KEY]
    try:
        _open_or_stop(es)
        return make_edge_bench(request, es)
    except (EdgeEnergyError, OSError) as e:
        pytest.fail(f"edgeenergy: {e}", pytrace=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    es = terminalreporter.config.stash.get(SESSION_KEY, None)
    if es is None:
        return
    if es.tests:
        from .summary import summary_lines

        title = "energy (SIMULATED: virtual board)" if es.simulated else "energy"
        terminalreporter.write_sep("=", title)
        for line in summary_lines(es):
            terminalreporter.write_line(line)
    from .bench.fixture import all_results

    results = all_results(terminalreporter.config)
    if results:
        from .bench.summary import format_rows, summary_rows

        terminalreporter.write_sep(
            "=", "energy benchmarks" + (" (SIMULATED)" if es.simulated else "")
        )
        for line in format_rows(summary_rows(results)):
            terminalreporter.write_line(line)
    if es.gate_lines:
        terminalreporter.write_sep("=", "energy gate")
        for line in es.gate_lines:
            terminalreporter.write_line(line)
