"""What a gate decides: a row per test x expression (:class:`GateRow`), the verdict that
holds them (:class:`GateVerdict`), and the verdict of paired rounds (:class:`PairedVerdict`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from pytest_edgeenergy.words import counted

Verdict = Literal["regression", "improvement", "within", "insufficient", "no-baseline"]


class GateRow(NamedTuple):
    """One test x expression outcome (``change_pct`` is (new - baseline) / |baseline|)."""

    test_id: str
    metric: str
    statistic: str
    threshold: str
    baseline: float | None
    new: float | None
    change_pct: float | None
    p_value: float | None
    verdict: Verdict
    note: str = ""


@dataclass
class GateVerdict:
    """The outcome of one gate: a row per test x expression, a row per suite (operating
    point x relative expression, see the module docstring), and messages for the reader.

    ``strict``: ``insufficient`` rows fail the gate too. ``runs``: baseline runs read.
    """

    rows: list[GateRow] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    baseline: str = ""
    new: str = "this run"
    device_matched: bool = True
    suite: list[GateRow] = field(default_factory=list)
    strict: bool = False
    runs: int = 1
    suite_note: str = (
        "suite: the tests of one operating point judged together (geometric-mean change, "
        "one-sided Wilcoxon signed-rank over the per-test log-ratios)"
    )
    """How the suite rows were judged (a paired verdict says its own method)."""

    @property
    def regressions(self) -> int:
        """Regression rows, per test and per suite."""
        return self.count("regression") + self.suite_count("regression")

    @property
    def failed(self) -> bool:
        return self.regressions > 0 or (self.strict and self.count("insufficient") > 0)

    @property
    def matched(self) -> int:
        """Rows that found a baseline test."""
        return sum(1 for r in self.rows if r.verdict != "no-baseline")

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.rows if r.verdict == verdict)

    def suite_count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.suite if r.verdict == verdict)

    def failure_reason(self) -> str:
        """Why the gate failed, e.g. ``2 significant regressions``; empty when it passed."""
        reasons = []
        if self.regressions:
            reasons.append(f"{counted(self.regressions, 'significant regression')}")
        if self.strict and self.count("insufficient"):
            reasons.append(f"{self.count('insufficient')} insufficient, strict gate")
        return "; ".join(reasons)


@dataclass
class PairedVerdict(GateVerdict):
    """A :class:`GateVerdict` of paired rounds. ``undecided``: test ids that need
    more rounds (empty once all are decided or ``max_rounds`` is reached; while it is not
    empty the verdict is provisional). ``rounds``: rounds used per test id."""

    undecided: list[str] = field(default_factory=list)
    rounds: dict[str, int] = field(default_factory=dict)
