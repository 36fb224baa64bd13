"""The regression gate at the end of a pytest session (``--edge-baseline``/``--edge-fail``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from .session import EnergySession


def run_gate(es: EnergySession, report_path: Path, tr: pytest.TerminalReporter | None) -> bool:
    """Compare this run with its baseline, save it as a baseline if asked; True on failure.

    A baseline of another device is never used: "no baseline for this device" is a message,
    not a failure.
    """
    from .report.gate import gate_against, render_verdict, save_baseline
    from .report.load import ReportError, load_report

    gate = es.gate
    if gate is None:
        return False
    lines: list[str] = []
    failed = False
    if gate.baseline is not None and (gate.fail or es.gate_overrides):
        try:
            report = load_report(report_path)
            verdict = gate_against(gate.baseline, report, gate.fail, es.gate_overrides)
        except (ReportError, OSError) as e:
            lines.append(f"edgeenergy gate: {e}")
            failed = True
        else:
            lines.extend(verdict.messages)
            lines.append(render_verdict(verdict, "table"))
            failed = verdict.failed
            lines.append(
                "edgeenergy gate: FAILED (significant regression)"
                if failed
                else "edgeenergy gate: passed"
            )
    if gate.save_baseline is not None:
        try:
            saved = save_baseline(report_path, gate.save_baseline)
            lines.append(f"edgeenergy: baseline saved to {saved}")
        except (ReportError, OSError) as e:
            lines.append(f"edgeenergy: baseline not saved: {e}")
    es.gate_lines = lines
    return failed
