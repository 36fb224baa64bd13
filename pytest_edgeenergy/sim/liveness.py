"""Whether a virtual board is animated: without ``sim run`` its rail files never change.

The animator advances the ground-truth record's sequence number at every tick, so the
number read before and after a measurement tells whether anything animated the tree
meanwhile (an in-process :class:`~.runner.Animator` counts too).
"""

from __future__ import annotations

from pathlib import Path

from .truth import TruthUnavailable, read_truth


def truth_seq(root: Path) -> int | None:
    """The tree's ground-truth sequence number; None when it has no valid record."""
    try:
        return read_truth(root, attempts=10).seq
    except (TruthUnavailable, ValueError, KeyError):
        return None


def frozen_warning(root: Path, seq_before: int | None) -> str | None:
    """A warning when the virtual board under ``root`` did not tick since ``seq_before``."""
    seq_after = truth_seq(root)
    if seq_after is not None and seq_after != seq_before:
        return None
    return (
        f"the virtual board {root} was not animated during the measurement, so its readings "
        f"are frozen (the same values throughout); animate it with `edgeenergy sim run {root}` "
        "in another shell"
    )
