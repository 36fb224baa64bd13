"""The gates of ``edgeenergy compare``: each report, in command-line order, against
``--baseline`` (a file or a directory of earlier runs) or, without one, against the latest
earlier report of its device."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from pytest_edgeenergy.report.baselines import describe, find_baselines
from pytest_edgeenergy.report.load import ReportError, load_report
from pytest_edgeenergy.verdict.expr import GateExpr
from pytest_edgeenergy.verdict.independent import evaluate_views
from pytest_edgeenergy.verdict.model import GateVerdict
from pytest_edgeenergy.verdict.view import GateView, expr_metrics, gate_view, require_carried


class Gated(Protocol):
    """What the gates read of a report (a comparison's
    :class:`~pytest_edgeenergy.present.compare.Digest`): its header, its gated metrics and its
    device's label."""

    @property
    def header(self) -> dict[str, Any]: ...

    @property
    def gate(self) -> GateView | None: ...

    @property
    def label(self) -> str: ...


class CompareGates:
    """The gates of a comparison, one report at a time in command-line order."""

    def __init__(
        self, exprs: Sequence[GateExpr], baseline: Path | None, *, strict: bool = False
    ) -> None:
        self.exprs = exprs
        self.baseline = baseline
        self.strict = strict
        self.needs = expr_metrics(exprs)
        self.verdicts: list[GateVerdict] = []
        self.messages: list[str] = []
        self.count = 0
        self.latest: dict[str, tuple[str, GateView | None]] = {}
        self.loaded: dict[Path, dict[str, Any] | ReportError] = {}
        self.views: dict[Path, GateView] = {}

    def _load(self, path: Path) -> dict[str, Any]:
        # One read per baseline file, however many reports look for their baseline.
        if path not in self.loaded:
            try:
                self.loaded[path] = load_report(path)
            except ReportError as exc:
                self.loaded[path] = exc
        found = self.loaded[path]
        if isinstance(found, ReportError):
            raise found
        return found

    def add(self, name: str, new: Gated) -> None:
        """Gate ``new`` if it has a baseline; raises ReportError or GateExprError."""
        first = self.count == 0
        self.count += 1
        assert new.gate is not None  # digested with the gated metrics
        if self.baseline is not None or not first:
            require_carried(new.gate, self.exprs, name)
        base_view: GateView | list[GateView]
        if self.baseline is not None:
            found, messages = find_baselines(self.baseline, new.header, load=self._load)
            self.messages.extend(messages)
            if not found:
                return
            base_name = describe(self.baseline, found)
            for path, base_report in found:
                if path not in self.views:
                    self.views[path] = gate_view(base_report, self.needs)
            base_view = [self.views[path] for path, _ in found]
        else:
            fingerprint = new.header["device"]["fingerprint"]
            earlier = self.latest.get(fingerprint)
            self.latest[fingerprint] = (name, new.gate)
            if first:
                return
            if earlier is None:
                self.messages.append(
                    f"no baseline for this device: no earlier report of {new.label} "
                    f"before {name}; not gated"
                )
                return
            base_name, earlier_view = earlier
            assert earlier_view is not None  # digested with the gated metrics
            base_view = earlier_view
        verdict = evaluate_views(
            base_view,
            new.gate,
            self.exprs,
            strict=self.strict,
            baseline_name=base_name,
            new_name=name,
        )
        gated = [r for r in verdict.rows if r.verdict != "no-baseline"]
        if verdict.rows and not gated:
            raise ReportError(
                base_name,
                f"baseline has no results matching {name} (same device, but none of "
                "its tests at the same operating points); wrong baseline?",
            )
        self.verdicts.append(verdict)
