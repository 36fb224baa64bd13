"""The gate's significance tests, on plain lists (scipy imported when first needed).

* :func:`mann_whitney_p`: the repeats of one test in two runs.
* :func:`between_runs_p`: one test's new value against its value in several baseline runs,
  on the log scale, against their run-to-run spread (at least the group's typical one).
* :func:`suite_p`: the per-test log-ratios of one group (device x operating point x
  expression), for changes that each test's repeats are too few to show.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pytest_edgeenergy.extras import require


def _need_scipy() -> None:
    require("scipy", "analysis", "the gate's significance tests")


def mann_whitney_p(new: Sequence[float], base: Sequence[float], greater: bool) -> float:
    """One-sided Mann-Whitney U: ``new`` tends to be greater (or less) than ``base``."""
    _need_scipy()
    from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

    alternative = "greater" if greater else "less"
    return float(mannwhitneyu(list(new), list(base), alternative=alternative).pvalue)


def min_attainable_p(n1: int, n2: int) -> float:
    """The smallest one-sided Mann-Whitney p of ``n1`` against ``n2`` untied samples."""
    return 1.0 / math.comb(n1 + n2, n1)


def typical_spread(runs_logs: Sequence[Sequence[float]]) -> float:
    """The median over tests of their run-to-run standard deviation, each test given by its
    log values in the baseline runs (two or more each): the spread a test of the group
    shows, robust to a few wild ones."""
    return statistics.median(statistics.stdev(logs) for logs in runs_logs)


def t_p(change: float, scale: float, df: int, greater: bool) -> float:
    """One-sided p that a log ``change`` is above (or below) zero, against Student-t noise of
    ``scale`` with ``df`` degrees of freedom; any change in that direction is significant
    over zero noise."""
    signed = change if greater else -change
    if scale <= 0:
        return 0.0 if signed > 0 else 1.0
    _need_scipy()
    from scipy.stats import t

    return float(t.sf(signed / scale, df))


def run_spread(runs_logs: Sequence[float], typical: float) -> float:
    """A test's run-to-run standard deviation of log values: its own, or the group's
    ``typical`` one (:func:`typical_spread`) when larger, so that a test whose few runs
    happened to agree is not judged by a spread narrower than its neighbours'."""
    return max(statistics.stdev(runs_logs), typical)


def between_runs_p(
    new_log: float, runs_logs: Sequence[float], typical: float, greater: bool
) -> float:
    """p of ``new_log`` being no draw like the baseline runs' ``runs_logs``, above (or below)
    them: a prediction interval (the new run is one more run) with the spread of
    :func:`run_spread` and one degree of freedom fewer than runs. Not more: host noise moves
    every test of a run together, so other tests add no independent evidence."""
    m = len(runs_logs)
    change = new_log - statistics.fmean(runs_logs)
    scale = run_spread(runs_logs, typical) * math.sqrt(1.0 + 1.0 / m)
    return t_p(change, scale, m - 1, greater)


def min_suite_tests(alpha: float) -> int:
    """Fewest tests for which a one-sided signed-rank p below ``alpha`` is possible."""
    return max(1, math.ceil(math.log2(1.0 / alpha) + 1e-12))


def suite_p(log_ratios: Sequence[float], greater: bool) -> float:
    """One-sided Wilcoxon signed-rank p that the per-test log-ratios sit above (or below)
    zero."""
    _need_scipy()
    from scipy.stats import wilcoxon

    alternative = "greater" if greater else "less"
    return float(wilcoxon(list(log_ratios), alternative=alternative).pvalue)


def suite_between_runs_p(suite_change: float, run_offsets: Sequence[float], greater: bool) -> float:
    """p of a suite's mean log change against the baseline runs' own offsets from their mean
    (one value per run: its tests' mean log deviation); 1.0 with fewer than two runs."""
    if len(run_offsets) < 2:
        return 1.0
    sd = statistics.stdev(run_offsets)
    m = len(run_offsets)
    change = suite_change - statistics.fmean(run_offsets)
    return t_p(change, sd * math.sqrt(1.0 + 1.0 / m), m - 1, greater)
