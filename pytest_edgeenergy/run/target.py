"""The board a session measures: :class:`~pytest_edgeenergy.options_spec.BoardTarget`, read
from its text (``sim:MODEL``, ``auto``, a root directory) by
:func:`~pytest_edgeenergy.options_spec.parse_board`, and the virtual board made for it.

``sim:MODEL`` makes a virtual board for the session (a temporary tree, animated by a child
process that watches its parent) and removes it at the end; ``auto`` is the machine's own
board (root ``/``); a directory is a board tree (a Jetson's ``/``, a virtual board made by
``edgeenergy sim create``, a fixture). The same words as ``--edge-board``/``--edge-root``
in pytest and ``--board``/``--root`` in the ``edgeenergy`` command.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import ExitStack
from pathlib import Path

from ..options_spec import BoardTarget, parse_board

__all__ = ["board_target", "make_virtual_board"]


def board_target(board: BoardTarget | str | Path) -> BoardTarget:
    """``board`` as a target: one already read, or its text or root directory read by
    :func:`~pytest_edgeenergy.options_spec.parse_board` (a board tree's directory allowed)."""
    return board if isinstance(board, BoardTarget) else parse_board(board, trees=True)


def make_virtual_board(model: str, stack: ExitStack, *, load: float | None = None) -> Path:
    """Write a virtual ``model`` board into a new temporary directory and animate it; the
    ``stack`` stops the animator and removes the tree (in that order). ``load`` (0..1) pins
    the board's utilisation; None follows the host's CPU load."""
    from ..sim.runner import SimProcess
    from ..sim.tree import create

    root = Path(tempfile.mkdtemp(prefix=f"edgeenergy-sim-{model}-"))
    stack.callback(shutil.rmtree, root, True)
    create(model, root, load=load)
    stack.enter_context(SimProcess(root, owns_tree=True))
    return root
