"""Change points in one series of a metric over runs (``edgeenergy history changes``).

Two steps, each from published, maintained work:

1. **Candidates**: the optimal segmentation of the series under a penalty, PELT (Killick,
   Fearnhead & Eckley 2012) with ruptures' ``KernelCPD`` and its linear kernel, which is the
   L2 cost of a change in mean computed by ruptures' C code (C. Truong, L. Oudre, N. Vayatis,
   "Selective review of offline change point detection methods", Signal Processing 167, 2020;
   https://centre-borelli.github.io/ruptures-docs/). Energy is relative and log-normal-ish,
   so positive series are segmented on their logarithms (a +8 % step is the same step at
   any level); the penalty is BIC's ``2 sigma^2 ln n``, sigma the noise level estimated
   from the differences of neighbouring runs (a few steps barely move it). PELT segments
   the series with its disturbed runs pulled in (see placement), so that a run far off
   neither makes a candidate of its own nor inflates sigma until a real step is under the
   penalty. Past 2,000 runs PELT segments the means of blocks of runs (ruptures' C code is
   quadratic in the number of points) and each change is then placed exactly among the
   runs of its blocks.
2. **Significance**: a candidate is kept only if a permutation test of its window (the runs
   between its neighbouring candidates) finds the window's largest split statistic
   significant at ``alpha``: the max-statistic permutation test of E-divisive means
   (Matteson & James 2014) as MongoDB's signal-processing-algorithms and Apache Otava use
   it. Here the window's values are first winsorised at its median +- 3 robust standard
   deviations (a function of the values alone), and the statistic of each ordering, the
   observed one and every permuted one alike, is computed after pulling its runs far off
   their local level in (as for placement): a function of the ordering, so the
   permutation test stays exact, and one disturbed run weighs no more than a run of its
   own level. Each split's gain is weighted by ``(len / k)^e (len / (len - k))^e``,
   heavier at the ends than the standardised CUSUM (Csorgo & Horvath 1997; Horvath, Miller
   & Rice 2020 on Renyi-type statistics): ``e`` = ``END_WEIGHT`` at an end of the series,
   which gains power for a step with few runs on one side (the newest runs of a history),
   and ``INNER_WEIGHT`` at an end that is another change, where a disturbed run near the
   window's end would otherwise pass for a step. The whole series is tested first
   (nothing is reported unless it is significant: a stationary series reports a change at
   most at rate ``alpha``), and there the test also scans every segment against the rest
   of the series (the epidemic alternative: Levin & Kline 1985, Yao 1993), so that a level
   that goes up and later comes back, which no single split of the whole series shows, is
   not lost before its windows are tested (E-divisive's recursion finds it in the same
   way, by comparing a segment with its neighbour, not the whole series). The two
   statistics are combined by their permutation p-values (min-p, Westfall & Young 1993),
   the segments' p-value counted ``SEGMENT_SHARE`` times, so they take about a fifth of
   ``alpha``. If the whole series is significant and the penalty left no candidate, the
   series' best placement is the candidate (its best segment's two ends when that segment
   beats the best split by the penalty). Then each candidate is tested; the least
   significant is dropped first, its neighbours placed again in their wider windows and
   tested again. Permutations are seeded by the window, so the result is deterministic and
   does not depend on the order of the tests.

**Placement**: each change is placed by the Bayes rule for "within one run" (under flat
priors on the run and on both levels the posterior of a split is
``exp(gain / 2 sigma^2) / sqrt(k (len - k))``; the split chosen has the largest posterior
mass over itself and its two neighbours), with the split itself weighted 1.1 so that a
clear step is placed at its run and not beside it: the expected cost of a change placed
more than one run off (1) plus one run off (0.1) is least. The argmax of the gain alone
misses by more than one run more often. Placement uses the series with heavy tails tamed:
a run farther than 3 robust standard deviations from the running median of 5 runs, and
from the medians of the 3 runs on either side of it, is pulled in to that limit (a run
beside a step is near its own side's median and is kept), so one disturbed run does not
drag a change to it.

**Autocorrelation**: the tests assume runs that are independent around their levels. Each
change carries the lag-1 autocorrelation of the (tamed) runs around the levels found, and
whether it is significantly above what independent runs give (one-sided, normal
approximation, ``AUTOCORRELATION_Z``): runs that drift slowly (thermal state, a background
load) make changes of their own, so such changes may be a drift, not steps.

The false-positive rate and detection rate are measured in
``benchmarks/bench_history_changes.py``. numpy and ruptures are imported inside the
functions (only the CLI reaches this module).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InvalidValue

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    IntArray = npt.NDArray[np.intp]

PERMUTATIONS = 199
"""Permutations per test (p-values resolve to 0.005; MongoDB's E-divisive defaults to 100)."""
FULL_GRID_MAX = 2000
"""Up to this many runs every run is a candidate; past it the grid is thinned to block edges."""
_FIRST_CHUNK = 50
"""Permutations drawn before the first early-stop check (most windows of noise stop here)."""
_CHUNK_FLOATS = 2_000_000
"""Bound of one batch of permuted windows (16 MB of float64)."""
_TIE_RTOL = 1e-9
"""A permuted gain within this of the observed one counts as a tie (rounding must not decide)."""
TAME_CLIP = 3.0
"""Placement: a run's deviation from its local level is clipped at this many noise sd."""
_TAME_SIDE = 3
"""Placement: a run's local level is the median of this many runs on one side of it."""
TAME_TEST_MAX = 500
"""Test: windows of up to this many runs are tamed in every ordering (past it a disturbed
run weighs little in its window, and taming every permutation costs more than it gains)."""
TEST_CLIP = 3.0
"""Test: a window's values are winsorised at its median +- this many robust sd."""
END_WEIGHT = 0.5
"""Test: a split's gain is weighted by ``(len / k)`` to this power at an end of the series
(``(len / (len - k))`` at the newest end)."""
INNER_WEIGHT = 0.25
"""Test: the same power at a window's end that is another change."""
SEGMENT_SHARE = 4.0
"""Whole-series test: the segment statistic's p-value counts this many times the split
statistic's (it takes about ``alpha / (1 + SEGMENT_SHARE)``)."""
SEGMENT_GRID = 50
"""Whole-series test: segments begin and end on at most this many evenly spaced points."""
AUTOCORRELATION_Z = 1.645
"""Runs look autocorrelated when their lag-1 autocorrelation around the levels found is this
many standard errors above independent runs' (one-sided 5 %)."""
AUTOCORRELATED = (
    "the series' runs look autocorrelated (their lag-1 autocorrelation around the levels "
    "found is significantly above 0): a change may be a slow drift rather than a step, and "
    "its p-value assumes independent runs"
)
"""What ``history changes`` and the fleet page say of a change whose runs look autocorrelated."""
EXACT_WEIGHT = 0.1
"""Placement: the cost of a change placed one run off, against 1 for more than one run off."""
_MAD_SD = 1.4826
"""Median absolute deviation to standard deviation, for normal noise."""


@dataclass(frozen=True)
class ChangePoint:
    """One change of level in a series."""

    index: int
    """First index of the new level."""
    before: float
    """Median of the segment before the change (from the previous change or the start)."""
    after: float
    """Median of the segment from the change to the next change (or the end)."""
    rel_change: float
    """``(after - before) / |before|``; infinite when ``before`` is 0."""
    p_value: float
    """Permutation p-value of the change's window (below ``alpha``)."""
    autocorrelation: float = 0.0
    """Lag-1 autocorrelation of the series' runs around the levels found (the same on every
    change of a series)."""
    autocorrelated: bool = False
    """``autocorrelation`` is significantly above that of independent runs: the runs drift,
    and a change may be a drift rather than a step."""


def find_changes(
    values: Sequence[float],
    *,
    min_size: int = 3,
    alpha: float = 0.05,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    log_scale: bool | None = None,
) -> list[ChangePoint]:
    """The significant changes of level in ``values`` (oldest first), ordered by index.

    ``min_size``: the fewest runs of a level (no change closer than this to either end or
    to another change). ``alpha``: the significance level of each change. ``log_scale``:
    segment the logarithms (the default when every value is positive) or the values.
    """
    xs = _validated(values, min_size, alpha, permutations, log_scale)
    n = len(xs)
    if n < 2 * min_size:
        return []

    import numpy as np

    x = np.asarray(xs, dtype=np.float64)
    use_log = all(v > 0 for v in xs) if log_scale is None else log_scale
    y = np.log(x / np.median(x)) if use_log else x - np.median(x)
    sigma = _noise_level(y)
    if sigma == 0.0:
        return []
    # Standardised and rounded, so that rescaling the input (its last bits) cannot flip a tie.
    z = np.round((y - np.median(y)) / sigma, 9)
    tamed = _tamed(z)
    candidates = _candidates(tamed, min_size)
    kept = _significant(z, tamed, candidates, min_size, alpha, permutations, seed)
    if not kept:
        return []
    bounds = [0, *(c for c, _ in kept), n]
    autocorrelation, autocorrelated = _autocorrelation(tamed, bounds)
    out = []
    for i, (index, p) in enumerate(kept):
        before = float(np.median(x[bounds[i] : index]))
        after = float(np.median(x[index : bounds[i + 2]]))
        if before != 0.0:
            rel = (after - before) / abs(before)
        else:
            rel = math.copysign(math.inf, after - before)
        out.append(ChangePoint(index, before, after, rel, p, autocorrelation, autocorrelated))
    return out


def _validated(
    values: Sequence[float],
    min_size: int,
    alpha: float,
    permutations: int,
    log_scale: bool | None,
) -> list[float]:
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 1:
        raise InvalidValue(f"min_size {min_size!r}: expected a whole number of runs >= 1")
    if not 0.0 < alpha < 1.0:
        raise InvalidValue(f"alpha {alpha!r}: expected a significance level between 0 and 1")
    if permutations < 1:
        raise InvalidValue(f"permutations {permutations!r}: expected at least 1")
    xs = []
    for i, v in enumerate(values):
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise InvalidValue(f"series value {v!r} at run {i}: expected a number") from None
        if not math.isfinite(f):
            raise InvalidValue(
                f"series value {v!r} at run {i}: change points need finite numbers "
                "(no NaN or infinity)"
            )
        xs.append(f)
    if log_scale and any(v <= 0 for v in xs):
        raise InvalidValue("log_scale: every value must be positive to take logarithms")
    return xs


def _noise_level(y: FloatArray) -> float:
    """The noise's standard deviation, from differences of neighbours (a few steps barely
    move it). Not a robust scale: runs far off (a disturbed run) are noise to the L2 cost
    too, and a median-based scale of heavy-tailed noise makes the penalty too small."""
    import numpy as np

    d = np.diff(y)
    return float(math.sqrt(float(np.mean(d * d)) / 2.0))


def _tamed(z: FloatArray) -> FloatArray:
    """``z`` with runs far off their local level pulled in (:func:`_tamed_rows`), rescaled
    to unit noise: for placing changes and for candidates, so that a disturbed run (heavy-
    tailed noise) no longer drags a change towards it or makes one of its own."""
    tamed = _tamed_rows(z.reshape(1, -1))[0]
    noise = _noise_level(tamed)
    return tamed / noise if noise > 0.0 else z


def _tamed_rows(rows: FloatArray) -> FloatArray:
    """Each row with its runs far off their local level pulled in to ``TAME_CLIP`` robust sd
    (from the differences of neighbours) of it. The local level is the running median of 5
    runs; a run within the limit of the median of the 3 runs before it or of the 3 after it
    is kept as it is (a run beside a step, even with a disturbed run next to it, is on that
    side's level). Normal noise is left almost as it is."""
    import numpy as np

    count, n = rows.shape
    if n < 2 * _TAME_SIDE + 1:
        return rows
    d = np.diff(rows, axis=1)
    spread = np.abs(d - np.median(d, axis=1, keepdims=True))
    limit = TAME_CLIP * _MAD_SD / math.sqrt(2.0) * np.median(spread, axis=1, keepdims=True)
    local = np.empty((count, n))
    local[:, 2:-2] = _median5(*(rows[:, i : n - 4 + i] for i in range(5)))
    local[:, 0] = _median3(rows[:, 0], rows[:, 1], rows[:, 2])
    local[:, -1] = _median3(rows[:, -1], rows[:, -2], rows[:, -3])
    local[:, 1] = np.median(rows[:, :4], axis=1)
    local[:, -2] = np.median(rows[:, -4:], axis=1)
    sides = _median3(rows[:, :-2], rows[:, 1:-1], rows[:, 2:])  # sides[:, j]: runs j, j+1, j+2
    before = np.full((count, n), np.inf)
    before[:, _TAME_SIDE:] = sides[:, : n - _TAME_SIDE]
    after = np.full((count, n), np.inf)
    after[:, : n - _TAME_SIDE] = sides[:, 1:]
    keep = (np.abs(rows - before) <= limit) | (np.abs(rows - after) <= limit) | (limit == 0.0)
    tamed: FloatArray = np.where(keep, rows, local + np.clip(rows - local, -limit, limit))
    return tamed


def _median3(a: FloatArray, b: FloatArray, c: FloatArray) -> FloatArray:
    """The elementwise median of three arrays (a sorting network: no sort per element)."""
    import numpy as np

    low: FloatArray = np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))
    return low


def _median5(
    a: FloatArray, b: FloatArray, c: FloatArray, d: FloatArray, e: FloatArray
) -> FloatArray:
    """The elementwise median of five arrays (the median of e and of the middle two of the
    pairs' minima and maxima)."""
    import numpy as np

    middle_low = np.maximum(np.minimum(a, b), np.minimum(c, d))
    middle_high = np.minimum(np.maximum(a, b), np.maximum(c, d))
    return _median3(e, middle_low, middle_high)


def _candidates(tamed: FloatArray, min_size: int) -> list[int]:
    """PELT's changes of the tamed series (unit noise) under BIC's penalty, placed exactly
    when thinned."""
    import numpy as np
    import ruptures as rpt  # type: ignore[import-untyped]

    n = len(tamed)
    block = max(1, math.ceil(n / FULL_GRID_MAX))
    pen = 2.0 * math.log(n)
    if block == 1:
        means, min_blocks = tamed, min_size
    else:
        # ruptures' C PELT takes every run as a candidate (O(n^2)); on means of `block` runs
        # the L2 cost is the cost of the runs' segmentation on block edges divided by `block`
        # (plus a constant), so PELT there with pen / block is PELT on a thinned grid.
        starts = np.arange(0, n, block)
        means = np.add.reduceat(tamed, starts) / np.diff(np.append(starts, n))
        pen, min_blocks = pen / block, max(1, math.ceil(min_size / block))
    if len(means) < 2 * min_blocks:
        return []
    algo = rpt.KernelCPD(kernel="linear", min_size=min_blocks)
    found = [int(b) * block for b in algo.fit(means.reshape(-1, 1)).predict(pen=pen)][:-1]
    if block == 1:
        return found
    placed: list[int] = []
    bounds = [0, *found, n]
    for i, c in enumerate(found):
        a, b = (placed[-1] if placed else bounds[i]), bounds[i + 2]
        lo, hi = max(a + min_size, c - block + 1), min(b - min_size, c + block - 1)
        if lo > hi:
            continue
        placed.append(a + _place(tamed[a:b], min_size, lo - a, hi - a))
    return placed


def _significant(
    z: FloatArray,
    tamed: FloatArray,
    candidates: list[int],
    min_size: int,
    alpha: float,
    permutations: int,
    seed: int,
) -> list[tuple[int, float]]:
    """The candidates whose window tests significant, each with its p-value (tested on
    ``z``, placed on ``tamed``)."""
    n = len(z)
    # The whole series first: with no change at all, a change is reported at most at rate
    # alpha (the windows between candidates are chosen by the data, so alone they are not).
    if _permutation_p(z, min_size, alpha, permutations, seed, 0, n, segments=True) >= alpha:
        return []
    # The series has a change: with no candidate under the penalty (a step with few runs on
    # one side), the whole series' best placement is the one.
    kept = list(candidates) or _best_placement(tamed, min_size)
    cache: dict[tuple[int, int], float] = {}
    while kept:
        # A change placed beside one since dropped is placed again in its wider window.
        for i in range(len(kept)):
            a = kept[i - 1] if i else 0
            b = kept[i + 1] if i + 1 < len(kept) else n
            kept[i] = a + _place(tamed[a:b], min_size)
        bounds = [0, *kept, n]
        ps = []
        for i in range(len(kept)):
            a, b = bounds[i], bounds[i + 2]
            if (a, b) not in cache:
                cache[(a, b)] = _permutation_p(z[a:b], min_size, alpha, permutations, seed, a, n)
            ps.append(cache[(a, b)])
        worst = max(range(len(kept)), key=lambda i: ps[i])
        if ps[worst] < alpha:
            return list(zip(kept, ps, strict=True))
        del kept[worst]
    return []


def _best_placement(tamed: FloatArray, min_size: int) -> list[int]:
    """The series' best split, or its best segment's two ends when that segment gains more
    than the split by BIC's penalty for one more change (``tamed`` has unit noise)."""
    import numpy as np

    n = len(tamed)
    single = _place(tamed, min_size)
    segments = _segments(n, min_size)
    if segments is None:
        return [single]
    centred = tamed - tamed.mean()
    at = np.cumsum(centred)[segments.points - 1]
    gain, start, end = max(
        (factor * float(d[i]) ** 2, int(segments.points[i]), int(segments.points[i + j]))
        for j, factor in segments.factors
        for d in [at[j:] - at[:-j]]
        for i in [int(np.abs(d).argmax())]
    )
    split = float(_gains(centred.reshape(1, -1), min_size)[0].max())
    return [start, end] if gain > split + 2.0 * math.log(n) else [single]


def _place(w: FloatArray, min_size: int, lo: int | None = None, hi: int | None = None) -> int:
    """The split of the window (first index of the right part; from ``lo`` to ``hi`` when
    given) of least expected cost, ``w`` having unit noise: 1 for a change more than one
    run off, ``EXACT_WEIGHT`` for one run off. Under flat priors on the split and on both
    levels a split's posterior is proportional to ``exp(gain / 2) / sqrt(k (len - k))``."""
    import numpy as np

    length = len(w)
    gains = _gains((w - w.mean()).reshape(1, -1), min_size)[0]
    k = np.arange(min_size, length - min_size + 1)
    log_post = gains / 2.0 - 0.5 * np.log(k * (length - k))
    post = np.exp(log_post - log_post.max())
    mass = post * (1.0 + EXACT_WEIGHT)
    mass[1:] += post[:-1]
    mass[:-1] += post[1:]
    first = 0 if lo is None else lo - min_size
    last = len(mass) if hi is None else hi - min_size + 1
    return min_size + first + int(mass[first:last].argmax())


def _gains(rows: FloatArray, min_size: int) -> FloatArray:
    """Each centred row's L2 gain of splitting at every allowed index (min_size .. len -
    min_size): ``len * S_k^2 / (k (len - k))``, S_k the sum of the first k values."""
    import numpy as np

    return _gains_of_sums(np.cumsum(rows, axis=1), min_size)


def _gains_of_sums(sums: FloatArray, min_size: int) -> FloatArray:
    """:func:`_gains` from the rows' running sums (overwritten)."""
    import numpy as np

    length = sums.shape[1]
    k = np.arange(min_size, length - min_size + 1)
    s = sums[:, min_size - 1 : length - min_size]
    np.square(s, out=s)
    s *= length / (k * (length - k))
    return s


def _permutation_p(
    w: FloatArray,
    min_size: int,
    alpha: float,
    permutations: int,
    seed: int,
    start: int,
    n: int,
    *,
    segments: bool = False,
) -> float:
    """P-value of the window ``w`` (runs ``start`` .. of a series of ``n``) by its largest
    weighted split gain among its permutations (Monte Carlo); with ``segments``, by that
    and its largest segment gain together (min-p)."""
    import numpy as np

    at_start, at_end = start == 0, start + len(w) == n
    tame = len(w) <= TAME_TEST_MAX
    if len(w) > FULL_GRID_MAX:
        # Means of equal blocks of runs are exchangeable too when the runs are: the test on
        # them is exact, and its cost no longer grows with the history (a remainder of fewer
        # than `block` runs at the end is left out).
        block = math.ceil(len(w) / FULL_GRID_MAX)
        w = w[: len(w) // block * block].reshape(-1, block).mean(axis=1)
        min_size = max(1, math.ceil(min_size / block))
    # With distinct values no two orderings' statistics tie (in practice).
    distinct = len(np.unique(w)) == len(w)
    # Winsorised: a run far off (heavy-tailed noise) weighs no more than a high run; the
    # limits depend on the values alone, not on their order, so every permutation sees the
    # same values. Then tamed in each ordering, the observed one and every permuted one
    # (a function of the ordering: the test stays exact): a run far off its neighbours is
    # pulled in to their level, which the limits of the whole window cannot do.
    middle = float(np.median(w))
    spread = _MAD_SD * float(np.median(np.abs(w - middle)))
    if spread > 0.0:
        w = np.clip(w, middle - TEST_CLIP * spread, middle + TEST_CLIP * spread)
    length = len(w)
    k = np.arange(min_size, length - min_size + 1)
    weights = (length / k) ** (END_WEIGHT if at_start else INNER_WEIGHT) * (
        length / (length - k)
    ) ** (END_WEIGHT if at_end else INNER_WEIGHT)
    scanned = _segments(length, min_size) if segments else None

    def statistics(rows: FloatArray) -> list[FloatArray]:
        if tame:
            rows = _tamed_rows(rows)
        rows = rows - rows.mean(axis=1, keepdims=True)
        sums = np.cumsum(rows, axis=1)
        segment = None if scanned is None else _segment_gains(sums, scanned)
        split = (_gains_of_sums(sums, min_size) * weights).max(axis=1)
        return [split] if segment is None else [split, segment]

    observed = statistics(w.reshape(1, -1))
    seen = [observed]
    # A permuted statistic within _TIE_RTOL of the observed one counts as a tie.
    limits = [float(t[0]) * (1.0 - _TIE_RTOL) for t in observed]
    higher = [0] * len(observed)
    per_row = length * (6 if tame else 1)  # floats: a permuted row, the medians of taming
    rng = np.random.default_rng([seed, start, len(w)])
    done = 0
    chunk = min(_FIRST_CHUNK, permutations)
    while done < permutations:
        rows = rng.permuted(np.tile(w, (chunk, 1)), axis=1)
        stats = statistics(rows)
        seen.append(stats)
        higher = [
            h + int((t >= lim).sum()) for h, t, lim in zip(higher, stats, limits, strict=True)
        ]
        done += chunk
        # Not significant whatever the remaining permutations say: at least `least` of the
        # B + 1 orderings will be as extreme (see _min_p).
        least = _least_as_extreme(higher, distinct)
        if least / (permutations + 1) >= alpha:
            return least / (done + 1)
        chunk = min(permutations - done, max(1, _CHUNK_FLOATS // per_row))
    if scanned is None:
        return (1 + higher[0]) / (permutations + 1)
    return _min_p([np.concatenate([s[i] for s in seen]) for i in (0, 1)])


@dataclass(frozen=True)
class _Segments:
    """The segments ``[points[i], points[i + j])`` of a window that the whole-series test
    scans: each with ``min_size`` runs at least before, in and after it."""

    points: IntArray
    """Where segments begin and end: every run, or evenly spaced runs (``SEGMENT_GRID``)."""
    factors: list[tuple[int, float]]
    """Per ``j``, the factor of a segment's centred sum squared that makes its L2 gain
    against the rest of the window: ``len / (m (len - m))``, m its runs."""


def _segments(length: int, min_size: int) -> _Segments | None:
    """The segments of a window of ``length`` runs; None when it has too few runs."""
    import numpy as np

    step = math.ceil(length / SEGMENT_GRID)
    points = np.arange(step * math.ceil(min_size / step), length - min_size + 1, step)
    runs = [(j, j * step) for j in range(1, len(points))]
    factors = [(j, length / (m * (length - m))) for j, m in runs if m >= min_size]
    return _Segments(points, factors) if factors else None


def _segment_gains(sums: FloatArray, segments: _Segments) -> FloatArray:
    """Each centred row's largest segment gain, from its running sums (a few slices per
    length of segment, no gather of every pair)."""
    import numpy as np

    at = sums[:, segments.points - 1]  # the sums before each point
    best = np.zeros(sums.shape[0])
    for j, factor in segments.factors:
        d = at[:, j:] - at[:, :-j]
        largest = np.maximum(d.max(axis=1), -d.min(axis=1))
        np.maximum(best, factor * largest * largest, out=best)
    return best


def _least_as_extreme(higher: list[int], distinct: bool) -> int:
    """How many of the B + 1 orderings will at least count as extreme as the observed one,
    ``higher`` permuted ones having a statistic above it so far (each statistic). One
    statistic: those and itself. Two (min-p, :func:`_min_p`): if the observed least p-value
    is the splits', every ordering with a split statistic as high counts; if it is the
    segments', every ordering whose split p-value is below it counts, and with distinct
    values (no ties: the split p-values are the multiples of 1 / (B + 1)) those are
    ``SEGMENT_SHARE`` times the orderings with a segment statistic as high."""
    if len(higher) == 1:
        return 1 + higher[0]
    splits, segments = 1 + higher[0], 1 + higher[1]
    return min(splits, math.floor(SEGMENT_SHARE * segments) if distinct else segments)


def _min_p(statistics: list[FloatArray]) -> float:
    """The min-p combination of statistics over the observed ordering (first) and its
    permutations: each ordering's p-values among all of them, the segments' scaled by
    ``SEGMENT_SHARE``, their least; the observed least's rank."""
    import numpy as np

    total = len(statistics[0])
    ps = [(t[None, :] >= t[:, None] * (1.0 - _TIE_RTOL)).sum(axis=1) / total for t in statistics]
    least = np.minimum(ps[0], SEGMENT_SHARE * ps[1])
    return float((least <= least[0] * (1.0 + _TIE_RTOL)).sum() / total)


def _autocorrelation(tamed: FloatArray, bounds: list[int]) -> tuple[float, bool]:
    """The lag-1 autocorrelation of the runs around the mean of each of their segments
    (``bounds``), and whether it is above independent runs' by ``AUTOCORRELATION_Z``
    standard errors. For independent runs around its mean, a segment of ``m`` runs has lag-1
    products summing to ``-(m - 1) / m`` variances on average and squares to ``m - 1`` (the
    bias of residuals' autocorrelation); the standard error is about ``1 / sqrt(pairs)``."""
    import numpy as np

    products = squares = expected = 0.0
    pairs = 0
    for a, b in itertools.pairwise(bounds):
        e = tamed[a:b] - tamed[a:b].mean()
        products += float(np.dot(e[:-1], e[1:]))
        squares += float(np.dot(e, e))
        expected -= (b - a - 1) / (b - a)
        pairs += b - a - 1
    if squares == 0.0 or pairs < 2:
        return 0.0, False
    r = products / squares
    independent = expected / pairs
    return r, (r - independent) * math.sqrt(pairs) > AUTOCORRELATION_Z
