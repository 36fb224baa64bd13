"""Human-readable text: the terminal summary table and one window's figures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..run.warnings import RunView, run_warnings
from ..words import counted

if TYPE_CHECKING:
    from ..board.detect import Board
    from ..meters.meter import WindowResult
    from ..run.records import TestEnergy


class SessionView(RunView, Protocol):
    """What the summary reads of a session (:class:`.session.PluginSession` is one)."""

    @property
    def board(self) -> Board | None: ...

    @property
    def point_order(self) -> Sequence[str]: ...

    @property
    def report_path(self) -> Path | None: ...

    @property
    def report_errors(self) -> Sequence[str]: ...


def _fmt(x: float | None, spec: str) -> str:
    """``x`` in ``spec``; a value that rounds to zero has no sign (float dust of a
    difference, -1.4e-14 J, reads 0.0000, not -0.0000)."""
    if x is None:
        return "-"
    text = format(x, spec)
    return text[1:] if text.startswith("-") and float(text) == 0 else text


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
    """The energy table printed after the test session, then the counts
    (:func:`count_lines`), warnings, the run order of operating points and the report."""
    rows = [("test", "window", "status", "s", "energy J", "net J", "mean W", "samples", "valid")]
    for rec in es.tests.values():
        if _kind(rec) == "benched":  # in the benchmark table
            continue
        if not rec.windows:
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
    out.extend(count_lines(es.tests.values()))
    out.extend(f"WARNING: {w['message']}" for w in run_warnings(es))
    if es.point_order:
        out.append("operating points in run order: " + " -> ".join(es.point_order))
    if es.report_path is not None:
        out.append(f"report: {es.report_path}")
    out.extend(f"REPORT ERROR: {e}" for e in es.report_errors)
    return out


def _kind(rec: TestEnergy) -> str:
    """Where a test's figures are shown: ``benched`` (its runs are rows of the benchmark
    table), ``windows`` (its windows are rows of the energy table), ``row`` (it measured
    nothing and has one row there: failed, error, or a test that only pinned a point),
    ``skipped`` (skipped before measuring: no row) or ``none`` (recorded, no outcome
    reported: no row)."""
    if rec.metrics is not None and rec.extra.get("runs"):
        return "benched"
    if rec.windows:
        return "windows"
    if rec.status == "skipped":
        return "skipped"
    return "none" if rec.status is None else "row"


_OUTCOMES = ("passed", "failed", "error", "skipped", "not run")


def _outcome(status: str | None) -> str:
    """pytest's outcome of a recorded status: ``invalid`` (a passed test whose measurement
    is invalid) counts as passed, as pytest counts it; None (no outcome reported) is
    ``not run``."""
    if status in (None, "skipped", "failed", "error"):
        return status or "not run"
    return "passed"


def count_lines(records: Iterable[TestEnergy]) -> list[str]:
    """What became of the tests that used the board, counted so that the numbers add up:
    a first line by pytest's outcome (as its own last line counts them), then each test
    once by where its figures are (benchmark table, energy table, none)."""
    recs = list(records)
    if not recs:
        return []
    outcomes = Counter(_outcome(r.status) for r in recs)
    parts = [
        counted(outcomes[o], o) if o == "error" else f"{outcomes[o]} {o}"
        for o in _OUTCOMES
        if outcomes[o]
    ]
    invalid = sum(r.status == "invalid" for r in recs)
    if invalid:
        parts[0] += f" ({invalid} of them measured INVALID)"
    lines = [
        f"{counted(len(recs), 'test')} used the board (energy, edge_bench or "
        f"operating_point): {', '.join(parts)}"
    ]
    by_kind: dict[str, list[TestEnergy]] = {}
    for r in recs:
        by_kind.setdefault(_kind(r), []).append(r)
    benched = by_kind.get("benched", [])
    if benched:
        runs = sum(len(r.extra["runs"]) for r in benched)
        lines.append(
            f"{counted(len(benched), 'test')} measured with edge_bench: "
            f"{counted(runs, 'run')}, {_each(runs)} in the benchmark table below" + _others(benched)
        )
    windowed = by_kind.get("windows", [])
    if windowed:
        windows = sum(len(r.windows) for r in windowed)
        lines.append(
            f"{counted(len(windowed), 'test')} measured in energy windows: "
            f"{counted(windows, 'window')}, {_each(windows)} in the table above" + _others(windowed)
        )
    ended = by_kind.get("row", [])
    if ended:
        lines.append(
            f"{counted(len(ended), 'test')} measured nothing "
            f"({', '.join(sorted({str(r.status) for r in ended}))}): {_each(len(ended))} "
            "in the table above"
        )
    skipped = by_kind.get("skipped", [])
    if skipped:
        lines.append(
            f"{counted(len(skipped), 'test')} skipped before measuring (reasons: pytest -rs)"
        )
    never = by_kind.get("none", [])
    if never:
        lines.append(f"{counted(len(never), 'test')} not run to the end (no outcome)")
    return lines


def _each(n: int) -> str:
    return "one row" if n == 1 else "one row each"


def _others(recs: Sequence[TestEnergy]) -> str:
    """`` (1 then skipped)``: how many of ``recs`` did not pass after measuring."""
    counts = Counter(_outcome(r.status) for r in recs)
    said = {"failed": "then failed", "error": "then erred", "skipped": "then skipped"}
    text = ", ".join(f"{counts[o]} {said[o]}" for o in said if counts[o])
    return f" ({text})" if text else ""


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
