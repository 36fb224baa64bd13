"""Training and inference on one board at once: two schedulers, per-task bookkeeping and
energy attribution (issue 24; the manual's page is ``docs/how-to/interleave.md``).

One *window* runs a training loop (one call = one minibatch, :mod:`.training`) and an
inference stream (one call = one batch of queries) for ``window_s`` seconds:

* Queries arrive **evenly spaced** at ``rate_qps`` (query k at ``k / rate_qps``: a camera's
  frames), or, with ``rate_qps=None``, as fast as possible (closed loop: a batch of
  ``infer_batch_size`` queries arrives when the previous batch completes). A batch holds the
  queries waiting when it starts, at most ``infer_batch_size`` (fewer when fewer wait: no
  query waits for a batch to fill). Latency = finish - arrival; a miss = latency >
  ``deadline_s``.
* ``alternating`` (one thread, Fulcrum's way on Jetson): serve every query that has arrived,
  in batches; then, with no query waiting, start another training minibatch only when it
  keeps the next query's deadline: ``now + train_est + infer_est <= next_arrival +
  deadline_s`` (``train_est`` / ``infer_est``: the 75th percentile of the last
  :data:`ESTIMATE_WINDOW` training minibatches / inference batches measured, warm-up calls
  first); otherwise sleep until the next arrival. The deadline comes first: when no
  minibatch fits, training waits; only after :data:`REFRESH_S` without one does it run one
  anyway (``forced``: it refreshes the estimate, which a faster board would otherwise never
  show, and may miss a deadline), right after a batch even when queries still wait: when
  inference cannot keep up, the queue never empties, and training still gets one minibatch
  per :data:`REFRESH_S`. Closed loop: one minibatch, one batch, in turn.
* ``threads`` (the naive way): training free-running in one thread, the stream served in
  another (sleeping until each arrival); nothing coordinates them.

Energy attribution (:func:`busy_time_attribution`, :func:`marginal_attribution`) and the
report entry's ``extra["interleave"]`` (:func:`interleave_extra`) are plain functions of the
figures; torch is imported only inside the functions that build models.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..words import counted
from .errors import WorkloadError

if TYPE_CHECKING:
    from pathlib import Path

    from .inference import InferenceModel
    from .training import TrainingData, TrainingStep

__all__ = [
    "ATTRIBUTION_BUSY_TIME",
    "ATTRIBUTION_MARGINAL",
    "ESTIMATE_WINDOW",
    "SCHEDULERS",
    "Attribution",
    "Estimates",
    "InterleavedWorkload",
    "QueryRecord",
    "Stream",
    "WindowStats",
    "build_interleaved",
    "busy_time_attribution",
    "interleave_extra",
    "marginal_attribution",
    "run_alternating",
    "run_infer_alone",
    "run_threads",
    "run_train_alone",
]

SCHEDULERS = ("alternating", "threads")
ESTIMATE_WINDOW = 8
"""The policy's estimates are the 75th percentile of this many latest measured calls."""
ESTIMATE_PERCENTILE = 75.0
REFRESH_S = 1.0
"""The alternating policy runs a minibatch that does not fit (queries waiting included)
after this long without one."""
ATTRIBUTION_BUSY_TIME = "busy-time"
ATTRIBUTION_MARGINAL = "marginal"
DUST_FRACTION = 1e-12
"""A difference of energies smaller than this fraction of its operands is rounding (float
dust, e.g. ``-1.4e-14`` J): it is reported as 0."""

Clock = Callable[[], float]
Sleep = Callable[[float], None]


# ---- the stream ----------------------------------------------------------------------


@dataclass(frozen=True)
class Stream:
    """The inference stream of one window and its length."""

    rate_qps: float | None
    """Queries per second, evenly spaced; None: as fast as possible (closed loop)."""
    infer_batch_size: int
    deadline_s: float
    window_s: float

    def __post_init__(self) -> None:
        if self.rate_qps is not None and not (math.isfinite(self.rate_qps) and self.rate_qps > 0):
            raise WorkloadError(
                f"rate_qps {self.rate_qps!r}: must be a positive number (or None: as fast "
                "as possible)"
            )
        if isinstance(self.infer_batch_size, bool) or self.infer_batch_size < 1:
            raise WorkloadError(
                f"infer_batch_size {self.infer_batch_size!r}: must be a whole number >= 1"
            )
        for name, value in (("deadline_s", self.deadline_s), ("window_s", self.window_s)):
            if not (math.isfinite(value) and value > 0):
                raise WorkloadError(f"{name} {value!r}: must be a positive number of seconds")

    @property
    def arrivals_s(self) -> list[float]:
        """Arrival times from the window's start (fixed rate: those before ``window_s``)."""
        if self.rate_qps is None:
            return []
        n = max(1, math.ceil(self.window_s * self.rate_qps - 1e-9))
        return [k / self.rate_qps for k in range(n)]


@dataclass(frozen=True)
class QueryRecord:
    """One query, times in s from the window's start."""

    arrival_s: float
    start_s: float
    finish_s: float

    @property
    def latency_s(self) -> float:
        return self.finish_s - self.arrival_s


@dataclass
class Estimates:
    """The latest measured training minibatches and inference batches, s (what the
    alternating policy plans with: their 75th percentiles); seeded by warm-up calls."""

    train_s: deque[float] = field(default_factory=lambda: deque(maxlen=ESTIMATE_WINDOW))
    infer_s: deque[float] = field(default_factory=lambda: deque(maxlen=ESTIMATE_WINDOW))

    @property
    def train_est_s(self) -> float:
        return _estimate(self.train_s)

    @property
    def infer_est_s(self) -> float:
        return _estimate(self.infer_s)


def _estimate(xs: deque[float]) -> float:
    from ..bench.stats import percentile

    return percentile(sorted(xs), ESTIMATE_PERCENTILE) if xs else 0.0


@dataclass
class WindowStats:
    """What one window did: every query, every call of each task, times from its start."""

    scheduler: str
    stream: Stream
    queries: list[QueryRecord] = field(default_factory=list)
    train_calls: list[tuple[float, float]] = field(default_factory=list)
    """(start, end) of each training minibatch."""
    infer_calls: list[tuple[float, float, int]] = field(default_factory=list)
    """(start, end, queries) of each inference batch."""
    span_s: float = 0.0
    forced: int = 0
    """Training minibatches the alternating policy started although its estimate said they
    would not keep the deadline (after :data:`REFRESH_S` without one)."""

    @property
    def train_minibatches(self) -> int:
        return len(self.train_calls)

    @property
    def busy_train_s(self) -> float:
        return math.fsum(b - a for a, b in self.train_calls)

    @property
    def busy_infer_s(self) -> float:
        return math.fsum(b - a for a, b, _ in self.infer_calls)

    @property
    def latencies_s(self) -> list[float]:
        return [q.latency_s for q in self.queries]

    @property
    def deadline_misses(self) -> int:
        return sum(1 for x in self.latencies_s if x > self.stream.deadline_s)


# ---- schedulers ------------------------------------------------------------------------


def _timed(fn: Callable[[], object], clock: Clock) -> tuple[float, float]:
    t0 = clock()
    fn()
    return t0, clock()


def _serve(
    queue: deque[float],
    infer: Callable[[int], object],
    stats: WindowStats,
    batch_size: int,
    clock: Clock,
    t0: float,
    est: Estimates | None,
) -> float:
    """One batch of the oldest waiting queries (at most ``batch_size``; ``queue`` holds
    their arrivals on ``clock``); returns when it finished, on ``clock``."""
    n = min(len(queue), batch_size)
    arrivals = [queue.popleft() for _ in range(n)]
    a, b = _timed(lambda: infer(n), clock)
    stats.infer_calls.append((a - t0, b - t0, n))
    stats.queries.extend(QueryRecord(x - t0, a - t0, b - t0) for x in arrivals)
    if est is not None:
        est.infer_s.append(b - a)
    return b


def run_alternating(
    train_step: Callable[[], object],
    infer: Callable[[int], object],
    stream: Stream,
    est: Estimates | None = None,
    *,
    clock: Clock = time.perf_counter,
    sleep: Sleep = time.sleep,
) -> WindowStats:
    """One window of the ``alternating`` scheduler (see the module docstring).
    ``infer(n)`` serves one batch of ``n`` queries; ``est`` carries the policy's
    measurements from window to window (updated in place)."""
    est = est if est is not None else Estimates()
    stats = WindowStats("alternating", stream)
    bs = stream.infer_batch_size
    t0 = clock()
    end = t0 + stream.window_s

    last_train = t0

    def train() -> None:
        nonlocal last_train
        a, b = _timed(train_step, clock)
        stats.train_calls.append((a - t0, b - t0))
        est.train_s.append(b - a)
        last_train = b

    if stream.rate_qps is None:
        queue: deque[float] = deque()
        arrival = t0
        while clock() < end:
            train()
            queue.extend([arrival] * bs)
            arrival = _serve(queue, infer, stats, bs, clock, t0, est)
        stats.span_s = clock() - t0
        return stats

    # arrival times on the clock itself: a sleep until one always admits it
    arrivals = deque(t0 + a for a in stream.arrivals_s)
    queue = deque()

    def admit(now: float) -> None:
        while arrivals and arrivals[0] <= now:
            queue.append(arrivals.popleft())

    while True:
        now = clock()
        admit(now)
        if queue:
            _serve(queue, infer, stats, bs, clock, t0, est)
            now = clock()
            admit(now)
            if queue and now < end and now - last_train >= REFRESH_S:
                # inference cannot keep up (queries wait after every batch): training
                # would never find an empty queue, so it runs one minibatch per REFRESH_S
                stats.forced += 1
                train()
            continue
        if now >= end:
            if not arrivals:
                break
            sleep(max(0.0, arrivals[0] - clock()))
            continue
        if not arrivals:
            train()
            continue
        next_at = arrivals[0]
        if now + est.train_est_s + est.infer_est_s <= next_at + stream.deadline_s:
            train()
        elif now - last_train >= REFRESH_S:
            stats.forced += 1
            train()
        else:
            sleep(max(0.0, next_at - clock()))
    stats.span_s = clock() - t0
    return stats


def run_threads(
    train_step: Callable[[], object],
    infer: Callable[[int], object],
    stream: Stream,
    *,
    clock: Clock = time.perf_counter,
    sleep: Sleep = time.sleep,
) -> WindowStats:
    """One window of the ``threads`` scheduler: training free-running in a second thread
    until the window's end, the stream served in this one (each batch: every query waiting,
    at most ``infer_batch_size``). An exception in the training thread is raised here."""
    stats = WindowStats("threads", stream)
    bs = stream.infer_batch_size
    t0 = clock()
    end = t0 + stream.window_s
    failure: list[BaseException] = []

    def trainer() -> None:
        try:
            while clock() < end:
                a, b = _timed(train_step, clock)
                stats.train_calls.append((a - t0, b - t0))
        except BaseException as e:  # re-raised in the caller's thread
            failure.append(e)

    thread = threading.Thread(target=trainer, name="edgeenergy-train", daemon=True)
    thread.start()
    try:
        _serve_stream(infer, stream, stats, bs, clock, sleep, t0, end)
    finally:
        thread.join()
    if failure:
        raise failure[0]
    stats.span_s = clock() - t0
    return stats


def _serve_stream(
    infer: Callable[[int], object],
    stream: Stream,
    stats: WindowStats,
    bs: int,
    clock: Clock,
    sleep: Sleep,
    t0: float,
    end: float,
) -> None:
    """The stream alone: each query served as soon as it arrives (batches of the waiting)."""
    queue: deque[float] = deque()
    if stream.rate_qps is None:
        arrival = t0
        while clock() < end:
            queue.extend([arrival] * bs)
            arrival = _serve(queue, infer, stats, bs, clock, t0, None)
        return
    arrivals = deque(t0 + a for a in stream.arrivals_s)
    while arrivals or queue:
        now = clock()
        while arrivals and arrivals[0] <= now:
            queue.append(arrivals.popleft())
        if queue:
            _serve(queue, infer, stats, bs, clock, t0, None)
        elif arrivals:
            sleep(max(0.0, arrivals[0] - clock()))
    # the window lasts its whole schedule, as the fixed-rate scenario's
    rest = end - clock()
    if rest > 0:
        sleep(rest)


def run_train_alone(
    train_step: Callable[[], object], stream: Stream, *, clock: Clock = time.perf_counter
) -> WindowStats:
    """Training alone for the window's length (the marginal attribution's solo run)."""
    stats = WindowStats("train-alone", stream)
    t0 = clock()
    end = t0 + stream.window_s
    while clock() < end:
        a, b = _timed(train_step, clock)
        stats.train_calls.append((a - t0, b - t0))
    stats.span_s = clock() - t0
    return stats


def run_infer_alone(
    infer: Callable[[int], object],
    stream: Stream,
    *,
    clock: Clock = time.perf_counter,
    sleep: Sleep = time.sleep,
) -> WindowStats:
    """The stream alone, on the same schedule (the marginal attribution's solo run)."""
    stats = WindowStats("infer-alone", stream)
    t0 = clock()
    end = t0 + stream.window_s
    _serve_stream(infer, stream, stats, stream.infer_batch_size, clock, sleep, t0, end)
    stats.span_s = clock() - t0
    return stats


# ---- attribution -------------------------------------------------------------------------


@dataclass(frozen=True)
class Attribution:
    """A window's energy split into training, inference and the rest, J."""

    train_j: float
    infer_j: float
    other_j: float

    @property
    def total_j(self) -> float:
        return self.train_j + self.infer_j + self.other_j


def busy_time_attribution(
    energy_j: float, window_s: float, busy_train_s: float, busy_infer_s: float
) -> Attribution:
    """The window's energy in proportion to each task's busy time (time inside its calls),
    the rest of the window (waiting for queries, scheduling) a third share; when busy times
    overlap (threads) and exceed the window, no rest and the two in proportion. The three
    sum to ``energy_j`` (the rest is computed as the remainder; a remainder that is float
    dust, :data:`DUST_FRACTION`, is 0)."""
    for name, v in (
        ("energy_j", energy_j),
        ("window_s", window_s),
        ("busy_train_s", busy_train_s),
        ("busy_infer_s", busy_infer_s),
    ):
        if not (math.isfinite(v) and v >= 0):
            raise WorkloadError(f"busy-time attribution: {name} {v!r} must be a number >= 0")
    other_s = max(0.0, window_s - busy_train_s - busy_infer_s)
    total_s = busy_train_s + busy_infer_s + other_s
    if total_s <= 0:
        return Attribution(0.0, 0.0, energy_j)
    # Shares first (energy x busy / total loses its rounding with subnormal busy times),
    # and never more than the whole window together.
    train_share, infer_share = busy_train_s / total_s, busy_infer_s / total_s
    both = train_share + infer_share
    if both > 1.0:
        train_share, infer_share = train_share / both, infer_share / both
    train_j = energy_j * train_share
    infer_j = energy_j * infer_share
    return Attribution(train_j, infer_j, _difference(energy_j, math.fsum((train_j, infer_j))))


def _difference(a: float, b: float) -> float:
    """``a - b``, with float dust (:data:`DUST_FRACTION` of the larger) as 0."""
    d = a - b
    return 0.0 if abs(d) <= DUST_FRACTION * max(abs(a), abs(b)) else d


def marginal_attribution(
    energy_j: float,
    minibatches: int,
    queries: int,
    train_alone: tuple[float, int],
    infer_alone: tuple[float, int],
) -> dict[str, float | None]:
    """Marginal energy of each task against the other alone at the same point, for the
    same work: inference = window - ``minibatches`` x (J per minibatch of training alone);
    training = window - ``queries`` x (J per query of the stream alone). ``train_alone`` /
    ``infer_alone``: (energy J, minibatches or queries) of the solo windows. The two do not
    sum to the window (what both share, idle power above all, is in each)."""
    e_t, n_t = train_alone
    e_i, n_i = infer_alone
    per_mb = e_t / n_t if n_t > 0 else None
    per_q = e_i / n_i if n_i > 0 else None
    infer_j = _difference(energy_j, minibatches * per_mb) if per_mb is not None else None
    train_j = _difference(energy_j, queries * per_q) if per_q is not None else None
    return {
        "energy_train_j": train_j,
        "energy_infer_j": infer_j,
        "energy_per_train_minibatch_j": (
            train_j / minibatches if train_j is not None and minibatches > 0 else None
        ),
        "energy_per_query_j": infer_j / queries if infer_j is not None and queries > 0 else None,
        "train_alone_energy_per_minibatch_j": per_mb,
        "infer_alone_energy_per_query_j": per_q,
    }


# ---- the report entry's extra ------------------------------------------------------------


def _percentile(xs: Sequence[float], q: float) -> float | None:
    from ..bench.stats import percentile

    return percentile(sorted(xs), q) if xs else None


def interleave_extra(
    *,
    windows: Sequence[tuple[WindowStats, float | None, float]],
    train_workload: str,
    infer_workload: str,
    train_batch_size: int,
    marginal: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``extra["interleave"]``: the windows' figures (each ``(stats, energy J or None when
    invalid, window duration s)``), counts and energies summed over the windows, rates per
    second of their total duration, latency percentiles over all their queries."""
    if not windows:
        raise WorkloadError("interleave_extra: no measured window")
    first = windows[0][0]
    stream = first.stream
    duration_s = math.fsum(d for _, _, d in windows)
    minibatches = sum(s.train_minibatches for s, _, _ in windows)
    queries = sum(len(s.queries) for s, _, _ in windows)
    latencies = [x for s, _, _ in windows for x in s.latencies_s]
    energies = [e for _, e, _ in windows]
    parts = [
        busy_time_attribution(e, d, s.busy_train_s, s.busy_infer_s)
        for s, e, d in windows
        if e is not None
    ]
    valid = None not in energies
    energy_j = math.fsum(e for e in energies if e is not None) if valid else None
    train_j = math.fsum(p.train_j for p in parts) if valid else None
    infer_j = math.fsum(p.infer_j for p in parts) if valid else None
    other_j = None
    if energy_j is not None and train_j is not None and infer_j is not None:
        other_j = _difference(energy_j, math.fsum((train_j, infer_j)))
    busy_train = math.fsum(s.busy_train_s for s, _, _ in windows)
    busy_infer = math.fsum(s.busy_infer_s for s, _, _ in windows)
    out: dict[str, Any] = {
        "scheduler": first.scheduler,
        "train_workload": train_workload,
        "infer_workload": infer_workload,
        "train_batch_size": train_batch_size,
        "rate_qps": stream.rate_qps,
        "arrivals": "evenly spaced" if stream.rate_qps is not None else "closed loop",
        "infer_batch_size": stream.infer_batch_size,
        "deadline_s": stream.deadline_s,
        "windows": len(windows),
        "duration_s": duration_s,
        "train_minibatches": minibatches,
        "train_minibatches_per_s": minibatches / duration_s if duration_s > 0 else None,
        "train_items_per_s": minibatches * train_batch_size / duration_s
        if duration_s > 0
        else None,
        "queries": queries,
        "infer_batches": sum(len(s.infer_calls) for s, _, _ in windows),
        "latency_p50_s": _percentile(latencies, 50.0),
        "latency_p90_s": _percentile(latencies, 90.0),
        "latency_p99_s": _percentile(latencies, 99.0),
        "latency_max_s": max(latencies, default=None),
        "deadline_misses": sum(s.deadline_misses for s, _, _ in windows),
        "busy_train_s": busy_train,
        "busy_infer_s": busy_infer,
        "forced_minibatches": sum(s.forced for s, _, _ in windows),
        "energy_j": energy_j,
        "energy_train_j": train_j,
        "energy_infer_j": infer_j,
        "energy_other_j": other_j,
        "energy_per_train_minibatch_j": train_j / minibatches
        if train_j is not None and minibatches > 0
        else None,
        "energy_per_query_j": infer_j / queries if infer_j is not None and queries > 0 else None,
        "attribution": ATTRIBUTION_BUSY_TIME,
        "attribution_methods": [ATTRIBUTION_BUSY_TIME]
        + ([ATTRIBUTION_MARGINAL] if marginal is not None else []),
        "power_w": energy_j / duration_s if energy_j is not None and duration_s > 0 else None,
        "note": _progress_note([s.train_minibatches for s, _, _ in windows]),
    }
    if marginal is not None:
        out[ATTRIBUTION_MARGINAL] = dict(marginal)
    return out


def _progress_note(minibatches_per_window: Sequence[int]) -> str | None:
    """What to say of windows in which training made no progress (None: it did in each):
    a measured result (0 minibatches/s), not an error."""
    stalled = sum(1 for n in minibatches_per_window if n == 0)
    if not stalled:
        return None
    n = len(minibatches_per_window)
    if stalled < n:
        return f"{stalled} of {counted(n, 'window')} finished no training minibatch"
    where = "" if n == 1 else f" in {n} windows"
    return (
        f"no training minibatch finished{where} (0 minibatches/s: an infeasible point for a "
        "search)"
    )


# ---- the workload ------------------------------------------------------------------------


@dataclass
class InterleavedWorkload:
    """A training step and an inference model ready to interleave; each call of
    :meth:`window` runs one window of ``scheduler`` and keeps its :class:`WindowStats`."""

    train: TrainingStep
    infer_model: InferenceModel
    stream: Stream
    scheduler: str
    estimates: Estimates = field(default_factory=Estimates)
    windows: list[WindowStats] = field(default_factory=list)
    intra_op_threads: int | None = None
    """torch's intra-op threads while this workload is open (None: torch's own)."""
    _threads_before: int | None = field(default=None, repr=False)

    def infer(self, n: int) -> None:
        """One inference batch of ``n`` queries: the first ``n`` items of the model's
        ``infer_batch_size`` inputs, no autograd."""
        import torch

        m = self.infer_model
        inputs = tuple(x[:n] if isinstance(x, torch.Tensor) else x for x in m.inputs)
        with torch.inference_mode():
            m.model(*inputs)
        if m.device.startswith("cuda"):
            torch.cuda.synchronize()  # the batch's latency is its finish on the device

    def warm_up(self, calls: int = 3) -> None:
        """A few unmeasured calls of each task: the policy's first estimates."""
        for _ in range(calls):
            a, b = _timed(self.train, time.perf_counter)
            self.estimates.train_s.append(b - a)
            a, b = _timed(lambda: self.infer(self.stream.infer_batch_size), time.perf_counter)
            self.estimates.infer_s.append(b - a)

    def window(self) -> WindowStats:
        if self.scheduler == "alternating":
            stats = run_alternating(self.train, self.infer, self.stream, self.estimates)
        else:
            stats = run_threads(self.train, self.infer, self.stream)
        self.windows.append(stats)
        return stats

    def train_alone(self) -> WindowStats:
        stats = run_train_alone(self.train, self.stream)
        self.windows.append(stats)
        return stats

    def infer_alone(self) -> WindowStats:
        stats = run_infer_alone(self.infer, self.stream)
        self.windows.append(stats)
        return stats

    def params(self) -> dict[str, object]:
        """What the result's ``params`` should say (workload: ``TRAIN+INFER``)."""
        s = self.stream
        return {
            "workload": f"{self.train.workload}+{self.infer_model.workload}",
            "batch_size": s.infer_batch_size,
            "graph_mode": "eager",
            "precision": "fp32",
            "device": self.train.device,
            "scheduler": self.scheduler,
            "train_batch_size": self.train.batch_size,
            "rate_qps": s.rate_qps if s.rate_qps is not None else "max",
            "deadline_s": s.deadline_s,
            **({"intra_op_threads": self.intra_op_threads} if self.intra_op_threads else {}),
        }

    def close(self) -> None:
        """Stop the loader's workers; put torch's intra-op threads back."""
        self.train.close()
        # persistent workers belong to the loader itself: dropping it stops them now
        self.train.batches = ()
        if self._threads_before is not None:
            import torch

            torch.set_num_threads(self._threads_before)
            self._threads_before = None


def build_interleaved(
    train_workload: str,
    infer_workload: str,
    *,
    train_batch_size: int,
    stream: Stream,
    scheduler: str,
    device: str = "cpu",
    data: TrainingData | None = None,
    cache_root: Path | None = None,
    weights_dir: Path | None = None,
    intra_op_threads: int | None = None,
) -> InterleavedWorkload:
    """Both tasks built (torch eager fp32; the inference model at ``infer_batch_size``,
    one first call each) and a few warm-up calls run. ``intra_op_threads``: torch's
    intra-op threads until :meth:`InterleavedWorkload.close` (process-wide, so restored
    there)."""
    if scheduler not in SCHEDULERS:
        raise WorkloadError(
            f"scheduler {scheduler!r} is not known; use one of {', '.join(SCHEDULERS)}"
        )
    if intra_op_threads is not None and (
        isinstance(intra_op_threads, bool) or intra_op_threads < 1
    ):
        raise WorkloadError(f"intra_op_threads {intra_op_threads!r}: must be a whole number >= 1")
    from .inference import load_inference
    from .registry import workload_spec
    from .training import build_trainer

    if workload_spec(train_workload).kind != "training":
        raise WorkloadError(f"{train_workload} is not a training workload")
    if workload_spec(infer_workload).kind not in ("classification", "nlp"):
        raise WorkloadError(
            f"{infer_workload}: the interleaved stream runs classification or nlp workloads"
        )
    import torch

    threads_before = torch.get_num_threads()
    if intra_op_threads is not None:
        torch.set_num_threads(intra_op_threads)
    step: TrainingStep | None = None
    try:
        step = build_trainer(
            train_workload,
            train_batch_size,
            device=device,
            data=data,
            cache_root=cache_root,
            weights_dir=weights_dir,
            persistent_workers=True,
        )
        model = load_inference(
            infer_workload,
            device=device,
            batch_size=stream.infer_batch_size,
            weights_dir=weights_dir,
        )
        work = InterleavedWorkload(
            step, model, stream, scheduler, intra_op_threads=intra_op_threads
        )
        work.warm_up()
    except BaseException:
        if step is not None:
            step.close()
        torch.set_num_threads(threads_before)
        raise
    work._threads_before = threads_before
    return work
