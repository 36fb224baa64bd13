"""Replaying recorded profiles: a CSV table or a sweep's report as an oracle.

A CSV names its knobs as the project does (any of :data:`~.space.KNOB_NAMES`) and carries
``time_s`` (per unit of work) with ``power_w`` (mean power) or ``energy_j`` (per unit of
work); other columns are ignored, ``#`` lines are comments. ``where`` keeps the rows whose
columns hold the given values (one workload of a table that holds several).

An interleaved training + inference workload (objective ``max-train-throughput``) adds
the metric columns :data:`METRIC_COLUMNS`: ``train_minibatches_per_s`` (training
minibatches per second of the window, >= 0) and ``latency_p99_s`` (inference latency
p99, s), with ``power_w`` (mean power of the window). Its ``batch_size`` column is the
inference batch size. ``time_s`` may be left out there: it is then 1 /
``train_minibatches_per_s`` (the unit of work is one training minibatch, so ``energy_j``
is the window's energy per training minibatch). :func:`check_columns` names a column the
objective needs and the table lacks.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidValue
from ..inputfiles import InputFileError, read_text, stat_input
from .driver import PointFailed
from .objective import LATENCY_P99, THROUGHPUT, Objective
from .space import CATEGORICAL, KNOB_NAMES, Knobs, KnobValue, Point, Space
from .trial import Trial

MAX_TABLE_BYTES = 64 * 1024 * 1024
"""The largest CSV table read (a profile of every point of a large grid is a few MB)."""
FIGURES = ("time_s", "power_w", "energy_j")
METRIC_COLUMNS = (THROUGHPUT, LATENCY_P99)
"""Named metrics a table may carry (each trial's :attr:`~.trial.Trial.metrics`)."""


class ReplayError(InvalidValue):
    """A replay file that cannot be used; the message names the file and the problem."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True)
class ReplayTable:
    """Every recorded point of one workload, and the space they span."""

    space: Space
    trials: tuple[Trial, ...]

    def by_point(self) -> dict[Point, Trial]:
        return {self.space.point(t.knobs): t for t in self.trials}


class ReplayOracle:
    """Answers a point with its recorded time and power; a point the table lacks fails."""

    def __init__(self, table: ReplayTable) -> None:
        self.table = table
        self._by_point = table.by_point()
        self.calls = 0

    def measure(self, knobs: Knobs) -> Trial:
        self.calls += 1
        trial = self._by_point.get(self.table.space.point(knobs))
        if trial is None:
            raise PointFailed(f"{knobs}: not in the replay table")
        return Trial(
            knobs=dict(knobs), time_s=trial.time_s, power_w=trial.power_w, metrics=trial.metrics
        )


def knob_value(name: str, text: str) -> KnobValue:
    """A knob's value from its text (an integer for every knob but ``power_mode``)."""
    if name in CATEGORICAL:
        if not text.strip():
            raise InvalidValue(f"{name}: empty value")
        return text.strip()
    try:
        number = float(text)
    except ValueError:
        raise InvalidValue(f"{name} {text!r}: not a number (an integer is expected)") from None
    if not math.isfinite(number) or number <= 0 or not number.is_integer():
        raise InvalidValue(f"{name} {text!r}: must be a positive integer")
    return int(number)


def _figure(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidValue(f"{name} {text!r}: not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise InvalidValue(f"{name} {text!r}: must be a positive number")
    return value


def _metric_figure(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidValue(f"{name} {text!r}: not a number") from None
    if not math.isfinite(value) or value < 0:
        raise InvalidValue(f"{name} {text!r}: must be a number >= 0")
    return value


def check_columns(table: ReplayTable, objective: Objective, source: str) -> None:
    """Refuse a table that lacks a column ``objective`` reads (named with the objective)."""
    for name in objective.needs:
        if not all(name in t.metrics for t in table.trials):
            raise ReplayError(
                source,
                f"objective {objective.name} needs column {name} (with "
                f"{', '.join(n for n in objective.needs if n != name)}, power_w and the knob "
                "columns); the table has no such column",
            )


def table_from_rows(
    rows: Sequence[Mapping[str, Any]], source: str, where: Mapping[str, str] | None = None
) -> ReplayTable:
    """A replay table from dict rows (CSV rows, or records made by an adapter)."""
    if not rows:
        raise ReplayError(source, "has no data rows")
    columns = list(rows[0])
    for key in where or {}:
        if key not in columns:
            raise ReplayError(
                source, f"--where {key}: no such column; columns: {', '.join(columns)}"
            )
    rows = [r for r in rows if all(str(r.get(k)) == v for k, v in (where or {}).items())]
    if not rows:
        raise ReplayError(source, f"no row matches --where {dict(where or {})}")
    knobs = [n for n in KNOB_NAMES if n in columns]
    if not knobs:
        raise ReplayError(
            source,
            f"no knob column; expected any of {', '.join(KNOB_NAMES)} (columns: "
            f"{', '.join(columns)})",
        )
    have = [f for f in FIGURES if f in columns]
    metrics = [m for m in METRIC_COLUMNS if m in columns]
    per_minibatch = "time_s" not in have and THROUGHPUT in metrics
    if per_minibatch and "power_w" not in have:
        raise ReplayError(
            source,
            f"needs column power_w with {THROUGHPUT} (the window's mean power); it has "
            f"{', '.join(columns)}",
        )
    if not per_minibatch and ("time_s" not in have or len(have) < 2):
        raise ReplayError(
            source, f"needs columns time_s and power_w (or energy_j); it has {', '.join(columns)}"
        )
    trials: list[Trial] = []
    seen: dict[tuple[KnobValue, ...], int] = {}
    for line, row in enumerate(rows, start=1):
        try:
            point = {n: knob_value(n, str(row[n])) for n in knobs}
            figures = {m: _metric_figure(m, str(row[m])) for m in metrics}
            if per_minibatch:
                throughput = figures[THROUGHPUT]
                if throughput <= 0:
                    raise InvalidValue(
                        f"{THROUGHPUT} {row[THROUGHPUT]!r}: must be positive without a "
                        "time_s column (time_s is 1 / minibatches per second)"
                    )
                time_s = 1.0 / throughput
            else:
                time_s = _figure("time_s", str(row["time_s"]))
            if "power_w" in have:
                power_w = _figure("power_w", str(row["power_w"]))
            else:
                power_w = _figure("energy_j", str(row["energy_j"])) / time_s
        except InvalidValue as exc:
            raise ReplayError(source, f"data row {line}: {exc}") from None
        point_key = tuple(point[n] for n in knobs)
        if point_key in seen:
            others = [
                c for c in columns if c not in knobs and c not in FIGURES and c not in metrics
            ]
            raise ReplayError(
                source,
                f"data rows {seen[point_key]} and {line} are the same point {point}: "
                + _same_point_advice(knobs, others),
            )
        seen[point_key] = line
        trials.append(Trial(knobs=point, time_s=time_s, power_w=power_w, metrics=figures))
    return ReplayTable(Space.from_points([t.knobs for t in trials]), tuple(trials))


def _same_point_advice(knobs: Sequence[str], others: Sequence[str]) -> str:
    """Why two rows can be one point, and what to do: the columns ``--where`` could keep
    one workload by, and the knob columns the table lacks (named as the options are)."""
    several = len(knobs) > 1
    said = (
        f"a table holds one row per point, and its knob {'columns' if several else 'column'} "
        f"{', '.join(knobs)} {'do' if several else 'does'} not tell them apart"
    )
    if others:
        said += (
            f"; rows of several workloads: keep one with --where COLUMN=VALUE (other "
            f"columns: {', '.join(others)})"
        )
    lacking = [n for n in KNOB_NAMES if n not in knobs]
    if lacking:
        said += (
            f"; a knob that differs between them needs its column, named as the option is "
            f"(the table has no column {', '.join(lacking)})"
        )
    elif not others:
        said += "; remove the repeated row"
    return said


def read_csv(path: Path, where: Mapping[str, str] | None = None) -> ReplayTable:
    """A replay table from a CSV file (see the module's docstring) of at most
    :data:`MAX_TABLE_BYTES`."""
    try:
        text = read_text(path, MAX_TABLE_BYTES, "a replay table (a CSV file)")
    except InputFileError as e:
        raise ReplayError(path, e.problem) from None
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    try:
        rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    except csv.Error as e:  # a NUL byte, a field over the csv module's limit
        raise ReplayError(path, f"is not a CSV table ({e})") from None
    return table_from_rows(rows, str(path), where)


def _metric(test: Mapping[str, Any], name: str) -> float | None:
    metric = test.get("metrics", {}).get(name)
    value = metric.get("value") if isinstance(metric, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def report_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per passed, valid, pinned test of a report: the knobs of its requested
    operating point and batch size, ``time_s`` (1 / throughput, else the window's duration)
    and ``energy_j`` (per item, else the window's), plus ``workload``, ``test`` and
    ``params`` to tell workloads apart."""
    from ..report.keys import params_key, test_name, workload_of

    rows: list[dict[str, Any]] = []
    for test in report["tests"]:
        if test.get("status") != "passed" or not (test.get("validity") or {}).get("valid"):
            continue
        params = test.get("params") or {}
        op = params.get("operating_point") or {}
        requested = op.get("requested") or {} if isinstance(op, Mapping) else {}
        knobs = {n: requested[n] for n in KNOB_NAMES if requested.get(n) is not None}
        if params.get("batch_size") is not None:
            knobs["batch_size"] = params["batch_size"]
        throughput = _metric(test, "throughput")
        time_s = 1.0 / throughput if throughput else _metric(test, "duration_s")
        energy_j = _metric(test, "energy_per_item") or _metric(test, "energy_j")
        if not knobs.keys() - {"batch_size"} or time_s is None or energy_j is None:
            continue  # the dvfs reference, or nothing measured
        rest = {k: v for k, v in params.items() if k not in ("operating_point", "batch_size")}
        rows.append(
            {
                **knobs,
                "time_s": time_s,
                "energy_j": energy_j,
                **_interleave_columns(test),
                "workload": workload_of(test),
                "test": test_name(test),
                "params": params_key(rest),
            }
        )
    return rows


def _interleave_columns(test: Mapping[str, Any]) -> dict[str, float]:
    """An interleaved test's metric columns and window power (``extra.interleave``; the
    batch size is its inference batch size), else nothing."""
    figures = (test.get("extra") or {}).get("interleave")
    if not isinstance(figures, Mapping):
        return {}
    out = {}
    for name in (*METRIC_COLUMNS, "power_w"):
        value = figures.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return {}
        out[name] = float(value)
    if out[THROUGHPUT] > 0:
        out["time_s"] = 1.0 / out[THROUGHPUT]  # the unit of work: one training minibatch
    return out


def read_report(path: Path, where: Mapping[str, str] | None = None) -> ReplayTable:
    """A replay table from a sweep's report (tests that pinned the same knobs)."""
    from ..report.load import load_report

    rows = report_rows(load_report(path))
    if not rows:
        raise ReplayError(path, "has no passed, valid test with a pinned operating point")
    names = {n for r in rows for n in KNOB_NAMES if n in r}
    rows = [r for r in rows if names <= r.keys()]
    if any(THROUGHPUT in r for r in rows):  # interleaved tests: those that carry the metrics
        rows = [r for r in rows if THROUGHPUT in r]
    return table_from_rows(rows, str(path), where)


def read_replay(path: Path, where: Mapping[str, str] | None = None) -> ReplayTable:
    """A CSV table or a report (``.json``)."""
    try:
        if stat_input(path) is None:
            raise ReplayError(path, "no such file")
    except InputFileError as e:
        raise ReplayError(path, e.problem) from None
    if path.suffix.lower() == ".json":
        return read_report(path, where)
    return read_csv(path, where)
