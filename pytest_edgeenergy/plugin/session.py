"""The measurement session of a pytest run: an adapter over :mod:`pytest_edgeenergy.run`.

One :class:`PluginSession` lives per pytest session. The plugin builds it complete in
``pytest_configure`` (cheap: nothing is opened or imported there) and registers it as a
plugin of its own once the run measures (a test asks for ``energy``, ``edge_bench`` or
``operating_point``) or a board or operating-point option is given; its hooks then record
each test, restore the board, finish the report, run the gate and print the summary.

The board's lifecycle (virtual board, detection, lock, power source, idle baseline, pins,
windows, report writer) is :class:`pytest_edgeenergy.run.EnergySession`'s, made at first
need; this class adds what is pytest's: node ids, parametrization of operating points,
test order, fixtures' objects, the gate and the terminal summary, and turns the engine's
typed errors into usage errors, failed or skipped tests.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..bench.settings import DEFAULT as DEFAULT_BENCH
from ..bench.settings import BenchSettings
from ..errors import EdgeEnergyError
from .options import ControlSettings, GateSettings, Settings

if TYPE_CHECKING:
    from ..bench.result import BenchResult
    from ..bench.runner import EdgeBench
    from ..board.detect import Board
    from ..control.errors import SessionBusy
    from ..control.knobset import KnobSet
    from ..control.operating_point import ApplyResult, OperatingPoint
    from ..control.state import Session as ControlSession
    from ..meters.meter import IdleBaseline, Meter, Window
    from ..report.writer import ReportIncomplete
    from ..run.records import TestEnergy
    from ..run.session import EnergySession, OpenWindow

__all__ = ["PLUGIN_BOARD_HINT", "PluginSession"]

PLUGIN_BOARD_HINT = (
    "run on a virtual board with --edge-board=sim:MODEL (e.g. sim:orin-nano), or pass "
    "--edge-root=DIR pointing at a board tree"
)


class PluginSession:
    """The session of a pytest run, and its plugin hooks; see the module docstring.
    Everything it needs is given here: ``control``, ``gate`` and ``bench`` are the control,
    gate and ``edge_bench`` settings; ``notify`` says a line to the user at once; the report
    goes to ``settings.report`` or a new file in ``reports_dir``, its header holding
    ``report_settings``; ``handoff``: the board lock's hand-off token (a session of
    ``edgeenergy ab``)."""

    def __init__(
        self,
        settings: Settings,
        control: ControlSettings | None = None,
        *,
        gate: GateSettings | None = None,
        bench: BenchSettings = DEFAULT_BENCH,
        notify: Callable[[str], None] | None = None,
        reports_dir: Path = Path("reports"),
        report_settings: Mapping[str, Any] | None = None,
        handoff: str | None = None,
    ) -> None:
        self.settings = settings
        self.handoff = handoff
        """The board lock's hand-off token of a session of ``edgeenergy ab``."""
        self.control_settings = control or ControlSettings(False, False, None)
        self.gate = gate
        self.bench_settings = bench
        self.notify: Callable[[str], None] = notify or _to_stderr
        """Says a line to the user at once (the plugin routes it past pytest's capture)."""
        self.reports_dir = reports_dir
        self.report_settings: dict[str, Any] = dict(report_settings or {})
        self._engine: EnergySession | None = None
        self._grid_cache: dict[tuple[tuple[str, str], ...], list[OperatingPoint]] = {}
        self.point_order: list[str] = []
        self.gate_overrides: dict[str, list[str]] = {}
        self.gate_lines: list[str] = []
        self._benches: dict[str, EdgeBench] = {}
        self._benchmarks: dict[str, Any] = {}
        """pytest-benchmark's ``benchmark`` fixture of each test using it with ours."""
        self._busy: SessionBusy | None = None

    # -- the engine ---------------------------------------------------------------------

    @property
    def engine(self) -> EnergySession:
        """The run layer's session this one adapts (made at first need: the runs that
        measure nothing never import it)."""
        if self._engine is None:
            from ..run.session import EnergySession
            from .linewriter import LineWriter

            s, c = self.settings, self.control_settings
            board: str | Path = (
                f"sim:{s.sim_model}"
                if s.sim_model is not None
                else (s.root if s.root is not None else "auto")
            )
            self._engine = EnergySession(
                board,
                report=s.report,
                source=s.source,
                interval_s=s.interval_s,
                idle_s=s.idle_s,
                sim_load=s.sim_load,
                report_overwrite=s.report_overwrite,
                reports_dir=self.reports_dir,
                dry_run=c.dry_run,
                force=c.force_mode,
                settle_s=c.settle_s,
                lock_timeout_s=c.lock_timeout_s,
                notify=self.notify,
                report_settings=self.report_settings,
                # dry-run writes are seen without -s
                control_out=LineWriter(lambda line: self.notify(line)),
                on_lock_wait=lambda line: self.notify(f"edgeenergy: {line} (--edge-lock-timeout)"),
                board_hint=PLUGIN_BOARD_HINT,
                announce=False,  # the summary labels the run
                overwrite_hint="pass --edge-report-overwrite",
                handoff=self.handoff,
            )
        return self._engine

    @property
    def board(self) -> Board | None:
        return self._engine.board if self._engine is not None else None

    @property
    def knobs(self) -> KnobSet | None:
        return self._engine.knobs if self._engine is not None else None

    @property
    def meter(self) -> Meter | None:
        return self._engine.meter if self._engine is not None else None

    @property
    def root(self) -> Path | None:
        return self._engine.root if self._engine is not None else None

    @property
    def control(self) -> ControlSession | None:
        return self._engine.control if self._engine is not None else None

    @property
    def idle(self) -> IdleBaseline | None:
        return self._engine.idle if self._engine is not None else None

    @property
    def idle_by_point(self) -> dict[str, IdleBaseline]:
        return self._engine.idle_by_point if self._engine is not None else {}

    @property
    def tests(self) -> dict[str, TestEnergy]:
        return self._engine.tests if self._engine is not None else {}

    @property
    def report_path(self) -> Path | None:
        return self._engine.report_path if self._engine is not None else None

    @property
    def report_errors(self) -> list[str]:
        return self._engine.report_errors if self._engine is not None else []

    @property
    def lost_results(self) -> list[str]:
        return self._engine.lost_results if self._engine is not None else []

    @property
    def report_incomplete(self) -> ReportIncomplete | None:
        return self._engine.report_incomplete if self._engine is not None else None

    @property
    def unprotected(self) -> str | None:
        return self._engine.unprotected if self._engine is not None else None

    @property
    def simulated(self) -> bool:
        return self._engine.simulated if self._engine is not None else False

    @property
    def current_point(self) -> OperatingPoint | None:
        """The operating point pinned now (None before any test asked for one)."""
        return self._engine.current_point if self._engine is not None else None

    # -- set-up -------------------------------------------------------------------------

    def open(self) -> None:
        """Set up the board, start the sampler and measure idle power. Idempotent."""
        from ..control.errors import SessionBusy

        if self._busy is not None:  # waited once already: do not wait again for each test
            raise self._busy
        try:
            self.engine.open()
        except SessionBusy as e:
            c = self.control_settings
            self._busy = SessionBusy(
                f"{e}; change the wait with --edge-lock-timeout=SECONDS (env "
                f"EDGEENERGY_LOCK_TIMEOUT, ini edge_lock_timeout; now {c.lock_timeout_s:g} s, "
                "0 = refuse at once)"
            )
            raise self._busy from None

    def restore_board(self) -> None:
        """Put every knob back as found (idempotent); raises RestoreError if that fails."""
        if self._engine is not None:
            self._engine.restore_board()

    def apply_point(self, point: OperatingPoint) -> ApplyResult:
        """Pin ``point`` unless it is already pinned; measure idle power there once."""
        return self.engine.apply_point(point)

    def close(self) -> None:
        """Stop the sampler and the virtual board; remove a temporary virtual board."""
        if self._engine is not None:
            self._engine.close()

    # -- measuring ----------------------------------------------------------------------

    def record(self, nodeid: str) -> TestEnergy:
        """The record of test ``nodeid`` (made at its first use)."""
        return self.engine.record(nodeid)

    def finish_test(self, nodeid: str) -> None:
        """Called after a test's teardown: the report on disk gains this test at once."""
        if self._engine is not None:
            self._engine.finish_test(nodeid)

    def update_report(self, **fields: Any) -> None:
        """Rewrite the report's header fields (the search section after each trial)."""
        if self._engine is not None:
            self._engine.update_report(**fields)

    def finish_report(self) -> Path | None:
        """Mark the report finished; its path (None when no test was recorded)."""
        return self._engine.finish_report() if self._engine is not None else None

    def lost_line(self) -> str | None:
        """One line when results measured in this run are not in the report file."""
        return self._engine.lost_line() if self._engine is not None else None

    def begin(self, nodeid: str, label: str) -> OpenWindow:
        """Open an energy window attributed to test ``nodeid``; ``.end()`` closes it."""
        self.open()
        return self.engine.begin(nodeid, label)

    @contextmanager
    def window(self, nodeid: str, label: str) -> Iterator[Window]:
        """Measure the body as one energy window (see :meth:`begin`)."""
        self.open()
        with self.engine.measure(nodeid, label) as w:
            yield w

    # -- operating points ---------------------------------------------------------------

    def points_for(self, config: pytest.Config, marker: dict[str, object]) -> list[OperatingPoint]:
        """The validated operating points for one test function (``[DVFS]`` when none asked).

        Every value is checked against the board before any test runs; a bad one is a usage
        error naming where it came from and what the board offers.
        """
        from ..control.operating_point import DVFS
        from . import pinning

        request = pinning.grid_request(config, marker)
        if not request[0]:
            return [DVFS]
        key = tuple(sorted((k, v[0]) for k, v in request[0].items()))
        cached = self._grid_cache.get(key)
        if cached is not None:
            return cached
        try:
            self.open()
        except (EdgeEnergyError, OSError, ValueError) as e:
            raise pytest.UsageError(str(e)) from None
        points = pinning.expand_points(request, self.engine)
        self._grid_cache[key] = points
        return points

    def order_items(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Group tests by operating point (fewest board changes), report the order, and check
        on a real board that every knob file needed is writable, before any test runs."""
        from . import pinning

        count, walk = pinning.order_items(items)
        self.point_order = [p.id for p in walk]
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and walk:
            tr.write_line(pinning.order_line(count, walk, len(items)))
        if self.control is not None:
            pinning.check_privileges(self.control, walk)

    @contextmanager
    def pinned(self, nodeid: str, point: OperatingPoint | None) -> Iterator[OperatingPoint]:
        """Pin ``point`` for one test, record requested and read-back values, then check
        drift; a point the board refuses fails the test."""
        from ..run.errors import PinRefused

        with ExitStack() as stack:
            try:
                pinned = stack.enter_context(self.engine.pin_for(nodeid, point))
            except PinRefused as e:
                pytest.fail(str(e), pytrace=False)
            yield pinned

    # -- the fixtures' objects ----------------------------------------------------------

    def watch_benchmark(self, request: pytest.FixtureRequest) -> Any | None:
        """pytest-benchmark's ``benchmark`` fixture when the test uses it (None otherwise,
        and always without pytest-benchmark); its ``extra_info`` gets the test's energy
        figures at teardown."""
        if not request.config.pluginmanager.hasplugin("benchmark"):
            return None
        from .benchmark_bridge import benchmark_fixture

        benchmark = benchmark_fixture(request)
        if benchmark is not None:
            self._benchmarks[request.node.nodeid] = benchmark
        return benchmark

    def edge_bench(self, request: pytest.FixtureRequest) -> EdgeBench:
        """The ``edge_bench`` fixture's object for the requesting test (board opened, test
        recorded and marked ``edge_energy``); its runs go into the report and the summary."""
        from .bench_fixture import make_edge_bench

        self.open()
        nodeid = request.node.nodeid
        self.record(nodeid)
        request.node.add_marker("edge_energy")
        bench = make_edge_bench(
            request, self, self.bench_settings, benchmark=self.watch_benchmark(request)
        )
        self._benches[nodeid] = bench
        request.addfinalizer(bench.close)  # its workload worker ends with the test
        return bench

    def bench_results_of(self, nodeid: str) -> list[BenchResult]:
        """The ``edge_bench`` runs of test ``nodeid`` so far."""
        bench = self._benches.get(nodeid)
        return list(bench.results) if bench is not None else []

    def bench_notes_of(self, nodeid: str) -> dict[str, Any]:
        """What the ``edge_bench`` of test ``nodeid`` noted for its report's ``extra`` so
        far (``edge_bench.note``; its whole report merges at teardown)."""
        bench = self._benches.get(nodeid)
        return {} if bench is None else bench.notes

    def bench_results(self) -> list[BenchResult]:
        """Every ``edge_bench`` run of this session, in order."""
        return [r for bench in self._benches.values() for r in bench.results]

    # -- plugin hooks -------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if item.nodeid in self.tests:
            self._record_report(item, call, report)
        return report

    def _record_report(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> None:
        rec = self.tests[item.nodeid]
        if report.when == "setup":
            callspec = getattr(item, "callspec", None)
            if callspec is not None:
                # Every parameter is part of the result's key: a value JSON cannot hold is
                # recorded by its position in the parametrize list, stable from run to run.
                rec.params.update(
                    {
                        k: v
                        if isinstance(v, (str, int, float, bool))
                        else f"#{callspec.indices[k]}"
                        for k, v in callspec.params.items()
                        if k != "operating_point" and v is not None
                    }
                )
            marker = item.get_closest_marker("edge_gate")
            if marker is not None:
                self.gate_overrides[item.nodeid] = [str(a) for a in marker.args]
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
            bench = self._benches.get(item.nodeid)
            if bench is not None and (bench.results or bench.phases or bench.preflights):
                br = bench.report()
                rec.metrics, rec.validity = br["metrics"], br["validity"]
                rec.params.update(br["params"])
                rec.extra.update(br["extra"])
                if rec.status == "passed" and not br["valid"]:
                    rec.status, rec.reason = "invalid", br["reason"]
            benchmark = self._benchmarks.get(item.nodeid)
            if benchmark is not None:
                from .benchmark_bridge import fill_at_teardown

                fill_at_teardown(benchmark, rec, simulated=self.simulated)
            self.finish_test(item.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Restore the board before the summary, so a failed restore is reported loudly;
        then finish the report and run the gate. SIGINT/SIGTERM wait until all of that is
        done: a Ctrl-C here ends the run as interrupted, cleanly, after it."""
        from ..safefs import signals_held, take_pending_signal

        with signals_held():
            self._finish_session(session)
            signum = take_pending_signal()
        if signum is not None:
            import signal

            self.notify(
                f"edgeenergy: {signal.Signals(signum).name} received while finishing: the "
                "board was restored and the report written first; the run ends as interrupted"
            )
            session.exitstatus = pytest.ExitCode.INTERRUPTED

    def _finish_session(self, session: pytest.Session) -> None:
        from ..control.errors import RestoreError

        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        try:
            self.restore_board()
        except RestoreError as e:
            if tr is not None:
                tr.write_line(f"edgeenergy: BOARD NOT RESTORED: {e}", red=True, bold=True)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        path = self.finish_report()
        if self.lost_line() is not None:
            if self.report_incomplete is not None and self.report_incomplete.rescue is None:
                assert self._engine is not None
                self._engine.print_document()
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            gate = self.gate
            if gate is not None and (
                gate.baseline is not None or gate.save_baseline is not None or gate.history
            ):
                # a verdict or a baseline from a report that lacks results would mislead
                self.gate_lines = [
                    "gate not run and no baseline saved: the report lacks results "
                    "(REPORT INCOMPLETE)"
                ]
            return
        if path is None or self.gate is None:
            return
        from .gating import exit_status, run_gate

        outcome, self.gate_lines = run_gate(self.gate, self.gate_overrides, path)
        session.exitstatus = exit_status(outcome, session.exitstatus)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.tests:
            from ..present.summary import summary_lines

            title = "energy (SIMULATED: virtual board)" if self.simulated else "energy"
            terminalreporter.write_sep("=", title)
            for line in summary_lines(self):
                terminalreporter.write_line(line)
        results = self.bench_results()
        if results:
            from ..present.bench_summary import format_rows, summary_rows
            from ..present.interleave_summary import INTERLEAVE_INTRO, interleave_rows

            simulated = " (SIMULATED)" if self.simulated else ""
            terminalreporter.write_sep("=", "energy benchmarks" + simulated)
            for line in format_rows(summary_rows(results)):
                terminalreporter.write_line(line)
            interleaved = interleave_rows(self._benches.values())
            if interleaved:
                terminalreporter.write_sep("=", "training and inference interleaved" + simulated)
                for line in [INTERLEAVE_INTRO, *format_rows(interleaved)]:
                    terminalreporter.write_line(line)
        if self.gate_lines:
            terminalreporter.write_sep("=", "energy gate")
            for line in self.gate_lines:
                terminalreporter.write_line(line)
        lost = self.lost_line()
        if lost is not None:
            terminalreporter.write_line(lost, red=True, bold=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.close()


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
