"""``EdgeBench``: run a workload in energy windows, pytest-benchmark's pedantic mode for joules.

``run(fn, items_per_call=16)``: ``warmup`` unmeasured calls, then ``repeats`` windows each
doing a FIXED amount of work (``ceil(items / items_per_call)`` calls). When the warm-up shows
a repeat would be shorter than the minimum window (``--edge-min-window-s``, and what the
meter needs for its minimum duration and sample count), every repeat gets more calls, the
same number for all, and the items actually done are recorded. A repeat that still comes out
too short for the meter to judge (shorter than its minimum duration, or too few samples: the
host got faster after the warm-up, the sampler fell behind, a server schedule drew short gaps)
is not kept: every repeat is measured again with more calls, scaled from the short repeat's
time to reach the minimum window with the same margin, at least twice as many, at most
:data:`MAX_EXTENSIONS` times; the result records each extension. Inside windows the garbage
collector is off (restored afterwards, also on error); on ``cuda`` devices CUDA is
synchronised at the window edges and after each call, so per-call latency is real.

When the test also uses pytest-benchmark's ``benchmark`` and has not used it yet, the first
run's repeats are the rounds of ``benchmark.pedantic`` (:mod:`.repeats`); the energy figures
go into ``benchmark.extra_info`` after every run and phase (:mod:`.extra_info`).

With ``--edge-scenario`` (or ``run(scenario=...)``) other than offline, each repeat runs its
calls as queries on the scenario's schedule (:mod:`.scenarios`: single-stream, fixed-rate,
server) and pytest-benchmark times the whole run once.

Out of process (``--edge-workload-python``, ``--edge-workload-prefix``), :meth:`EdgeBench.worker`
starts this test's workload worker (:mod:`.worker`), which builds the workload in its
interpreter; ``run`` measures the :class:`~.remote.RemoteWorkload` it returns with the same
warm-up, repeats, calibration and extensions, each repeat's calls made in the worker (see
:mod:`.remote`). The worker ends with the test (:meth:`EdgeBench.close`). A worker that
cannot run the workload skips the test; one that dies, hangs or whose workload raises fails
it, with one line naming the interpreter and the cause.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from ..errors import InvalidValue
from ..words import counted
from . import extra_info as bridge
from .memory import FitVerdict, MemInfoError, ProcessPeak, check_fits
from .remote import RemoteWorkload
from .repeats import Repeats
from .result import (
    BenchReport,
    BenchResult,
    DerivedMetric,
    Extension,
    PhaseResult,
    RepeatResult,
    merge_report,
    metric_prefixes,
)
from .scenarios import Scenario, plan_queries
from .settings import BenchSettings
from .worker import WorkerFailed, WorkerProcess, WorkerUnavailable

if TYPE_CHECKING:
    from pathlib import Path

    from ..meters.meter import Meter
    from .measuring import MeasuringSession

__all__ = [
    "CALIBRATION_MARGIN",
    "MAX_CALLS_PER_REPEAT",
    "MAX_EXTENSIONS",
    "PROGRESS_AFTER_S",
    "EdgeBench",
    "extend_calls",
    "plan_calls",
]

T = TypeVar("T")

CALIBRATION_MARGIN = 1.2
"""Aim this much above the minimum window so scheduling noise does not fall below it."""
MAX_CALLS_PER_REPEAT = 2_000_000
"""Bounds the latency array (16 MB); a sub-microsecond call capped here may give a window
too short for the meter, which then says INVALID."""
MAX_EXTENSIONS = 3
"""How many times a run's repeats are measured again after one came out too short."""
PROGRESS_AFTER_S = 10.0
"""Without ``-v``, progress lines start once a run has taken this long."""
RESIDENCY_INTERVAL_S = 0.1


def plan_calls(
    base_calls: int, warmup_s: list[float], required_s: float, *, calibrate: bool = True
) -> tuple[int, str | None]:
    """Calls per repeat and why they exceed ``base_calls`` (None when they do not).

    The per-call time is the FASTEST warm-up call (the first call is often slow: caches,
    kernel selection), which errs towards longer windows. No warm-up: no calibration.
    """
    if not calibrate or not warmup_s or required_s <= 0:
        return base_calls, None
    per_call_s = max(min(warmup_s), 1e-9)
    target_s = required_s * CALIBRATION_MARGIN
    if base_calls * per_call_s >= target_s:
        return base_calls, None
    calls = min(math.ceil(target_s / per_call_s), MAX_CALLS_PER_REPEAT)
    if calls <= base_calls:
        return base_calls, None
    why = (
        f"{base_calls} calls would take ~{base_calls * per_call_s:.3g} s < minimum window "
        f"{required_s:.3g} s: {calls} calls per repeat (warm-up call {per_call_s:.3g} s)"
    )
    return calls, why


def extend_calls(
    calls: int, duration_s: float, mean_call_s: float | None, required_s: float
) -> int:
    """Calls per repeat after a repeat of ``calls`` calls took ``duration_s``, too short for
    the meter: enough for the minimum window ``required_s`` with the calibration margin, at
    the faster of the window's time per call and ``mean_call_s`` (the mean call latency;
    None for a paced schedule, whose window time is its arrivals'), at least twice
    ``calls``, at most :data:`MAX_CALLS_PER_REPEAT`."""
    per_call_s = duration_s / calls if calls > 0 else 0.0
    if mean_call_s is not None:
        per_call_s = min(per_call_s, mean_call_s)
    per_call_s = per_call_s if math.isfinite(per_call_s) and per_call_s > 0 else 1e-9
    wanted = math.ceil(required_s * CALIBRATION_MARGIN / per_call_s)
    return min(max(2 * calls, wanted), MAX_CALLS_PER_REPEAT)


def _cuda(device: str) -> bool:
    return device.startswith("cuda")


def _torch() -> Any:
    import torch

    return torch


def _temperatures(root: Path | None) -> dict[str, float | None]:
    if root is None:
        return {}
    from ..board.knobs import read_thermal_zones

    return {(z.type or z.zone): z.temp_c for z in read_thermal_zones(root)}


@contextmanager
def worker_failures() -> Iterator[None]:
    """A worker's failures as the test's outcome, in one line: skipped when the workload
    cannot run there, failed when the worker died, hung or its workload raised."""
    try:
        yield
    except WorkerUnavailable as e:  # `from None`: pytest then prints no chained exception
        raise pytest.skip.Exception(str(e)) from None
    except WorkerFailed as e:
        raise pytest.fail.Exception(str(e), pytrace=False) from None


def _positive_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"edge_bench: {name} must be a whole number >= {minimum}, got {value!r}")
    return value


class EdgeBench:
    """The ``edge_bench`` fixture's object: energy benchmarks of one test."""

    def __init__(
        self,
        session: MeasuringSession,
        nodeid: str,
        settings: BenchSettings,
        *,
        benchmark_fixture: object | None = None,
        progress: Callable[[str], None] | None = None,
        progress_always: bool = False,
    ) -> None:
        """``progress`` receives one line per repeat: always with ``progress_always``
        (``-v``), else once a run has taken :data:`PROGRESS_AFTER_S`."""
        self._session = session
        self.nodeid = nodeid
        self.settings = settings
        self._benchmark = benchmark_fixture
        self._progress = progress
        self._progress_always = progress_always
        self._results: list[BenchResult] = []
        self._phases: list[PhaseResult] = []
        self._preflights: list[FitVerdict] = []
        self._derived: list[DerivedMetric] = []
        self._notes: dict[str, Any] = {}
        self._peak = ProcessPeak()
        self._worker: WorkerProcess | None = None

    # ---- what was measured -----------------------------------------------------------
    @property
    def results(self) -> list[BenchResult]:
        return list(self._results)

    @property
    def phases(self) -> list[PhaseResult]:
        return list(self._phases)

    @property
    def preflights(self) -> list[FitVerdict]:
        return list(self._preflights)

    @property
    def valid(self) -> bool:
        """True when every window of every run and phase is valid."""
        return self.report()["valid"]

    def report(self) -> BenchReport:
        """Metrics, params, validity and extra for the test's report entry."""
        out = merge_report(
            self._results,
            self._phases,
            [v.to_json() for v in self._preflights],
            self._derived,
        )
        out["extra"].update(self._notes)
        return out

    @property
    def notes(self) -> dict[str, Any]:
        """What :meth:`note` recorded so far (a copy)."""
        return dict(self._notes)

    def note(self, key: str, value: Any) -> None:
        """Record ``value`` (JSON values) under ``key`` in the test's report ``extra``
        (e.g. ``extra.interleave``); the keys :func:`.result.merge_report` fills are taken."""
        if not key or key in ("runs", "phases", "preflight", "formulas"):
            raise InvalidValue(
                f"edge_bench.note: key {key!r} is empty or taken by edge_bench (runs, phases, "
                "preflight and formulas are its own); choose another key"
            )
        self._notes[key] = value

    # ---- the workload worker ---------------------------------------------------------
    @property
    def out_of_process(self) -> bool:
        """True when the options ask for the workloads in a worker (the suites then build
        theirs through :meth:`worker`)."""
        return self.settings.placement.out_of_process

    def worker(self, modules: Sequence[str] | None = None) -> WorkerProcess:
        """This test's workload worker, started at first use (unmeasured: before any
        window) in ``--edge-workload-python`` behind ``--edge-workload-prefix``, else in
        this interpreter; it ends with the test. With ``modules`` (a torch workload's
        needs, e.g. ``["torchvision"]``) torch and those modules are imported there first.
        Where it runs goes into the report (``extra.workload_process``). A worker that
        cannot start fails the test, one whose torch does not import skips it."""
        with worker_failures():
            if self._worker is None or self._worker.closed:
                self._worker = WorkerProcess(self.settings.placement)
            try:
                if modules is not None:
                    self._worker.probe(modules)
            finally:  # a worker without torch still says where it ran
                self._notes["workload_process"] = self._worker.describe()
        return self._worker

    def load_in_worker(
        self,
        spec: Mapping[str, Any],
        *,
        label: str = "load",
        device: str = "cpu",
        modules: Sequence[str] | None = None,
        params: Mapping[str, object] | None = None,
        workload: type[RemoteWorkload] = RemoteWorkload,
    ) -> RemoteWorkload:
        """Build the workload of ``spec`` in this test's worker (see :meth:`worker`; kinds:
        ``zlib``, ``sleep``, ``callable``, and the suites' ``classification``,
        ``detection``, ``nlp``, ``training``), its build and first call inside the measured
        phase ``label``; returns what :meth:`run` measures. ``params``: what the result's
        params say of it besides the worker's facts; ``workload``: the class made of the
        worker's answer (a subclass of :class:`~.remote.RemoteWorkload`)."""
        worker = self.worker(modules)

        def build() -> RemoteWorkload:
            return workload(worker, worker.build(spec), params=params)

        built, _ = self.phase(label, build, device=device, in_worker=True)
        return built

    def close(self) -> None:
        """End this test's worker, if one was started (the fixture's teardown)."""
        if self._worker is not None:
            self._worker.close()

    # ---- plumbing --------------------------------------------------------------------
    def _with_point(self, params: Mapping[str, object] | None) -> dict[str, object]:
        """The run's params, with the id of the operating point pinned for this test."""
        out = dict(params or {})
        point = self._session.current_point
        if "operating_point" not in out and point is not None:
            out["operating_point"] = point.id
        return out

    def _meter(self) -> Meter:
        self._session.open()
        meter = self._session.meter
        if meter is None:
            raise RuntimeError("edge_bench: the energy session has no meter after open()")
        return meter

    def _root(self) -> Path | None:
        board = self._session.board
        return board.root if board is not None else None

    def _required_s(self, meter: Meter, min_window_s: float) -> float:
        """The shortest repeat worth measuring: the bench minimum and the meter's rules."""
        samples_s = (meter.rules.min_samples + 1) * meter.interval_s
        return max(min_window_s, meter.min_duration_s, samples_s)

    def _emit(self, line: str, started: float) -> None:
        if self._progress is None:
            return
        if self._progress_always or time.perf_counter() - started >= PROGRESS_AFTER_S:
            self._progress(line)

    # ---- benchmarks ------------------------------------------------------------------
    @worker_failures()
    def run(
        self,
        fn: Callable[[], object],
        *,
        items_per_call: int,
        label: str = "steady",
        params: dict[str, object] | None = None,
        device: str = "cpu",
        warmup: int | None = None,
        setup: Callable[[], object] | None = None,
        repeats: int | None = None,
        items: int | None = None,
        min_window_s: float | None = None,
        calibrate: bool = True,
        scenario: Scenario | None = None,
    ) -> BenchResult:
        """Warm up, then measure ``repeats`` windows of fixed work; see the module docstring.

        ``setup`` runs (unmeasured) before the warm-up and before each repeat's window.
        ``repeats``, ``items``, ``min_window_s`` override the session's settings for this
        run; ``calibrate=False`` keeps exactly the requested work even when windows get
        too short (no calibration, no extension: they are then reported INVALID by the
        meter). ``scenario`` overrides
        ``--edge-scenario`` for this run: other than offline, each repeat runs its queries
        (one call each) on the scenario's schedule (:mod:`.scenarios`); a paced schedule
        shorter than the minimum window gets more queries.
        """
        _positive_int("items_per_call", items_per_call, 1)
        s = self.settings
        n_items = _positive_int(
            "items", items if items is not None else s.items_for(items_per_call), 1
        )
        n_repeats = _positive_int("repeats", repeats if repeats is not None else s.repeats, 1)
        n_warmup = _positive_int("warmup", warmup if warmup is not None else s.warmup, 0)
        window_s = s.min_window_s if min_window_s is None else min_window_s
        if not (math.isfinite(window_s) and window_s >= 0):
            raise ValueError(
                f"edge_bench: min_window_s must be a finite number >= 0, got {window_s!r}"
            )
        if not isinstance(device, str) or not device:
            raise ValueError(
                f"edge_bench: device must be a name like 'cpu' or 'cuda', got {device!r}"
            )
        remote = fn if isinstance(fn, RemoteWorkload) else None
        cuda = _cuda(device) and remote is None  # a worker synchronises its own device
        meter = self._meter()
        root = self._root()

        if setup is not None and n_warmup:
            setup()
        if remote is not None:
            warm_s = remote.run_calls(n_warmup).latencies_s.tolist() if n_warmup else []
        else:
            warm_s = self._warmup(fn, n_warmup, cuda)
        base_calls = math.ceil(n_items / items_per_call)
        scen = scenario if scenario is not None else s.scenario
        required_s = self._required_s(meter, window_s)
        if scen.paced:
            calls, why = plan_queries(scen, base_calls, required_s, calibrate=calibrate)
        else:
            calls, why = plan_calls(base_calls, warm_s, required_s, calibrate=calibrate)
        params = {**scen.params(), **(params or {})}

        from ..control.residency import ResidencySampler

        temps_start = _temperatures(root)
        residency: ResidencySampler | None = None
        if self._session.knobs is not None:
            residency = ResidencySampler(self._session.knobs, interval_s=RESIDENCY_INTERVAL_S)
            residency.start()
        started = time.perf_counter()
        extensions: list[Extension] = []

        def attempt(calls: int) -> Repeats:
            return Repeats(
                self._session,
                self.nodeid,
                fn,
                calls=calls,
                items_per_call=items_per_call,
                n=n_repeats,
                label=label,
                torch=_torch() if cuda else None,
                root=root,
                peak=self._peak,
                setup=setup,
                on_repeat=lambda rep: self._emit(
                    self._progress_line(label, rep, n_repeats), started
                ),
                scenario=scen,
                stop_if=lambda rep: (
                    calibrate
                    and len(extensions) < MAX_EXTENSIONS
                    and self._extension(rep, calls, required_s, scen.paced) is not None
                ),
                label_suffix=f" (extended {len(extensions)})" if extensions else "",
            )

        benchmark = self._benchmark
        driven = benchmark is not None and bridge.unused(benchmark)
        try:
            loop = attempt(calls)
            reps = loop.run_with(benchmark) if driven else loop.run()
            while calibrate and len(extensions) < MAX_EXTENSIONS:
                ext = self._first_extension(reps, calls, required_s, scen.paced)
                if ext is None:
                    break
                extensions.append(ext)
                self._emit(f"edge_bench {self.nodeid} [{label}] {ext.text}", started)
                calls = ext.calls_after
                reps = attempt(calls).run()
        finally:
            res = residency.stop() if residency is not None else {}
        if extensions:
            notes = [e.text for e in extensions]
            if driven:
                notes.append("pytest-benchmark timed the first attempt only")
            why = "; ".join([why, *notes] if why is not None else notes)
        result = BenchResult(
            label=label,
            params=self._with_point(params),
            device=device,
            items_per_call=items_per_call,
            items_requested=n_items,
            calls_per_repeat=calls,
            repeats=reps,
            warmup_s=warm_s,
            calibration=why,
            extensions=extensions,
            residency=res,
            temperature_start_c=temps_start,
            temperature_end_c=_temperatures(root),
            memory_method=self._memory_method(remote),
            simulated=self._session.simulated,
        )
        self._results.append(result)
        self._fill_extra_info()
        return result

    def _memory_method(self, remote: RemoteWorkload | None) -> str:
        """How ``memory_peak`` was measured: this process's ``VmHWM`` (reset per repeat),
        its RSS growth, or the worker's ``VmHWM`` (``worker-vmhwm``; ``none`` where the
        worker could not reset it)."""
        if remote is not None:
            return "worker-vmhwm" if remote.memory_reset else "none"
        return "vmhwm" if self._peak.resettable else "rss-delta"

    def _extension(
        self, rep: RepeatResult, calls: int, required_s: float, paced: bool
    ) -> Extension | None:
        """How to measure again after ``rep`` (one of ``calls`` calls): None unless its window
        is shorter than the meter's minimum duration or has too few samples, or when more
        calls are not possible. The new calls aim above ``required_s``."""
        meter = self._session.meter
        if meter is None:
            return None
        rules = meter.rules
        short = rep.duration_s < rules.min_duration_s
        sparse = rep.window.samples < rules.min_samples
        if not (short or sparse):
            return None
        lat = rep.latency
        mean_s = lat.mean_s if lat is not None and not paced else None
        after = extend_calls(calls, rep.duration_s, mean_s, required_s)
        if after <= calls:
            return None
        why = []
        if sparse:
            why.append(f"{rep.window.samples} samples < min_samples {rules.min_samples}")
        if short:
            why.append(f"< minimum {rules.min_duration_s:.3g} s")
        return Extension(
            repeat=rep.index + 1,
            calls=calls,
            duration_s=rep.duration_s,
            samples=rep.window.samples,
            reason=", ".join(why),
            repeats_measured=rep.index + 1,
            calls_after=after,
        )

    def _first_extension(
        self, reps: Sequence[RepeatResult], calls: int, required_s: float, paced: bool
    ) -> Extension | None:
        """The extension the first too-short repeat of an attempt asks for (pedantic's
        rounds all run: its attempt counts every round as measured)."""
        for rep in reps:
            ext = self._extension(rep, calls, required_s, paced)
            if ext is not None:
                return replace(ext, repeats_measured=len(reps))
        return None

    def _warmup(self, fn: Callable[[], object], n: int, cuda: bool) -> list[float]:
        perf = time.perf_counter
        times: list[float] = []
        for _ in range(n):
            t0 = perf()
            fn()
            if cuda:
                _torch().cuda.synchronize()
            times.append(perf() - t0)
        return times

    def _progress_line(self, label: str, rep: RepeatResult, n: int) -> str:
        e = rep.energy_per_item_j
        tp = rep.throughput
        energy = f"{e:.4g} J/item" if e is not None else "- J/item"
        rate = f"{tp:.4g} items/s" if tp is not None else "- items/s"
        state = "valid" if rep.valid else f"INVALID: {rep.window.invalid_reason}"
        sched = rep.schedule
        misses = (
            f", {sched.misses}/{sched.queries} deadline misses"
            if sched is not None and sched.misses is not None
            else ""
        )
        return (
            f"edge_bench {self.nodeid} [{label}] repeat {rep.index + 1}/{n}: "
            f"{counted(rep.items, 'item')} "
            f"in {rep.duration_s:.3f} s, {energy}, {rate}{misses}, {state}"
        )

    def _fill_extra_info(self) -> None:
        """The test's figures so far, and each run's shape, into ``benchmark.extra_info``."""
        if self._benchmark is None:
            return
        report = self.report()
        info = bridge.flat_figures(
            report["metrics"], report["validity"], simulated=self._session.simulated
        )
        runs, _ = metric_prefixes(self._results, self._phases)
        for prefix, r in zip(runs, self._results, strict=True):
            info.update({prefix + key: value for key, value in r.shape().items()})
        bridge.fill(self._benchmark, info)

    @worker_failures()
    def phase(
        self, label: str, fn: Callable[[], T], *, device: str = "cpu", in_worker: bool = False
    ) -> tuple[T, PhaseResult]:
        """Run ``fn`` once inside one energy window (e.g. model loading) and return its value.

        Garbage collection is off inside the window like in :meth:`run`; a phase shorter
        than the meter's minimum is reported INVALID, never as 0 J. ``in_worker``: ``fn``
        asks this test's worker (e.g. to build its workload): no CUDA synchronisation here
        (the worker synchronises before it answers), the memory peak is the worker's, and
        its failures skip or fail the test in one line.
        """
        cuda = _cuda(device) and not in_worker
        self._meter()
        peak = self._peak
        reset = not in_worker and peak.reset()
        torch = _torch() if cuda else None
        if torch is not None:
            torch.cuda.synchronize()
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            with self._session.window(self.nodeid, label) as w:
                t0 = time.perf_counter()
                value = fn()
                if torch is not None:
                    torch.cuda.synchronize()
                elapsed = time.perf_counter() - t0
        finally:
            if gc_was_enabled:
                gc.enable()
        memory = peak.peak_bytes() if reset else None
        if in_worker and self._worker is not None:
            memory = self._worker.memory_peak_bytes
        result = PhaseResult(
            label=label,
            window=w.result,
            elapsed_s=elapsed,
            memory_peak_bytes=memory,
            device=device,
        )
        self._phases.append(result)
        self._fill_extra_info()
        return value, result

    def derive(
        self,
        name: str,
        values: Sequence[float | None],
        *,
        unit: str,
        formula: str,
        trusted: bool = True,
    ) -> DerivedMetric:
        """Record a metric computed from this test's runs (one value per repeat, None where
        a repeat has none) with its unit and exact formula; it joins the report's metrics
        under ``name`` and ``formula`` goes to ``extra.formulas``. ``trusted=False`` (it
        derives from an invalid window) keeps the samples but makes ``value`` null."""
        if not name or any(name == d.name for d in self._derived):
            raise ValueError(f"edge_bench.derive: name {name!r} is empty or already derived")
        if not unit or not formula:
            raise ValueError(f"edge_bench.derive: {name} needs a unit and a formula")
        derived = DerivedMetric(name, tuple(values), unit, formula, trusted)
        self._derived.append(derived)
        self._fill_extra_info()
        return derived

    # ---- memory pre-flight -----------------------------------------------------------
    def preflight(
        self, *, estimate_bytes: int, what: str, margin_bytes: int | None = None
    ) -> FitVerdict:
        """Skip the test (``pytest.skip``) when ``estimate_bytes`` will not fit in the board's
        MemAvailable less the margin; the verdict is recorded either way. A board without
        readable meminfo is recorded as not checked and the test goes on."""
        root = self._root()
        if root is None:
            self._session.open()
            root = self._root()
        try:
            if root is None:
                raise MemInfoError("no board root: the energy session has no board")
            verdict = check_fits(estimate_bytes, root, margin_bytes, what=what)
        except MemInfoError as e:
            verdict = FitVerdict(
                what, True, int(estimate_bytes), None, int(margin_bytes or 0), False, str(e)
            )
        self._preflights.append(verdict)
        if not verdict.fits:
            pytest.skip(f"memory pre-flight: {verdict.reason}")
        return verdict
