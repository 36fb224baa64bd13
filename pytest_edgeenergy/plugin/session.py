"""The measurement session of a pytest run: board, virtual board, meter, records, report.

One :class:`EnergySession` lives per pytest session. The plugin builds it complete in
``pytest_configure`` (cheap: nothing is opened or imported there) and registers it as a
plugin of its own once the run measures (a test asks for ``energy``, ``edge_bench`` or
``operating_point``) or a board or operating-point option is given; its hooks then record
each test, restore the board, finish the report, run the gate and print the summary. It
owns the virtual board's process when there is one and is closed on every exit path.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
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
    from ..control.operating_point import ApplyResult, OperatingPoint
    from ..control.state import Session as ControlSession
    from ..meters.meter import IdleBaseline, Meter, Window, WindowResult
    from ..report.writer import ReportIncomplete
    from .records import TestEnergy

__all__ = ["BoardSetupError", "EnergySession", "OpenWindow"]


class BoardSetupError(EdgeEnergyError, OSError):
    """The board could not be set up; the message says what was looked for and what to do."""


class EnergySession:
    """Board + meter + records of a pytest session, and its plugin hooks; see the module
    docstring. Everything it needs is given here: ``control``, ``gate`` and ``bench`` are the
    control, gate and ``edge_bench`` settings; ``notify`` says a line to the user at once;
    the report goes to ``settings.report`` or a new file in ``reports_dir``, its header
    holding ``report_settings``."""

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
    ) -> None:
        self.settings = settings
        self.control_settings = control or ControlSettings(False, False, None)
        self.gate = gate
        self.bench_settings = bench
        self.notify: Callable[[str], None] = notify or _to_stderr
        """Says a line to the user at once (the plugin routes it past pytest's capture)."""
        self.reports_dir = reports_dir
        self.report_settings: dict[str, Any] = dict(report_settings or {})
        self.control: ControlSession | None = None
        self._point: OperatingPoint | None = None
        self._point_result: ApplyResult | None = None
        self.idle_by_point: dict[str, IdleBaseline] = {}
        self._grid_cache: dict[tuple[tuple[str, str], ...], list[OperatingPoint]] = {}
        self.point_order: list[str] = []
        self._stack = ExitStack()
        self._open = False
        self.board: Board | None = None
        self.meter: Meter | None = None
        self.idle: IdleBaseline | None = None
        self.root: Path | None = None
        self.tests: dict[str, TestEnergy] = {}
        self.report_path: Path | None = None
        self._writer: Any = None
        self.gate_overrides: dict[str, list[str]] = {}
        self.gate_lines: list[str] = []
        self.report_errors: list[str] = []
        self.lost_results: list[str] = []
        """Tests whose result could not be recorded at all (the run fails)."""
        self.report_incomplete: ReportIncomplete | None = None
        """Set when the final report write failed (the run fails)."""
        self._last_write_failure: str | None = None
        self.unprotected: str | None = None
        """Why this session holds no board lock (it could only measure); None when it does."""
        self._benches: dict[str, EdgeBench] = {}
        self._benchmarks: dict[str, Any] = {}
        """pytest-benchmark's ``benchmark`` fixture of each test using it with ours."""
        self._busy: SessionBusy | None = None

    # -- set-up -------------------------------------------------------------------------

    def open(self) -> None:
        """Set up the board, start the sampler and measure idle power. Idempotent."""
        if self._open:
            return
        if self._busy is not None:  # waited once already: do not wait again for each test
            raise self._busy
        try:
            self._open_board()
        except BaseException:
            self._stack.close()
            raise
        self._open = True

    def _open_board(self) -> None:
        from ..board.detect import detect
        from ..meters.factory import open_source
        from ..meters.meter import Meter

        s = self.settings
        if s.sim_model is not None:
            self.root = self._start_sim(s.sim_model)
        else:
            self.root = s.root if s.root is not None else Path("/")
        board = detect(self.root)
        if s.source in ("auto", "ina") and not board.rails.rails and s.sim_model is None:
            raise BoardSetupError(
                f"no power monitor (INA3221/INA238) found under {self.root}: "
                "on a machine without a Jetson run on a virtual board with "
                "--edge-board=sim:MODEL (e.g. sim:orin-nano), or pass --edge-root=DIR "
                "pointing at a board tree"
            )
        self.board = board
        self._start_control(board)
        source = open_source(s.source, self.root, interval_s=s.interval_s)
        self._stack.callback(source.close)
        meter = Meter(source, interval_s=s.interval_s)
        meter.start()
        self._stack.callback(meter.stop)
        self.meter = meter
        if s.idle_s > 0:
            self.idle = meter.measure_idle(seconds=s.idle_s)
        from .report_sink import open_writer

        # With --edge-report-overwrite an existing file is replaced at this run's first test.
        self._writer = open_writer(
            board,
            self.root,
            self.idle,
            self.report_settings,
            path=s.report,
            reports_dir=self.reports_dir,
            overwrite=s.report_overwrite,
        )
        self.report_path = self._writer.path

    def _start_control(self, board: Board) -> None:
        """Lock the board's knobs and restore what a killed earlier session left changed."""
        from ..control.errors import SessionBusy
        from ..control.state import Session as ControlSession
        from .linewriter import LineWriter

        c = self.control_settings
        ctl = ControlSession(
            board,
            dry_run=c.dry_run,
            force=c.force_mode,
            settle_s=c.settle_s,
            lock_timeout_s=c.lock_timeout_s,
            on_lock_wait=lambda line: self.notify(f"edgeenergy: {line} (--edge-lock-timeout)"),
            out=LineWriter(lambda line: self.notify(line)),  # dry-run writes seen without -s
        )
        try:
            ctl.start()
        except SessionBusy as e:
            self._busy = SessionBusy(
                f"{e}; change the wait with --edge-lock-timeout=SECONDS (env "
                f"EDGEENERGY_LOCK_TIMEOUT, ini edge_lock_timeout; now {c.lock_timeout_s:g} s, "
                "0 = refuse at once)"
            )
            raise self._busy from None
        self.control = ctl
        self.unprotected = ctl.unprotected
        self._stack.callback(self.restore_board)

    def restore_board(self) -> None:
        """Put every knob back as found (idempotent); raises RestoreError if that fails."""
        ctl, self.control = self.control, None
        self._point = None
        if ctl is not None:
            ctl.close()

    @property
    def current_point(self) -> OperatingPoint | None:
        """The operating point pinned now (None before any test asked for one)."""
        return self._point

    def apply_point(self, point: OperatingPoint) -> ApplyResult:
        """Pin ``point`` unless it is already pinned; measure idle power there once."""
        assert self.control is not None
        if point == self._point and self._point_result is not None:
            return self._point_result
        result = self.control.apply(point)
        self._point, self._point_result = point, result
        if self.meter is not None and self.settings.idle_s > 0:
            idle = self.idle_by_point.get(point.id)
            if idle is None:
                idle = self.meter.measure_idle(seconds=self.settings.idle_s)
                self.idle_by_point[point.id] = idle
            if idle.valid:
                self.meter.idle = idle
                self.idle = idle
        return result

    def _start_sim(self, model: str) -> Path:
        from ..sim.runner import SimProcess
        from ..sim.tree import create

        root = Path(tempfile.mkdtemp(prefix=f"edgeenergy-sim-{model}-"))
        self._stack.callback(shutil.rmtree, root, True)
        create(model, root, load=self.settings.sim_load)
        proc: AbstractContextManager[Any] = SimProcess(root, owns_tree=True)
        self._stack.enter_context(proc)
        return root

    def close(self) -> None:
        """Stop the sampler and the virtual board; remove a temporary virtual board."""
        self._stack.close()
        self._open = False

    # -- measuring ----------------------------------------------------------------------

    @property
    def simulated(self) -> bool:
        return bool(self.board is not None and self.board.identity.simulated)

    def record(self, nodeid: str) -> TestEnergy:
        """The record of test ``nodeid`` (made at its first use)."""
        rec = self.tests.get(nodeid)
        if rec is None:
            from .records import TestEnergy

            rec = self.tests[nodeid] = TestEnergy(nodeid)
        return rec

    def finish_test(self, nodeid: str) -> None:
        """Called after a test's teardown: the report on disk gains this test at once. A
        failed write keeps the result (the writer holds it and rescues it) and is said
        once per cause; a result that cannot be kept at all fails the run."""
        if not self._open or nodeid not in self.tests or self._writer is None:
            return
        from ..report.writer import ReportWriteError
        from .report_sink import test_entry

        try:
            self._writer.add_test(test_entry(self.tests[nodeid]))
        except ReportWriteError as e:
            self._report_write_failed(str(e))
        except (OSError, ValueError) as e:  # not a result the report can hold: lost
            self.lost_results.append(nodeid)
            self._report_write_failed(f"{nodeid}: cannot be recorded in the report: {e}")

    def _report_write_failed(self, message: str) -> None:
        """Say a failed write at once, but only the first time for each cause."""
        cause = self._writer.failure if self._writer is not None else None
        if cause is not None and cause == self._last_write_failure:
            return
        self._last_write_failure = cause
        self.report_errors.append(message)
        self.notify(f"edgeenergy: REPORT ERROR: {message}")

    def update_report(self, **fields: Any) -> None:
        """Rewrite the report's header fields (the search section after each trial); a
        failed write is reported like a test's and the run goes on."""
        if self._writer is None:
            return
        from ..report.writer import ReportWriteError

        try:
            self._writer.update_header(**fields)
        except ReportWriteError as e:
            self._report_write_failed(str(e))
        except ValueError as e:
            self.report_errors.append(f"report header not written: {e}")

    def finish_report(self) -> Path | None:
        """Mark the report finished; returns its path (None when no test was recorded: then
        no report file was written). When the final write fails :attr:`report_incomplete`
        says what the file lacks and where the rescue copy is."""
        if self._writer is None:
            return None
        if self._writer.test_count == 0:
            self.report_path = None
            return None
        import contextlib

        from ..report.writer import ReportIncomplete, ReportWriteError
        from .run_warnings import run_warnings

        try:
            warnings = run_warnings(self)
            if warnings:  # kept in the header even when this write fails: finish() retries
                with contextlib.suppress(ReportWriteError):
                    self._writer.update_header(warnings=warnings)
            self._writer.finish()
        except ReportIncomplete as e:
            self.report_incomplete = e
        return self.report_path

    def lost_line(self) -> str | None:
        """One line when results measured in this run are not in the report file (or were
        not kept at all); None when the report holds every result."""
        parts: list[str] = []
        inc = self.report_incomplete
        if inc is not None:
            parts.append(str(inc))
            if inc.rescue is None and self._writer is not None:
                parts.append("the complete report follows on stderr")
        if self.lost_results:
            from ..words import counted

            parts.append(
                f"{counted(len(self.lost_results), 'result')} could not be recorded at all: "
                + ", ".join(self.lost_results)
            )
        if not parts:
            return None
        return "edgeenergy: REPORT INCOMPLETE: " + "; ".join(parts)

    def begin(self, nodeid: str, label: str) -> OpenWindow:
        """Open an energy window attributed to test ``nodeid``; ``.end()`` closes it."""
        from ..control.residency import ResidencySampler

        self.open()
        assert self.meter is not None and self.board is not None
        residency = ResidencySampler(self.board, interval_s=RESIDENCY_INTERVAL_S)
        residency.start()
        try:
            window = self.meter.begin(label)
        except BaseException:
            residency.stop()
            raise
        return OpenWindow(self.record(nodeid), label, window, residency)

    @contextmanager
    def window(self, nodeid: str, label: str) -> Iterator[Window]:
        """Measure the body as one energy window (see :meth:`begin`)."""
        handle = self.begin(nodeid, label)
        try:
            yield handle.window
        finally:
            handle.end()

    # -- operating points ---------------------------------------------------------------

    def points_for(self, config: pytest.Config, marker: dict[str, object]) -> list[OperatingPoint]:
        """The validated operating points for one test function (``[DVFS]`` when none asked).

        Every value is checked against the board before any test runs; a bad one is a usage
        error naming where it came from and what the board offers.
        """
        from ..control.errors import ControlError
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
        except (ControlError, OSError, ValueError) as e:
            raise pytest.UsageError(str(e)) from None
        assert self.board is not None
        points = pinning.expand_points(request, self.board, force=self.control_settings.force_mode)
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
        drift."""
        from ..control.errors import ControlError
        from ..control.operating_point import DVFS, check_drift
        from . import pinning

        point = point if point is not None else DVFS
        assert self.control is not None
        rec = self.record(nodeid)
        try:
            result = self.apply_point(point)
        except ControlError as e:
            pytest.fail(f"operating point {point.id} could not be applied: {e}", pytrace=False)
        knobs = self.control.knobs
        info = pinning.pinned_info(point, result, knobs)
        rec.operating_point = info
        yield point
        info["drift"] = check_drift(point, knobs)

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
        return bench

    def bench_results_of(self, nodeid: str) -> list[BenchResult]:
        """The ``edge_bench`` runs of test ``nodeid`` so far."""
        bench = self._benches.get(nodeid)
        return list(bench.results) if bench is not None else []

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
                assert self._writer is not None
                print(self._writer.document(), file=sys.stderr, flush=True)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            gate = self.gate
            if gate is not None and (gate.baseline is not None or gate.save_baseline is not None):
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
            from .summary import summary_lines

            title = "energy (SIMULATED: virtual board)" if self.simulated else "energy"
            terminalreporter.write_sep("=", title)
            for line in summary_lines(self):
                terminalreporter.write_line(line)
        results = self.bench_results()
        if results:
            from .bench_summary import format_rows, summary_rows

            terminalreporter.write_sep(
                "=", "energy benchmarks" + (" (SIMULATED)" if self.simulated else "")
            )
            for line in format_rows(summary_rows(results)):
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


class OpenWindow:
    """An energy window in progress; :meth:`end` records its result (and the share of time
    each CPU/GPU clock spent at each frequency, in the test's ``extra.residency``)."""

    def __init__(self, rec: TestEnergy, label: str, window: Window, residency: Any) -> None:
        self._rec = rec
        self.label = label
        self.window = window
        self._residency = residency
        self.result: WindowResult | None = None

    def end(self) -> WindowResult:
        """Close the window (once; later calls return the same result)."""
        if self.result is not None:
            return self.result
        from ..control.residency import residency_to_json

        try:
            self.result = self.window.end()
        finally:
            shares = self._residency.stop()
        self._rec.windows.append(self.result)
        self._rec.extra.setdefault("residency", []).append(
            {"window": self.label, "shares": residency_to_json(shares)}
        )
        return self.result


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


RESIDENCY_INTERVAL_S = 0.05
"""How often ``cur_freq`` is read during a window for frequency residency."""
