"""What ``edgeenergy measure`` and ``edgeenergy tegrastats-energy`` print: one window's
figures (``measure --seconds``), the table of a measured command's entries (``measure --
CMD``) and a tegrastats log's energy per rail."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..meters.tegrastats_log import RUNNING_AVERAGE_NOTE, LogEnergy
from ..words import counted
from .tables import Table, align, fixed

if TYPE_CHECKING:
    from ..meters.meter import WindowResult
    from ..run.records import TestEnergy


def window_text(w: WindowResult) -> str:
    """A few lines describing one window, for ``edgeenergy measure`` without --json."""
    lines = []
    if w.simulated:
        lines.append("SIMULATED (virtual board)")
    method = "rail " + w.total.rail if w.total.rail else "sum of rails"
    lines.append(
        f"{w.duration_s:.3f} s, {counted(w.samples, 'sample')}, "
        f"interval {fixed(w.interval_ms_mean, '.2f')} ms "
        f"(jitter {fixed(w.interval_ms_jitter, '.2f')} ms), sampler CPU {w.sampler_cpu_s:.4f} s"
    )
    total = w.total
    lines.append(
        f"total ({method}): {fixed(total.energy_j, '.4f')} J, mean {fixed(total.mean_w, '.3f')} W"
    )
    rails = [
        [
            name,
            f"{fixed(r.energy_j, '.4f')} J",
            f"mean {fixed(r.mean_w, '.3f')} W",
            f"INVALID: {w.invalid_rails[name]}" if name in w.invalid_rails else "",
        ]
        for name, r in w.rails.items()
    ]
    lines += align(rails, right={1}, indent="  ")
    if not w.valid:
        lines.append(f"INVALID: {w.invalid_reason}")
    if w.read_errors:
        lines.append("read errors: " + ", ".join(f"{k}={v}" for k, v in w.read_errors.items()))
    return "\n".join(lines)


COMMAND_COLUMNS = (
    "entry",
    "point",
    "runs",
    "energy J",
    "stdev J",
    "net J",
    "seconds",
    "mean W",
    "peak W",
    "J/item",
    "status",
)


def command_table(label: str, records: Sequence[TestEnergy], *, simulated: bool) -> Table:
    """The entries of a measured command (the whole command ``label``, then each window it
    marked), each with the means over the runs that exited 0."""
    rows: list[list[Any]] = []
    for rec in records:
        m = rec.metrics or {}

        def value(name: str, stat: str = "mean", m: dict[str, Any] = m) -> float | None:
            s = m.get(name, {}).get("stats")
            return s[stat] if s and m[name].get("value") is not None else None

        op = rec.operating_point
        rows.append(
            [
                rec.nodeid,
                op["id"] if op else "dvfs",
                len(rec.windows),
                value("energy_j"),
                value("energy_j", "stdev"),
                value("energy_net_j"),
                value("duration_s"),
                value("power_mean"),
                value("power_peak", "max"),
                value("energy_per_item"),
                rec.status if rec.validity is None or rec.validity["valid"] else "invalid",
            ]
        )
    said = " (SIMULATED virtual board)" if simulated else ""
    return Table(
        columns=list(COMMAND_COLUMNS),
        rows=rows,
        title=f"measured: {label}{said}; means over the runs that exited 0",
    )


def log_text(result: LogEnergy, source: str) -> str:
    """A tegrastats log's energy per rail and in total (``tegrastats-energy`` without
    --json)."""
    lines = [f"tegrastats log: {source}"]
    unusable = counted(result.read_errors, "unusable line")
    if result.valid:
        lines.append(
            f"{counted(result.samples, 'sample')} over {result.seconds:.3f} s "
            f"(interval {fixed(result.interval_ms, '.0f')} ms, from {result.time_source}), "
            f"{unusable}"
        )
    else:
        lines.append(f"INVALID: {result.invalid_reason} ({unusable})")
    how = f"rail {result.total_rail}" if result.total_rail else "sum of rails"
    rows = [["rail", "energy_j", "mean_w"]]
    rows += [
        [name, fixed(e.energy_j, ".3f"), fixed(e.mean_w, ".3f")] for name, e in result.rails.items()
    ]
    total = result.total
    rows.append(["total", fixed(total.energy_j, ".3f"), fixed(total.mean_w, ".3f"), f"({how})"])
    lines += align(rows, right={1, 2})
    lines.append(f"note: {RUNNING_AVERAGE_NOTE}")
    return "\n".join(lines)
