"""Baselines on disk: a report file, or a directory of earlier reports of several devices.

A directory is searched for the reports of the new run's device (fingerprint); the newest
:data:`BASELINE_RUNS` of them are the baseline, so the gate sees their run-to-run spread.
A directory that does not exist yet or holds no report is "no baseline yet" (the first run
of a CI job), not an error; ``--edge-save-baseline`` creates it. A path that is neither a
file nor a directory (a pipe, a device) is an error (:func:`baseline_kind`), and so is a
directory whose reports are all unusable (truncated, empty, a newer schema) or not
comparable with the new run (:class:`BaselineError`), never "no baseline": the gate would
pass unjudged.

Two runs of one device are comparable when their total energy is defined alike
(:func:`total_definition`): the same total rail, or the sum of the same rails, and the same
power source when both runs named one (``--edge-source``). The device fingerprint leaves
this out on purpose, so that older baselines keep matching; a baseline whose total differs
is skipped with a message saying so.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pytest_edgeenergy.inputfiles import InputFileError, kind_of, os_problem, stat_input
from pytest_edgeenergy.report.load import ReportError, load_report, require_tests
from pytest_edgeenergy.report.model import device_label, device_slug, parse_timestamp
from pytest_edgeenergy.report.writer import atomic_write_text

BASELINE_RUNS = 5
"""How many of a device's newest reports in a baseline directory the gate reads."""

Found = tuple[Path, dict[str, Any]]


class BaselineError(ReportError):
    """Baselines were found but none can be used (unreadable, empty, a newer schema, or a
    total defined otherwise than this run's): a usage error, never a first run."""


class TotalDefinition(NamedTuple):
    """How a run's total energy is formed: ``total`` in words (the rail measuring the
    board's input, or the sum of which rails) and the power source the run named (None:
    chosen automatically, not recorded)."""

    total: str
    source: str | None

    def describe(self) -> str:
        return self.total + (f" read with source {self.source}" if self.source else "")


def total_definition(report: Mapping[str, Any]) -> TotalDefinition:
    """The :class:`TotalDefinition` of a report (its header is enough)."""
    device = report["device"]
    total = device["total"]
    if total["method"] == "rail":
        words = f"the {total['rail']} rail"
    else:
        rails = sorted(r["name"] for r in device["rails"] if not r["is_total"])
        words = f"the sum of rails {', '.join(rails)}" if rails else "the sum of all rails"
    source = (report.get("settings") or {}).get("edge_source")
    named = str(source).strip().lower() if source is not None else ""
    return TotalDefinition(words, None if named in ("", "auto") else named)


def not_comparable(base: TotalDefinition, new: TotalDefinition) -> str | None:
    """Why a baseline whose total is ``base`` cannot judge a run whose total is ``new``
    (``total is X, this run's is Y``), or None when they are comparable."""
    if base.total == new.total and (base.source is None or new.source in (None, base.source)):
        return None
    return f"total is {base.describe()}, this run's is {new.describe()}: not comparable"


def _started(report: Mapping[str, Any]) -> float:
    try:
        return parse_timestamp(report["started_at"]).timestamp()
    except ValueError:
        return 0.0


def find_baselines(
    baseline: Path,
    new_report: Mapping[str, Any],
    *,
    runs: int = BASELINE_RUNS,
    load: Callable[[Path], dict[str, Any]] = load_report,
) -> tuple[list[Found], list[str]]:
    """The baseline reports for ``new_report``'s device, newest first: ``baseline`` itself
    when it is a file, else the newest ``runs`` reports in that directory with the same
    device fingerprint and total definition (other runs than ``new_report``'s, holding
    tests).

    Returns ``(found, messages)``; ``found`` is empty when there is no baseline for this
    device or none yet (not an error). A missing path ending in ``.json`` and a baseline
    *file* that is not a valid report raise :class:`ReportError`; a directory whose
    candidates are all unusable or not comparable raises :class:`BaselineError` naming
    each file and why (some usable ones: the others are skipped with a message). ``load``
    reads a report (a caching one when called often); ``new_report`` needs only its header
    (``device``, ``run_id``, ``settings``).
    """
    messages: list[str] = []
    fingerprint = new_report["device"]["fingerprint"]
    label = device_label(new_report["device"])
    kind = baseline_kind(baseline)
    if kind is None:
        if baseline.suffix == ".json":
            raise ReportError(baseline, "baseline file does not exist")
        messages.append(f"no baseline yet: {baseline} does not exist; this run is not gated")
        return [], messages
    new_total = total_definition(new_report)
    if kind == "file":
        report = load(baseline)
        require_tests(report, baseline)
        if report["device"]["fingerprint"] != fingerprint:
            messages.append(
                f"no baseline for this device: {baseline} is from "
                f"{device_label(report['device'])}, this run is on {label}; not gated"
            )
            return [], messages
        problem = not_comparable(total_definition(report), new_total)
        if problem is not None:
            raise BaselineError(baseline, f"baseline {problem}")
        return [(baseline, report)], messages
    try:
        os.listdir(baseline)  # glob below says nothing of a directory it cannot read
    except OSError as exc:
        raise ReportError(baseline, f"baseline directory {os_problem(exc)}") from None
    candidates = sorted(baseline.glob("*.json"))
    if not candidates:
        messages.append(f"no baseline yet: {baseline} holds no reports; this run is not gated")
        return [], messages
    found: list[tuple[float, Path, dict[str, Any]]] = []
    unusable: list[str] = []
    other_total: list[str] = []
    for path in candidates:
        try:
            report = load(path)
        except ReportError as exc:
            unusable.append(str(exc))
            continue
        if report["device"]["fingerprint"] != fingerprint:
            continue
        if report["run_id"] == new_report["run_id"]:
            continue
        if not report["tests"]:
            unusable.append(f"{path}: has no test results")
            continue
        problem = not_comparable(total_definition(report), new_total)
        if problem is not None:
            other_total.append(f"{path}: {problem}")
            continue
        found.append((_started(report), path, report))
    if not found and (unusable or other_total):
        raise BaselineError(baseline, _none_usable(len(candidates), unusable, other_total, label))
    messages.extend(f"skipped baseline candidate {why}" for why in unusable + other_total)
    if not found:
        messages.append(f"no baseline for this device ({label}, {fingerprint}) in {baseline}")
        return [], messages
    found.sort(key=lambda item: item[0], reverse=True)
    return [(path, report) for _, path, report in found[: max(1, runs)]], messages


def baseline_kind(baseline: Path) -> Literal["file", "directory"] | None:
    """What a baseline path is: a report file, a directory of reports, or None when
    nothing is there yet. Anything else (a pipe such as ``<(cat r.json)``, a device, a loop
    of links) is a :class:`ReportError`: read as a directory it would hold no reports, and
    the run would pass ungated."""
    allowed = "a baseline is a report file or a directory of reports"
    try:
        found = stat_input(baseline)
    except InputFileError as exc:
        raise ReportError(baseline, f"{exc.problem}; {allowed}") from None
    if found is None:
        return None
    if stat.S_ISDIR(found.st_mode):
        return "directory"
    if stat.S_ISREG(found.st_mode):
        return "file"
    raise ReportError(
        baseline, f"is {kind_of(found.st_mode)}; {allowed} (save the report to a file first)"
    )


def _none_usable(
    candidates: int, unusable: Sequence[str], other_total: Sequence[str], label: str
) -> str:
    listed = "".join(f"\n  {why}" for why in (*unusable, *other_total))
    advice = []
    if unusable:
        advice.append("fix or remove the files that cannot be read")
    if other_total:
        advice.append(
            "a run is judged only against runs whose total is defined alike: measure as "
            "they were measured, or keep such runs in a directory of their own"
        )
    return (
        f"no usable baseline for this run ({label}): {len(unusable) + len(other_total)} of "
        f"{candidates} reports here would be its baseline but cannot be:{listed}\n"
        + "; ".join(advice)
        + " (a first run is a directory without reports)"
    )


def find_baseline(
    baseline: Path,
    new_report: Mapping[str, Any],
    *,
    load: Callable[[Path], dict[str, Any]] = load_report,
) -> tuple[Path | None, dict[str, Any] | None, list[str]]:
    """The newest baseline report of :func:`find_baselines`: ``(path, report, messages)``,
    path and report None when there is none."""
    found, messages = find_baselines(baseline, new_report, runs=1, load=load)
    if not found:
        return None, None, messages
    return found[0][0], found[0][1], messages


def save_baseline(report_path: Path, baseline_dir: Path) -> Path:
    """Copy a valid, non-empty report into ``baseline_dir`` (created when missing) under a
    device-and-time name.

    Saving the same run twice is a no-op; a different file already at the name is refused.
    """
    report = load_report(report_path)
    require_tests(report, report_path)
    stamp = report["started_at"][:19].replace("-", "").replace(":", "").replace("T", "-")
    name = f"{device_slug(report['device'])}-{stamp}-{report['run_id'][:8]}.json"
    target = baseline_dir / name
    if target.exists():
        try:
            existing = load_report(target)
        except ReportError as exc:
            raise ReportError(target, f"exists and is not a report; not replaced ({exc})") from None
        if existing["run_id"] != report["run_id"]:
            raise ReportError(target, "exists and holds another run; not replaced")
        return target
    baseline_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, [Path(report_path).read_text(encoding="utf-8")])
    return target


def describe(baseline: Path, found: Sequence[Found]) -> str:
    """How a verdict names its baseline: the file, or the directory and how many runs."""
    if len(found) == 1:
        return str(found[0][0])
    return f"{baseline} ({len(found)} runs of this device, newest {found[0][0].name})"
