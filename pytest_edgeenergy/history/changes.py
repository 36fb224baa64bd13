"""Change points in one series of a metric over runs (``edgeenergy history changes``).

Two steps, each from published, maintained work:

1. **Candidates**: the optimal segmentation of the series under a penalty, PELT (Killick,
   Fearnhead & Eckley 2012) with ruptures' ``KernelCPD`` and its linear kernel, which is the
   L2 cost of a change in mean computed by ruptures' C code (C. Truong, L. Oudre, N. Vayatis,
   "Selective review of offline change point detection methods", Signal Processing 167, 2020;
   https://centre-borelli.github.io/ruptures-docs/). Energy is relative and log-normal-ish,
   so positive series are segmented on their logarithms (a +8 % step is the same step at
   any level); the penalty is BIC's ``2 sigma^2 ln n``, sigma the noise level estimated
   from the differences of neighbouring runs (a few steps barely move it). Past 2,000 runs
   PELT segments the means of blocks of runs (ruptures' C code is quadratic in the number
   of points) and each change is then placed exactly among the runs of its blocks.
2. **Significance**: a candidate is kept only if a permutation test of its window (the runs
   between its neighbouring candidates) finds the window's largest split statistic
   significant at ``alpha``: the max-statistic permutation test of E-divisive means
   (Matteson & James 2014) as MongoDB's signal-processing-algorithms and Apache Otava use
   it. Here the window's values are first winsorised at its median +- 3 robust standard
   deviations (so that a run far off weighs like any other high run; a function of the
   values alone, so the permutation test stays exact), and each split's gain is weighted
   by ``(len / (k (len - k)))^0.5``: a weighted CUSUM heavier at the ends than the
   standardised one (Csorgo & Horvath 1997; Horvath, Miller & Rice 2020 on Renyi-type
   statistics), which gains power for a step with few runs on one side (the newest runs
   of a history) and costs none that matters in the middle. The whole series is tested
   first (nothing is reported unless it is significant: a stationary series reports a
   change at most at rate ``alpha``; if it is and the penalty left no candidate, the
   series' best placement is the candidate), then each candidate; the least significant is
   dropped first, its neighbours placed again in their wider windows and tested again.
   Permutations are seeded by the window, so the result is deterministic and does not
   depend on the order of the tests.

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

The false-positive rate and detection rate are measured in
``benchmarks/bench_history_changes.py``. numpy and ruptures are imported inside the
functions (only the CLI reaches this module).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InvalidValue

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

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
TEST_CLIP = 3.0
"""Test: a window's values are winsorised at its median +- this many robust sd."""
END_WEIGHT = 0.5
"""Test: a split's gain is weighted by ``(len / (k (len - k)))`` to this power."""
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
    candidates = _candidates(z, tamed, min_size)
    kept = _significant(z, tamed, candidates, min_size, alpha, permutations, seed)
    bounds = [0, *(c for c, _ in kept), n]
    out = []
    for i, (index, p) in enumerate(kept):
        before = float(np.median(x[bounds[i] : index]))
        after = float(np.median(x[index : bounds[i + 2]]))
        if before != 0.0:
            rel = (after - before) / abs(before)
        else:
            rel = math.copysign(math.inf, after - before)
        out.append(ChangePoint(index, before, after, rel, p))
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
    """``z`` with runs far off their local level pulled in to ``TAME_CLIP`` robust sd of it,
    rescaled to unit noise: for placing changes only, so that a disturbed run (heavy-tailed
    noise) no longer drags a change towards it. The local level is the running median of 5
    runs; a run within the limit of the median of the 3 runs before it or of the 3 after it
    is kept as it is (a run beside a step, even with a disturbed run next to it, is on that
    side's level). Normal noise is left almost as it is."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    n = len(z)
    if n < 2 * _TAME_SIDE + 1:
        return z
    d = np.diff(z)
    scale = _MAD_SD * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
    if scale == 0.0:
        return z
    limit = TAME_CLIP * scale
    local = np.empty(n)
    local[2:-2] = np.median(sliding_window_view(z, 5), axis=1)
    local[:2] = [np.median(z[:3]), np.median(z[:4])]
    local[-2:] = [np.median(z[-4:]), np.median(z[-3:])]
    sides = np.median(sliding_window_view(z, _TAME_SIDE), axis=1)  # sides[j]: runs j, j+1, ..
    before = np.full(n, np.inf)
    before[_TAME_SIDE:] = sides[: n - _TAME_SIDE]
    after = np.full(n, np.inf)
    after[: n - _TAME_SIDE] = sides[1:]
    keep = (np.abs(z - before) <= limit) | (np.abs(z - after) <= limit)
    tamed = np.where(keep, z, local + np.clip(z - local, -limit, limit))
    noise = _noise_level(tamed)
    return tamed / noise if noise > 0.0 else z


def _candidates(z: FloatArray, tamed: FloatArray, min_size: int) -> list[int]:
    """PELT's changes under BIC's penalty (z has unit noise), placed exactly when thinned
    (on the tamed series)."""
    import numpy as np
    import ruptures as rpt  # type: ignore[import-untyped]

    n = len(z)
    block = max(1, math.ceil(n / FULL_GRID_MAX))
    pen = 2.0 * math.log(n)
    if block == 1:
        means, min_blocks = z, min_size
    else:
        # ruptures' C PELT takes every run as a candidate (O(n^2)); on means of `block` runs
        # the L2 cost is the cost of the runs' segmentation on block edges divided by `block`
        # (plus a constant), so PELT there with pen / block is PELT on a thinned grid.
        starts = np.arange(0, n, block)
        means = np.add.reduceat(z, starts) / np.diff(np.append(starts, n))
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
    cache = {(0, n): _permutation_p(z, min_size, alpha, permutations, seed, 0)}
    if cache[(0, n)] >= alpha:
        return []
    # The series has a change: with no candidate under the penalty (a step with few runs on
    # one side), the whole series' best placement is the one.
    kept = list(candidates) or [_place(tamed, min_size)]
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
                cache[(a, b)] = _permutation_p(z[a:b], min_size, alpha, permutations, seed, a)
            ps.append(cache[(a, b)])
        worst = max(range(len(kept)), key=lambda i: ps[i])
        if ps[worst] < alpha:
            return list(zip(kept, ps, strict=True))
        del kept[worst]
    return []


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

    length = rows.shape[1]
    k = np.arange(min_size, length - min_size + 1)
    s = np.cumsum(rows, axis=1)[:, min_size - 1 : length - min_size]
    np.square(s, out=s)
    s *= length / (k * (length - k))
    return s


def _permutation_p(
    w: FloatArray, min_size: int, alpha: float, permutations: int, seed: int, start: int
) -> float:
    """P-value of the window's largest weighted split gain among its permutations (Monte
    Carlo)."""
    import numpy as np

    if len(w) > FULL_GRID_MAX:
        # Means of equal blocks of runs are exchangeable too when the runs are: the test on
        # them is exact, and its cost no longer grows with the history (a remainder of fewer
        # than `block` runs at the end is left out).
        block = math.ceil(len(w) / FULL_GRID_MAX)
        w = w[: len(w) // block * block].reshape(-1, block).mean(axis=1)
        min_size = max(1, math.ceil(min_size / block))
    # Winsorised: a run far off (heavy-tailed noise) weighs no more than a high run, so it
    # neither hides a step nor makes one; the limits depend on the values alone, not on
    # their order, so every permutation sees the same values and the test stays exact.
    middle = float(np.median(w))
    spread = _MAD_SD * float(np.median(np.abs(w - middle)))
    if spread > 0.0:
        w = np.clip(w, middle - TEST_CLIP * spread, middle + TEST_CLIP * spread)
    w = w - w.mean()
    length = len(w)
    k = np.arange(min_size, length - min_size + 1)
    weights = (length / (k * (length - k))) ** END_WEIGHT
    observed = float((_gains(w.reshape(1, -1), min_size)[0] * weights).max())
    threshold = observed * (1.0 - _TIE_RTOL)
    rng = np.random.default_rng([seed, start, len(w)])
    count = done = 0
    chunk = min(_FIRST_CHUNK, permutations)
    while done < permutations:
        rows = rng.permuted(np.tile(w, (chunk, 1)), axis=1)
        gains = _gains(rows, min_size)
        gains *= weights
        count += int((gains.max(axis=1) >= threshold).sum())
        done += chunk
        if (1 + count) / (permutations + 1) >= alpha:
            # Not significant whatever the remaining permutations say.
            return (1 + count) / (done + 1)
        chunk = min(permutations - done, max(1, _CHUNK_FLOATS // len(w)))
    return (1 + count) / (permutations + 1)
