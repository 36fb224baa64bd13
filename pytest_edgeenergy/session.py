"""The measurement session behind the pytest plugin: board, virtual board, meter, results.

One :class:`EnergySession` lives per pytest session. It is built lazily (or at session start
when a board option was given), owns the virtual board's process when there is one, and is
closed on every exit path by the plugin.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import EdgeEnergyError
from .settings import ControlSettings, GateSettings, Settings

if TYPE_CHECKING:
    from .board.detect import Board
    from .control.errors import SessionBusy
    from .control.operating_point import ApplyResult, OperatingPoint
    from .control.state import Session as ControlSession
    from .meters.meter import IdleBaseline, Meter, Window, WindowResult


class BoardSetupError(EdgeEnergyError, OSError):
    """The board could not be set up; the message says what was looked for and what to do."""


@dataclass
class TestEnergy:
    """The windows one test measured and how it ended."""

    nodeid: str
    windows: list[WindowResult] = field(default_factory=list)
    status: str | None = None
    reason: str | None = None
    duration_s: float | None = None
    operating_point: dict[str, Any] | None = None
    """``{"requested": ..., "read_back": ..., "mismatches": [...], "drift": [...]}``."""
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] | None = None
    """Report metrics set by the benchmark fixture; None: derived from the windows."""
    validity: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


class EnergySession:
    """Board + meter for a pytest session; see the module docstring."""

    def __init__(self, settings: Settings, control: ControlSettings | None = None) -> None:
        self.settings = settings
        self.control_settings = control or ControlSettings(False, False, None)
        self.control: ControlSession | None = None
        self._point: OperatingPoint | None = None
        self._point_result: ApplyResult | None = None
        self.idle_by_point: dict[str, IdleBaseline] = {}
        self.grid_cache: dict[tuple[tuple[str, str], ...], list[OperatingPoint]] = {}
        self.point_order: list[str] = []
        self._stack = ExitStack()
        self._open = False
        self.board: Board | None = None
        self.meter: Meter | None = None
        self.idle: IdleBaseline | None = None
        self.root: Path | None = None
        self.tests: dict[str, TestEnergy] = {}
        self.report_path: Path | None = None
        self.reports_dir = Path("reports")
        self.report_settings: dict[str, Any] = {}
        self._writer: Any = None
        self.gate: GateSettings | None = None
        self.gate_overrides: dict[str, list[str]] = {}
        self.gate_lines: list[str] = []
        self.report_errors: list[str] = []
        self.notify: Callable[[str], None] = _to_stderr
        """Says a line to the user at once (the plugin routes it past pytest's capture)."""
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
        from .board.detect import detect
        from .meters.factory import open_source
        from .meters.meter import Meter

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
        from .reporting import open_writer

        # With --edge-report-overwrite an existing file is replaced at this run's first test.
        self._writer = open_writer(
            self, self.reports_dir, self.report_settings, overwrite=s.report_overwrite
        )
        self.report_path = self._writer.path

    def _start_control(self, board: Board) -> None:
        """Lock the board's knobs and restore what a killed earlier session left changed."""
        from .control.errors import SessionBusy
        from .control.state import Session as ControlSession
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
        from .sim.runner import SimProcess
        from .sim.tree import create

        root = Path(tempfile.mkdtemp(prefix=f"edgeenergy-sim-{model}-"))
        self._stack.callback(shutil.rmtree, root, True)
        create(model, root)
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
        return self.tests.setdefault(nodeid, TestEnergy(nodeid))

    def finish_test(self, nodeid: str) -> None:
        """Called after a test's teardown: the report on disk gains this test at once."""
        if not self._open or nodeid not in self.tests or self._writer is None:
            return
        from .reporting import test_entry

        try:
            self._writer.add_test(test_entry(self.tests[nodeid]))
        except (OSError, ValueError) as e:
            # The measurement stays in memory and in the summary; the run goes on.
            self.report_errors.append(f"{nodeid}: not written to the report: {e}")

    def finish_report(self) -> Path | None:
        """Mark the report finished; returns its path (None when no test was recorded: then
        no report file was written)."""
        if self._writer is None:
            return None
        if self._writer.test_count == 0:
            self.report_path = None
            return None
        try:
            self._writer.finish()
        except OSError as e:
            self.report_errors.append(f"report not finished: {e}")
        return self.report_path

    def begin(self, nodeid: str, label: str) -> OpenWindow:
        """Open an energy window attributed to test ``nodeid``; ``.end()`` closes it."""
        from .control.residency import ResidencySampler

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
        from .control.residency import residency_to_json

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
