"""The regression gate in a pytest session (``--edge-baseline`` or ``--edge-history`` with
``--edge-fail``): its options checked before any test runs, its verdict at the end, and the
run added to the history (``--edge-history-add``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

from ..redact import redact_text

if TYPE_CHECKING:
    from ..verdict.model import GateVerdict
    from .options import GateSettings

Outcome = Literal["passed", "failed", "usage error"]

STRICT_OPTION = "--edge-fail-insufficient"
"""What makes the gate strict in pytest, as the verdict's headline names it."""


def _expr_problem(text: str) -> str | None:
    """Why a gate expression is unusable before any test ran, or None."""
    from ..report.metric_names import name_problem
    from ..verdict.expr import GateExprError, parse_expr

    try:
        expr = parse_expr(text)
    except GateExprError as e:
        return str(e)
    return name_problem(expr.metric)


def check_options(gate: GateSettings) -> None:
    """Raise :class:`pytest.UsageError` for a gate that cannot work: an expression that does
    not parse or names a metric no result can carry (with a did-you-mean), a baseline file
    that does not exist or a baseline that is no file nor directory, a baseline directory
    to save into that is a file, lies below a file or cannot be written."""
    for text in gate.fail:
        problem = _expr_problem(text)
        if problem is not None:
            raise pytest.UsageError(f"--edge-fail {text!r}: {problem}")
    if gate.fail_insufficient and not gate.fail:
        raise pytest.UsageError(
            "--edge-fail-insufficient makes the gate strict, but no gate is given (--edge-fail)"
        )
    if gate.history is not None and gate.baseline is not None:
        raise pytest.UsageError(
            f"--edge-history {redact_text(gate.history)} and --edge-baseline {gate.baseline}: "
            "the gate judges against one of them; give one"
        )
    if gate.history is None and (gate.history_add or gate.history_branch is not None):
        given = "--edge-history-add" if gate.history_add else "--edge-history-branch"
        raise pytest.UsageError(f"{given} needs the history database: --edge-history=DB")
    baseline = gate.baseline
    if baseline is not None:
        _check_baseline(baseline)
    target = gate.save_baseline
    if target is not None and target.exists() and not target.is_dir():
        raise pytest.UsageError(f"--edge-save-baseline {target}: not a directory")
    problem = _save_problem(target) if target is not None else None
    if problem is not None:
        raise pytest.UsageError(f"--edge-save-baseline {target}: {problem}")


def _check_baseline(baseline: Path) -> None:
    """A baseline file that does not exist, or a baseline that is neither a file nor a
    directory (a pipe, a device, a loop of links): a usage error before any test runs."""
    from ..report.baselines import baseline_kind
    from ..report.load import ReportError

    try:
        kind = baseline_kind(baseline)
    except ReportError as e:
        raise pytest.UsageError(f"--edge-baseline {e}") from None
    if kind is None and baseline.suffix == ".json":
        raise pytest.UsageError(f"--edge-baseline {baseline}: baseline file does not exist")


def check_history(gate: GateSettings) -> None:
    """Open the history database once before any test runs (migrated forward when needed;
    created only for ``--edge-history-add``: a gate alone reads it), so that a database
    that cannot be used stops the run at its start rather than after it:
    :class:`pytest.UsageError` naming it and why."""
    if gate.history is None:
        return
    from ..errors import EdgeEnergyError
    from ..extras import MissingExtra, require

    try:
        require("sqlalchemy", "history", "the energy history (--edge-history)")
        from ..history.store import open_store

        with open_store(gate.history, create=gate.history_add):
            pass
    except MissingExtra as e:
        raise pytest.UsageError(str(e)) from None
    except (EdgeEnergyError, OSError) as e:
        raise pytest.UsageError(f"--edge-history: {e}") from None


def _save_problem(target: Path) -> str | None:
    """Why no baseline can be saved into ``target``, as seen before any test runs (its
    nearest existing ancestor is a file, or cannot be written), or None."""
    probe = target
    while not probe.exists():  # also False below a regular file (ENOTDIR)
        if probe.parent == probe:
            return None
        probe = probe.parent
    if not probe.is_dir():
        return f"cannot be created: {probe} is a file, not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        where = "it" if probe == target else str(probe)
        return f"cannot be written: {where} is not writable by this user"
    return None


def _measures_with(item: pytest.Item) -> str | None:
    """What a collected test measures with: ``edge_bench`` (any metric), ``energy`` (window
    metrics only), or None (nothing: it carries no metric)."""
    names = getattr(item, "fixturenames", ())
    return next((name for name in ("edge_bench", "energy") if name in names), None)


def _metric(text: str) -> str:
    from ..verdict.expr import parse_expr

    return parse_expr(text).metric  # parsed once already: check_options, the marker check


def check_collected(gate: GateSettings, items: Sequence[pytest.Item]) -> None:
    """Before any test runs, raise :class:`pytest.UsageError` for a gate expression that
    the collected tests cannot be judged by: an ``edge_gate`` marker that is unusable (see
    :func:`check_options`) or names a metric its test cannot carry, and an ``--edge-fail``
    metric that no collected test measuring can carry (tests measuring with the ``energy``
    fixture alone carry window metrics), each with what they carry instead."""
    from ..report.metric_names import WINDOWS_CARRY, window_problem

    kinds: dict[str | None, int] = {}
    for item in items:
        kind = _measures_with(item)
        kinds[kind] = kinds.get(kind, 0) + 1
        marker = item.get_closest_marker("edge_gate")
        for arg in marker.args if marker is not None else ():
            problem = _expr_problem(str(arg))
            if problem is None and kind == "energy":
                window = window_problem(_metric(str(arg)))
                if window is not None:
                    problem = (
                        f"this test cannot carry {window}: it uses the energy fixture, "
                        f"{WINDOWS_CARRY}"
                    )
            if problem is not None:
                raise pytest.UsageError(f"{item.nodeid}: edge_gate({str(arg)!r}): {problem}")
    if set(kinds) - {None} != {"energy"}:  # edge_bench carries any metric; none measure
        return
    for text in gate.fail:
        problem = window_problem(_metric(text))
        if problem is not None:
            raise pytest.UsageError(
                f"--edge-fail {text!r}: no collected test can carry {problem}: those that "
                f"measure ({kinds['energy']}) use the energy fixture, {WINDOWS_CARRY}"
            )


def run_gate(
    gate: GateSettings, overrides: Mapping[str, Sequence[str]], report_path: Path
) -> tuple[Outcome, list[str]]:
    """Compare this run's report with its baseline (``gate.fail``, and each test's own
    ``edge_gate`` thresholds in ``overrides``) and save it as a baseline if asked; returns
    the outcome and the lines to show. A gate that ends in a usage error saves nothing.

    A baseline of another device is never used, and a missing or empty baseline directory
    is "no baseline yet": messages, not failures. An expression naming a metric no result
    carries, and baselines of which none can be used (unreadable, or a total defined
    otherwise than this run's), are usage errors. A baseline asked for and not saved fails
    the session, with one line naming the directory and the report.
    """
    from ..report.baselines import save_baseline
    from ..report.load import ReportError

    lines: list[str] = []
    outcome: Outcome = "passed"
    if gate.baseline is not None and (gate.fail or overrides):
        outcome = _gate(gate, overrides, report_path, lines)
    elif gate.history is not None and (gate.fail or overrides):
        outcome = _gate_history(gate, overrides, report_path, lines)
    if outcome == "usage error":
        lines.extend(_not_kept(gate, report_path))
        return outcome, lines
    if gate.history is not None and gate.history_add:
        added = _add_to_history(gate, report_path, lines)
        if not added and outcome == "passed":
            outcome = "failed"
    if gate.save_baseline is not None:
        try:
            saved = save_baseline(report_path, gate.save_baseline)
            lines.append(f"edgeenergy: baseline saved to {saved}")
        except (ReportError, OSError) as e:
            lines.append(_not_saved(gate.save_baseline, report_path, e))
            if outcome == "passed":
                outcome = "failed"
    return outcome, lines


def _gate(
    gate: GateSettings, overrides: Mapping[str, Sequence[str]], report_path: Path, lines: list[str]
) -> Outcome:
    """The gate's verdict on this run's report, its lines appended to ``lines``. A baseline
    that cannot be used (unreadable, no usable one in a directory, a total defined otherwise)
    is bad input, a usage error; so is an expression no result carries. Baselines made by
    ``edgeenergy ab`` are judged by its paired rule, others with a note on between-run drift
    (:func:`.verdict.paired.gate_baselines`)."""
    from ..report.load import ReportError, load_report
    from ..verdict.expr import GateExprError
    from ..verdict.paired import gate_baselines

    baseline = gate.baseline
    assert baseline is not None  # run_gate gates only with a baseline
    try:
        report = load_report(report_path)
    except ReportError as e:
        lines.append(f"edgeenergy gate: this run's report cannot be read: {e}")
        return "failed"
    try:
        verdict = gate_baselines(
            baseline, report, gate.fail, overrides, strict=gate.fail_insufficient
        )
    except (GateExprError, ReportError) as e:  # a ReportError here is a baseline's
        lines.append(f"edgeenergy gate: usage error: {e}")
        return "usage error"
    except OSError as e:
        lines.append(f"edgeenergy gate: {baseline}: {e.strerror or e}")
        return "failed"
    return _verdict_lines(verdict, lines)


def _gate_history(
    gate: GateSettings, overrides: Mapping[str, Sequence[str]], report_path: Path, lines: list[str]
) -> Outcome:
    """The gate's verdict against the newest runs of this device in the history database,
    as ``edgeenergy history gate`` gives it; lines appended to ``lines``."""
    from ..errors import EdgeEnergyError
    from ..history.store import open_store
    from ..report.load import ReportError, load_report
    from ..verdict.expr import GateExprError
    from ..verdict.history import history_verdict

    assert gate.history is not None
    try:
        report = load_report(report_path)
    except ReportError as e:
        lines.append(f"edgeenergy gate: this run's report cannot be read: {e}")
        return "failed"
    try:
        with open_store(gate.history, create=gate.history_add) as store:
            verdict = history_verdict(
                store,
                report,
                gate.fail,
                overrides,
                window=gate.history_window,
                branch=gate.history_branch,
                strict=gate.fail_insufficient,
            )
    except (GateExprError, ReportError) as e:
        lines.append(f"edgeenergy gate: usage error: {e}")
        return "usage error"
    except (EdgeEnergyError, OSError) as e:
        lines.append(f"edgeenergy gate: --edge-history: {e}")
        return "failed"
    return _verdict_lines(verdict, lines)


def _verdict_lines(verdict: GateVerdict, lines: list[str]) -> Outcome:
    """The verdict's table and its last line appended to ``lines``; the outcome."""
    from ..present.verdict import gate_outcome, render_verdict

    lines.append(render_verdict(verdict, "table", strict_option=STRICT_OPTION))
    lines.append(f"edgeenergy gate: {gate_outcome(verdict, STRICT_OPTION)}")
    return "failed" if verdict.failed else "passed"


def _add_to_history(gate: GateSettings, report_path: Path, lines: list[str]) -> bool:
    """Add this run's report to the history (``--edge-history-add``); a run that could not
    be added is one line naming the database and the report, and fails the session."""
    from ..errors import EdgeEnergyError
    from ..history.store import open_store

    assert gate.history is not None
    try:
        with open_store(gate.history) as store:
            done = store.add_report(report_path, branch=gate.history_branch)
            name = store.name
    except (EdgeEnergyError, OSError) as e:
        lines.append(
            f"edgeenergy: HISTORY NOT UPDATED: {e}; the report is {report_path} (add it "
            "later with `edgeenergy history add`)"
        )
        return False
    if done.added:
        lines.append(f"edgeenergy: run {done.run_id} added to the history {name}")
    else:
        lines.append(f"edgeenergy: run {done.run_id} was in the history {name} already")
    return True


def _not_kept(gate: GateSettings, report_path: Path) -> list[str]:
    """The line saying that a run whose gate ended in a usage error was not saved as a
    baseline nor added to the history (a run to repeat once the gate is fixed), if asked."""
    asked = []
    if gate.save_baseline is not None:
        asked.append(f"no baseline saved to {gate.save_baseline}")
    if gate.history is not None and gate.history_add:
        asked.append("not added to the history")  # its URL may hold a password
    if not asked:
        return []
    return [f"edgeenergy: {' and '.join(asked)} after the usage error; the report is {report_path}"]


def _not_saved(directory: Path, report_path: Path, error: Exception) -> str:
    """The one line saying a baseline asked for was not saved, and where the report is."""
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        why = f"{error.strerror or error}{where}"
    else:
        why = str(error)
    return (
        f"edgeenergy: BASELINE NOT SAVED to {directory}: {why}; the report is {report_path} "
        f"(copy it into {directory} by hand, or fix the directory and run again)"
    )


def exit_status(outcome: Outcome, status: int | pytest.ExitCode) -> int | pytest.ExitCode:
    """The session's exit status after the gate: a usage error wins over passed and failed
    tests, a failed gate (or a baseline not saved) over passed tests; interruptions and
    internal errors are kept."""
    ok: Sequence[int] = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    if outcome == "usage error" and status in (*ok, pytest.ExitCode.TESTS_FAILED):
        return pytest.ExitCode.USAGE_ERROR
    if outcome == "failed" and status == pytest.ExitCode.OK:
        return pytest.ExitCode.TESTS_FAILED
    return status
