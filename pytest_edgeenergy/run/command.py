"""Measuring any command (``edgeenergy measure -- CMD ARGS...``) in an :class:`EnergySession`.

At each operating point (none pinned: the board as it is) the command runs ``warmup`` times
unmeasured, then ``runs`` times, each in one energy window from just before it starts to
just after it exits (edge readings at both). It runs in a process group of its own (a new
session: ``start_new_session``) with its output passed through, or into one file, and
:data:`~.marks.MARK_ENV` naming the marks' FIFO (:mod:`.mark_channel`): the windows it marks
itself (:mod:`.marks`) are made after its exit from the sampler's readings between its own
stamps (:meth:`~pytest_edgeenergy.meters.meter.Meter.window_between`).

Ctrl-C (KeyboardInterrupt) and SIGTERM (:class:`~pytest_edgeenergy.safefs.Terminated`,
raised by :func:`~pytest_edgeenergy.safefs.sigterm_raises` around the session)
stop the command's whole group: the same signal first, SIGKILL after ``stop_grace_s`` or a
second signal. The runs completed before are kept (the interrupted one is listed, never
counted), the point's entries go to the report, and the session restores the board.
The entries: :mod:`.command_report`.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

from ..safefs import Terminated
from .command_runs import CommandOutcome, CommandPlan, CommandRun, MarkedWindow, PointRuns
from .errors import CommandNotStarted
from .mark_channel import MAX_LINES, MarkChannel
from .marks import MARK_ENV, MarkBook

if TYPE_CHECKING:
    from ..control.operating_point import OperatingPoint
    from ..control.residency import ResidencySampler
    from ..meters.meter import Meter, Window, WindowResult
    from ..meters.sampler import Counters
    from .session import EnergySession

__all__ = ["check_command", "measure_command"]


def check_command(argv: Sequence[str]) -> None:
    """:class:`CommandNotStarted` when ``argv[0]`` names no program that can be run."""
    import shutil

    if not argv:
        raise CommandNotStarted("no command to measure: give it after --, e.g. -- python3 app.py")
    program = argv[0]
    if "/" in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise CommandNotStarted(f"{program}: not an executable file")
    elif shutil.which(program) is None:
        raise CommandNotStarted(f"{program}: no such program on PATH")


def measure_command(
    session: EnergySession,
    plan: CommandPlan,
    points: Sequence[OperatingPoint] = (),
    *,
    on_run: Callable[[PointRuns, CommandRun], None] | None = None,
) -> CommandOutcome:
    """Run ``plan`` at each of ``points`` (none: nothing pinned) in the open ``session``; the
    entries of each point go to the report when its runs are done (or interrupted).
    ``on_run`` hears each warm-up and run as it ends."""
    from .command_report import add_point_records

    assert session.meter is not None
    outcome = CommandOutcome()
    meter = session.meter
    with contextlib.ExitStack() as stack:
        channel: MarkChannel[Counters] = stack.enter_context(MarkChannel(meter.sampler.counters))
        assert channel.path is not None
        env = {**os.environ, MARK_ENV: str(channel.path)}
        output = stack.enter_context(plan.output.open("wb")) if plan.output else None
        at: Sequence[OperatingPoint | None] = points or [None]
        for point in at:
            runs = PointRuns(point)
            outcome.points.append(runs)
            try:
                if point is not None:
                    runs.pinned = _pin(session, point)
                for into, count in ((runs.warmups, plan.warmup), (runs.runs, plan.runs)):
                    for k in range(count):
                        try:
                            _run(
                                session, plan, channel, env, output, k + 1, into,
                                measure=into is runs.runs,
                            )  # fmt: skip
                        finally:
                            if on_run is not None and len(into) == k + 1:
                                on_run(runs, into[-1])
            except KeyboardInterrupt as e:
                outcome.interrupted = "SIGTERM" if isinstance(e, Terminated) else "SIGINT"
            finally:
                if outcome.interrupted is None:  # else the signal may have restored it already
                    _drift(session, runs)
                outcome.record_keys += add_point_records(session, plan, runs, outcome.interrupted)
            if outcome.interrupted is not None:
                break
    return outcome


def _pin(session: EnergySession, point: OperatingPoint) -> dict[str, Any]:
    from .pinning import pinned_info

    result = session.apply_point(point)
    assert session.knobs is not None
    return pinned_info(point, result, session.knobs)


def _drift(session: EnergySession, runs: PointRuns) -> None:
    from ..control.operating_point import check_drift

    if runs.point is None or runs.pinned is None:
        return
    if session.is_open and session.control is not None and session.knobs is not None:
        runs.pinned["drift"] = check_drift(runs.point, session.knobs)


def _run(
    session: EnergySession,
    plan: CommandPlan,
    channel: MarkChannel[Counters],
    env: dict[str, str],
    output: IO[bytes] | None,
    index: int,
    into: list[CommandRun],
    *,
    measure: bool,
) -> None:
    """Run the command once (in a window when ``measure``, else a warm-up) and append the
    run to ``into``; on KeyboardInterrupt stop its group, append it interrupted and
    re-raise."""
    from ..control.residency import ResidencySampler
    from .session import RESIDENCY_INTERVAL_S

    meter = session.meter
    assert meter is not None and session.knobs is not None
    channel.take()  # lines from before this run (a warm-up's, a straggler's) are not its
    residency = ResidencySampler(session.knobs, interval_s=RESIDENCY_INTERVAL_S)
    if measure:
        residency.start()
    window = meter.begin(plan.label) if measure else None
    proc: subprocess.Popen[bytes] | None = None
    stopped_by: str | None = None
    try:
        try:
            proc = subprocess.Popen(
                plan.argv,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT if output is not None else None,
                start_new_session=True,
            )
        except OSError as e:
            raise CommandNotStarted(f"{plan.argv[0]}: cannot be run: {e.strerror or e}") from e
        returncode = proc.wait()
    except KeyboardInterrupt as e:
        stopped_by = "SIGTERM" if isinstance(e, Terminated) else "SIGINT"
        returncode = _stop_group(proc, stopped_by, plan.stop_grace_s) if proc is not None else -2
        run = _finish(meter, plan, channel, window, residency, proc, index, returncode)
        run.stopped_by = stopped_by
        into.append(run)
        raise
    except BaseException:
        if window is not None:
            window.end()
        residency.stop()
        raise
    into.append(_finish(meter, plan, channel, window, residency, proc, index, returncode))


def _finish(
    meter: Meter,
    plan: CommandPlan,
    channel: MarkChannel[Counters],
    window: Window | None,
    residency: ResidencySampler,
    proc: subprocess.Popen[bytes] | None,
    index: int,
    returncode: int,
) -> CommandRun:
    """The run's record once its process has exited: its window, the windows it marked."""
    from ..control.residency import residency_to_json

    result: WindowResult | None = window.end() if window is not None else None
    shares = residency.stop()
    run = CommandRun(index=index, returncode=returncode, window=result)
    if result is not None:
        run.residency = residency_to_json(shares)
    if proc is not None:
        run.left_running = _group_alive(proc.pid)
    lines, dropped = channel.take()
    if result is None:  # a warm-up: its marks are read and dropped
        return run
    book: MarkBook[Counters] = MarkBook(
        start_ns=math.floor(result.start_s * 1e9),
        end_ns=math.ceil(result.end_s * 1e9),
        reserved=(plan.label,),
    )
    for line in lines:
        book.feed(line.text, line.received_ns, line.attached)
    book.close()
    if dropped:
        book.problem(f"{dropped} more lines not kept (at most {MAX_LINES} per run)")
    for span in book.spans:
        try:
            marked = meter.window_between(
                span.entry, span.t0_ns / 1e9, span.t1_ns / 1e9, begin=span.begin, end=span.end
            )
        except ValueError as e:
            book.problem(f"{span.entry}: {e}")
            continue
        run.marked.append(MarkedWindow(span.entry, span.items, span.stamped, marked))
    run.problems, run.problem_count = book.problems, book.problem_count
    return run


def _stop_group(proc: subprocess.Popen[bytes], how: str, grace_s: float) -> int:
    """Stop the command's process group: ``how`` (SIGINT/SIGTERM) first, SIGKILL after
    ``grace_s`` or at a second interrupt; then SIGKILL whatever of the group is left."""
    first = signal.SIGTERM if how == "SIGTERM" else signal.SIGINT
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, first)
    with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
        proc.wait(grace_s)  # a second interrupt: kill now
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # already killed: only the reaping is left
            continue


def _group_alive(pgid: int) -> bool:
    """Some process of group ``pgid`` is still running."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
