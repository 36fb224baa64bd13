"""The verdict of interleaved A/B rounds (``edgeenergy ab``): paired per round, decided
sequentially.

Round i holds a report of A (the base) and one of B (the head), measured back to back on
one board. For each test x expression (``metric:statistic:threshold``, as the gate reads
them) each side's statistic over that round's repeats gives a per-round log-ratio
``d_i = log(B_i / A_i)``; host noise that moves both sides of a round together cancels.

**Test.** A one-sample t-test on the ``d_i`` (paired t on the log-ratios), from 5 rounds
on trimmed by a fifth (rounded down) at each end: Yuen's trimmed-mean t (Tukey and
McLaughlin 1963; Yuen 1974), so that one round where a background load hit only one side
does not swamp the rest. Why not the alternatives the issue names: a one-sided signed-rank
(or sign-flip) test cannot go below p = 1/2^n, 1/8 at the default 3 rounds, so it could
never decide there; a bootstrap interval of the median undercovers at fewer than 10
rounds. The t-test uses the size of the log-ratios, not only their signs, and under the
null hypothesis (A and B the same code, the side hit by noise a matter of chance) the
``d_i`` are symmetric about 0; for values only symmetric about 0 (not normal, not alike)
the t-test is conservative at the usual levels (Efron 1969). tests/test_paired.py checks
the whole rule by a seeded Monte Carlo.

**Centre.** The change is ``exp(centre) - 1`` with the centre the (trimmed) mean of the
``d_i``; ``baseline`` and ``new`` are the geometric means of A's and B's statistic over the
rounds kept, so ``new / baseline - 1`` is the change shown.

**Decision at each look**, on the log-ratios signed so that positive is worse (lower is
better except for :data:`~pytest_edgeenergy.report.model.HIGHER_IS_BETTER` metrics):

* ``regression``: the centre is over the threshold and it is significantly above 0 at this
  look's level (the gate's "over the threshold and significant"); ``improvement`` mirrored;
* ``within``: the one-sided ``1 - alpha`` upper confidence bound of the change is under the
  threshold (confidently within);
* otherwise undecided: the test needs more rounds (:attr:`PairedVerdict.undecided`), and at
  ``max_rounds`` it is ``insufficient`` (a strict gate fails).

**Rounds until sure: a group-sequential rule, not a peek-until-significant loop.** The looks
are after rounds ``min_rounds .. max_rounds``. The false-alarm rate is held at ``alpha`` by
Lan-DeMets alpha spending (Lan and DeMets 1983) with the Pocock-type spending function
``alpha(t) = alpha * ln(1 + (e - 1) * t)``, ``t = rounds / max_rounds``: the look after n
rounds tests at the increment ``alpha(n) - alpha(n - 1)`` (the first look at
``alpha(min_rounds)``), and the increments sum to ``alpha``, so by Bonferroni's inequality
over the looks the chance of any false regression is at most ``alpha`` whatever the
correlation between looks (conservative). Pocock-type spends much of ``alpha`` at the first
look (0.021 of 0.05 at 3 of 10 rounds), so a clear change is decided in the first rounds;
an O'Brien-Fleming-type function would spend almost nothing there and make every test run
longer. Stopping as ``within`` only ever ends a test without a regression, so it cannot
raise the false-alarm rate; its own error (calling ``within`` a change right at the
threshold) is at most ``alpha`` per look. The looks are replayed from ``min_rounds`` on the
rounds held, so calling this after every round, or once on all of them, gives the same
verdict.

A test takes part in a round only when both reports of the round hold it (extra rounds hold
only the undecided tests); a test missing from a round is judged on the rounds that hold
it. A failed, invalid or skipped result on one side, or a value that is missing or not
positive, makes the test ``insufficient`` (a ratio cannot be formed).

Per operating point and relative expression a ``suite`` row judges the tests together: per
round the mean of their log-ratios, over the first ``min_rounds`` rounds (those that hold
every test), with one test at level ``alpha`` (one look, so no spending).
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any, NamedTuple

from pytest_edgeenergy.report.baselines import (
    BASELINE_RUNS,
    describe,
    find_baselines,
    not_comparable,
    total_definition,
)
from pytest_edgeenergy.report.keys import op_label
from pytest_edgeenergy.report.metric_names import higher_is_better
from pytest_edgeenergy.verdict.expr import (
    ALLOWED_FORMS,
    GateExpr,
    GateExprError,
    parse_expr,
    unit_family,
)
from pytest_edgeenergy.verdict.independent import evaluate
from pytest_edgeenergy.verdict.model import GateRow, GateVerdict, PairedVerdict, Verdict
from pytest_edgeenergy.verdict.view import GateView, expr_metrics, gate_view, require_carried
from pytest_edgeenergy.words import counted

TRIM_FROM_ROUNDS = 5
"""From this many rounds on, the lowest and highest fifth of the log-ratios are trimmed."""

SPENDING = "Pocock-type"

MIN_ROUNDS = 3
"""Rounds before the first look (``edgeenergy ab --rounds``'s default)."""
MAX_ROUNDS = 10
"""Rounds at most (``--max-rounds``'s default): the last look."""


# ---------------------------------------------------------------------------------------
# Student t (exact for whole degrees of freedom: no scipy needed for ab)


def _t_central_mass(x: float, df: int) -> float:
    """P(|T| <= x) for Student t with ``df`` (whole) degrees of freedom, x >= 0
    (Abramowitz and Stegun 26.7.3 and 26.7.4)."""
    theta = math.atan(x / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    if df % 2 == 0:
        term = total = 1.0
        for j in range(1, df // 2):
            term *= c2 * (2 * j - 1) / (2 * j)
            total += term
        return s * total
    if df == 1:
        return 2.0 * theta / math.pi
    term = total = c
    for j in range(1, (df - 1) // 2):
        term *= c2 * (2 * j) / (2 * j + 1)
        total += term
    return 2.0 / math.pi * (theta + s * total)


def t_sf(x: float, df: int) -> float:
    """P(T > x) for Student t with ``df`` >= 1 whole degrees of freedom."""
    if math.isinf(x):
        return 0.0 if x > 0 else 1.0
    tail = max(0.0, 1.0 - _t_central_mass(abs(x), df)) / 2.0
    return tail if x >= 0 else 1.0 - tail


@functools.lru_cache(maxsize=256)
def t_isf(p: float, df: int) -> float:
    """The x with P(T > x) = p, for 0 < p < 0.5 (bisection on :func:`t_sf`)."""
    high = 1.0
    while t_sf(high, df) > p:
        high *= 2.0
    low = 0.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_sf(mid, df) > p:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


# ---------------------------------------------------------------------------------------
# the rule


def spent_alpha(alpha: float, rounds: int, horizon: int) -> float:
    """Alpha spent by the look after ``rounds`` of at most ``horizon`` (Pocock-type)."""
    fraction = min(rounds, horizon) / horizon
    return alpha * math.log1p((math.e - 1.0) * fraction)


def look_alpha(alpha: float, rounds: int, first: int, horizon: int) -> float:
    """The level of the look after ``rounds``: the increment of :func:`spent_alpha` since
    the previous look (the first look, after ``first`` rounds, takes all spent so far)."""
    spent = spent_alpha(alpha, rounds, horizon)
    if rounds <= first:
        return spent
    return spent - spent_alpha(alpha, rounds - 1, horizon)


class Centre(NamedTuple):
    """A (trimmed) mean of log-ratios with its standard error and degrees of freedom;
    ``kept``: the positions of the rounds in the trimmed mean, in round order."""

    centre: float
    se: float
    df: int
    kept: tuple[int, ...]


def trimmed_centre(logs: Sequence[float]) -> Centre:
    """Yuen's trimmed mean (a fifth off each end from :data:`TRIM_FROM_ROUNDS` values on,
    none below) with its winsorized standard error; the plain mean and t below. Needs two
    values or more."""
    n = len(logs)
    g = n // 5 if n >= TRIM_FROM_ROUNDS else 0
    order = sorted(range(n), key=logs.__getitem__)
    kept = tuple(sorted(order[g : n - g]))
    ordered = [logs[i] for i in order]
    winsorized = [ordered[g]] * g + ordered[g : n - g] + [ordered[n - g - 1]] * g
    mean_w = fmean(winsorized)
    var_w = math.fsum((x - mean_w) ** 2 for x in winsorized) / (n - 1)
    h = n - 2 * g
    se = math.sqrt((n - 1) * var_w / (h * (h - 1)))
    return Centre(fmean(ordered[g : n - g]), se, h - 1, kept)


class _Direction(NamedTuple):
    """Log-ratio limits of an expression, on log-ratios signed positive-is-worse: over
    ``worse`` is a regression, under ``-better`` an improvement (both >= 0, may be inf)."""

    sign: float
    worse: float
    better: float


def _direction(expr: GateExpr, base_value: float) -> _Direction:
    relative = expr.threshold if expr.relative else expr.threshold / base_value
    up = math.log1p(relative)
    down = -math.log1p(-relative) if relative < 1 else math.inf
    if higher_is_better(expr.metric):
        return _Direction(-1.0, down, up)
    return _Direction(1.0, up, down)


def p_over(centre: Centre, value: float) -> float:
    """One-sided p that the true centre is above ``value``: small when the centre clearly
    is (with no spread: 0 when it is above, 1 when not)."""
    if centre.se > 0:
        return t_sf((centre.centre - value) / centre.se, centre.df)
    return 0.0 if centre.centre > value else 1.0


def p_under(centre: Centre, value: float) -> float:
    """One-sided p that the true centre is below ``value`` (see :func:`p_over`)."""
    if centre.se > 0:
        return t_sf((value - centre.centre) / centre.se, centre.df)
    return 0.0 if centre.centre < value else 1.0


def _decide(signed: Centre, direction: _Direction, level: float, alpha: float) -> Verdict | None:
    """The decision on log-ratios signed positive-is-worse: regression or improvement at
    ``level``, within when the ``1 - alpha`` upper bound is under the threshold."""
    x = signed.centre
    if x > direction.worse and p_over(signed, 0.0) < level:
        return "regression"
    if x < -direction.better and p_under(signed, 0.0) < level:
        return "improvement"
    if p_under(signed, direction.worse) < alpha:
        return "within"
    return None


def _signed(centre: Centre, direction: _Direction) -> Centre:
    return centre._replace(centre=direction.sign * centre.centre)


def _observed_p(signed: Centre) -> float:
    """The one-sided p in the direction of the observed change."""
    return p_over(signed, 0.0) if signed.centre > 0 else p_under(signed, 0.0)


# ---------------------------------------------------------------------------------------
# verdict


class _Round(NamedTuple):
    """One round as the verdict reads it: its number (from 1) and both sides' views."""

    number: int
    a: GateView
    b: GateView


class _Series(NamedTuple):
    """One test x expression over the rounds that hold it: per round its number and both
    sides' statistic; ``problem``: why it cannot be judged (None: it can)."""

    rounds: list[int]
    a: list[float]
    b: list[float]
    problem: str | None


def _pct(log_ratio: float) -> str:
    if math.isinf(log_ratio):
        return "+inf %" if log_ratio > 0 else "-100 %"
    return f"{math.expm1(log_ratio) * 100.0:+.3g} %"


@dataclass(frozen=True)
class _Settings:
    alpha: float
    min_rounds: int
    horizon: int
    final: bool


class _Outcome(NamedTuple):
    row: GateRow
    rounds: int
    undecided: bool


def _judge_series(test_id: str, expr: GateExpr, series: _Series, settings: _Settings) -> _Outcome:
    """The row of one test x expression: the looks from ``min_rounds`` on, replayed on the
    rounds held, until one decides."""
    head = (test_id, expr.metric, expr.statistic, expr.threshold_text)
    held = len(series.rounds)
    if series.problem is not None:
        note = f"{series.problem}; {counted(held, 'round')} held"
        return _Outcome(GateRow(*head, None, None, None, None, "insufficient", note), held, False)
    logs = [math.log(b / a) for a, b in zip(series.a, series.b, strict=True)]
    if held < settings.min_rounds:
        return _too_few(head, series, settings)
    for n in range(settings.min_rounds, held + 1):
        level = look_alpha(settings.alpha, n, settings.min_rounds, settings.horizon)
        row = _look(head, expr, series, logs[:n], level, settings.alpha)
        if row is not None:
            return _Outcome(row, n, False)
    return _undecided(head, expr, series, logs, settings)


def _too_few(head: tuple[str, str, str, str], series: _Series, settings: _Settings) -> _Outcome:
    held = len(series.rounds)
    if settings.final:
        note = (
            f"only {counted(held, 'round')} held this test, fewer than the "
            f"{settings.min_rounds} needed to judge: could not tell"
        )
        return _Outcome(GateRow(*head, None, None, None, None, "insufficient", note), held, False)
    note = f"{counted(held, 'round')} so far, {settings.min_rounds} needed: needs more rounds"
    return _Outcome(GateRow(*head, None, None, None, None, "insufficient", note), held, True)


class _Look(NamedTuple):
    """What one look computes: the centre of the log-ratios, the geometric means of both
    sides over the rounds kept, and the limits of the change."""

    centre: Centre
    base_value: float
    new_value: float
    direction: _Direction


def _measure(expr: GateExpr, series: _Series, logs: Sequence[float]) -> _Look:
    centre = trimmed_centre(logs)
    kept = centre.kept
    base_value = math.exp(fmean(math.log(series.a[i]) for i in kept))
    new_value = math.exp(fmean(math.log(series.b[i]) for i in kept))
    return _Look(centre, base_value, new_value, _direction(expr, base_value))


def _bounds(centre: Centre, alpha: float) -> tuple[float, float]:
    """The one-sided ``1 - alpha`` lower and upper confidence bounds of the centre."""
    half = t_isf(alpha, centre.df) * centre.se if centre.se > 0 else 0.0
    return centre.centre - half, centre.centre + half


def _look(
    head: tuple[str, str, str, str],
    expr: GateExpr,
    series: _Series,
    logs: Sequence[float],
    level: float,
    alpha: float,
) -> GateRow | None:
    """The row decided at the look after ``len(logs)`` rounds, or None (undecided)."""
    look = _measure(expr, series, logs)
    signed = _signed(look.centre, look.direction)
    verdict = _decide(signed, look.direction, level, alpha)
    if verdict is None:
        return None
    note = _note(look, len(logs), alpha)
    if verdict != "within":
        p_value = _observed_p(signed)
        note += f"; p={p_value:.2g} < {level:.2g} at this look"
        return _row(head, look, p_value, verdict, note)
    if signed.centre < -look.direction.better:
        note += "; an improvement, not shown significant"
    return _row(head, look, None, verdict, note)


def _row(
    head: tuple[str, str, str, str], look: _Look, p_value: float | None, verdict: Verdict, note: str
) -> GateRow:
    change_pct = math.expm1(look.centre.centre) * 100.0
    return GateRow(*head, look.base_value, look.new_value, change_pct, p_value, verdict, note)


def _note(look: _Look, rounds: int, alpha: float) -> str:
    low, high = _bounds(look.centre, alpha)
    trimmed = rounds - len(look.centre.kept)
    note = f"{counted(rounds, 'round')}: change {_pct(low)} to {_pct(high)}"
    note += f" ({(1.0 - alpha) * 100:g} % bounds)"
    if trimmed:
        note += f", {counted(trimmed, 'outlying round')} left out (trimmed mean)"
    return note


def _undecided(
    head: tuple[str, str, str, str],
    expr: GateExpr,
    series: _Series,
    logs: Sequence[float],
    settings: _Settings,
) -> _Outcome:
    held = len(logs)
    look = _measure(expr, series, logs)
    p_value = _observed_p(_signed(look.centre, look.direction))
    inside = f"the {expr.threshold_text} threshold inside"
    if settings.final:
        note = f"undecided after {_note(look, held, settings.alpha)}, {inside}: could not tell"
        return _Outcome(_row(head, look, p_value, "insufficient", note), held, False)
    note = f"undecided after {_note(look, held, settings.alpha)}, {inside}: needs more rounds"
    return _Outcome(_row(head, look, p_value, "insufficient", note), held, True)


# ---------------------------------------------------------------------------------------
# reading the rounds


def _check_unit(expr: GateExpr, unit: str | None) -> None:
    if not expr.relative and unit_family(str(unit)) != expr.family:
        raise GateExprError(
            f"gate expression {expr.text!r}: unit {expr.family} does not match "
            f"{expr.metric} in {unit}\n{ALLOWED_FORMS}"
        )


def _index(view: GateView) -> dict[tuple[str, str], int]:
    # The last of tests sharing an id and operating point is the one compared (as the gate).
    return {key: j for j, key in enumerate(zip(view.ids, view.ops, strict=True))}


def _side_problem(view: GateView, j: int, expr: GateExpr, side: str, number: int) -> str | None:
    """Why side ``side`` of round ``number`` cannot give a value, or None."""
    status = view.statuses[j]
    if status != "passed":
        return f"round {number}: {side} result is {status}"
    column = view.metrics.get(expr.metric)
    if column is None or not column.present[j]:
        return f"round {number}: {side} has no {expr.metric}"
    _check_unit(expr, column.units[j])
    value = column.statistics[expr.statistic][j]
    if value is None:
        return f"round {number}: {side} has no {expr.statistic} of {expr.metric}"
    if not value > 0:
        return f"round {number}: {side} {expr.statistic} is {value:g}, a ratio needs values > 0"
    return None


def _series(
    key: tuple[str, str],
    expr: GateExpr,
    rounds: Sequence[_Round],
    indexes: Sequence[tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]],
    names: tuple[str, str],
) -> _Series:
    """The per-round values of one test x expression (rounds where both sides hold it and
    not both skipped it); after the first problem, rounds are only counted."""
    numbers: list[int] = []
    a_values: list[float] = []
    b_values: list[float] = []
    problem: str | None = None
    for one, (a_index, b_index) in zip(rounds, indexes, strict=True):
        i, j = a_index.get(key), b_index.get(key)
        if i is None or j is None:
            continue
        if one.a.statuses[i] == "skipped" and one.b.statuses[j] == "skipped":
            continue
        numbers.append(one.number)
        if problem is None:
            problem = _side_problem(one.a, i, expr, names[0], one.number)
            problem = problem or _side_problem(one.b, j, expr, names[1], one.number)
        if problem is None:
            a_values.append(_value(one.a, i, expr))
            b_values.append(_value(one.b, j, expr))
    return _Series(numbers, a_values, b_values, problem)


def _value(view: GateView, j: int, expr: GateExpr) -> float:
    value = view.metrics[expr.metric].statistics[expr.statistic][j]
    assert value is not None  # checked by _side_problem
    return value


def _carries(view: GateView, j: int, expr: GateExpr) -> bool:
    column = view.metrics.get(expr.metric)
    return view.statuses[j] != "skipped" and column is not None and column.present[j]


def _exprs_for(
    test_id: str, exprs: Sequence[GateExpr], own: Mapping[str, Sequence[GateExpr]]
) -> list[GateExpr]:
    """The expressions of one test: a test's own replace those on the same metric and
    statistic (as the gate's ``overrides``)."""
    mine = own.get(test_id)
    if not mine:
        return list(exprs)
    replaced = {(e.metric, e.statistic) for e in mine}
    return [e for e in exprs if (e.metric, e.statistic) not in replaced] + list(mine)


def _as_expr(expr: str | GateExpr) -> GateExpr:
    return expr if isinstance(expr, GateExpr) else parse_expr(expr)


def _check_arguments(alpha: float, min_rounds: int, max_rounds: int) -> None:
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"paired verdict: alpha {alpha!r} must be above 0 and below 0.5")
    if min_rounds < 2:
        raise ValueError(
            f"paired verdict: min_rounds {min_rounds!r} must be at least 2 "
            "(a spread needs two rounds)"
        )
    if max_rounds < min_rounds:
        raise ValueError(
            f"paired verdict: max_rounds {max_rounds!r} must be at least min_rounds {min_rounds}"
        )


def _rounds(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    needs: Mapping[str, frozenset[str]],
    names: tuple[str, str],
    messages: list[str],
) -> list[_Round]:
    """The rounds whose two reports can be paired (same device, total defined alike); the
    others are left out with a message."""
    kept: list[_Round] = []
    for number, (a_report, b_report) in enumerate(pairs, start=1):
        a, b = gate_view(a_report, needs), gate_view(b_report, needs)
        if a.device["fingerprint"] != b.device["fingerprint"]:
            messages.append(
                f"round {number} left out: {names[0]} and {names[1]} were measured on "
                "different devices"
            )
            continue
        problem = not_comparable(total_definition(a_report), total_definition(b_report))
        if problem is not None:
            messages.append(f"round {number} left out ({names[1]} against {names[0]}): {problem}")
            continue
        kept.append(_Round(number, a, b))
    return kept


def _require_carried(rounds: Sequence[_Round], exprs: Sequence[GateExpr], head: str) -> None:
    """:class:`GateExprError` for an expression whose metric no result of any B report
    carries (a gate that would compare nothing)."""
    for expr in exprs:
        carried = any(
            True in column.present
            for one in rounds
            if (column := one.b.metrics.get(expr.metric)) is not None
        )
        if carried:
            continue
        for one in rounds:
            require_carried(one.b, [expr], head)


def _keys(rounds: Sequence[_Round]) -> list[tuple[str, str]]:
    """Every (test id, operating point) of the B reports, in order of first appearance."""
    seen: dict[tuple[str, str], None] = {}
    for one in rounds:
        for key in zip(one.b.ids, one.b.ops, strict=True):
            seen.setdefault(key, None)
    return list(seen)


def paired_verdict(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    exprs: Sequence[str | GateExpr],
    *,
    alpha: float = 0.05,
    min_rounds: int = MIN_ROUNDS,
    max_rounds: int = MAX_ROUNDS,
    strict: bool = False,
    base: str = "base",
    head: str = "head",
    overrides: Mapping[str, Sequence[str | GateExpr]] | None = None,
) -> PairedVerdict:
    """Judge B against A over paired rounds (``pairs[i]``: the reports of A and B in round
    i + 1, as :func:`report.load.load_report` returns them); see the module docstring.

    ``overrides`` maps a test id to its own expressions (as the gate's). Safe to call after
    every round: the looks are replayed, so the verdict on the same rounds never changes.
    Raises :class:`GateExprError` for an expression no result of B carries, ValueError for
    bad settings.
    """
    _check_arguments(alpha, min_rounds, max_rounds)
    parsed = [_as_expr(e) for e in exprs]
    own = {tid: [_as_expr(e) for e in es] for tid, es in (overrides or {}).items()}
    verdict = PairedVerdict(
        baseline=base,
        new=head,
        strict=strict,
        suite_note=(
            "suite: the tests of one operating point judged together (per round the mean of "
            "their log-ratios, paired t over the first rounds, one look at alpha)"
        ),
    )
    names = (base, head)
    rounds = _rounds(pairs, expr_metrics(parsed, own), names, verdict.messages)
    if not rounds:
        verdict.device_matched = False
        verdict.messages.append("no A/B round to judge")
        return verdict
    _require_carried(rounds, list(itertools.chain(parsed, *own.values())), head)
    horizon = max(max_rounds, len(pairs))
    settings = _Settings(alpha, min_rounds, horizon, len(pairs) >= max_rounds)
    _judge_all(verdict, rounds, parsed, own, settings, names)
    verdict.suite = _judge_suites(rounds, parsed, own, settings, names)
    verdict.messages.append(_method(len(pairs), settings))
    if verdict.undecided:
        verdict.messages.append(
            f"{counted(len(verdict.undecided), 'test')} undecided after "
            f"{counted(len(pairs), 'round')}: more rounds needed (at most {max_rounds})"
        )
    return verdict


def ab_verdict(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    exprs: Sequence[GateExpr],
    min_rounds: int,
    max_rounds: int,
    strict: bool,
    names: tuple[str, str],
) -> PairedVerdict:
    """The verdict of ``edgeenergy ab`` (live or ``--reports``): :func:`paired_verdict` of
    its rounds, A and B named by ``names``."""
    return paired_verdict(
        pairs,
        exprs,
        min_rounds=min_rounds,
        max_rounds=max_rounds,
        strict=strict,
        base=names[0],
        head=names[1],
    )


def _judge_all(
    verdict: PairedVerdict,
    rounds: Sequence[_Round],
    exprs: Sequence[GateExpr],
    own: Mapping[str, Sequence[GateExpr]],
    settings: _Settings,
    names: tuple[str, str],
) -> None:
    indexes = [(_index(one.a), _index(one.b)) for one in rounds]
    undecided: dict[str, None] = {}
    for key in _keys(rounds):
        test_id = key[0]
        for expr in _exprs_for(test_id, exprs, own) if own else exprs:
            holders = [(one, b.get(key)) for one, (_, b) in zip(rounds, indexes, strict=True)]
            if not any(j is not None and _carries(one.b, j, expr) for one, j in holders):
                continue
            series = _series(key, expr, rounds, indexes, names)
            if not series.rounds:
                verdict.rows.append(_no_baseline(test_id, expr, names[0]))
                verdict.rounds.setdefault(test_id, 0)
                continue
            outcome = _judge_series(test_id, expr, series, settings)
            verdict.rows.append(outcome.row)
            verdict.rounds[test_id] = max(verdict.rounds.get(test_id, 0), outcome.rounds)
            if outcome.undecided:
                undecided.setdefault(test_id, None)
    verdict.undecided = list(undecided)


def _no_baseline(test_id: str, expr: GateExpr, base: str) -> GateRow:
    return GateRow(
        test_id, expr.metric, expr.statistic, expr.threshold_text, None, None, None, None,
        "no-baseline", f"no round holds this test in {base}",
    )  # fmt: skip


def _method(held: int, settings: _Settings) -> str:
    return (
        f"paired rounds ({held} so far): per test the geometric mean of its per-round ratios "
        f"(trimmed from {TRIM_FROM_ROUNDS} rounds on) and a t-test on their logs at each look "
        f"from round {settings.min_rounds} to {settings.horizon}; {SPENDING} alpha spending "
        f"(Lan-DeMets) keeps false alarms under {settings.alpha:g} per test and expression"
    )


# ---------------------------------------------------------------------------------------
# suites


def _judge_suites(
    rounds: Sequence[_Round],
    exprs: Sequence[GateExpr],
    own: Mapping[str, Sequence[GateExpr]],
    settings: _Settings,
    names: tuple[str, str],
) -> list[GateRow]:
    """A row per operating point x relative expression over the first ``min_rounds``
    rounds, when at least two tests have a value in each of them."""
    first = [one for one in rounds if one.number <= settings.min_rounds]
    if len(first) < settings.min_rounds:
        return []
    indexes = [(_index(one.a), _index(one.b)) for one in first]
    groups: dict[tuple[str, str], tuple[GateExpr, list[list[float]]]] = {}
    for key in _keys(first):
        for expr in _exprs_for(key[0], exprs, own) if own else exprs:
            if not expr.relative:
                continue
            series = _series(key, expr, first, indexes, names)
            if series.problem is not None or len(series.rounds) < settings.min_rounds:
                continue
            logs = [math.log(b / a) for a, b in zip(series.a, series.b, strict=True)]
            group = groups.setdefault((key[1], expr.text), (expr, []))
            group[1].append(logs)
    return [
        _suite_row(op, expr, per_test, settings)
        for (op, _), (expr, per_test) in groups.items()
        if len(per_test) >= 2
    ]


def _suite_row(
    op: str, expr: GateExpr, per_test: Sequence[Sequence[float]], settings: _Settings
) -> GateRow:
    per_round = [fmean(column) for column in zip(*per_test, strict=True)]
    centre = trimmed_centre(per_round)
    direction = _direction(expr, 1.0)
    signed = _signed(centre, direction)
    alpha = settings.alpha
    verdict: Verdict = _decide(signed, direction, alpha, alpha) or "insufficient"
    low, high = _bounds(centre, alpha)
    note = (
        f"mean of {counted(len(per_test), 'test')}' log-ratios per round over rounds 1 to "
        f"{len(per_round)}: change {_pct(low)} to {_pct(high)}"
        f" ({(1.0 - alpha) * 100:g} % bounds)"
    )
    if verdict == "insufficient":
        note += ": could not tell"
    return GateRow(
        f"suite: {counted(len(per_test), 'test')} at {op_label(op)}", expr.metric,
        expr.statistic, expr.threshold_text, None, None, math.expm1(centre.centre) * 100.0,
        _observed_p(signed) if verdict != "within" else None, verdict, note,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------
# --edge-fail against a baseline directory (the pytest side)

Pair = tuple[Mapping[str, Any], Mapping[str, Any]]


def _ab(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    ab = report.get("ab")
    return ab if isinstance(ab, Mapping) else None


def ab_session_pairs(
    reports: Sequence[Mapping[str, Any]], new_report: Mapping[str, Any]
) -> tuple[Mapping[str, Any], list[Pair]] | None:
    """The rounds of an ``edgeenergy ab`` session among baseline ``reports`` (newest
    first): ``new_report``'s own session when it is one of its rounds (then it takes its
    place in it), else the session of the newest report. Returns that session's ``ab``
    object (of a B side) and its complete rounds as (A, B) pairs in round order; None when
    there is no such session or it has fewer than two rounds with both sides (a paired
    spread needs two)."""
    own = _ab(new_report)
    newest = _ab(reports[0]) if reports else None
    chosen = own if own is not None else newest
    if chosen is None:
        return None
    session = chosen["session"]
    sides: dict[tuple[int, str], Mapping[str, Any]] = {}
    for report in [new_report, *reports] if own is not None else reports:
        ab = _ab(report)
        if ab is not None and ab["session"] == session:
            sides.setdefault((int(ab["round"]), str(ab["side"])), report)
    pairs = [
        (sides[(n, "A")], sides[(n, "B")])
        for n in sorted({n for n, _ in sides})
        if (n, "A") in sides and (n, "B") in sides
    ]
    if len(pairs) < 2:
        return None
    head = _ab(pairs[0][1])
    assert head is not None
    return head, pairs


def gate_baselines(
    baseline: Path,
    new_report: Mapping[str, Any],
    exprs: Iterable[str | GateExpr],
    overrides: Mapping[str, Iterable[str | GateExpr]] | None = None,
    *,
    strict: bool = False,
) -> GateVerdict:
    """``--edge-fail`` against ``--edge-baseline``: when the baselines were made by
    ``edgeenergy ab`` (see :func:`ab_session_pairs`), the paired verdict of that session's
    rounds; otherwise :func:`.independent.evaluate` against the newest
    :data:`~report.baselines.BASELINE_RUNS` runs, with a message that between-run drift limits
    what it can see (:func:`drift_message`). Raises as :func:`.independent.gate_against` does."""
    parsed = [_as_expr(e) for e in exprs]
    own = {tid: [_as_expr(e) for e in es] for tid, es in (overrides or {}).items()}
    every = list(itertools.chain(parsed, *own.values()))
    require_carried(gate_view(new_report, expr_metrics(parsed, own)), every)
    found, messages = find_baselines(baseline, new_report, runs=1 << 30)
    if not found:
        verdict = GateVerdict(baseline=str(baseline), device_matched=False)
        verdict.messages.extend(messages)
        return verdict
    session = ab_session_pairs([report for _, report in found], new_report)
    if session is not None:
        return _paired_baselines(baseline, new_report, parsed, own, session, messages, strict)
    newest = found[:BASELINE_RUNS]
    verdict = evaluate(
        [report for _, report in newest],
        new_report,
        parsed,
        own,
        strict=strict,
        baseline_name=describe(baseline, newest),
    )
    verdict.messages[:0] = messages
    verdict.messages.append(drift_message([report for _, report in newest], every))
    return verdict


def _paired_baselines(
    baseline: Path,
    new_report: Mapping[str, Any],
    exprs: Sequence[GateExpr],
    own: Mapping[str, Sequence[GateExpr]],
    session: tuple[Mapping[str, Any], list[Pair]],
    messages: list[str],
    strict: bool,
) -> PairedVerdict:
    head, pairs = session
    base = _ab(pairs[0][0])
    assert base is not None
    held = len(pairs)
    ab = _ab(new_report)
    running = ab is not None and ab["session"] == head["session"]
    # A session still running may add rounds (its own settings are not recorded: the
    # defaults); a stored one is complete, so its last round is the last look.
    first, last = (MIN_ROUNDS, MAX_ROUNDS) if running else (min(MIN_ROUNDS, held), held)
    verdict = paired_verdict(
        pairs,
        exprs,
        min_rounds=first,
        max_rounds=last,
        strict=strict,
        base=f"base {base['ref']}",
        head=f"head {head['ref']}",
        overrides=own,
    )
    if ab is not None and running:
        whose = (
            f"this run is side {ab['side']} of round {ab['round']} of that session, "
            "judged with the rounds so far"
        )
    else:
        whose = "this run is not one of its rounds and is not compared with them"
    verdict.messages[:0] = [
        *messages,
        f"baselines made by `edgeenergy ab` (session {head['session']}, "
        f"{counted(held, 'complete round')} in {baseline}): the verdict is the paired rule "
        f"over those rounds, head against base in each; {whose}",
    ]
    return verdict


def drift_message(reports: Sequence[Mapping[str, Any]], exprs: Sequence[GateExpr]) -> str:
    """Says that baselines from other runs are limited by between-run drift, with their
    run-to-run spread per metric and statistic: the median over tests (passed with a value
    > 0 in two or more runs) of the standard deviation of the statistic's log across runs,
    as a percentage; unknown with a single run."""
    runs = len(reports)
    spreads: list[str] = []
    if runs >= 2:
        pairs = list(dict.fromkeys((e.metric, e.statistic) for e in exprs))
        needs = expr_metrics(exprs)
        views = [gate_view(report, needs) for report in reports]
        for metric, stat in pairs:
            logs = _logs_by_test(views, metric, stat)
            if logs:
                typical = statistics.median(statistics.stdev(v) for v in logs)
                spreads.append(
                    f"median {math.expm1(typical) * 100:.2g} % for {metric}:{stat} over "
                    f"{counted(len(logs), 'test')}"
                )
    if spreads:
        spread = f"{'; '.join(spreads)}, {counted(runs, 'run')}"
    elif runs >= 2:
        spread = f"unknown: no test has a value in two of the {runs} runs"
    else:
        spread = "unknown with a single run; save more runs into the directory to measure it"
    return (
        "baselines from other runs: between-run drift limits what this gate can see "
        f"(run-to-run spread of these baselines: {spread}); `edgeenergy ab` measures both "
        "versions interleaved on one board"
    )


def _logs_by_test(views: Sequence[GateView], metric: str, stat: str) -> list[list[float]]:
    """Per test (id and operating point) held by two runs or more, the log of its
    statistic in each run where it passed with a value > 0."""
    by_test: dict[tuple[str, str], list[float]] = {}
    for view in views:
        column = view.metrics.get(metric)
        if column is None:
            continue
        values = column.statistics[stat]
        for j, key in enumerate(zip(view.ids, view.ops, strict=True)):
            value = values[j]
            if view.statuses[j] == "passed" and value is not None and value > 0:
                by_test.setdefault(key, []).append(math.log(value))
    return [logs for logs in by_test.values() if len(logs) >= 2]
