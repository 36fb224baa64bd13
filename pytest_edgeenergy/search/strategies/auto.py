"""``auto``: a surrogate of time and power over the knobs, each next point where it
expects the most.

Gaussian processes model log time, log power and the objective's own log (log energy, log EDP:
modelled directly, the sum of two models' errors would blur the minimum) over the knobs scaled to
[0, 1] (half by rank, half by log value), each with a trend linear in the knobs plus a square term
per knob with an interior value: time falls and power rises with clocks and cores, so the trend
carries most of the shape and the process the rest; the square term lets it bend (an AGX-Orin-like
grid's fastest point under a tight power budget sits at 3-6 of 12 cores, which a straight line
through 1 and 12 cannot place); a knob's square term enters once two profiled points hold it inside
its range. The first points are the two-level design: every combination of each knob's lowest and
highest value (2^d points for d knobs; the extremes bound what the knobs do and show where one
knob's effect depends on another, e.g. the CPU clock costing watts with a slow GPU and almost
nothing with a fast one), when it takes at most 16 points and two thirds of the trials; else, for 5
knobs, its half fraction under the same limits (the 16 corners whose coded levels, -1 lowest and +1
highest, multiply to +1: every knob's effect and every two-knob interaction still apart). On the
interleaved workload's 5 knobs (cores x CPU x GPU x EMC clock x inference batch) the 8-point
space-filling start used before missed the fast line under a power budget (2 cores at the top CPU,
GPU and EMC clocks) in 7 of 80 benchmark searches, the half fraction in none
(benchmarks/bench_search_interleave.py); then (or only) a space-filling design (greedy max-min
distance from the point nearest the middle of the space: an interior anchor) up to d + 3 points in
all (at most 8; 3 with a prior). Then, while some knob with an interior value has been profiled
inside its range at fewer than two points (its square term not yet in the trend), the proposal is
chosen among the points where every such knob is inside its range: on generated AGX Orin grids the
search otherwise stayed at the core count of a corner when fewer than 0.5 % of the points were near
the optimum, and, after the middle start's one interior point, at the lowest or highest GPU clock
under min-energy (35-53 % above the optimum; benchmarks/bench_search_unseen.py); after a
two-level design of 3 knobs or more, a knob of 11 values or more counts as inside only in the
middle half of its range (see ``_MIDDLE``). After them each proposal maximises the expected
improvement of the objective times the probability of meeting the budgets (no feasible point yet:
the most probably feasible one). Max-train-throughput (an interleaved workload) models minus log
training minibatches/s as its objective and log inference latency p99 for the latency budget's
probability (power as ever). Pareto scalarises time and energy with a seeded random weight per trial
(ParEGO). A prior (another workload's or board's profiles with the same knobs) adds its own model's
predicted log time and log power to the trend's columns.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import InvalidValue
from ...extras import require
from ..gp import GP
from ..objective import LATENCY_P99, THROUGHPUT, Objective
from ..space import Knobs, Point, Space
from ..strategy import StrategyRequest, profiled
from ..trial import Trial

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]
    Mask = NDArray[np.bool_]

_PRIOR_POINTS = 200
"""At most this many prior profiles are modelled (evenly chosen): enough for the shape."""
_MAX_CORNERS = 16
"""The two-level design is used up to this many points (4 knobs), and when it leaves the
model at least a third of the trials."""
_MIN_HALF_KNOBS = 5
"""When the full design does not fit, its half fraction (2^(d-1) points) is used from this
many knobs (with two values or more) on: only then (resolution V) does it keep every
knob's effect and every two-knob interaction apart from one another (with 4 knobs two
interactions share one column, with 3 a knob's effect and an interaction)."""
_MIDDLE = (0.25, 0.75)
"""After a two-level design of ``_MIDDLE_MIN_KNOBS`` knobs or more, a knob of
``_MIDDLE_MIN_VALUES`` values or more counts as profiled inside its range (for its square
term, and for the points forced inside) only between these scaled values. The corners show
nothing inside the ranges, and expected improvement then took the inside points next to a
corner (11 of 12 cores, the GPU clock one step below the top): a square term fitted there
cannot place a bend at 3-6 cores or at the GPU's voltage knee (generated AGX Orin grids,
min-time under budgets at 30 profiles: searches over 10 % 11 -> 7 of 144, worst 19.8 ->
15.6 %; benchmarks/bench_search_unseen.py)."""
_MIDDLE_MIN_KNOBS = 3
_MIDDLE_MIN_VALUES = 11
"""Where the middle rule applies. For every knob after any two-level design it cost the
interleaved benchmark one budget pair (80 -> 70 of 80 searches within 10 %: its CPU clock
and batch size, 10 and 6 values, best at an end) and loudva NX's min-energy on the 2-knob
shared tables (0.0 -> 4.5 %); the thresholds are chosen on those benchmarks, not derived."""


class AutoStrategy:
    """Bayesian optimisation with a physics-shaped trend; see the module's docstring."""

    name = "auto"

    def __init__(
        self,
        space: Space,
        objective: Objective,
        *,
        seed: int = 0,
        prior: Sequence[Trial] = (),
        initial: int | None = None,
        trials: int | None = None,
    ) -> None:
        """``trials``: the search's budget, when known (it decides whether the two-level
        design fits); ``initial``: the least number of points the start holds (the
        space-filling design fills up to it; default d + 3, at most 8, 3 with a prior)."""
        require("numpy", "search", "the auto search strategy")
        import numpy as np

        self.space = space
        self.objective = objective
        self.seed = seed
        self._points = space.all_points()
        self._x = np.array([self.coords(p) for p in self._points])
        self._index = {p: i for i, p in enumerate(self._points)}
        levels = np.array([space.indices(p) for p in self._points], dtype=int)
        top = np.array([len(dim.values) - 1 for dim in space.dims])
        self._interior = (levels > 0) & (levels < top)
        """Per point and knob: the knob neither at its lowest nor at its highest value (after
        the two-level design: in the middle of its range, see below)."""
        self._curved = [k for k, dim in enumerate(space.dims) if len(dim.values) > 2]
        """Knobs with an interior value: each may get a square term in the trend."""
        d = len(space.dims)
        self.initial = initial if initial is not None else (3 if prior else min(d + 3, 8))
        self._prior = self._prior_features(prior) if prior else None
        ends = [(0, len(dim.values) - 1) for dim in space.dims]
        corners = [
            i
            for i, p in enumerate(self._points)
            if all(j in end for j, end in zip(space.indices(p), ends, strict=True))
        ]
        varied = sum(len(dim.values) > 1 for dim in space.dims)
        if not self._fits(corners, trials) and varied >= _MIN_HALF_KNOBS:
            # The half fraction I = +ABC..: the corners whose coded levels (-1 lowest,
            # +1 highest) multiply to +1.
            corners = [
                i
                for i in corners
                if math.prod(
                    1 if j == end[1] else -1
                    for j, end in zip(space.indices(self._points[i]), ends, strict=True)
                )
                == 1
            ]
        self.corners: list[int] = corners if self._fits(corners, trials) else []
        """The two-level design, full or half (indices into the space's points); empty when
        not used."""
        if self.corners and varied >= _MIDDLE_MIN_KNOBS:
            many = [len(dim.values) >= _MIDDLE_MIN_VALUES for dim in space.dims]
            self._interior = _middle(self._x, self._interior, many)

    @staticmethod
    def _fits(design: Sequence[int], trials: int | None) -> bool:
        """At most ``_MAX_CORNERS`` points, leaving the model at least a third of the trials."""
        return len(design) <= _MAX_CORNERS and (trials is None or 3 * len(design) <= 2 * trials)

    def coords(self, point: Point) -> list[float]:
        """A point scaled to [0, 1] per knob (log scale for positive numbers)."""
        out = []
        for dim, value in zip(self.space.dims, point, strict=True):
            out.append(self._scale(dim.name, value))
        return out

    def _scale(self, name: str, value: object) -> float:
        """A knob's value on [0, 1]: half its (fractional) rank among the space's values,
        half its log value. Two near-equal clocks (1.4976 and 1.5104 GHz on the Orin
        Nano) can still behave apart (a different governor floor), yet log spacing carries
        the physics. A number between or beyond the space's values (a prior's, from
        another board) gets an interpolated rank on the same scale."""
        dim = self.space.dims[self.space.names.index(name)]
        n = len(dim.values)
        if not dim.ordered or not isinstance(value, int):
            if value not in dim.values:
                raise InvalidValue(f"{name}={value!r} is not in the search space")
            return dim.values.index(value) / (n - 1) if n > 1 else 0.0
        if n == 1:
            return 0.0
        logs = [math.log(float(v)) for v in dim.values]
        lv = math.log(value)
        i = min(max(sum(1 for x in logs if x <= lv) - 1, 0), n - 2)
        rank = i + (lv - logs[i]) / (logs[i + 1] - logs[i])
        return 0.5 * rank / (n - 1) + 0.5 * (lv - logs[0]) / (logs[-1] - logs[0])

    def _prior_features(self, prior: Sequence[Trial]) -> Array:
        """Log time and log power predicted by a model of the prior's profiles at every
        point of this space (columns of the trend)."""
        import numpy as np

        ok = [t for t in prior if t.ok]
        names = set(self.space.names)
        if not ok or any(set(t.knobs) != names for t in ok):
            raise InvalidValue(
                f"the prior's profiles must vary the same knobs as the search "
                f"({', '.join(self.space.names)})"
            )
        ok = ok[:: max(1, math.ceil(len(ok) / _PRIOR_POINTS))]
        # Prior values outside this space's range extrapolate on the same scale.
        x = np.array([[self._scale(n, t.knobs[n]) for n in self.space.names] for t in ok])
        cols = []
        for log_y in (
            np.log([t.measured[0] for t in ok]),
            np.log([t.measured[1] for t in ok]),
        ):
            feats = np.hstack([np.ones((len(x), 1)), x])
            gp = GP.fit(x, np.asarray(log_y, dtype=float), feats)
            mu, _ = gp.predict(self._x, np.hstack([np.ones((len(self._x), 1)), self._x]))
            cols.append(mu)
        out: Array = np.column_stack(cols)
        return out

    # -- proposals -------------------------------------------------------------------------

    def propose(self, history: Sequence[Trial]) -> Knobs | None:
        done = profiled(self.space, history)
        free = [i for i, p in enumerate(self._points) if p not in done]
        if not free:
            return None
        ok = [(self._index[p], t) for p, t in done.items() if self._usable(t) and p in self._index]
        corners = [i for i in self.corners if self._points[i] not in done]
        if corners:
            return self.space.knobs(self._points[self._spread(done, corners)])
        if len(ok) < self.initial:
            return self.space.knobs(self._points[self._spread(done, free)])
        # A prior's predictions carry the shape inside the ranges already: no forced points.
        inside = self._inside(ok, free) if self._prior is None else []
        return self.space.knobs(self._points[self._best_expected(ok, inside or free, len(history))])

    def _inside(self, ok: list[tuple[int, Trial]], free: list[int]) -> list[int]:
        """The free points where every knob not yet profiled inside its range (neither its
        lowest nor its highest) at two points, what its square term needs, is inside it;
        empty when every knob has been."""
        rows = [i for i, _ in ok]
        lacking = [k for k in self._curved if k not in self._bent(rows)]
        if not lacking:
            return []
        return [i for i in free if self._interior[i, lacking].all()]

    def _spread(self, done: dict[Point, Trial], free: list[int]) -> int:
        """The point of ``free`` farthest from every profiled one; the first, the point
        nearest the middle of the space (an interior anchor for the model), or a seeded
        one where all are as near (the corners: each seed its own order, as before)."""
        import numpy as np

        taken = [self._index[p] for p in done if p in self._index]
        if not taken:
            middle = np.sum((self._x[free] - 0.5) ** 2, axis=1)
            if np.ptp(middle) <= 1e-9:
                return free[random.Random(self.seed).randrange(len(free))]
            return free[int(np.argmin(middle))]
        dist = np.min(
            np.sum((self._x[free][:, None, :] - self._x[taken][None, :, :]) ** 2, axis=-1), axis=1
        )
        return free[int(np.argmax(dist))]

    def predict(self, history: Sequence[Trial], points: Sequence[Point]) -> tuple[Array, Array]:
        """Predicted time (s) and power (W) at ``points`` from the measured ``history``."""
        import numpy as np

        done = profiled(self.space, history)
        ok = [(self._index[p], t) for p, t in done.items() if self._usable(t) and p in self._index]
        rows = [self._index[p] for p in points]
        (mu_t, _), (mu_p, _) = self._models(ok, rows)
        return np.exp(mu_t), np.exp(mu_p)

    def _usable(self, trial: Trial) -> bool:
        """Measured, with every metric the objective reads."""
        return trial.ok and not self.objective.missing(trial.metrics)

    def _bent(self, rows_fit: Sequence[int]) -> list[int]:
        """The knobs whose square term the trend carries: those profiled inside their range
        at two points or more (one interior point cannot tell one knob's bend from
        another's; on the interleaved table guessing it cost 18 % under one budget)."""
        return [k for k in self._curved if self._interior[list(rows_fit), k].sum() >= 2]

    def _trend(self, rows: Sequence[int], bent: Sequence[int] = ()) -> Array:
        import numpy as np

        x = self._x[list(rows)]
        parts = [np.ones((len(rows), 1)), x, (x[:, list(bent)] - 0.5) ** 2]
        if self._prior is not None:
            parts.append(self._prior[list(rows)])
        trend: Array = np.hstack(parts)
        return trend

    def _fit_predict(
        self, rows_fit: list[int], y: Array, rows: list[int], *, observed: bool = False
    ) -> tuple[Array, Array]:
        bent = self._bent(rows_fit)
        gp = GP.fit(self._x[rows_fit], y, self._trend(rows_fit, bent))
        return gp.predict(self._x[rows], self._trend(rows, bent), observed=observed)

    def _models(
        self, ok: list[tuple[int, Trial]], rows: list[int]
    ) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
        import numpy as np

        fit = [i for i, _ in ok]
        log_t = np.log([t.measured[0] for _, t in ok])
        log_p = np.log([t.measured[1] for _, t in ok])
        return self._fit_predict(fit, log_t, rows), self._fit_predict(fit, log_p, rows)

    def _best_expected(self, ok: list[tuple[int, Trial]], free: list[int], n: int) -> int:
        import numpy as np

        obj = self.objective
        fit = [i for i, _ in ok]
        log_t = np.log([t.measured[0] for _, t in ok])
        log_p = np.log([t.measured[1] for _, t in ok])
        feasible = np.array(
            [t.infeasible is None and obj.feasible(*t.measured, t.metrics) for _, t in ok]
        )
        log_latency = log_t
        # The objective's own log is modelled directly: the sum of two models' errors
        # would blur the minimum.
        if obj.needs:  # max-train-throughput: maximise log minibatches/s, p99 bounded
            y = -_log_floored([t.metrics[THROUGHPUT] for _, t in ok])
            log_latency = _log_floored([t.metrics[LATENCY_P99] for _, t in ok])
        elif obj.name == "min-time":
            y = log_t
        elif obj.name == "min-edp":
            y = 2 * log_t + log_p
        elif obj.name == "pareto":
            y = self._scalarised(log_t, log_t + log_p, n)
        else:
            y = log_t + log_p
        mu, var = self._fit_predict(fit, y, free)
        prob = np.ones(len(free))
        for budget, series in (
            (obj.power_budget_w, log_p),
            (obj.latency_budget_s, log_latency),
        ):
            if budget is not None:
                # A measurement's noise counts: the optimum sits on the budget's edge.
                m, v = self._fit_predict(fit, series, free, observed=True)
                prob *= _norm_cdf((math.log(budget) - m) / np.sqrt(v))
        if not feasible.any():
            score = prob - 1e-6 * mu  # most probably feasible; among equals the best
        else:
            score = _expected_improvement(mu, var, float(np.min(y[feasible]))) * prob
        return free[int(np.argmax(score))]

    def _scalarised(self, a: Array, b: Array, n: int) -> Array:
        """Augmented Chebyshev scalarisation of two normalised logs, weight by trial."""
        import numpy as np

        weight = random.Random(self.seed * 1_000_003 + n).random()
        na = (a - a.min()) / (np.ptp(a) or 1.0)
        nb = (b - b.min()) / (np.ptp(b) or 1.0)
        out: Array = np.maximum(weight * na, (1 - weight) * nb) + 0.05 * (
            weight * na + (1 - weight) * nb
        )
        return out


def _middle(x: Array, interior: Mask, knobs: Sequence[bool]) -> Mask:
    """``interior`` with each of the ``knobs`` (a flag per knob) that has a value in the
    middle of its scaled range (``_MIDDLE``) inside only there."""
    import numpy as np

    middle = interior & (x >= _MIDDLE[0]) & (x <= _MIDDLE[1])
    use = np.array(knobs, dtype=bool) & middle.any(axis=0)
    out: Mask = np.where(use[None, :], middle, interior)
    return out


def _log_floored(values: Sequence[float]) -> Array:
    """Logs of figures >= 0, a zero (an interleaved window that finished no training
    minibatch) taken as half the smallest positive one so the model stays finite."""
    import numpy as np

    positive = [v for v in values if v > 0]
    floor = 0.5 * min(positive) if positive else 1e-6
    out: Array = np.log([max(v, floor) for v in values])
    return out


def _norm_cdf(z: Array) -> Array:
    import numpy as np

    erf = np.vectorize(math.erf)
    out: Array = 0.5 * (1.0 + erf(z / math.sqrt(2.0)))
    return out


def _expected_improvement(mu: Array, var: Array, best: float) -> Array:
    import numpy as np

    sd = np.sqrt(var)
    z = (best - mu) / sd
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    out: Array = (best - mu) * _norm_cdf(z) + sd * pdf
    return out


def create(request: StrategyRequest) -> AutoStrategy:
    """``auto`` (entry point): a surrogate model of time and power choosing each next point
    by expected improvement (seeded by the prior's profiles, when given)."""
    return AutoStrategy(
        request.space,
        request.objective,
        seed=request.seed,
        prior=request.prior,
        trials=request.trials,
    )
