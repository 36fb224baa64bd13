"""Load scenarios of ``edge_bench.run``: how queries reach the workload inside a window.

* ``offline``: fixed work at full speed (the default, unchanged).
* ``single-stream``: one query at a time, the next issued when the previous completes.
* ``fixed-rate``: query k arrives at ``t0 + k / rate`` (a camera); a query arriving while the
  previous one runs waits. The window spans the whole schedule, from the first arrival to the
  end of the last period or the last completion, whichever is later, so energy per item
  includes the idle time between queries.
* ``server``: Poisson arrivals at the mean ``rate`` (exponential gaps from a seeded
  :class:`random.Random`), first arrival at ``t0``; the window ends at the last completion.

One query is one call of the workload (``items_per_call`` items). Latency of a query is its
completion less its arrival (queueing included; in single-stream arrival = issue). A query
misses its deadline when its latency exceeds the deadline: ``--edge-latency-bound-s``, else
``1 / rate`` for fixed-rate; server needs a bound; single-stream has a deadline only when a
bound is given. A run meets its deadline when at most :data:`ALLOWED_MISS_FRACTION` of its
queries miss (MLPerf's server rule: the 99th percentile within the bound).

Between arrivals the loop sleeps (``time.sleep``), never spins: busy-waiting would burn the
very energy a paced workload saves.

MLPerf LoadGen (``mlcommons-loadgen``) is not used: it ships x86-64 wheels only, and on a
Jetson (aarch64) it would have to be built from its sdist with a C++ toolchain and pybind11.
"""

from __future__ import annotations

import math
import random
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InvalidValue

if TYPE_CHECKING:
    from ..report.model import Metric

__all__ = [
    "ALLOWED_MISS_FRACTION",
    "OFFLINE",
    "SCENARIOS",
    "Scenario",
    "Schedule",
    "arrivals_s",
    "plan_queries",
    "run_schedule",
    "schedule_metrics",
    "schedule_summary",
]

SCENARIOS = ("offline", "single-stream", "fixed-rate", "server")
ALLOWED_MISS_FRACTION = 0.01
"""A run meets its deadline when at most this fraction of its queries miss it (p99)."""
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Scenario:
    """A scenario and its parameters; invalid combinations raise :class:`InvalidValue`."""

    name: str = "offline"
    rate_hz: float | None = None
    """Queries per second (fixed-rate: exactly; server: the Poisson mean)."""
    latency_bound_s: float | None = None
    seed: int = DEFAULT_SEED
    """Server arrivals of repeat i are drawn from ``random.Random(f"{seed}:{i}")``."""

    def __post_init__(self) -> None:
        if self.name not in SCENARIOS:
            raise InvalidValue(f"unknown scenario {self.name!r}; allowed: {', '.join(SCENARIOS)}")
        for label, value in (("rate", self.rate_hz), ("latency bound", self.latency_bound_s)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InvalidValue(f"{label} {value!r}: must be a positive number")
        if self.name in ("fixed-rate", "server") and self.rate_hz is None:
            raise InvalidValue(f"scenario {self.name} needs a rate (queries per second)")
        if self.name == "server" and self.latency_bound_s is None:
            raise InvalidValue("scenario server needs a latency bound (s)")

    @property
    def offline(self) -> bool:
        return self.name == "offline"

    @property
    def paced(self) -> bool:
        """True when queries arrive on a clock (fixed-rate, server)."""
        return self.name in ("fixed-rate", "server")

    @property
    def deadline_s(self) -> float | None:
        """The latency a query must stay within; None when the scenario has none."""
        if self.latency_bound_s is not None:
            return self.latency_bound_s
        if self.name == "fixed-rate" and self.rate_hz is not None:
            return 1.0 / self.rate_hz
        return None

    def params(self) -> dict[str, object]:
        """What the report's ``params`` record, as asked (nothing for offline: keys stay as
        before; a deadline of 1 / rate is not repeated: it is in each repeat's schedule)."""
        if self.offline:
            return {}
        out: dict[str, object] = {"scenario": self.name}
        if self.rate_hz is not None:
            out["rate_hz"] = self.rate_hz
        if self.latency_bound_s is not None:
            out["latency_bound_s"] = self.latency_bound_s
        return out

    def describe(self) -> str:
        parts = [self.name]
        if self.rate_hz is not None:
            parts.append(f"{self.rate_hz:g}/s")
        if self.deadline_s is not None:
            parts.append(f"deadline {self.deadline_s:g} s")
        return ", ".join(parts)


OFFLINE = Scenario()


def arrivals_s(scenario: Scenario, n: int, repeat: int = 0) -> list[float] | None:
    """Arrival times of ``n`` queries, s after the first; None for closed loops (offline,
    single-stream: each query is issued when the previous completes)."""
    rate = scenario.rate_hz
    if not scenario.paced or rate is None:
        return None
    if scenario.name == "fixed-rate":
        return [k / rate for k in range(n)]
    rng = random.Random(f"{scenario.seed}:{repeat}")
    out, t = [], 0.0
    for _ in range(n):
        out.append(t)
        t += rng.expovariate(rate)
    return out


def plan_queries(
    scenario: Scenario, base: int, required_s: float, *, calibrate: bool = True
) -> tuple[int, str | None]:
    """Queries per repeat of a paced scenario: the window lasts about ``n / rate``, so a
    schedule shorter than the minimum window gets more queries (the same for every repeat)."""
    rate = scenario.rate_hz
    if not calibrate or rate is None or required_s <= 0 or base / rate >= required_s:
        return base, None
    n = math.ceil(required_s * rate)
    return n, (
        f"{base} queries at {rate:g}/s would take {base / rate:.3g} s < minimum window "
        f"{required_s:.3g} s: {n} queries per repeat"
    )


@dataclass(frozen=True)
class Schedule:
    """What one repeat's schedule did (times in s from its first arrival)."""

    scenario: Scenario
    queries: int
    span_s: float
    """First arrival to the end of the window (last period's end or last completion)."""
    busy_s: float
    """Sum of the queries' service times (issue to completion)."""
    misses: int | None
    """Queries over the deadline; None without a deadline."""
    max_issue_delay_s: float
    """Latest issue after arrival (queueing and the sleep's wake-up late), s."""

    @property
    def miss_fraction(self) -> float | None:
        if self.misses is None or self.queries == 0:
            return None
        return self.misses / self.queries

    @property
    def idle_fraction(self) -> float | None:
        """Share of the window the workload was not running (waiting for arrivals)."""
        if self.span_s <= 0:
            return None
        return max(0.0, 1.0 - self.busy_s / self.span_s)

    @property
    def met(self) -> bool | None:
        f = self.miss_fraction
        return None if f is None else f <= ALLOWED_MISS_FRACTION

    def to_json(self) -> dict[str, object]:
        return {
            "queries": self.queries,
            "deadline_s": self.scenario.deadline_s,
            "span_s": self.span_s,
            "busy_s": self.busy_s,
            "deadline_misses": self.misses,
            "deadline_met": self.met,
            "idle_fraction": self.idle_fraction,
            "max_issue_delay_s": self.max_issue_delay_s,
        }


def run_schedule(
    scenario: Scenario,
    fn: Callable[[], object],
    n: int,
    latencies: array[float],
    *,
    repeat: int = 0,
    sync: Callable[[], object] | None = None,
) -> Schedule:
    """Run ``n`` queries of ``fn`` on the scenario's schedule; each query's latency is
    appended to ``latencies``. Called inside an open energy window."""
    perf, sleep = time.perf_counter, time.sleep
    arrivals = arrivals_s(scenario, n, repeat)
    append = latencies.append
    busy_s = 0.0
    max_delay_s = 0.0
    t0 = perf()
    done = t0
    for k in range(n):
        arrival = t0 + arrivals[k] if arrivals is not None else done
        now = perf()
        if now < arrival:
            sleep(arrival - now)
            now = perf()
        fn()
        if sync is not None:
            sync()
        done = perf()
        busy_s += done - now
        max_delay_s = max(max_delay_s, now - arrival)
        append(done - arrival)
    end = done
    if scenario.name == "fixed-rate" and scenario.rate_hz is not None:
        period_end = t0 + n / scenario.rate_hz
        now = perf()
        if now < period_end:
            sleep(period_end - now)
        end = max(done, period_end)
    deadline = scenario.deadline_s
    lat = latencies[-n:] if n else []
    misses = sum(1 for x in lat if x > deadline) if deadline is not None else None
    return Schedule(scenario, n, end - t0, busy_s, misses, max_delay_s)


def schedule_metrics(schedules: Sequence[Schedule | None]) -> dict[str, Metric]:
    """The scenario's metrics over repeats (none when no repeat ran a schedule)."""
    from ..report.windows import metric

    done = [s for s in schedules if s is not None]
    if not done:
        return {}
    out = {
        "idle_fraction": metric("idle_fraction", (s.idle_fraction for s in done), unit="fraction")
    }
    if any(s.misses is not None for s in done):
        out["deadline_misses"] = metric("deadline_misses", (s.misses for s in done), unit="queries")
        out["deadline_miss_fraction"] = metric(
            "deadline_miss_fraction", (s.miss_fraction for s in done), unit="fraction"
        )
    return out


def schedule_summary(schedules: Sequence[Schedule | None]) -> dict[str, object] | None:
    """A run's scenario for the report's ``extra``: its parameters, the deadline and whether
    every repeat met it (None offline)."""
    done = [s for s in schedules if s is not None]
    if not done:
        return None
    scenario = done[0].scenario
    met = [s.met for s in done]
    return {
        "name": scenario.name,
        "rate_hz": scenario.rate_hz,
        "deadline_s": scenario.deadline_s,
        "seed": scenario.seed if scenario.name == "server" else None,
        "allowed_miss_fraction": ALLOWED_MISS_FRACTION if scenario.deadline_s else None,
        "deadline_met": None if None in met else all(met),
        "deadline_misses": [s.misses for s in done],
    }
