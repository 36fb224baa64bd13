"""pytest hooks for pytest-edgeenergy: options, markers, test generation, fixtures.

Thin and cheap by design: a run with no measuring test imports only the option tables and
the session's class. The session (:class:`.session.PluginSession`, an adapter over the
pytest-free :class:`pytest_edgeenergy.run.EnergySession`) is built complete in
``pytest_configure`` and registered as a plugin of its own once the run measures (a test
asks for ``energy``, ``edge_bench`` or ``operating_point``) or a board or operating-point
option is given; it then records the tests, restores the board, writes the report, runs
the gate and prints the summary. The layers below are imported only then.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

import pytest

from ..errors import EdgeEnergyError
from ..handoff import HANDOFF_ENV
from . import bench_options, options

if TYPE_CHECKING:
    from ..bench.runner import EdgeBench
    from ..board.detect import Board
    from ..control.operating_point import OperatingPoint
    from ..meters.meter import IdleBaseline, Window, WindowResult
    from ..run.session import OpenWindow
    from .only import OnlySelection
    from .search import LiveSearch
    from .session import PluginSession
    from .shard import ShardPlugin

SESSION_KEY = pytest.StashKey["PluginSession"]()
ONLY_KEY: pytest.StashKey[OnlySelection] = pytest.StashKey()
"""The ``--edge-only`` file's ids (stashed only when the option is given)."""
SEARCH_KEY = pytest.StashKey["LiveSearch"]()
"""The run's operating-point search (stashed only with ``--edge-search``)."""
SEARCH_PLUGIN = "edgeenergy-search"
SHARD_KEY: pytest.StashKey[ShardPlugin] = pytest.StashKey()
"""``--edge-shard``'s selection (stashed only when the option is given)."""
SHARD_PLUGIN = "edgeenergy-shard"
SESSION_PLUGIN = "edgeenergy-session"
"""The name the session is registered under as a plugin once the run measures."""

MARKERS = (
    "edge_energy: the test measures energy (set by the energy fixture)",
    "edge_grid(power_mode=..., cpu_freq=..., gpu_freq=..., emc_freq=..., cpu_cores=..., "
    "governor=..., batch_size=...): this test's grid where no option, env or ini gives one",
    "edge_gate(*exprs): this test's own gate thresholds, e.g. "
    "edge_gate('energy_per_item:mean:3%'); they replace --edge-fail on the same metric",
    "workload(name): the workload this benchmark runs; --workload NAME,... deselects others",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)
    options.add_grid_options(parser)
    options.add_gate_options(parser)
    options.add_search_options(parser)
    bench_options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    handoff = None
    if HANDOFF_ENV in os.environ:  # a session of edgeenergy ab (or a process it started)
        from .ab_session import take

        handoff = take(config, lambda line: _say_now(config, line))
    try:
        s = options.build(config)
        control = options.build_control(config)
        gate = options.build_gate(config)
        bench = bench_options.build(config)
        search = options.build_search(config)
        if options.only_file(config) is not None:
            from .only import read_selection

            selection = read_selection(config)
            if selection is not None:
                config.stash[ONLY_KEY] = selection
        _configure_shard(config)
    except options.SettingsError as e:
        raise pytest.UsageError(str(e)) from None
    if (
        gate.baseline
        or gate.fail
        or gate.save_baseline
        or gate.fail_insufficient
        or gate.history
        or gate.history_add
        or gate.history_branch
    ):
        from .gating import check_history, check_options

        check_options(gate)
        check_history(gate)
    if gate.baseline is not None or (gate.history is not None and gate.fail):
        from ..extras import MissingExtra, require

        try:
            require("scipy", "analysis", "the regression gate (--edge-baseline)")
        except MissingExtra as e:
            raise pytest.UsageError(str(e)) from None
    if (s.requested or search is not None) and _xdist_workers(config):
        raise pytest.UsageError(
            "pytest-xdist runs tests in parallel, but whole-board energy cannot be shared "
            "between concurrent tests: run without -n when measuring energy"
        )
    from .session import PluginSession

    config.stash[SESSION_KEY] = PluginSession(
        s,
        control,
        gate=gate,
        bench=bench,
        notify=lambda line: _say_now(config, line),
        reports_dir=config.rootpath / "reports",
        report_settings={
            **_report_settings(config),
            **bench_options.placement_settings(bench.placement),
        },
        handoff=handoff,
    )
    if search is not None:
        from .search import LiveSearch

        try:
            live = LiveSearch(search, force=control.force_mode, scenario=bench.scenario)
        except (EdgeEnergyError, OSError) as e:
            raise pytest.UsageError(str(e)) from None
        config.stash[SEARCH_KEY] = live
        config.pluginmanager.register(live, SEARCH_PLUGIN)


def _configure_shard(config: pytest.Config) -> None:
    """Read ``--edge-shard`` (cheap when absent: nothing imported) and register its plugin."""
    keys = ("shard", "shard_durations")
    if all(options.lookup(config, options.OPTIONS[k], f"edge_{k}") is None for k in keys):
        return
    from .shard import ShardPlugin, read_request

    request = read_request(config)
    if request is not None:
        config.stash[SHARD_KEY] = ShardPlugin(request, config)
        config.pluginmanager.register(config.stash[SHARD_KEY], SHARD_PLUGIN)


def _active(config: pytest.Config) -> PluginSession:
    """The session, registered as a plugin (once) now that the run measures."""
    es = config.stash[SESSION_KEY]
    if not config.pluginmanager.is_registered(es):
        config.pluginmanager.register(es, SESSION_PLUGIN)
    return es


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


def _say_line(config: pytest.Config, line: str) -> None:
    """A line in pytest's own output (stderr where there is no terminal reporter)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None:
        print(line, file=sys.stderr, flush=True)
        return
    tr.ensure_newline()
    tr.write_line(line)


def _open_or_stop(es: PluginSession) -> None:
    """Open the board; a board held by another session stops the run (usage error, exit 4)
    rather than failing every test."""
    from ..control.errors import SessionBusy

    try:
        es.open()
    except SessionBusy as e:
        pytest.exit(f"edgeenergy: {e}", returncode=pytest.ExitCode.USAGE_ERROR)


def _xdist_workers(config: pytest.Config) -> bool:
    n = getattr(config.option, "numprocesses", None)
    return bool(n) and n != 0


def pytest_sessionstart(session: pytest.Session) -> None:
    """Check the grid options before collection; set up the board now when asked."""
    config = session.config
    if SESSION_KEY not in config.stash:
        return
    try:
        options.parse_batch_sizes(options.grid_value(config, "batch_size"))
    except options.SettingsError as e:
        raise pytest.UsageError(str(e)) from None
    point_options = options.any_point_option(config)
    if not (point_options or config.stash[SESSION_KEY].settings.requested):
        return
    es = _active(config)
    live = config.stash.get(SEARCH_KEY, None)
    if point_options and live is None:
        es.points_for(config, {})
    try:
        es.open()
    except (EdgeEnergyError, OSError) as e:
        raise pytest.UsageError(str(e)) from None
    if live is not None and es.knobs is not None:
        from .pinning import grid_request

        live.check_idle(_idle_w(es))
        if point_options:  # checked now, before collection: nothing runs on a bad search
            sizes = options.parse_batch_sizes(options.grid_value(config, "batch_size"))
            live.prepare("", grid_request(config, {}), es.knobs, sizes)


def _grid_marker(metafunc: pytest.Metafunc) -> dict[str, object]:
    marker = metafunc.definition.get_closest_marker("edge_grid")
    if marker is None:
        return {}
    unknown = sorted(set(marker.kwargs) - set(options.GRID_OPTIONS))
    if unknown:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: edge_grid({', '.join(unknown)}=...) is not a grid "
            f"dimension; allowed: {', '.join(options.GRID_OPTIONS)}"
        )
    return dict(marker.kwargs)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``batch_size`` and ``operating_point`` from options, env, ini, marker."""
    config = metafunc.config
    marker = _grid_marker(metafunc)
    live = config.stash.get(SEARCH_KEY, None)
    searched: tuple[int, ...] = ()
    try:
        if "batch_size" in metafunc.fixturenames:
            v = options.grid_value(config, "batch_size", marker.get("batch_size"))
            sizes = options.parse_batch_sizes(v)
            if live is not None and "operating_point" in metafunc.fixturenames and len(sizes) > 1:
                searched = sizes  # a dimension of the search: the `batch_size` fixture
            else:
                metafunc.parametrize("batch_size", sizes, ids=[f"bs{n}" for n in sizes])
    except options.SettingsError as e:
        raise pytest.UsageError(str(e)) from None
    if "operating_point" not in metafunc.fixturenames:
        return
    if live is not None:
        _parametrize_search(metafunc, live, marker, searched)
        return
    try:
        points = _active(config).points_for(config, marker)
    except pytest.UsageError as e:
        pytest.fail(f"{metafunc.definition.nodeid}: {e}", pytrace=False)
    metafunc.parametrize(
        "operating_point", points, ids=[p.id for p in points], indirect=True, scope="function"
    )


def _idle_w(es: PluginSession) -> float | None:
    return es.idle.power_w if es.idle is not None and es.idle.valid else None


def _parametrize_search(
    metafunc: pytest.Metafunc,
    live: LiveSearch,
    marker: dict[str, object],
    batch_sizes: tuple[int, ...] = (),
) -> None:
    """``operating_point`` as the dvfs reference then trial0..trialN-1 of the search."""
    from .pinning import grid_request

    es = _active(metafunc.config)
    try:
        es.open()
    except (EdgeEnergyError, OSError) as e:
        raise pytest.UsageError(str(e)) from None
    assert es.knobs is not None
    live.check_idle(_idle_w(es))
    live.prepare(
        metafunc.definition.nodeid, grid_request(metafunc.config, marker), es.knobs, batch_sizes
    )
    slots = live.slots()
    metafunc.parametrize(
        "operating_point", slots, ids=[s.id for s in slots], indirect=True, scope="function"
    )


# Last, after pytest's own -k, -m and --deselect: the order line then counts, and the
# privileges are checked for, only the tests that will run.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Drop tests not selected (``--edge-only``, ``--workload``, ``--runtime``,
    ``--precision``); order tests so the board changes state as few times as possible;
    check privileges, `edge_gate` markers and the gate's metrics against the tests."""
    selection = config.stash.get(ONLY_KEY, None)
    if selection is not None:
        from .only import deselect as deselect_only

        _say_line(config, deselect_only(config, selection, items))
    es = config.stash.get(SESSION_KEY, None)
    if es is None:
        return
    if es.bench_settings.filters_items:
        from .bench_fixture import deselect

        deselect(config, es.bench_settings, items)
    shard = config.stash.get(SHARD_KEY, None)
    if shard is not None:  # before the ordering: the order line counts this shard's tests
        _say_line(config, shard.apply(config, items, SEARCH_KEY in config.stash))
    if es.gate is not None and (es.gate.baseline is not None or es.gate.history is not None):
        from .gating import check_collected

        check_collected(es.gate, items)
    searching = SEARCH_KEY in config.stash  # a search's trials run in their given order
    if not searching and any("operating_point" in getattr(i, "fixturenames", ()) for i in items):
        _active(config).order_items(config, items)


class EnergyFixture:
    """What a test gets from the ``energy`` fixture: energy windows on the session's board.

    ``with energy.window("inference") as w: run()`` then ``w.result`` holds joules per rail
    and in total, mean/peak watts, sample count and validity.
    """

    def __init__(self, session: PluginSession, nodeid: str) -> None:
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
    es = _active(request.config)
    try:
        _open_or_stop(es)
    except (EdgeEnergyError, OSError) as e:
        pytest.fail(f"edgeenergy: {e}", pytrace=False)
    es.record(request.node.nodeid)
    request.node.add_marker("edge_energy")
    es.watch_benchmark(request)  # its extra_info gets the test's energy figures at teardown
    return EnergyFixture(es, request.node.nodeid)


@pytest.fixture
def batch_size(request: pytest.FixtureRequest) -> int:
    """The batch size a search's trial proposed (``--edge-search`` with several
    ``--batch-size`` values). Otherwise ``batch_size`` is parametrized and this fixture is
    never used."""
    live = request.config.stash.get(SEARCH_KEY, None)
    if live is None:
        pytest.fail("batch_size: not parametrized (the plugin gives it from --batch-size)")
    request.getfixturevalue("operating_point")  # the trial proposes its batch size
    return live.batch_size_of(request.node)


@pytest.fixture
def operating_point(request: pytest.FixtureRequest) -> Iterator[OperatingPoint]:
    """The operating point this test runs at, pinned, read back and verified.

    Parametrized from ``--power-mode``, ``--cpu-freq``, ``--gpu-freq``, ``--emc-freq``,
    ``--cpu-cores``, ``--governor`` (or env, ini, the ``edge_grid`` marker); without any of
    them it is ``dvfs``: nothing pinned.
    """
    es = _active(request.config)
    try:
        _open_or_stop(es)
    except (EdgeEnergyError, OSError) as e:
        pytest.fail(f"edgeenergy: {e}", pytrace=False)
    param = getattr(request, "param", None)
    live = request.config.stash.get(SEARCH_KEY, None)
    if live is not None and param is not None:
        with live.trial(es, request, param) as point:
            yield point
        return
    with es.pinned(request.node.nodeid, param) as point:
        yield point


@pytest.fixture
def edge_bench(request: pytest.FixtureRequest) -> EdgeBench:
    """Measure a callable in energy windows, like pytest-benchmark's pedantic mode:
    warm-up, a fixed amount of work per repeat, repeats, latency and energy per item.

    ``edge_bench.run(lambda: model(x), items_per_call=batch_size, params={...})``.
    """
    es = _active(request.config)
    try:
        _open_or_stop(es)
        return es.edge_bench(request)
    except (EdgeEnergyError, OSError) as e:
        pytest.fail(f"edgeenergy: {e}", pytrace=False)
