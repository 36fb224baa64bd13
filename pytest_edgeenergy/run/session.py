"""A measuring session without pytest: a board opened and locked, its idle baseline, pinned
operating points, energy windows and the JSON report.

::

    from pytest_edgeenergy import EnergySession

    with EnergySession(board="sim:orin-nano", report="r.json") as s, s.pinned(gpu_freq="max"):
        with s.window("inference") as w:
            run()
    print(w.result.total.energy_j)

Opening (``with``, or :meth:`EnergySession.open`) makes and animates a virtual board for
``sim:MODEL`` (removed at the end), detects the board once (identity, rails, knobs: the power
source reads the rails found then, control writes only the knob files found then), takes the
board's lock (restoring what a killed session left changed), starts the sampler, measures the
idle baseline and prepares the report. Leaving restores every knob, writes the final report
and stops the sampler and the virtual board.

Each :meth:`~EnergySession.window` becomes one entry of the report, its id the window's
label (``inference``; ``inference#2`` for the same label again at the same operating point),
with the operating point pinned around it (requested and read-back values, drift), its
energy per rail and in total, gross and net of idle power, and its validity: the shape a
pytest test with the ``energy`` fixture gets, so ``edgeenergy compare`` reads both alike.
The report is rewritten after every window (atomically, losing nothing: see
:mod:`pytest_edgeenergy.report.writer`); a final write that fails raises
:class:`~pytest_edgeenergy.report.writer.ReportIncomplete`, naming the rescue copy.

The pytest plugin's session (:class:`pytest_edgeenergy.plugin.session.PluginSession`) is a
thin adapter over this class: it uses :meth:`~EnergySession.begin`,
:meth:`~EnergySession.pin_for`, :meth:`~EnergySession.record` and
:meth:`~EnergySession.finish_test` with pytest's node ids. Nothing here imports pytest.
"""

from __future__ import annotations

import atexit
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TextIO

from ..errors import EdgeEnergyError, InvalidValue
from .errors import NoPowerMonitor, PinRefused, PointError, SessionClosed, Unlocked, WrongThread
from .records import TestEnergy
from .target import BoardTarget, make_virtual_board, parse_board

if TYPE_CHECKING:
    from ..board.detect import Board
    from ..control.knobset import KnobSet
    from ..control.operating_point import ApplyResult, OperatingPoint
    from ..control.state import Session as ControlSession
    from ..meters.meter import IdleBaseline, Meter, Window, WindowResult
    from ..report.writer import ReportIncomplete, ReportWriter

__all__ = [
    "DEFAULT_IDLE_S",
    "DEFAULT_INTERVAL_S",
    "DEFAULT_LOCK_TIMEOUT_S",
    "POINT_KEYS",
    "RESIDENCY_INTERVAL_S",
    "EnergySession",
    "OpenWindow",
]

DEFAULT_INTERVAL_S = 0.01
DEFAULT_IDLE_S = 2.0
DEFAULT_LOCK_TIMEOUT_S = 300.0
RESIDENCY_INTERVAL_S = 0.05
"""How often ``cur_freq`` is read during a window for frequency residency."""
POINT_KEYS = ("power_mode", "cpu_freq", "gpu_freq", "emc_freq", "cpu_cores", "governor")
"""The knobs :meth:`EnergySession.pinned` takes, named as the pytest options."""

LEFT_OPEN = "the window was still open when the session closed"
"""The reason of a window's entry that the session's end had to close."""

LIBRARY_BOARD_HINT = (
    'run on a virtual board with board="sim:MODEL" (e.g. sim:orin-nano), or pass the '
    "directory of a board tree as board"
)


class EnergySession:
    """A board, its meter, pins, windows and report, for scripts and notebooks (see the
    module docstring).

    ``board``: ``"sim:MODEL"`` (a virtual board made for this session), ``"auto"`` (this
    machine's board, root ``/``) or a board tree's directory. ``report``: the JSON report's
    path (default: a new ``reports/<device>-<time>.json``; nothing is written when no window
    was measured; ``False``: no report at all). ``lock=False`` measures only: no lock is
    taken and nothing pinned (:class:`~.errors.Unlocked`), so the session can watch a board
    another session drives. ``source``: the power source (``auto``, ``ina``, ``tegrastats``, ...);
    ``interval_s``: the sampling interval; ``idle_s``: seconds of idle power measured at
    the start and at each newly pinned point (0: none, no net figures). ``dry_run``,
    ``force``, ``settle_s``, ``lock_timeout_s``: as ``--edge-dry-run``,
    ``--edge-force-mode``, ``--edge-settle-s``, ``--edge-lock-timeout``. ``notify`` hears
    lines meant for the user at once (default: stderr).

    The remaining keywords are for front ends (the pytest plugin, the CLI): the report
    header's ``report_settings``, where control's dry-run lines go (``control_out``), the
    line said when the lock is busy (``on_lock_wait``) and how the no-power-monitor error
    names the way to a virtual board (``board_hint``), and whether opening a virtual board
    is said (``announce``: a front end that labels its output itself says no), and how an
    existing report file is allowed to be replaced (``overwrite_hint``), and the board lock's
    hand-off token the front end took for this session (``handoff``; None: the one this
    process was given, if any, see :mod:`pytest_edgeenergy.handoff`), and the command line
    the report's header records (``command_line``; None: this process's ``sys.argv``).
    """

    def __init__(
        self,
        board: str | Path = "auto",
        *,
        report: str | Path | Literal[False] | None = None,
        lock: bool = True,
        source: str = "auto",
        interval_s: float = DEFAULT_INTERVAL_S,
        idle_s: float = DEFAULT_IDLE_S,
        sim_load: float | None = None,
        report_overwrite: bool = False,
        reports_dir: Path = Path("reports"),
        dry_run: bool = False,
        force: bool = False,
        settle_s: float | None = None,
        lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        notify: Callable[[str], None] | None = None,
        report_settings: Mapping[str, Any] | None = None,
        control_out: TextIO | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
        board_hint: str = LIBRARY_BOARD_HINT,
        announce: bool = True,
        overwrite_hint: str = "pass report_overwrite=True",
        handoff: str | None = None,
        command_line: Sequence[str] | None = None,
    ) -> None:
        self.target: BoardTarget = parse_board(board)
        if not (isinstance(idle_s, (int, float)) and math.isfinite(idle_s) and idle_s >= 0):
            raise InvalidValue(f"idle_s={idle_s!r}: must be a finite number of seconds >= 0")
        self.source_name = source
        self.interval_s = interval_s
        self.idle_s = float(idle_s)
        self.sim_load = sim_load
        self.write_report = report is not False
        self.report_target = Path(report) if report is not None and report is not False else None
        self.lock = lock
        self.report_overwrite = report_overwrite
        self.reports_dir = Path(reports_dir)
        self.dry_run = dry_run
        self.force = force
        self.settle_s = settle_s
        self.lock_timeout_s = lock_timeout_s
        self.notify: Callable[[str], None] = notify or _to_stderr
        self.report_settings: dict[str, Any] = (
            dict(report_settings) if report_settings is not None else self._own_settings()
        )
        self._control_out = control_out
        self._on_lock_wait = on_lock_wait or (lambda line: self.notify(f"edgeenergy: {line}"))
        self._board_hint = board_hint
        self._announce = announce
        self._overwrite_hint = overwrite_hint
        self._handoff = handoff
        self._command_line = list(command_line) if command_line is not None else None
        self.root: Path | None = None
        self.board: Board | None = None
        self.knobs: KnobSet | None = None
        """The board's allow-list, built once when it is opened and shared by every pin,
        window (frequency residency) and drift check."""
        self.control: ControlSession | None = None
        self.meter: Meter | None = None
        self.idle: IdleBaseline | None = None
        """The idle baseline windows are measured against now (the current point's)."""
        self.idle_by_point: dict[str, IdleBaseline] = {}
        self._start_idle: IdleBaseline | None = None
        self._point: OperatingPoint | None = None
        self._point_result: ApplyResult | None = None
        self.tests: dict[str, TestEnergy] = {}
        """Every record (a pytest test, or a window of this library), by id."""
        self.report_path: Path | None = None
        self._writer: ReportWriter | None = None
        self.report_errors: list[str] = []
        self.lost_results: list[str] = []
        """Records whose result could not be kept at all (the run fails)."""
        self.report_incomplete: ReportIncomplete | None = None
        """Set when the final report write failed."""
        self._last_write_failure: str | None = None
        self.unprotected: str | None = None
        """Why this session holds no board lock (it could only measure); None when it does."""
        self._stack = ExitStack()
        self._open = False
        self._labels: dict[tuple[str, str], int] = {}
        self._thread: threading.Thread | None = None
        """The thread that opened the session: the only one that may use it."""
        self._windows: list[OpenWindow] = []
        """Windows begun and not ended yet."""

    def _own_settings(self) -> dict[str, Any]:
        """The report header's settings, named as the pytest options that would ask the same."""
        t = self.target
        where = {"edge_board": t.text} if t.root is None else {"edge_root": str(t.root)}
        return {**where, "edge_source": self.source_name}

    # -- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> EnergySession:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Restore the board, write the final report, stop everything. When the body
        raised, a failed restore or report is said (``notify``) and the body's exception
        goes on; otherwise it is raised (:class:`~..control.errors.RestoreError` first)."""
        from ..control.errors import RestoreError
        from ..safefs import signals_held

        self._check_thread()
        restore_error: RestoreError | None = None
        try:
            try:
                self._end_open_windows()
                self.restore_board()  # journaled and signal-safe by itself
            except RestoreError as e:
                restore_error = e
                self.notify(f"edgeenergy: BOARD NOT RESTORED: {e}")
        finally:
            with signals_held():  # a Ctrl-C waits until the report is final and all stopped
                self.finish_report()
                self.close()
        lost = self.lost_line()
        if lost is not None:
            self.notify(lost)
            if self.report_incomplete is not None and self.report_incomplete.rescue is None:
                self.print_document()
        if exc is not None:
            return
        if restore_error is not None:
            raise restore_error
        if self.report_incomplete is not None:
            raise self.report_incomplete

    def open(self) -> None:
        """Set up the board, take its lock, start the sampler, measure idle power and
        prepare the report. Idempotent; on failure everything started is stopped again."""
        if self._open:
            self._check_thread()
            return
        self._thread = threading.current_thread()
        try:
            self._open_board()
        except BaseException:
            self._stack.close()
            raise
        self._open = True
        atexit.register(self._close_at_exit)

    @property
    def is_open(self) -> bool:
        return self._open

    def _open_board(self) -> None:
        from ..board.detect import detect
        from ..control.knobset import knob_set
        from ..meters.factory import open_source
        from ..meters.meter import Meter
        from .report import open_writer

        t = self.target
        if t.sim_model is not None:
            self.root = make_virtual_board(t.sim_model, self._stack, load=self.sim_load)
        else:
            self.root = t.root if t.root is not None else Path("/")
        board = detect(self.root)
        if self.source_name in ("auto", "ina") and not board.rails.rails and t.sim_model is None:
            raise NoPowerMonitor(self.root, self._board_hint)
        self.board = board
        if self._announce and board.identity.simulated:
            self.notify(
                f"edgeenergy: {self.target.text}: a virtual board, every figure of this "
                "session is SIMULATED"
            )
        self.knobs = knob_set(board)
        if self.lock:
            self._start_control(self.knobs)
        source = open_source(self.source_name, board, interval_s=self.interval_s)
        self._stack.callback(source.close)
        meter = Meter(source, interval_s=self.interval_s)
        meter.start()
        self._stack.callback(meter.stop)
        self.meter = meter
        if self.idle_s > 0:
            self.idle = self._start_idle = meter.measure_idle(seconds=self.idle_s)
        if not self.write_report:
            return
        # With report_overwrite an existing file is replaced at this run's first record.
        self._writer = open_writer(
            board,
            self.root,
            self.idle,
            self.report_settings,
            path=self.report_target,
            reports_dir=self.reports_dir,
            overwrite=self.report_overwrite,
            overwrite_hint=self._overwrite_hint,
            command_line=self._command_line,
        )
        self.report_path = self._writer.path

    def _start_control(self, knobs: KnobSet) -> None:
        """Lock the board's knobs and restore what a killed earlier session left changed
        (:class:`~..control.errors.SessionBusy` when another session holds the board)."""
        from ..control.state import Session as ControlSession

        ctl = ControlSession(
            knobs,
            dry_run=self.dry_run,
            force=self.force,
            settle_s=self.settle_s,
            lock_timeout_s=self.lock_timeout_s,
            on_lock_wait=self._on_lock_wait,
            out=self._control_out,
            handoff=self._handoff,
        )
        ctl.start()
        self.control = ctl
        self.unprotected = ctl.unprotected
        self._stack.callback(self.restore_board)

    def restore_board(self) -> None:
        """Put every knob back as found (idempotent); raises RestoreError if that fails."""
        self._check_thread()
        ctl, self.control = self.control, None
        self._point = self._point_result = None
        if ctl is not None:
            ctl.close()

    def close(self) -> None:
        """Stop the sampler and the virtual board (removing a temporary one); restores the
        board first when :meth:`restore_board` has not run. A window still open is ended
        first, its entry failed."""
        self._check_thread()
        try:
            self._end_open_windows()
        finally:
            try:
                self._stack.close()
            finally:
                self._open = False
                atexit.unregister(self._close_at_exit)

    def _close_at_exit(self) -> None:
        """At interpreter exit, while imports still work: a session left open (no ``with``,
        or a window's block never left) is closed as leaving ``with`` would."""
        if not self._open:
            return
        self._thread = threading.current_thread()  # the opener's thread has ended
        left = len(self._windows)
        if left:
            from ..words import counted

            self.notify(
                f"edgeenergy: the energy session was still open at interpreter exit with "
                f"{counted(left, 'window')} open: closed, and the open windows recorded failed"
            )
        try:
            self.__exit__(None, None, None)
        except (EdgeEnergyError, OSError) as e:
            self.notify(f"edgeenergy: {e}")

    def _end_open_windows(self) -> None:
        """End the windows still open; their entries are failed (left open)."""
        while self._windows:
            handle = self._windows[-1]
            handle.end()
            rec = handle.record
            if rec.status is None:
                rec.status, rec.reason = "failed", LEFT_OPEN
            self.finish_test(rec.nodeid)

    def _check_thread(self) -> None:
        owner = self._thread
        if owner is not None and owner is not threading.current_thread():
            raise WrongThread(
                f"this energy session was opened in thread {owner.name!r} and is used from "
                f"thread {threading.current_thread().name!r}: a session pins and measures its "
                "board from the thread that opened it; use it there (a window measures the "
                "whole board, whichever thread does the work)"
            )

    def _require_open(self) -> None:
        if not self._open:
            raise SessionClosed(
                "the energy session is not open: use it inside `with EnergySession(...) as s:` "
                "(or call s.open() first)"
            )
        self._check_thread()

    @property
    def simulated(self) -> bool:
        return bool(self.board is not None and self.board.identity.simulated)

    # -- operating points ---------------------------------------------------------------

    @property
    def current_point(self) -> OperatingPoint | None:
        """The operating point pinned now (None before anything was pinned)."""
        return self._point

    def points(
        self,
        values: Mapping[str, list[str]],
        sources: Mapping[str, str] | None = None,
    ) -> list[OperatingPoint]:
        """The validated operating points of a grid (``{"gpu_freq": ["min,max"], ...}``)
        on this board; :class:`PointError` naming where a bad value came from (``sources``)
        and what the board offers. Nothing is written."""
        from ..control.grid import expand

        self._require_open()
        assert self.knobs is not None
        try:
            return expand(values, self.knobs, sources=sources, force=self.force)
        except (EdgeEnergyError, OSError, ValueError) as e:
            raise PointError(str(e)) from None

    def point(self, **values: str | int | None) -> OperatingPoint:
        """One validated operating point from knob values named as the pytest options
        (``gpu_freq="max"``, ``cpu_freq="1.2GHz"``, ``power_mode="15W"``, ``cpu_cores=2``;
        an int frequency is Hz); :class:`PointError` when the board cannot take it."""
        unknown = sorted(set(values) - set(POINT_KEYS))
        if unknown:
            raise PointError(
                f"pinned({', '.join(unknown)}=...): not a knob; allowed: {', '.join(POINT_KEYS)}"
            )
        given = {k: [str(v)] for k, v in values.items() if v is not None}
        sources = {k: f"pinned({k}=...)" for k in given}
        points = self.points(given, sources)
        if len(points) != 1:
            raise PointError(
                "pinned() takes one value per knob; "
                + ", ".join(f"{k}={v[0]!r}" for k, v in given.items())
                + f" make {len(points)} points (pin them one after the other)"
            )
        return points[0]

    def apply_point(self, point: OperatingPoint, *, measure_idle: bool = True) -> ApplyResult:
        """Pin ``point`` unless it is pinned already, and measure idle power there once
        (``measure_idle``; otherwise a baseline measured there before is used). Raises
        :class:`PinRefused` when the board refuses it."""
        from ..control.errors import ControlError

        self._require_open()
        if self.control is None:
            raise Unlocked(
                f"operating point {point.id}: this session was opened with lock=False "
                "(measure only) and may not change the board; open it with lock=True"
            )
        if point == self._point and self._point_result is not None:
            return self._point_result
        try:
            result = self.control.apply(point)
        except ControlError as e:
            self._point = self._point_result = None  # partly applied: apply in full next time
            raise PinRefused(point.id, str(e)) from e
        self._point, self._point_result = point, result
        self._idle_at(point, measure=measure_idle)
        return result

    def _idle_at(self, point: OperatingPoint, *, measure: bool) -> None:
        """Make ``point``'s idle baseline the meter's (measured now when ``measure`` and none
        was measured there yet)."""
        from ..control.operating_point import DVFS

        if self.meter is None or self.idle_s <= 0:
            return
        idle = self.idle_by_point.get(point.id)
        if idle is None and not measure and point == DVFS:
            idle = self._start_idle  # nothing pinned: the session's start was at dvfs
        if idle is None and measure:
            idle = self.idle_by_point[point.id] = self.meter.measure_idle(seconds=self.idle_s)
        if idle is not None and idle.valid:
            self.meter.idle = idle
            self.idle = idle

    @contextmanager
    def pin_for(self, record_id: str, point: OperatingPoint | None) -> Iterator[OperatingPoint]:
        """Pin ``point`` (dvfs when None) for record ``record_id``: its requested and
        read-back values go into the record, its drift after the body. The point stays
        pinned afterwards (the pytest plugin pins the next test's point over it)."""
        from ..control.operating_point import DVFS, check_drift
        from .pinning import pinned_info

        point = point if point is not None else DVFS
        rec = self.record(record_id)
        result = self.apply_point(point)
        assert self.knobs is not None
        info = pinned_info(point, result, self.knobs)
        rec.operating_point = info
        yield point
        info["drift"] = check_drift(point, self.knobs)

    @contextmanager
    def pinned(
        self,
        *,
        power_mode: str | int | None = None,
        cpu_freq: str | int | None = None,
        gpu_freq: str | int | None = None,
        emc_freq: str | int | None = None,
        cpu_cores: str | int | None = None,
        governor: str | None = None,
    ) -> Iterator[OperatingPoint]:
        """Pin an operating point for the ``with`` body and put back what was pinned before
        (nothing: every knob as the session found it) on exit, exceptions included.

        Values as the pytest options take them: ``gpu_freq="max"``, ``"612MHz"``, an int
        in Hz; ``power_mode="15W"`` or a mode id; ``cpu_cores=2``; ``governor=
        "performance"``. A knob left out is not pinned. Raises :class:`PointError` for
        a value the board cannot take (nothing written), :class:`PinRefused` when applying
        failed (what was written is put back).
        """
        from ..control.operating_point import DVFS

        point = self.point(
            power_mode=power_mode,
            cpu_freq=cpu_freq,
            gpu_freq=gpu_freq,
            emc_freq=emc_freq,
            cpu_cores=cpu_cores,
            governor=governor,
        )
        previous = self._point if self._point is not None else DVFS
        try:
            self.apply_point(point)
            yield point
        finally:
            if self.control is not None:  # not after a failed restore_board
                self.apply_point(previous, measure_idle=False)

    # -- records and windows ------------------------------------------------------------

    def record(self, record_id: str) -> TestEnergy:
        """The record ``record_id`` (a pytest node id, a window's entry id), made at first use."""
        rec = self.tests.get(record_id)
        if rec is None:
            rec = self.tests[record_id] = TestEnergy(record_id)
        return rec

    def add_record(self, rec: TestEnergy, point_id: str | None = None) -> str:
        """Keep ``rec``, a new record of entry ``rec.nodeid`` measured at operating point
        ``point_id``, and return its key in :attr:`tests` (for :meth:`finish_test`): its id,
        or ``ID @POINT`` when the id is taken (the same label at another point is an entry
        of its own; the report tells them apart by their operating points)."""
        key = rec.nodeid
        n = 1
        while key in self.tests:
            n += 1
            key = f"{rec.nodeid} @{point_id or 'dvfs'}" + (f" ({n})" if n > 2 else "")
        self.tests[key] = rec
        return key

    def begin(self, record_id: str, label: str) -> OpenWindow:
        """Open an energy window attributed to record ``record_id``; ``.end()`` closes it
        and adds its result (and frequency residency) to the record."""
        from ..control.residency import ResidencySampler

        self.open()
        assert self.meter is not None and self.knobs is not None
        residency = ResidencySampler(self.knobs, interval_s=RESIDENCY_INTERVAL_S)
        residency.start()
        try:
            window = self.meter.begin(label)
        except BaseException:
            residency.stop()
            raise
        handle = OpenWindow(self.record(record_id), label, window, residency, self._windows)
        self._windows.append(handle)
        return handle

    @contextmanager
    def measure(self, record_id: str, label: str) -> Iterator[Window]:
        """Measure the body as one window of record ``record_id`` (see :meth:`begin`)."""
        handle = self.begin(record_id, label)
        try:
            yield handle.window
        finally:
            handle.end()

    @contextmanager
    def window(self, label: str = "window") -> Iterator[Window]:
        """Measure the ``with`` body as one energy window: ``w.result`` afterwards is the
        :class:`~pytest_edgeenergy.meters.window.WindowResult` (joules per rail and in
        total, gross and net of idle, mean/peak watts, samples, validity). The window is
        written to the report at once as its own entry (see the module docstring); a body
        that raises is recorded as failed and the exception goes on."""
        from ..control.operating_point import DVFS, check_drift
        from .pinning import pinned_info

        self._require_open()
        point = self._point if self._point != DVFS else None  # dvfs: nothing pinned
        point_id = point.id if point is not None else DVFS.id
        rec = TestEnergy(self._entry_id(label, point_id))
        record_id = self.add_record(rec, point_id)
        info: dict[str, Any] | None = None
        if point is not None and self._point_result is not None and self.knobs is not None:
            info = rec.operating_point = pinned_info(point, self._point_result, self.knobs)
        started = time.perf_counter()
        handle = self.begin(record_id, label)
        try:
            yield handle.window
        except BaseException as e:
            if rec.status is None:  # not ended by the session's close
                rec.status, rec.reason = "failed", _one_line(e)
            raise
        else:
            rec.status = "passed"
        finally:
            try:
                handle.end()
            finally:
                rec.duration_s = time.perf_counter() - started
                knobs = self.knobs if self._open else None  # closed under it: restored
                if info is not None and point is not None and knobs is not None:
                    info["drift"] = check_drift(point, knobs)
                self.finish_test(record_id)

    def _entry_id(self, label: str, point_id: str) -> str:
        if not label:
            raise InvalidValue("window label '': give a name, e.g. s.window('inference')")
        count = self._labels.get((label, point_id), 0) + 1
        self._labels[(label, point_id)] = count
        return label if count == 1 else f"{label}#{count}"

    @property
    def results(self) -> list[WindowResult]:
        """Every window measured so far, in order."""
        return [w for rec in self.tests.values() for w in rec.windows]

    # -- the report ---------------------------------------------------------------------

    def finish_test(self, record_id: str) -> None:
        """The report on disk gains record ``record_id`` at once. A failed write keeps the
        result (the writer holds it and rescues it) and is said once per cause; a result
        that cannot be kept at all is listed in :attr:`lost_results`."""
        if not self._open or record_id not in self.tests or self._writer is None:
            return
        from ..report.writer import ReportWriteError
        from .report import test_entry

        try:
            self._writer.add_test(test_entry(self.tests[record_id]))
        except ReportWriteError as e:
            self._report_write_failed(str(e))
        except (OSError, ValueError) as e:  # not a result the report can hold: lost
            self.lost_results.append(record_id)
            self._report_write_failed(f"{record_id}: cannot be recorded in the report: {e}")

    def _report_write_failed(self, message: str) -> None:
        """Say a failed write at once, but only the first time for each cause."""
        cause = self._writer.failure if self._writer is not None else None
        if cause is not None and cause == self._last_write_failure:
            return
        self._last_write_failure = cause
        self.report_errors.append(message)
        self.notify(f"edgeenergy: REPORT ERROR: {message}")

    def update_report(self, **fields: Any) -> None:
        """Rewrite the report's header fields (a search's section after each trial); a
        failed write is reported like a record's and the session goes on."""
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
        """Mark the report finished; returns its path (None when nothing was recorded: then
        no report file was written). When the final write fails :attr:`report_incomplete`
        says what the file lacks and where the rescue copy is."""
        if self._writer is None:
            return None
        if self._writer.test_count == 0:
            self.report_path = None
            return None
        import contextlib

        from ..report.writer import ReportIncomplete, ReportWriteError
        from .warnings import run_warnings

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
        """One line when results measured in this session are not in the report file (or
        were not kept at all); None when the report holds every result."""
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

    def print_document(self) -> None:
        """The whole report as held in memory, on stderr (when no file could take it)."""
        if self._writer is not None:
            print(self._writer.document(), file=sys.stderr, flush=True)


class OpenWindow:
    """An energy window in progress; :meth:`end` records its result (and the share of time
    each CPU/GPU clock spent at each frequency, in the record's ``extra.residency``)."""

    def __init__(
        self,
        rec: TestEnergy,
        label: str,
        window: Window,
        residency: Any,
        open_windows: list[OpenWindow] | None = None,
    ) -> None:
        from ..control.residency import residency_to_json

        self.record = rec
        self.label = label
        self.window = window
        self._residency = residency
        self._to_json = residency_to_json  # imported now: an end at interpreter exit may not
        self._open_windows = open_windows if open_windows is not None else []
        self.result: WindowResult | None = None

    def end(self) -> WindowResult:
        """Close the window (once; later calls return the same result)."""
        if self.result is not None:
            return self.result
        try:
            self.result = self.window.end()
        finally:
            shares = self._residency.stop()
            if self in self._open_windows:
                self._open_windows.remove(self)
        self.record.windows.append(self.result)
        self.record.extra.setdefault("residency", []).append(
            {"window": self.label, "shares": self._to_json(shares)}
        )
        return self.result


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
