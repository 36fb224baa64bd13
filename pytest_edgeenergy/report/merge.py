"""Shard reports of several boards merged into one report per device model (the command:
``edgeenergy merge``).

Reports are grouped by device model (model, module, SoC, virtual board model); one group
makes one merged report, which loads, compares and gates like any other. Inside a group
the inputs must be comparable, else :class:`MergeError` names the field and both values:
the schema version as written, the software (L4T, JetPack, kernel, nvpmodel.conf,
Python, torch, torchvision, pytest-edgeenergy, the git commit) and the total energy's
definition (:func:`.baselines.total_definition`, as the gate checks it).

Every result keeps the board that measured it (``board``: a label, the run id, its shard,
its idle power, its host name and serial number: net figures are less each board's own
idle, so they stay as measured). A
key (:func:`.keys.join_key`) measured again, on another board or in another shard, is
kept whole in ``merged.duplicates`` (the first input's result stays in ``tests``, listing
the other boards in ``duplicates``), and ``merged.spread`` holds the board-to-board spread
of its main metric, which ``edgeenergy compare`` prints. Inputs are taken in the order
given; the first decides which result of a key is in ``tests``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EdgeEnergyError
from .baselines import not_comparable, total_definition
from .keys import JoinKey, join_key
from .load import check_report, read_json
from .model import device_slug

__all__ = ["MergeError", "Merged", "board_label", "merge", "merge_reports", "model_key"]

SPREAD_METRICS = ("energy_per_item", "energy_j")
"""The metric whose board-to-board spread is shown: the first of these a result has."""

COMPARED_FIELDS = (
    ("device", "l4t"),
    ("device", "jetpack"),
    ("device", "kernel"),
    ("device", "nvpmodel_conf_sha256"),
    ("software", "python"),
    ("software", "torch"),
    ("software", "torchvision"),
    ("tool", "version"),
)
"""Fields that must be equal in every merged report (besides the schema, total and git)."""


class MergeError(EdgeEnergyError, ValueError):
    """Reports that cannot be merged; the message names the field and both values."""


@dataclass(frozen=True)
class Input:
    """One report to merge, as read (``written_version``: before any migration)."""

    path: str
    report: dict[str, Any]
    written_version: int


@dataclass(frozen=True)
class Merged:
    """One merged report and the device model it holds."""

    slug: str
    report: dict[str, Any]


MODEL_FIELDS = ("model", "module", "soc", "simulated", "sim_model")
"""The ``device`` fields that make two boards 'the same model' (software is checked apart)."""


def model_key(device: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes two boards 'the same model' (their software is checked apart)."""
    return tuple(
        bool(device.get(f)) if f == "simulated" else device.get(f) for f in MODEL_FIELDS
    )


def _models_named(merged: Sequence[Merged]) -> str:
    """The device models of ``merged`` in words; models of one name (``sim-orin-nano``
    twice) with the fields they differ in and the first report of each."""
    slugs = [m.slug for m in merged]
    if len(set(slugs)) == len(slugs):
        return ", ".join(slugs)
    devices = [m.report["device"] for m in merged]
    differ = [f for f in MODEL_FIELDS if len({repr(d.get(f)) for d in devices}) > 1]
    return ", ".join(
        f"{m.slug} ({', '.join(f'device.{f} {d.get(f)!r}' for f in differ)}, from "
        f"{m.report['merged']['inputs'][0]['path']})"
        for m, d in zip(merged, devices, strict=True)
    )


def board_label(report: Mapping[str, Any]) -> str:
    """A board's name in a merged report: a real board's host name (else its serial
    number), a virtual board's model (theirs are their model's), then ``@`` and the head of
    the run's id: ``jetson-3@3f2a1b9c``, ``sim-orin-nano@3f2a1b9c``."""
    host = report.get("host") or {}
    name = None if report["device"]["simulated"] else host.get("hostname") or host.get("serial")
    return f"{name or device_slug(report['device'])}@{str(report['run_id'])[:8]}"


def read_input(path: Path | str) -> Input:
    """Read and validate one report; :class:`.load.ReportError` names the file."""
    doc = read_json(Path(path))  # the loader of compare, history and ab, before migration
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    report = check_report(doc, path)
    return Input(str(path), report, version if isinstance(version, int) else 0)


def _check_comparable(first: Input, other: Input) -> None:
    def refuse(field: str, a: object, b: object) -> None:
        raise MergeError(
            f"{field} differs: {a!r} in {first.path}, {b!r} in {other.path}; merge only "
            "runs of the same software on boards of the same model"
        )

    if first.written_version != other.written_version:
        refuse("schema_version", first.written_version, other.written_version)
    for section, name in COMPARED_FIELDS:
        a = (first.report.get(section) or {}).get(name)
        b = (other.report.get(section) or {}).get(name)
        if a != b:
            refuse(f"{section}.{name}", a, b)
    git_a, git_b = first.report.get("git"), other.report.get("git")
    if git_a is not None and git_b is not None and git_a["commit"] != git_b["commit"]:
        refuse("git.commit", git_a["commit"], git_b["commit"])
    total_a, total_b = total_definition(first.report), total_definition(other.report)
    if not_comparable(total_a, total_b) is not None or total_a != total_b:
        refuse("total (device.total, settings.edge_source)", total_a.describe(), total_b.describe())


def _spread(key_tests: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The board-to-board spread of one key's results (None: no metric they all have)."""
    for name in SPREAD_METRICS:
        values: dict[str, float] = {}
        unit = ""
        for test in key_tests:
            metric = test["metrics"].get(name)
            if metric is None or metric.get("value") is None:
                break
            label = test["board"]["label"]
            while label in values:  # the same board twice (a run given twice is refused)
                label += "'"
            values[label] = float(metric["value"])
            unit = str(metric["unit"])
        else:
            low, high = min(values.values()), max(values.values())
            mean = sum(values.values()) / len(values)
            pct = 100.0 * (high - low) / abs(mean) if mean else 0.0
            return {
                "test": key_tests[0]["id"],
                "metric": name,
                "unit": unit,
                "values": values,
                "spread_pct": pct,
            }
    return None


def _with_board(test: Mapping[str, Any], inp: Input) -> dict[str, Any]:
    entry = dict(test)
    if "board" not in entry:  # a result of an earlier merge keeps its board
        report = inp.report
        idle = report.get("idle")
        shard = report.get("shard")
        entry["board"] = {
            "label": board_label(report),
            "run_id": report["run_id"],
            "shard": shard["index"] if shard else None,
            "idle_power_w": idle["power_w"] if idle else None,
        }
        host = report.get("host")
        if host is not None:
            entry["board"].update(hostname=host["hostname"], serial=host["serial"])
    return entry


def _merge_group(inputs: Sequence[Input]) -> dict[str, Any]:
    first = inputs[0]
    for other in inputs[1:]:
        _check_comparable(first, other)
    tests: list[dict[str, Any]] = []
    primary: dict[JoinKey, dict[str, Any]] = {}
    again: dict[JoinKey, list[dict[str, Any]]] = {}
    duplicates: list[dict[str, Any]] = []
    for inp in inputs:
        earlier = inp.report.get("merged") or {}
        for test in [*inp.report["tests"], *earlier.get("duplicates", ())]:
            entry = _with_board(test, inp)
            entry.pop("duplicates", None)
            key = join_key(entry)
            if key not in primary:
                primary[key] = entry
                tests.append(entry)
            else:
                again.setdefault(key, []).append(entry)
                duplicates.append(entry)
    spread = []
    for key, others in again.items():
        head = primary[key]
        head["duplicates"] = [o["board"]["label"] for o in others]
        s = _spread([head, *others])
        if s is not None:
            spread.append(s)
    idles = [inp.report.get("idle") for inp in inputs]
    dropped = ("tests", "shard", "merged", "host")  # per board: kept in each result
    header = {k: v for k, v in first.report.items() if k not in dropped}
    header.update(
        run_id=uuid.uuid4().hex,
        started_at=min(inp.report["started_at"] for inp in inputs),
        finished_at=_finished(inputs),
        command_line=["edgeenergy", "merge", *(inp.path for inp in inputs)],
        # One board's idle cannot stand for all: each result keeps its own (``board``).
        idle=idles[0] if all(i == idles[0] for i in idles) else None,
        warnings=_warnings(inputs),
    )
    header["settings"] = {
        k: v for k, v in header["settings"].items() if k not in ("edge_shard", "edge_report")
    }
    header.pop("incomplete", None)
    header.pop("search", None)
    header.pop("ab", None)
    header["merged"] = {
        "inputs": [
            {
                "board": board_label(inp.report),
                "run_id": inp.report["run_id"],
                "path": inp.path,
                "tests": len(inp.report["tests"]),
                "shard": inp.report.get("shard"),
                "idle": inp.report.get("idle"),
            }
            for inp in inputs
        ],
        "duplicates": duplicates,
        "spread": spread,
    }
    return {**header, "tests": tests}


def _finished(inputs: Sequence[Input]) -> str | None:
    """The last input's end; null when any input did not finish."""
    ends = [inp.report.get("finished_at") for inp in inputs]
    if any(e is None for e in ends):
        return None
    return max(str(e) for e in ends)


def _warnings(inputs: Sequence[Input]) -> list[dict[str, str]]:
    out = []
    for inp in inputs:
        for w in inp.report.get("warnings") or ():
            out.append({"kind": w["kind"], "message": f"{board_label(inp.report)}: {w['message']}"})
    return out


def merge(inputs: Sequence[Input]) -> list[Merged]:
    """One merged report per device model among ``inputs`` (in the order first seen);
    :class:`MergeError` when a group's reports are not comparable or a run is given
    twice."""
    seen: dict[str, str] = {}
    groups: dict[tuple[Any, ...], list[Input]] = {}
    for inp in inputs:
        run_id = inp.report["run_id"]
        if run_id in seen:
            raise MergeError(
                f"{inp.path}: the same run ({run_id}) as {seen[run_id]}; give each report once"
            )
        seen[run_id] = inp.path
        groups.setdefault(model_key(inp.report["device"]), []).append(inp)
    out = []
    for group in groups.values():
        merged = _merge_group(group)
        out.append(Merged(device_slug(group[0].report["device"]), merged))
    return out


def merge_reports(paths: Sequence[Path | str]) -> list[Merged]:
    """Read, validate and :func:`merge` report files."""
    return merge([read_input(p) for p in paths])


def _targets(merged: Sequence[Merged], out: Path) -> list[Path]:
    if out.suffix == ".json":
        if len(merged) > 1:
            raise MergeError(
                f"-o {out}: the reports hold {len(merged)} device models "
                f"({_models_named(merged)}); give -o DIR to write one merged report per model"
            )
        return [out]
    if out.exists() and not out.is_dir():
        raise MergeError(f"-o {out}: not a directory (and not a .json file)")
    names: list[Path] = []
    for m in merged:
        name = out / f"{m.slug}.json"
        n = 2
        while name in names:  # two models of one slug
            name = out / f"{m.slug}-{n}.json"
            n += 1
        names.append(name)
    return names


def write_merged(merged: Sequence[Merged], out: Path, *, overwrite: bool = False) -> list[Path]:
    """Validate and write each merged report (atomically); the paths written."""
    from .schema import validate
    from .writer import atomic_write_text

    targets = _targets(merged, out)
    for path in targets:
        if path.exists() and not overwrite:
            raise MergeError(f"{path}: exists; choose another -o, or pass --overwrite")
    for m, path in zip(merged, targets, strict=True):
        validate(m.report)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, [json.dumps(m.report, indent=1), "\n"])
    return targets


MAX_SPREAD_NOTES = 10
"""``compare`` names this many keys measured on several boards (largest spread first)."""


def spread_notes(name: str, header: Mapping[str, Any]) -> list[str]:
    """``compare``'s notes on a merged report's keys measured on several boards: the
    board-to-board spread of each (none for a report that is not merged)."""
    merged = header.get("merged")
    if not merged or not merged["spread"]:
        return []
    from ..words import counted

    spread = sorted(merged["spread"], key=lambda s: (-s["spread_pct"], s["test"]))
    lines = [
        f"{name}: {counted(len(spread), 'result')} measured on several boards "
        "(board-to-board spread, largest first):"
    ]
    for s in spread[:MAX_SPREAD_NOTES]:
        values = ", ".join(f"{board} {v:.4g}" for board, v in s["values"].items())
        lines.append(
            f"  {s['test']}: {s['metric']} {values} {s['unit']}: spread {s['spread_pct']:.1f}%"
        )
    if len(spread) > MAX_SPREAD_NOTES:
        lines.append(f"  and {len(spread) - MAX_SPREAD_NOTES} more")
    return lines
