"""Every gate: the expression language (:mod:`.expr`), what a gate reads of a report
(:mod:`.view`), the verdict's types (:mod:`.model`), the independent-runs judge
(:mod:`.independent`) with its significance tests (:mod:`.stats`), the paired judge of A/B
rounds (:mod:`.paired`), and the one entry, :func:`judge` (:mod:`.entry`): a new run
against a source of earlier runs, :class:`BaselineDir` (a baseline file or directory),
:class:`BaselineReports` (runs already read), :class:`History` (the energy history) or
:class:`AbRounds` (an A/B run). ``edgeenergy compare`` walks its reports in command-line
order (:mod:`.compare`) and judges each through it.

Rendering a verdict for people is :mod:`pytest_edgeenergy.present.verdict`'s. Nothing heavy
is imported here: the entry is imported on first use, and scipy inside the tests that need
it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["AbRounds", "BaselineDir", "BaselineReports", "History", "judge"]

if TYPE_CHECKING:
    from .entry import AbRounds, BaselineDir, BaselineReports, History, judge


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import entry

        return getattr(entry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
