"""The report's entries of a measured command (:mod:`.command`), one per window name and
operating point: the whole run's (named by the plan's label) and one per label the command
marked (``LABEL``, ``LABEL#2`` for its second window in a run...).

Each metric has one sample per run, with the statistics ``edge_bench`` gives its repeats
(mean, median, stdev, min, max, 95 % interval): ``energy_j``, ``energy_net_j``,
``power_mean``, ``power_peak``, ``duration_s``, ``energy_j.RAIL``, and, where the work is
known (``--items``, ``end LABEL items=N``), ``energy_per_item``, ``energy_per_item_net``,
``throughput`` and ``edp`` as :class:`~pytest_edgeenergy.bench.result.RepeatResult` defines
them. Only the runs that exited 0 are counted: a failed run's figures are listed in
``extra.command.runs`` with its exit status, never mixed into the statistics, and make every
entry of its point ``failed``. An interrupted run is listed, never counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..words import counted
from .records import TestEnergy

if TYPE_CHECKING:
    from ..meters.window import WindowResult
    from ..report.model import Metric
    from .command_runs import CommandPlan, CommandRun, PointRuns
    from .session import EnergySession

__all__ = ["add_point_records", "point_records", "run_metrics"]

MAX_REASONS = 3
"""Failed runs named in an entry's reason (the rest counted)."""


def run_metrics(windows: Sequence[tuple[WindowResult, int | None]]) -> dict[str, Metric]:
    """The metrics of one entry from its windows, one per run, each with its items (None:
    not known); see the module docstring."""
    from ..bench.result import RepeatResult
    from ..report.windows import metric, window_metrics

    results = [w for w, _ in windows]
    out = window_metrics(results)
    with_items = [
        RepeatResult(index=i, calls=1, items=n, window=w, latencies_s=())
        for i, (w, n) in enumerate(windows)
        if n is not None
    ]
    if with_items:
        ok = all(w.valid for w in results)
        out["energy_per_item"] = metric(
            "energy_per_item", (r.energy_per_item_j for r in with_items), trusted=ok
        )
        out["energy_per_item_net"] = metric(
            "energy_per_item_net", (r.energy_per_item_net_j for r in with_items), trusted=ok
        )
        out["throughput"] = metric("throughput", (r.throughput for r in with_items))
        out["edp"] = metric("edp", (r.edp for r in with_items), trusted=ok)
    return out


def _entry_windows(
    plan: CommandPlan, run: CommandRun, name: str
) -> tuple[WindowResult, int | None, str | None] | None:
    """The window of entry ``name`` in ``run`` with its items and whose stamps its edges
    are (None for the whole run's); None when the run has none."""
    if name == plan.label:
        return (run.window, plan.items, None) if run.window is not None else None
    for m in run.marked:
        if m.entry == name:
            return m.result, m.items, m.stamped
    return None


def _names(plan: CommandPlan, runs: Sequence[CommandRun]) -> list[str]:
    names = {plan.label: None}
    for run in runs:
        names.update(dict.fromkeys(m.entry for m in run.marked))
    return list(names)


def _failed_reason(runs: PointRuns, total: int) -> str | None:
    failed = [("warm-up", r) for r in runs.warmups if r.status == "failed"]
    failed += [("run", r) for r in runs.runs if r.status == "failed"]
    if not failed:
        return None
    parts = [
        f"{what} {r.index} of {len(runs.warmups) if what == 'warm-up' else total}: {r.exit_text}"
        for what, r in failed[:MAX_REASONS]
    ]
    more = len(failed) - MAX_REASONS
    return "the command failed: " + "; ".join(parts) + (f"; {more} more" if more > 0 else "")


def _num(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _exit_json(run: CommandRun) -> dict[str, Any]:
    """How a run ended: its exit status, or the signal that killed it, and whether the
    harness stopped it (Ctrl-C, SIGTERM)."""
    return {
        "exit_status": run.returncode if run.returncode >= 0 else None,
        "signal": run.exit_text.removeprefix("killed by ") if run.returncode < 0 else None,
        "stopped_by": run.stopped_by,
    }


def _run_json(
    run: CommandRun, found: tuple[WindowResult, int | None, str | None]
) -> dict[str, Any]:
    w, items, stamped = found
    out: dict[str, Any] = {
        "run": run.index,
        "status": run.status,
        **_exit_json(run),
        "seconds": _num(w.duration_s),
        "energy_j": _num(w.total.energy_j),
        "net_energy_j": _num(w.net_energy_j),
        "items": items,
        "samples": w.samples,
        "valid": w.valid,
        "invalid_reason": w.invalid_reason,
    }
    if stamped is not None:
        out["stamped"] = stamped
    return out


def point_records(
    plan: CommandPlan, runs: PointRuns, interrupted: str | None = None
) -> list[TestEnergy]:
    """The records of one point's runs (none when no run there was completed)."""
    completed = [r for r in runs.runs if r.status != "interrupted"]
    if not completed:
        return []
    stopped = [r for r in runs.runs if r.status == "interrupted"]
    reason = _failed_reason(runs, plan.runs)
    command: dict[str, Any] = {
        "runs_planned": plan.runs,
        "warmup": [{"run": r.index, "status": r.status, **_exit_json(r)} for r in runs.warmups],
    }
    if interrupted is not None:
        where = f"run {stopped[0].index} of {plan.runs}" if stopped else "between runs"
        command["interrupted"] = (
            f"{interrupted} during {where}; {counted(len(completed), 'completed run')} kept"
        )
    records = []
    for name in _names(plan, completed):
        listed = [
            (run, found)
            for run in runs.runs
            if (found := _entry_windows(plan, run, name)) is not None
        ]
        kept = [(found[0], found[1]) for run, found in listed if run.status == "passed"]
        extra: dict[str, Any] = {
            "command": {
                **command,
                "window": "run" if name == plan.label else "marked",
                "runs": [_run_json(run, found) for run, found in listed],
            }
        }
        if name == plan.label:
            extra["command"]["marks"] = [
                {"run": r.index, "problems": r.problems, "problem_count": r.problem_count}
                for r in runs.runs
                if r.problem_count
            ]
            extra["command"]["left_running"] = [r.index for r in runs.runs if r.left_running]
            extra["residency"] = [
                {"window": f"{plan.label} run {r.index}", "shares": r.residency}
                for r in completed
                if r.residency is not None
            ]
        rec = TestEnergy(
            name,
            windows=[w for w, _ in kept],
            status="failed" if reason is not None else "passed",
            reason=reason,
            duration_s=sum(f[0].duration_s for run, f in listed if run.status != "interrupted"),
            operating_point=runs.pinned,
            metrics=run_metrics(kept),
            extra=extra,
        )
        if kept:
            from ..report.windows import validity_of

            rec.validity = validity_of([w for w, _ in kept])
        records.append(rec)
    return records


def add_point_records(
    session: EnergySession, plan: CommandPlan, runs: PointRuns, interrupted: str | None
) -> list[str]:
    """Write the point's records into the session's report; their keys in ``session.tests``."""
    point_id = runs.point.id if runs.point is not None else None
    keys = []
    for rec in point_records(plan, runs, interrupted):
        key = session.add_record(rec, point_id)
        session.finish_test(key)
        keys.append(key)
    return keys
