"""The gate's one entry: :func:`judge` a new run against a source of earlier runs.

The source says what the new run is judged against, and so which judge decides:

* :class:`BaselineDir`: a baseline report file, or a directory of earlier reports (pytest's
  ``--edge-baseline``). Reports made by ``edgeenergy ab`` (:func:`ab_session_pairs`) are
  judged by the paired judge over that session's rounds; others by the independent-runs
  judge over the device's newest runs, with a note that between-run drift limits what it
  can see (:func:`drift_message`).
* :class:`BaselineReports`: baseline runs already read, newest first (reports, or their
  views): the independent-runs judge alone. ``edgeenergy compare`` finds its baselines
  itself (:class:`.compare.CompareGates`: each report against the one before of its device,
  or ``--baseline``'s newest runs, each file read once for all reports) and judges them so.
* :class:`History`: the device's newest runs in the energy history (``edgeenergy history
  gate``, pytest's ``--edge-history``): the independent-runs judge.
* :class:`AbRounds`: the rounds of an A/B run (``edgeenergy ab``), each a pair of reports:
  the paired judge, B against A.

The judges are :func:`.independent.evaluate` and :func:`.paired.paired_verdict`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from pytest_edgeenergy.report.baselines import BASELINE_RUNS, describe, find_baselines
from pytest_edgeenergy.report.model import device_label
from pytest_edgeenergy.verdict.expr import GateExpr, every_expr, parse_gate
from pytest_edgeenergy.verdict.independent import Report, evaluate
from pytest_edgeenergy.verdict.model import GateVerdict, PairedVerdict
from pytest_edgeenergy.verdict.paired import MAX_ROUNDS, MIN_ROUNDS, paired_verdict
from pytest_edgeenergy.verdict.stats import typical_spread
from pytest_edgeenergy.verdict.view import GateView, expr_metrics, gate_view, require_carried
from pytest_edgeenergy.words import counted

if TYPE_CHECKING:
    from pytest_edgeenergy.history.store import HistoryStore

Pair = tuple[Report, Report]
"""One A/B round: the report of A (the base) and the report of B (the head)."""

DEFAULT_WINDOW = 10
"""How many of the device's newest runs in the history the gate reads unless told."""


@dataclass(frozen=True)
class BaselineDir:
    """A baseline report file, or a directory of earlier reports of any devices; ``runs``:
    how many of the device's newest reports there the independent judge reads."""

    path: Path
    runs: int = BASELINE_RUNS


@dataclass(frozen=True)
class BaselineReports:
    """Baseline runs already read, newest first: reports, or their views holding every
    metric and statistic the expressions read (:func:`.view.gate_view`); ``name``: how the
    verdict names them."""

    runs: Report | GateView | Sequence[Report | GateView]
    name: str = "baseline"


@dataclass(frozen=True)
class History:
    """The newest ``window`` runs of the new run's device in ``store``, on ``branch`` when
    given (the new run itself left out)."""

    store: HistoryStore
    window: int = DEFAULT_WINDOW
    branch: str | None = None


@dataclass(frozen=True)
class AbRounds:
    """The rounds of an A/B run in order, each an (A, B) pair of reports; the looks from
    ``min_rounds`` to ``max_rounds`` (see :mod:`.paired`); ``names``: how the verdict names
    A and B."""

    pairs: Sequence[Pair]
    min_rounds: int = MIN_ROUNDS
    max_rounds: int = MAX_ROUNDS
    names: tuple[str, str] = ("base", "head")


Source = BaselineDir | BaselineReports | History | AbRounds
Exprs = Iterable[str | GateExpr]
ExprOverrides = Mapping[str, Iterable[str | GateExpr]] | None


@overload
def judge(
    source: AbRounds,
    new: None,
    exprs: Exprs,
    overrides: ExprOverrides = None,
    *,
    strict: bool = False,
    new_name: str = "this run",
) -> PairedVerdict: ...


@overload
def judge(
    source: BaselineReports,
    new: Report | GateView,
    exprs: Exprs,
    overrides: ExprOverrides = None,
    *,
    strict: bool = False,
    new_name: str = "this run",
) -> GateVerdict: ...


@overload
def judge(
    source: BaselineDir | History,
    new: Report,
    exprs: Exprs,
    overrides: ExprOverrides = None,
    *,
    strict: bool = False,
    new_name: str = "this run",
) -> GateVerdict: ...


def judge(
    source: Source,
    new: Report | GateView | None,
    exprs: Exprs,
    overrides: ExprOverrides = None,
    *,
    strict: bool = False,
    new_name: str = "this run",
) -> GateVerdict:
    """The verdict on ``new`` (a report; for :class:`BaselineReports` also its view; None
    for :class:`AbRounds`, whose rounds hold it) against ``source`` (see the module
    docstring), gated by ``exprs`` (``metric:statistic:threshold``) and each test's own
    ``overrides`` (test id -> expressions replacing those on the same metric and
    statistic). ``strict``: rows that could not be judged fail the gate too; ``new_name``:
    how the verdict names the new run.

    Raises :class:`.expr.GateExprError` for an expression no result of the new run carries
    (with a history: only once there are earlier runs), :class:`report.load.ReportError`
    (:class:`report.baselines.BaselineError`) for baselines that cannot be used, ValueError
    for bad settings of the rounds.
    """
    if isinstance(source, AbRounds):
        if new is not None:
            raise TypeError("judge: the rounds of an A/B run hold the new run; pass new=None")
        return paired_verdict(
            source.pairs,
            exprs,
            min_rounds=source.min_rounds,
            max_rounds=source.max_rounds,
            strict=strict,
            base=source.names[0],
            head=source.names[1],
            overrides=overrides,
        )
    if new is None:
        raise TypeError("judge: give the new run's report")
    if isinstance(source, BaselineReports):
        return evaluate(
            source.runs,
            new,
            exprs,
            overrides,
            strict=strict,
            baseline_name=source.name,
            new_name=new_name,
        )
    if isinstance(new, GateView):
        raise TypeError("judge: a baseline directory or the history needs the new run's report")
    if isinstance(source, History):
        return _history(source, new, exprs, overrides, strict, new_name)
    return _baseline_dir(source, new, exprs, overrides, strict, new_name)


# ---------------------------------------------------------------------------------------
# the history


def _history(
    source: History,
    new: Report,
    exprs: Exprs,
    overrides: ExprOverrides,
    strict: bool,
    new_name: str,
) -> GateVerdict:
    """No earlier run is a verdict that compared nothing and says so (the first run of a
    CI job), not a failure."""
    store, branch = source.store, source.branch
    baselines = store.baseline_reports(new, runs=source.window, branch=branch)
    where = f"the history {store.name}"
    device = device_label(new["device"])
    on_branch = f" on branch {branch}" if branch else ""
    if not baselines:
        verdict = GateVerdict(baseline=where, new=new_name, device_matched=False)
        verdict.messages.append(
            f"no earlier run of {device}{on_branch} in {where}: nothing to gate against yet"
        )
        return verdict
    last = "the last run" if len(baselines) == 1 else f"the last {len(baselines)} runs"
    return evaluate(
        baselines,
        new,
        exprs,
        overrides,
        strict=strict,
        baseline_name=f"{where}: {last} of {device}{on_branch}",
        new_name=new_name,
    )


# ---------------------------------------------------------------------------------------
# a baseline directory


def _baseline_dir(
    source: BaselineDir,
    new: Report,
    exprs: Exprs,
    overrides: ExprOverrides,
    strict: bool,
    new_name: str,
) -> GateVerdict:
    """An expression no result of ``new`` carries is an error even when there is no
    baseline yet."""
    parsed, own = parse_gate(exprs, overrides)
    every = every_expr(parsed, own)
    require_carried(gate_view(new, expr_metrics(parsed, own)), every, new_name)
    # Every run of the device: an ab session's rounds may be more than the newest few.
    found, messages = find_baselines(source.path, new, runs=1 << 30)
    if not found:
        verdict = GateVerdict(baseline=str(source.path), new=new_name, device_matched=False)
        verdict.messages.extend(messages)
        return verdict
    session = ab_session_pairs([report for _, report in found], new)
    if session is not None:
        return _ab_session(source.path, new, parsed, own, session, messages, strict)
    newest = found[: max(1, source.runs)]
    verdict = evaluate(
        [report for _, report in newest],
        new,
        parsed,
        own,
        strict=strict,
        baseline_name=describe(source.path, newest),
        new_name=new_name,
    )
    verdict.messages[:0] = messages
    verdict.messages.append(drift_message([report for _, report in newest], every))
    return verdict


def _ab(report: Report) -> Mapping[str, Any] | None:
    ab = report.get("ab")
    return ab if isinstance(ab, Mapping) else None


def ab_session_pairs(
    reports: Sequence[Report], new_report: Report
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
    sides: dict[tuple[int, str], Report] = {}
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


def _ab_session(
    baseline: Path,
    new_report: Report,
    exprs: Sequence[GateExpr],
    own: Mapping[str, Sequence[GateExpr]],
    session: tuple[Mapping[str, Any], list[Pair]],
    messages: list[str],
    strict: bool,
) -> PairedVerdict:
    """The paired verdict of an ab session's rounds found among the baselines."""
    head, pairs = session
    base = _ab(pairs[0][0])
    assert base is not None
    held = len(pairs)
    ab = _ab(new_report)
    running = ab is not None and ab["session"] == head["session"]
    # A session still running may add rounds (its own settings are not recorded: the
    # defaults); a stored one is complete, so its last round is the last look.
    first, last = (MIN_ROUNDS, MAX_ROUNDS) if running else (min(MIN_ROUNDS, held), held)
    verdict = judge(
        AbRounds(pairs, first, last, (f"base {base['ref']}", f"head {head['ref']}")),
        None,
        exprs,
        own,
        strict=strict,
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


def drift_message(reports: Sequence[Report], exprs: Sequence[GateExpr]) -> str:
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
                typical = typical_spread(logs)
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
