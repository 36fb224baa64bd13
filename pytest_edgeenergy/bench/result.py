"""What ``edge_bench`` measured: per repeat, per run (:class:`BenchResult`), per phase
(:class:`PhaseResult`), and their metrics in the report's form (``report/schema.json``).

Definitions (per repeat, then aggregated over repeats by the report's stats: mean, median,
sample stdev, min, max, 95 % Student-t interval):

* ``energy_j``: gross energy of the repeat's window, total rail or sum of rails, J.
* ``energy_per_item`` / ``energy_per_item_net``: gross / idle-subtracted energy per item.
* ``latency_*``: per-call wall time (``perf_counter``) mean and p50/p90/p99, s.
* ``throughput``: items / window duration, items/s (same window as the energy).
* ``edp``: energy-delay product per item = J per item x s per item, where s per item =
  window duration / items (= 1 / throughput), in J*s.
* ``memory_peak``: the process's peak RSS during the repeat, B.
* In a scenario other than offline (:mod:`.scenarios`) ``latency_*`` are per query, from
  its arrival to its completion (queueing included), and ``deadline_misses`` (queries),
  ``deadline_miss_fraction`` and ``idle_fraction`` (fraction, 0..1) are added.

A result with an INVALID window is invalid: its energy-derived metrics (energy, power, EDP)
have a null ``value``; their ``samples`` hold only the valid windows' figures. Never 0 J.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypedDict

from ..report.model import Metric, Validity
from ..report.windows import metric as _metric
from ..report.windows import validity_of, window_metrics
from .scenarios import Schedule, schedule_metrics, schedule_summary
from .stats import LatencySummary, summarize_latencies

if TYPE_CHECKING:
    from ..meters.window import WindowResult

__all__ = [
    "ENERGY_METRICS",
    "BenchReport",
    "BenchResult",
    "DerivedMetric",
    "Extension",
    "PhaseResult",
    "RepeatResult",
    "merge_report",
    "metric_prefixes",
]

ENERGY_METRICS = frozenset(
    {
        "energy_j",
        "energy_net_j",
        "energy_per_item",
        "energy_per_item_net",
        "power_mean",
        "power_peak",
        "edp",
    }
)
"""Metrics whose value is null when a window is invalid."""


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


@dataclass
class RepeatResult:
    """One measured repeat: a fixed number of calls inside one energy window."""

    index: int
    """0-based."""
    calls: int
    items: int
    window: WindowResult
    latencies_s: Sequence[float]
    """Wall time of each call, s (emptied after :attr:`latency` is computed when a repeat
    had more than ``repeats.MAX_KEPT_LATENCIES`` calls)."""
    memory_peak_bytes: int | None = None
    board_memory_used_bytes: int | None = None
    cuda_peak_bytes: int | None = None
    schedule: Schedule | None = None
    """What the repeat's scenario schedule did; None offline (then latencies are per call,
    else per query from arrival, queueing included)."""

    @property
    def valid(self) -> bool:
        return self.window.valid

    @property
    def duration_s(self) -> float:
        return self.window.duration_s

    @cached_property
    def latency(self) -> LatencySummary | None:
        return summarize_latencies(self.latencies_s)

    @property
    def energy_j(self) -> float | None:
        """Gross energy, J; None when the window is invalid."""
        return _finite(self.window.total.energy_j)

    @property
    def net_energy_j(self) -> float | None:
        return _finite(self.window.net_energy_j)

    @property
    def energy_per_item_j(self) -> float | None:
        e = self.energy_j
        return e / self.items if e is not None and self.items > 0 else None

    @property
    def energy_per_item_net_j(self) -> float | None:
        e = self.net_energy_j
        return e / self.items if e is not None and self.items > 0 else None

    @property
    def time_per_item_s(self) -> float | None:
        return self.duration_s / self.items if self.items > 0 else None

    @property
    def throughput(self) -> float | None:
        """Items per second of window time."""
        return self.items / self.duration_s if self.duration_s > 0 else None

    @property
    def edp(self) -> float | None:
        """J per item x s per item, J*s."""
        e, t = self.energy_per_item_j, self.time_per_item_s
        return e * t if e is not None and t is not None else None

    def to_json(self) -> dict[str, Any]:
        lat = self.latency
        return {
            "repeat": self.index + 1,
            "calls": self.calls,
            "items": self.items,
            "seconds": _finite(self.duration_s),
            "samples": self.window.samples,
            "valid": self.valid,
            "invalid_reason": self.window.invalid_reason,
            "energy_j": self.energy_j,
            "energy_j_estimate": _finite(self.window.total.energy_j_estimate),
            "net_energy_j": self.net_energy_j,
            "latency_p90_s": lat.p90_s if lat is not None else None,
            "memory_peak_bytes": self.memory_peak_bytes,
            **({"schedule": self.schedule.to_json()} if self.schedule is not None else {}),
        }


@dataclass(frozen=True)
class Extension:
    """A repeat too short for the meter to judge (the host got faster after the warm-up, or
    the sampler fell behind): its attempt was dropped and every repeat was measured again
    with more calls."""

    repeat: int
    """1-based index of the short repeat in the dropped attempt."""
    calls: int
    """Calls per repeat of the dropped attempt."""
    duration_s: float
    samples: int
    reason: str
    """Why the meter could not judge the short repeat's window."""
    repeats_measured: int
    """Repeats the dropped attempt had measured (the short one last)."""
    calls_after: int
    """Calls per repeat of the next attempt."""

    @property
    def text(self) -> str:
        return (
            f"repeat {self.repeat} of {self.calls} calls took {self.duration_s:.3g} s "
            f"({self.reason}): measured again with {self.calls_after} calls per repeat"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "repeat": self.repeat,
            "calls": self.calls,
            "seconds": _finite(self.duration_s),
            "samples": self.samples,
            "reason": self.reason,
            "repeats_measured": self.repeats_measured,
            "calls_after": self.calls_after,
        }


def _op_text(op: object) -> str:
    """The point's one short label (``15W gpu612MHz``, ``gpu min``, ``dvfs``), as reports
    and compare print it (:func:`.report.keys.op_label`)."""
    from ..report.keys import op_key, op_label

    if isinstance(op, str):
        return op
    shape = _op_json(op)
    return op_label(op_key({"operating_point": shape})) if shape is not None else "dvfs"


def _jsonable(value: object) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


def _op_json(op: object) -> dict[str, Any] | None:
    """``params.operating_point`` in the schema's ``{"requested", "read_back"}`` shape."""
    if op is None:
        return None
    if isinstance(op, Mapping) and "requested" in op:
        return {
            "requested": dict(_jsonable(op.get("requested") or {})),
            "read_back": dict(_jsonable(op.get("read_back") or {})),
        }
    point = getattr(op, "point", None)
    if point is not None and callable(getattr(point, "to_json", None)):
        read_back = getattr(op, "read_back", None)
        return {
            "requested": point.to_json(),
            "read_back": _jsonable(read_back) if isinstance(read_back, Mapping) else {},
        }
    if isinstance(op, str):
        return {"requested": {"id": op}, "read_back": {}}
    requested = _jsonable(op)
    return {
        "requested": requested if isinstance(requested, dict) else {"id": str(op)},
        "read_back": {},
    }


@dataclass
class BenchResult:
    """One ``edge_bench.run``: warm-up, then ``len(repeats)`` measured windows of fixed work."""

    label: str
    params: dict[str, object]
    device: str
    items_per_call: int
    items_requested: int
    calls_per_repeat: int
    repeats: list[RepeatResult]
    warmup_s: list[float] = field(default_factory=list)
    """Wall time of each warm-up call, s."""
    calibration: str | None = None
    """Why calls per repeat were raised above the requested work; None when they were not."""
    extensions: list[Extension] = field(default_factory=list)
    """Each time a repeat came out too short and every repeat was measured again with more
    calls (the dropped attempts' windows are not in :attr:`repeats`)."""
    residency: dict[str, dict[int, float]] = field(default_factory=dict)
    temperature_start_c: dict[str, float | None] = field(default_factory=dict)
    temperature_end_c: dict[str, float | None] = field(default_factory=dict)
    memory_method: str = "vmhwm"
    simulated: bool = False

    # ---- shape -----------------------------------------------------------------------
    @property
    def items_per_repeat(self) -> int:
        """Items actually done per repeat (more than requested after calibration)."""
        return self.calls_per_repeat * self.items_per_call

    @property
    def calibrated(self) -> bool:
        return self.calibration is not None

    @property
    def workload(self) -> str:
        w = self.params.get("workload")
        return str(getattr(w, "name", w)) if w is not None else self.label

    @property
    def batch_size(self) -> int:
        b = self.params.get("batch_size")
        return b if isinstance(b, int) and not isinstance(b, bool) else self.items_per_call

    @property
    def operating_point(self) -> str:
        return _op_text(self.params.get("operating_point"))

    @property
    def windows(self) -> list[WindowResult]:
        return [r.window for r in self.repeats]

    # ---- validity --------------------------------------------------------------------
    @property
    def valid(self) -> bool:
        return bool(self.repeats) and all(r.valid for r in self.repeats)

    @property
    def invalid_reason(self) -> str | None:
        return self.validity()["reason"]

    def validity(self) -> Validity:
        return validity_of(self.windows)

    # ---- metrics ---------------------------------------------------------------------
    def metrics(self) -> dict[str, Metric]:
        """Every metric in the report's form, per-repeat samples and their statistics."""
        ok = self.valid
        reps = self.repeats
        lat = [r.latency for r in reps]
        out: dict[str, Metric] = {
            "energy_per_item": _metric(
                "energy_per_item", (r.energy_per_item_j for r in reps), trusted=ok
            ),
            "energy_per_item_net": _metric(
                "energy_per_item_net", (r.energy_per_item_net_j for r in reps), trusted=ok
            ),
            "latency_mean": _metric("latency_mean", (x.mean_s for x in lat if x is not None)),
            "latency_p50": _metric("latency_p50", (x.p50_s for x in lat if x is not None)),
            "latency_p90": _metric("latency_p90", (x.p90_s for x in lat if x is not None)),
            "latency_p99": _metric("latency_p99", (x.p99_s for x in lat if x is not None)),
            "throughput": _metric("throughput", (r.throughput for r in reps)),
            "edp": _metric("edp", (r.edp for r in reps), trusted=ok),
            "memory_peak": _metric("memory_peak", (r.memory_peak_bytes for r in reps)),
        }
        board_used = [r.board_memory_used_bytes for r in reps]
        if any(v is not None for v in board_used):
            out["memory_board_used"] = _metric("memory_board_used", board_used, unit="B")
        cuda = [r.cuda_peak_bytes for r in reps]
        if any(v is not None for v in cuda):
            out["memory_cuda_peak"] = _metric("memory_cuda_peak", cuda, unit="B")
        # The window figures (energy, power, duration, rails): as the energy fixture's.
        out.update(window_metrics(self.windows, trusted=ok))
        out.update(schedule_metrics([r.schedule for r in reps]))
        return out

    def value(self, name: str) -> float | None:
        """The headline value of metric ``name`` (None when absent or untrusted)."""
        m = self.metrics().get(name)
        return m["value"] if m is not None else None

    @property
    def energy_per_item_j(self) -> float | None:
        return self.value("energy_per_item")

    # ---- report pieces ---------------------------------------------------------------
    def report_params(self) -> dict[str, Any]:
        """``params`` for the report (JSON values; ``device`` added)."""
        out: dict[str, Any] = {}
        for key, value in self.params.items():
            out[key] = _op_json(value) if key == "operating_point" else _jsonable(value)
        if "workload" in out and out["workload"] is not None:
            out["workload"] = self.workload
        out.setdefault("device", self.device)
        return out

    def extra(self) -> dict[str, Any]:
        """Free-form details: calibration, warm-up, repeats, residency, temperatures."""
        from ..control.residency import residency_to_json

        return {
            "label": self.label,
            "device": self.device,
            "items_per_call": self.items_per_call,
            "items_requested": self.items_requested,
            "items_per_repeat": self.items_per_repeat,
            "calls_per_repeat": self.calls_per_repeat,
            "calibration": self.calibration,
            "extensions": [e.to_json() for e in self.extensions],
            "warmup_s": [_finite(x) for x in self.warmup_s],
            "repeats": [r.to_json() for r in self.repeats],
            "residency": residency_to_json(self.residency),
            "temperature_c": {"start": self.temperature_start_c, "end": self.temperature_end_c},
            "memory_method": self.memory_method,
            "simulated": self.simulated,
            **self._scenario_extra(),
        }

    def _scenario_extra(self) -> dict[str, Any]:
        summary = schedule_summary([r.schedule for r in self.repeats])
        return {"scenario": summary} if summary is not None else {}

    def shape(self) -> dict[str, int]:
        """Work per call and per repeat, the number of repeats, and how many times the
        repeats were measured again with more calls (too short)."""
        return {
            "items_per_call": self.items_per_call,
            "items_per_repeat": self.items_per_repeat,
            "repeats": len(self.repeats),
            "extensions": len(self.extensions),
        }

    def extra_info(self) -> dict[str, Any]:
        """This run alone as pytest-benchmark's ``extra_info``: flat figures with units in
        the names (:func:`.extra_info.flat_figures`) and :meth:`shape`."""
        from .extra_info import flat_figures

        figures = flat_figures(self.metrics(), self.validity(), simulated=self.simulated)
        return {**figures, **self.shape()}

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics(),
            "params": self.report_params(),
            "validity": self.validity(),
            "extra": self.extra(),
        }


@dataclass(frozen=True)
class PhaseResult:
    """One measured window around e.g. model loading (``load`` vs steady state)."""

    label: str
    window: WindowResult
    elapsed_s: float
    """Wall time of the phase's function (``perf_counter``), s."""
    memory_peak_bytes: int | None = None
    device: str = "cpu"

    @property
    def valid(self) -> bool:
        return self.window.valid

    @property
    def invalid_reason(self) -> str | None:
        return self.window.invalid_reason

    @property
    def duration_s(self) -> float:
        """Window duration, s."""
        return self.window.duration_s

    @property
    def energy_j(self) -> float | None:
        """Gross energy, J; None when the window is invalid."""
        return _finite(self.window.total.energy_j)

    @property
    def net_energy_j(self) -> float | None:
        return _finite(self.window.net_energy_j)

    def metrics(self) -> dict[str, Metric]:
        return {
            **window_metrics([self.window]),
            "memory_peak": _metric("memory_peak", [self.memory_peak_bytes]),
        }

    def validity(self) -> Validity:
        return validity_of([self.window])

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
            "energy_j": self.energy_j,
            "net_energy_j": self.net_energy_j,
            "duration_s": _finite(self.duration_s),
            "elapsed_s": _finite(self.elapsed_s),
            "memory_peak_bytes": self.memory_peak_bytes,
            "device": self.device,
        }


@dataclass(frozen=True)
class DerivedMetric:
    """A metric a test computes from its runs' figures (``edge_bench.derive``): one value
    per repeat, its unit and the exact formula (the report's ``extra.formulas``)."""

    name: str
    values: tuple[float | None, ...]
    unit: str
    formula: str
    trusted: bool = True
    """False when it derives from an invalid window: ``value`` is then null."""

    def metric(self) -> Metric:
        return _metric(self.name, self.values, trusted=self.trusted, unit=self.unit)


class BenchReport(TypedDict):
    """Everything a test's ``edge_bench`` contributes to its report entry."""

    metrics: dict[str, Metric]
    params: dict[str, Any]
    validity: Validity | None
    extra: dict[str, Any]
    valid: bool
    reason: str | None


def _unique(label: str, taken: set[str]) -> str:
    name, n = label, 1
    while name in taken:
        n += 1
        name = f"{label}#{n}"
    taken.add(name)
    return name


def metric_prefixes(
    results: Sequence[BenchResult], phases: Sequence[PhaseResult] = ()
) -> tuple[list[str], list[str]]:
    """The metric-name prefix of each run and each phase (see :func:`merge_report`)."""
    taken: set[str] = set()
    plain_done = False
    runs: list[str] = []
    for r in results:
        if r.label == "steady" and not plain_done:
            plain_done = True
            runs.append("")
        else:
            runs.append(f"{_unique(r.label, taken)}.")
    return runs, [f"{_unique(p.label, taken)}." for p in phases]


def merge_report(
    results: Sequence[BenchResult],
    phases: Sequence[PhaseResult] = (),
    preflights: Sequence[Mapping[str, Any]] = (),
    derived: Sequence[DerivedMetric] = (),
) -> BenchReport:
    """One test's metrics from all its runs and phases, and its ``derived`` metrics (plain
    names, their formulas in ``extra.formulas``).

    The first run labelled ``steady`` (the default) keeps plain metric names; every other
    run or phase has its names prefixed ``LABEL.`` (``load.energy_j``, ``bs64.latency_p90``;
    a repeated label gets ``#2``...). Validity covers every window of every run and phase.
    """
    metrics: dict[str, Metric] = {}
    run_prefixes, phase_prefixes = metric_prefixes(results, phases)
    for prefix, r in zip(run_prefixes, results, strict=True):
        metrics.update({prefix + k: m for k, m in r.metrics().items()})
    for prefix, p in zip(phase_prefixes, phases, strict=True):
        metrics.update({prefix + k: m for k, m in p.metrics().items()})
    metrics.update({d.name: d.metric() for d in derived})
    # The steady-state runs decide validity; a phase (a single, often short, load window)
    # that is too short only loses its own figures (null) and is named in the reason.
    run_windows = [w for r in results for w in r.windows]
    windows = run_windows or [p.window for p in phases]
    validity = validity_of(windows) if windows else None
    bad_phases = [p for p in phases if not p.window.valid] if run_windows else []
    if validity is not None and bad_phases:
        note = "; ".join(f"{p.label} phase: {p.window.invalid_reason}" for p in bad_phases)
        validity = {
            **validity,
            "reason": f"{validity['reason']}; {note}" if validity["reason"] else note,
        }
    params: dict[str, Any] = results[0].report_params() if results else {}
    return {
        "metrics": metrics,
        "params": params,
        "validity": validity,
        "extra": {
            "runs": [r.extra() for r in results],
            "phases": [p.to_json() for p in phases],
            "preflight": [dict(v) for v in preflights],
            **({"formulas": {d.name: d.formula for d in derived}} if derived else {}),
        },
        "valid": validity["valid"] if validity is not None else True,
        "reason": validity["reason"] if validity is not None else None,
    }
