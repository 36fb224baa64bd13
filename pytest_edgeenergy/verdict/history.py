"""The gate against the history: a new run judged by the newest runs of its device.

``edgeenergy history gate`` and pytest's ``--edge-history`` with ``--edge-fail`` both use
:func:`history_verdict`: the gate of ``edgeenergy compare`` (:func:`.independent.evaluate`)
with the device's last runs, rebuilt from the database, as its baseline runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_edgeenergy.history.store import HistoryStore
    from pytest_edgeenergy.verdict.expr import GateExpr
    from pytest_edgeenergy.verdict.model import GateVerdict

DEFAULT_WINDOW = 10
"""How many of the device's newest runs the gate reads unless told."""


def history_verdict(
    store: HistoryStore,
    report: Mapping[str, Any],
    exprs: Sequence[str | GateExpr],
    overrides: Mapping[str, Iterable[str | GateExpr]] | None = None,
    *,
    window: int = DEFAULT_WINDOW,
    branch: str | None = None,
    strict: bool = False,
    new_name: str = "this run",
) -> GateVerdict:
    """The verdict on ``report`` against the newest ``window`` runs of its device in
    ``store`` (on ``branch`` when given; the run itself left out). No earlier run is a
    verdict that compared nothing and says so (the first run of a CI job), not a failure."""
    from pytest_edgeenergy.report.model import device_label
    from pytest_edgeenergy.verdict.independent import evaluate
    from pytest_edgeenergy.verdict.model import GateVerdict

    baselines = store.baseline_reports(report, runs=window, branch=branch)
    where = f"the history {store.name}"
    device = device_label(report["device"])
    on_branch = f" on branch {branch}" if branch else ""
    if not baselines:
        verdict = GateVerdict(baseline=where, new=new_name, device_matched=False)
        verdict.messages.append(
            f"no earlier run of {device}{on_branch} in {where}: nothing to gate against yet"
        )
        return verdict
    return evaluate(
        baselines,
        report,
        exprs,
        overrides,
        strict=strict,
        baseline_name=f"{where}: {_last_runs(len(baselines))} of {device}{on_branch}",
        new_name=new_name,
    )


def _last_runs(n: int) -> str:
    """``the last run`` or ``the last 5 runs``."""
    return "the last run" if n == 1 else f"the last {n} runs"
