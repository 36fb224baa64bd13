"""What a search says to people: the live search's terminal summary, and ``edgeenergy
search``'s text (an offline search, one worker of a shared study, the whole study). Each
list of trials is aligned (:func:`~.tables.align`): the trial, its knobs, its figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..search.objective import metrics_text
from ..search.trial import Trial, knobs_text
from ..words import counted
from .tables import align

if TYPE_CHECKING:
    from ..run.search import SessionSearch
    from ..search.driver import SearchResult
    from ..search.replay import ReplayTable

_INDENT = "  "


def figures(time_s: float, power_w: float, energy_j: float, metrics: Mapping[str, float]) -> str:
    """``0.1081 s  6.574 W  0.711 J``, then an interleaved point's own figures."""
    return f"{time_s:.4g} s  {power_w:.4g} W  {energy_j:.4g} J" + metrics_text(metrics)


def _measured(t: Trial) -> str:
    """A measured trial's :func:`figures`."""
    time_s, power_w = t.measured
    return figures(time_s, power_w, time_s * power_w, t.metrics)


def _trial_figures(t: Trial) -> str:
    """A trial's figures, or why it has none; ``infeasible: why`` after them when so."""
    if not t.ok:
        return f"failed: {t.failed}"
    return _measured(t) + (f"  infeasible: {t.infeasible}" if t.infeasible is not None else "")


def _json_figures(t: Mapping[str, Any]) -> str:
    return figures(t["time_s"], t["power_w"], t["energy_j"], t.get("metrics") or {})


def session_lines(engine: SessionSearch) -> list[str]:
    """The live search's terminal summary: each search's trials, best point, saving against
    the dvfs reference, front."""
    from ..run.search import saving

    lines: list[str] = [f"note: {n}" for n in engine.notes] if engine.searches else []
    for ts in engine.searches.values():
        result = ts.search.result()
        lines.append(
            f"{ts.key}: strategy {result.strategy}, objective "
            f"{engine.describe()}, {result.profiles} points profiled"
            + (f" ({ts.resumed} resumed)" if ts.resumed else "")
        )
        study = engine.study
        if study is not None:
            lines.append(f"  shared {study.label} as {study.worker} (this board's trials)")
            lines.append(
                f"  the whole study: edgeenergy search --storage {study.url} --study "
                f"{study.name} --show"
            )
        prior = engine.prior_json(ts.key)
        if prior is not None:
            lines.append(f"  prior: {prior['profiles']} profiles of {prior['path']}")
        rows = [["dvfs", "(reference)", _trial_figures(ts.reference)]] if ts.reference else []
        rows += [
            [f"trial{i}", knobs_text(t.knobs), _trial_figures(t)]
            for i, t in enumerate(result.trials)
        ]
        lines += align(rows, indent=_INDENT)
        best = result.best
        if best is None and not result.trials and study is not None:
            lines.append("  best: this board profiled no point (the study's: --show above)")
        elif best is None:
            lines.append("  best: no profiled point met the objective's budgets")
        else:
            lines.append(f"  best: {knobs_text(best.knobs)}: {_trial_figures(best)}")
            s = saving(best, ts.reference)
            if s is not None:
                lines.append(
                    f"  against dvfs: energy {s['energy_pct']:+.1f}%, time "
                    f"{s['time_pct']:+.1f}% (negative: less)"
                )
        if engine.objective.multi:
            lines.append("  pareto front (time vs energy):")
            lines += [f"    {knobs_text(t.knobs)}: {_trial_figures(t)}" for t in result.front]
    return lines


def replay_text(result: SearchResult, table: ReplayTable) -> str:
    """``edgeenergy search --replay``: every trial, the best point and the front."""
    lines = [
        f"strategy {result.strategy}, objective {result.objective.describe()}: "
        f"{result.profiles} of {len(table.trials)} points profiled"
    ]
    rows = []
    for i, t in enumerate(result.trials):
        if t.ok:
            ok = result.objective.feasible(*t.measured, t.metrics)
            said = _measured(t) + ("" if ok else "  over budget")
            rows.append([f"trial{i}", knobs_text(t.knobs), said])
        else:
            rows.append([f"trial{i}", knobs_text(t.knobs), f"failed: {t.failed}"])
    lines += align(rows, indent=_INDENT)
    front = result.front if result.objective.multi else None
    lines += _best_and_front(result.best, front, indent="", tried="profiled")
    return "\n".join(lines)


def _best_and_front(
    best: Trial | Mapping[str, Any] | None,
    front: Sequence[Trial | Mapping[str, Any]] | None,
    *,
    indent: str,
    tried: str,
) -> list[str]:
    """``best: KNOBS: 0.2 s, 3.5 W, 0.8 J`` (or that no ``tried`` point met the budget) and
    the pareto front when there is one."""
    if best is None:
        lines = [f"{indent}best: no {tried} point met the budget"]
    else:
        b = _as_json(best)
        lines = [
            f"{indent}best: {knobs_text(b['knobs'])}: {b['time_s']:.4g} s, {b['power_w']:.4g} W, "
            f"{b['energy_j']:.4g} J" + metrics_text(b.get("metrics") or {})
        ]
    if front is not None:
        lines.append(f"{indent}pareto front (time vs energy):")
        lines += [
            f"{indent}  {knobs_text(t['knobs'])}: {t['time_s']:.4g} s, {t['energy_j']:.4g} J"
            for t in map(_as_json, front)
        ]
    return lines


def _as_json(t: Trial | Mapping[str, Any]) -> Mapping[str, Any]:
    """A point's knobs and figures as its JSON names them."""
    if isinstance(t, Trial):
        return {
            "knobs": t.knobs,
            "time_s": t.time_s,
            "power_w": t.power_w,
            "energy_j": t.energy_j,
            "metrics": t.metrics,
        }
    return t


def study_text(data: Mapping[str, Any]) -> str:
    """The whole study (:func:`~pytest_edgeenergy.search.study_replay.show_json`) for people
    (withdrawn claims counted, not listed)."""
    from ..search.study_replay import objective_of

    lines = [f"study {data['study']} in {data['storage']}"]
    for s in data["searches"]:
        title = f"search {s['test']}: " if s["test"] else ""
        lines.append(
            f"{title}strategy {s.get('strategy')}, objective {objective_of(s).describe()}: "
            f"{s['counted']} trials done"
        )
        listed = [t for t in s["trials"] if t["status"] != "withdrawn"]
        rows = []
        for t in listed:
            if t["status"] == "measured":
                said = f"{_json_figures(t)}{_verdict_of(t)}"
            else:
                said = t["status"] + (f": {t['reason']}" if "reason" in t else "")
            rows.append([f"#{t['number']}", t["worker"], knobs_text(t["knobs"]), said])
        lines += align(rows, indent=_INDENT)
        if s["withdrawn"]:
            lines.append(
                f"  {counted(s['withdrawn'], 'withdrawn claim')} not listed: a point two workers "
                "claimed at once stays with the first (PRUNED in Optuna, not counted)"
            )
        lines.append("  per worker:")
        for worker, counts in sorted(s["workers"].items()):
            said = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            own = next((t for t in listed if t["worker"] == worker and "strategy" in t), None)
            how = f" ({own['strategy']}, seed {own['seed']})" if own is not None else ""
            lines.append(f"    {worker}{how}: {said}")
        lines += _best_and_front(s["best"], s["front"], indent="  ", tried="measured")
    return "\n".join(lines)


def worker_text(out: Mapping[str, Any]) -> str:
    """One worker's part of a shared study (:func:`~pytest_edgeenergy.search.study_replay.
    replay_worker`): its trials, and how to see the whole study."""
    lines = [
        f"worker {out['worker']} in study {out['study']} ({out['storage']}): strategy "
        f"{out['strategy']}, seed {out['seed']}, objective {out['objective']}: "
        f"{len(out['trials'])} trials of its own, {out['study_trials']} in the study"
    ]
    rows = []
    for t in out["trials"]:
        if t["failed"] is None:
            said = f"{_json_figures(t)}{_verdict_of(t)}"
        else:
            said = f"failed: {t['failed']}"
        said += f"  (not counted: {t['not_counted']})" if "not_counted" in t else ""
        rows.append([f"#{t['number']}", knobs_text(t["knobs"]), said])
    lines += align(rows, indent=_INDENT)
    lines.append(
        f"the whole study: edgeenergy search --storage {out['storage']} --study "
        f"{out['study']} --show"
    )
    return "\n".join(lines)


def _verdict_of(t: Mapping[str, Any]) -> str:
    """How a measured trial's line ends (its JSON with ``feasible``), as a one-process
    search prints it: nothing when it meets the budgets, else why not."""
    if t["feasible"]:
        return ""
    return f"  infeasible: {t['infeasible']}" if "infeasible" in t else "  over budget"
