"""Human-readable text: the terminal summary table and one window's figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..words import counted
from .run_warnings import RunView, run_warnings

if TYPE_CHECKING:
    from ..board.detect import Board
    from ..meters.meter import WindowResult


class SessionView(RunView, Protocol):
    """What the summary reads of a session (:class:`.session.EnergySession` is one)."""

    @property
    def board(self) -> Board | None: ...

    @property
    def point_order(self) -> Sequence[str]: ...

    @property
    def report_path(self) -> Path | None: ...

    @property
    def report_errors(self) -> Sequence[str]: ...


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def board_line(es: SessionView) -> str:
    """One line naming the board, how its total is formed and the idle baseline."""
    b = es.board
    if b is None:
        return "board: not set up"
    ident = b.identity
    name = ident.model or "unknown board"
    if ident.simulated:
        name = f"virtual {ident.sim_model} ({name}) SIMULATED"
    total = (
        f"total = rail {b.rails.total_rail}"
        if b.rails.total_rail is not None
        else "total = sum of rails (no module-input rail)"
    )
    idle = ""
    if es.idle is not None:
        idle = f"; idle {es.idle.power_w:.3f} W"
    return f"board: {name}; L4T {ident.l4t or '-'}; {total}{idle}"


def summary_lines(es: SessionView) -> list[str]:
    """The energy table printed after the test session."""
    rows = [("test", "window", "status", "s", "energy J", "net J", "mean W", "samples", "valid")]
    benched = skipped = 0
    for rec in es.tests.values():
        if rec.metrics is not None and rec.extra.get("runs"):  # in the benchmark table
            benched += 1
            continue
        if not rec.windows:
            skipped += rec.status == "skipped"
            if rec.status not in ("skipped", None):
                rows.append((rec.nodeid, "-", rec.status, "-", "-", "-", "-", "0", "-"))
            continue
        flags = _point_flags(rec.operating_point)
        for w in rec.windows:
            rows.append(
                (
                    rec.nodeid,
                    w.label,
                    rec.status or "-",
                    _fmt(w.duration_s, ".3f"),
                    _fmt(w.total.energy_j, ".4f"),
                    _fmt(w.net_energy_j, ".4f"),
                    _fmt(w.total.mean_w, ".3f"),
                    str(w.samples),
                    validity_text(w) + flags,
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    out = [board_line(es)]
    if len(rows) > 1:
        for r in rows:
            out.append(
                "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
            )
    if benched:
        out.append(
            f"{counted(benched, 'test')} measured with edge_bench: see the benchmark table below"
        )
    if skipped:
        out.append(f"{counted(skipped, 'test')} skipped before measuring (reasons: pytest -rs)")
    out.extend(f"WARNING: {w['message']}" for w in run_warnings(es))
    if es.point_order:
        out.append("operating points in run order: " + " -> ".join(es.point_order))
    if es.report_path is not None:
        out.append(f"report: {es.report_path}")
    out.extend(f"REPORT ERROR: {e}" for e in es.report_errors)
    return out


def _point_flags(info: dict[str, Any] | None) -> str:
    """Marks for an operating point that did not read back as pinned or drifted."""
    if not info:
        return ""
    out = ""
    if info.get("dry_run"):
        out += " (dry run: not pinned)"
    elif not info.get("verified", True):
        out += f" (NOT VERIFIED: {'; '.join(map(str, info.get('mismatches') or []))})"
    drift = info.get("drift")
    if drift:
        out += f" (DRIFT: {'; '.join(map(str, drift))})"
    return out


def validity_text(w: WindowResult) -> str:
    """``yes`` or ``INVALID: why``, then each rail that failed on its own (unless the
    reason already names it: the total rail, or a rail of a sum)."""
    reason = w.invalid_reason or ""
    rails = [
        f"rail {name} INVALID: {why}"
        for name, why in w.invalid_rails.items()
        if f"rail {name}:" not in reason and f"rail {name} (" not in reason
    ]
    if w.valid:
        return "yes" + (f" ({'; '.join(rails)})" if rails else "")
    return "; ".join([f"INVALID: {reason}", *rails])


def window_text(w: WindowResult) -> str:
    """A few lines describing one window, for ``edgeenergy measure`` without --json."""
    lines = []
    if w.simulated:
        lines.append("SIMULATED (virtual board)")
    method = "rail " + w.total.rail if w.total.rail else "sum of rails"
    lines.append(
        f"{w.duration_s:.3f} s, {counted(w.samples, 'sample')}, "
        f"interval {_fmt(w.interval_ms_mean, '.2f')} ms "
        f"(jitter {_fmt(w.interval_ms_jitter, '.2f')} ms), sampler CPU {w.sampler_cpu_s:.4f} s"
    )
    lines.append(
        f"total ({method}): {_fmt(w.total.energy_j, '.4f')} J, mean {_fmt(w.total.mean_w, '.3f')} W"
    )
    for name, r in w.rails.items():
        line = f"  {name:<20} {_fmt(r.energy_j, '.4f')} J  mean {_fmt(r.mean_w, '.3f')} W"
        if name in w.invalid_rails:
            line += f"  INVALID: {w.invalid_rails[name]}"
        lines.append(line)
    if not w.valid:
        lines.append(f"INVALID: {w.invalid_reason}")
    if w.read_errors:
        lines.append("read errors: " + ", ".join(f"{k}={v}" for k, v in w.read_errors.items()))
    return "\n".join(lines)
