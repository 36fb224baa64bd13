"""Baselines on disk: a report file, or a directory of earlier reports of several devices.

A directory is searched for the reports of the new run's device (fingerprint); the newest
:data:`BASELINE_RUNS` of them are the baseline, so the gate sees their run-to-run spread.
A directory that does not exist yet or holds no report is "no baseline yet" (the first run
of a CI job), not an error; ``--edge-save-baseline`` creates it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_edgeenergy.report.load import ReportError, load_report, require_tests
from pytest_edgeenergy.report.model import device_label, device_slug, parse_timestamp
from pytest_edgeenergy.report.writer import atomic_write_text

BASELINE_RUNS = 5
"""How many of a device's newest reports in a baseline directory the gate reads."""

Found = tuple[Path, dict[str, Any]]


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
    device fingerprint (other runs than ``new_report``'s, holding tests).

    Returns ``(found, messages)``; ``found`` is empty when there is no baseline for this
    device or none yet (not an error). A missing path ending in ``.json`` and a baseline
    *file* that is not a valid report raise :class:`ReportError`; unreadable files in a
    directory are skipped with a message. ``load`` reads a report (a caching one when called
    often); ``new_report`` needs only its header (``device``, ``run_id``).
    """
    messages: list[str] = []
    fingerprint = new_report["device"]["fingerprint"]
    label = device_label(new_report["device"])
    if not baseline.exists():
        if baseline.suffix == ".json":
            raise ReportError(baseline, "baseline file does not exist")
        messages.append(f"no baseline yet: {baseline} does not exist; this run is not gated")
        return [], messages
    if baseline.is_file():
        report = load(baseline)
        require_tests(report, baseline)
        if report["device"]["fingerprint"] != fingerprint:
            messages.append(
                f"no baseline for this device: {baseline} is from "
                f"{device_label(report['device'])}, this run is on {label}; not gated"
            )
            return [], messages
        return [(baseline, report)], messages
    candidates = sorted(baseline.glob("*.json"))
    if not candidates:
        messages.append(f"no baseline yet: {baseline} holds no reports; this run is not gated")
        return [], messages
    found: list[tuple[float, Path, dict[str, Any]]] = []
    for path in candidates:
        try:
            report = load(path)
        except ReportError as exc:
            messages.append(f"skipped baseline candidate {exc}")
            continue
        if report["device"]["fingerprint"] != fingerprint or not report["tests"]:
            continue
        if report["run_id"] == new_report["run_id"]:
            continue
        found.append((_started(report), path, report))
    if not found:
        messages.append(f"no baseline for this device ({label}, {fingerprint}) in {baseline}")
        return [], messages
    found.sort(key=lambda item: item[0], reverse=True)
    return [(path, report) for _, path, report in found[: max(1, runs)]], messages


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
