"""The measured repeats of one ``edge_bench.run``: each opens an energy window, makes a fixed
number of timed calls and closes it.

:meth:`Repeats.run` loops by itself. :meth:`Repeats.run_with` lets pytest-benchmark's
``benchmark.pedantic`` make the calls, one round per repeat and ``iterations`` = calls per
repeat: a window opens before its round and closes in pedantic's ``teardown``, both outside
pedantic's timer, so its timings are of exactly the calls the windows measured.

``stop_if`` ends :meth:`Repeats.run` after the repeat it returns True for (a repeat too short
to keep: ``edge_bench`` then measures every repeat again with more calls); pedantic's rounds
always all run.

A workload built in a worker (:class:`.remote.RemoteWorkload`) makes each repeat's calls in
one request, timed in the worker; its memory figures are the worker's, and pedantic times
the whole loop once (one round per call would be one round trip per call).
"""

from __future__ import annotations

import gc
import time
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .memory import ProcessPeak, board_memory_used_bytes
from .remote import RemoteWorkload
from .result import RepeatResult
from .scenarios import Scenario, Schedule, run_schedule

if TYPE_CHECKING:
    from pathlib import Path

    from .measuring import MeasuringSession, WindowHandle

__all__ = ["MAX_KEPT_LATENCIES", "Repeats"]

MAX_KEPT_LATENCIES = 100_000
"""Per-call latencies kept after a repeat's summary is computed (memory on a 4 GB board)."""


class Repeats:
    """``n`` repeats of ``calls`` calls of ``fn``, each in its own energy window."""

    def __init__(
        self,
        session: MeasuringSession,
        nodeid: str,
        fn: Callable[[], object],
        *,
        calls: int,
        items_per_call: int,
        n: int,
        label: str,
        torch: Any,
        root: Path | None,
        peak: ProcessPeak,
        setup: Callable[[], object] | None = None,
        on_repeat: Callable[[RepeatResult], None] | None = None,
        scenario: Scenario | None = None,
        stop_if: Callable[[RepeatResult], bool] | None = None,
        label_suffix: str = "",
    ) -> None:
        """``torch``: the torch module on CUDA devices (synchronised at window edges and
        after each call), else None. ``setup`` runs before each window is opened.
        ``scenario`` (not offline): each window runs ``calls`` queries on its schedule
        (:func:`.scenarios.run_schedule`). ``label_suffix`` ends each window's label."""
        self._session = session
        self._nodeid = nodeid
        self._fn = fn
        self._remote = fn if isinstance(fn, RemoteWorkload) else None
        self.calls = calls
        self._items_per_call = items_per_call
        self.n = n
        self._label = label
        self._torch = torch
        self._root = root
        self._peak = peak
        self._setup = setup
        self._on_repeat = on_repeat
        self._stop_if = stop_if
        self._label_suffix = label_suffix
        self.stopped = False
        """True when ``stop_if`` ended :meth:`run` before all ``n`` repeats."""
        self._scenario = scenario if scenario is not None and not scenario.offline else None
        self._schedule: Schedule | None = None
        self.results: list[RepeatResult] = []
        self._handle: WindowHandle | None = None
        self._lat = array("d")
        self._append: Callable[[float], None] | None = None
        self._gc_was_enabled = True
        self._reset = False
        self._rss_before: int | None = None

    # ---- drivers ---------------------------------------------------------------------
    def run(self) -> list[RepeatResult]:
        """All repeats in this loop."""
        fn, perf = self._fn, time.perf_counter
        sync = self._torch.cuda.synchronize if self._torch is not None else None
        try:
            while self._open_next():
                append = self._lat.append
                if self._scenario is not None:
                    self._schedule = run_schedule(
                        self._scenario,
                        fn,
                        self.calls,
                        self._lat,
                        repeat=len(self.results),
                        sync=sync,
                    )
                elif self._remote is not None:
                    self._lat.extend(self._remote.run_calls(self.calls).latencies_s)
                elif sync is None:
                    for _ in range(self.calls):
                        t0 = perf()
                        fn()
                        append(perf() - t0)
                else:
                    for _ in range(self.calls):
                        t0 = perf()
                        fn()
                        sync()
                        append(perf() - t0)
                self._close()
                if self._stop_if is not None and self._stop_if(self.results[-1]):
                    self.stopped = True
                    break
        finally:
            self._abort()
        return self.results

    def run_with(self, benchmark: Any) -> list[RepeatResult]:
        """All repeats as the rounds of ``benchmark.pedantic``. A disabled benchmark
        (``--benchmark-disable``) runs its target once: then that target is :meth:`run`,
        as it is for a scenario (pedantic's rounds would time the sleeps) and for a workload
        in a worker (a round per call would time a round trip per call)."""
        if (
            not getattr(benchmark, "enabled", True)
            or self._scenario is not None
            or self._remote is not None
        ):
            benchmark.pedantic(self.run)
            return self.results
        try:
            if self._open_next():
                benchmark.pedantic(
                    self.call, rounds=self.n, iterations=self.calls, teardown=self._round_done
                )
        finally:
            self._abort()
        return self.results

    def call(self) -> None:
        """One timed call inside the open window; outside one (pytest-benchmark's extra
        call for the return value, or its profiling) a plain call."""
        append = self._append
        if append is None:
            self._fn()
            return
        t0 = time.perf_counter()
        self._fn()
        if self._torch is not None:
            self._torch.cuda.synchronize()
        append(time.perf_counter() - t0)

    def _round_done(self) -> None:
        if self._handle is not None:
            self._close()
            self._open_next()

    # ---- one repeat ------------------------------------------------------------------
    def _open_next(self) -> bool:
        """Set up and open the next repeat's window; False when all are done."""
        if len(self.results) >= self.n:
            return False
        if self._setup is not None:
            self._setup()
        i = len(self.results)
        if self._remote is not None:
            self._remote.prepare_window()
        else:
            self._reset = self._peak.reset()
            self._rss_before = self._peak.rss_bytes()
        if self._torch is not None:
            self._torch.cuda.synchronize()
            self._torch.cuda.reset_peak_memory_stats()
        self._lat = array("d")
        self._gc_was_enabled = gc.isenabled()
        gc.collect()  # collect the previous repeat's garbage outside the window
        gc.disable()
        try:
            self._handle = self._session.begin(
                self._nodeid, f"{self._label} {i + 1}/{self.n}{self._label_suffix}"
            )
        except BaseException:
            self._restore_gc()
            raise
        self._append = self._lat.append
        return True

    def _restore_gc(self) -> None:
        if self._gc_was_enabled:
            gc.enable()

    def _close(self) -> None:
        handle, self._handle, self._append = self._handle, None, None
        assert handle is not None
        try:
            window = handle.end()
        finally:
            self._restore_gc()
        peak, remote = self._peak, self._remote
        cuda_peak = None
        if remote is not None:
            mem_peak, cuda_peak = remote.memory_peak_bytes, remote.cuda_peak_bytes
        elif self._reset:
            mem_peak = peak.peak_bytes()
        else:
            rss_after = peak.rss_bytes()
            before = self._rss_before
            mem_peak = (
                max(rss_after - before, 0) if rss_after is not None and before is not None else None
            )
        lat, torch = self._lat, self._torch
        if torch is not None:
            cuda_peak = int(torch.cuda.max_memory_allocated())
        rep = RepeatResult(
            index=len(self.results),
            calls=len(lat),
            items=len(lat) * self._items_per_call,
            window=window,
            latencies_s=lat,
            memory_peak_bytes=mem_peak,
            board_memory_used_bytes=(
                board_memory_used_bytes(self._root) if self._root is not None else None
            ),
            cuda_peak_bytes=cuda_peak,
            schedule=self._schedule,
        )
        self._schedule = None
        if rep.latency is not None and len(lat) > MAX_KEPT_LATENCIES:
            rep.latencies_s = ()  # the summary is computed; the raw values would cost memory
        self.results.append(rep)
        if self._on_repeat is not None:
            self._on_repeat(rep)

    def _abort(self) -> None:
        """A window still open (a call raised): close it, recorded as the test's window."""
        handle, self._handle, self._append = self._handle, None, None
        if handle is None:
            return
        try:
            handle.end()
        finally:
            self._restore_gc()
