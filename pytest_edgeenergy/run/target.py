"""Which board a session measures: ``sim:MODEL``, ``auto`` or a root directory.

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
from dataclasses import dataclass
from pathlib import Path

from ..board.generations import MODEL_NAMES
from ..errors import InvalidValue

__all__ = ["SIM_PREFIX", "BoardTarget", "make_virtual_board", "parse_board"]

SIM_PREFIX = "sim:"


@dataclass(frozen=True)
class BoardTarget:
    """A board to open: a virtual board's model, or a root directory."""

    sim_model: str | None = None
    root: Path | None = None
    """The board tree; None for a virtual board (made when opened)."""

    @property
    def text(self) -> str:
        """How the board was named: ``sim:orin-nano``, ``auto`` (root ``/``) or the root."""
        if self.sim_model is not None:
            return SIM_PREFIX + self.sim_model
        return "auto" if self.root is None or self.root == Path("/") else str(self.root)


def parse_board(board: str | Path, *, what: str = "board") -> BoardTarget:
    """The board ``board`` names; :class:`InvalidValue` naming ``what`` and what is allowed
    when it is neither ``auto``, ``sim:MODEL`` nor an existing directory."""
    if isinstance(board, Path):
        return _root(board, str(board), what)
    if not isinstance(board, str):
        raise InvalidValue(f"{what} {board!r}: {_ALLOWED}")
    text = board.strip()
    if text == "auto":
        return BoardTarget(root=Path("/"))
    if text.startswith(SIM_PREFIX):
        model = text[len(SIM_PREFIX) :]
        if model not in MODEL_NAMES:
            raise InvalidValue(
                f"{what} {text!r}: unknown virtual board {model!r}; allowed: "
                + ", ".join(SIM_PREFIX + m for m in MODEL_NAMES)
            )
        return BoardTarget(sim_model=model)
    if not text:
        raise InvalidValue(f"{what} {board!r}: {_ALLOWED}")
    return _root(Path(text), text, what)


_ALLOWED = (
    "use 'auto' (this machine's board), 'sim:MODEL' (a virtual board; MODEL one of "
    + ", ".join(MODEL_NAMES)
    + ") or a board tree's directory"
)


def _root(root: Path, text: str, what: str) -> BoardTarget:
    if not root.is_dir():
        raise InvalidValue(f"{what} {text!r}: not a directory; {_ALLOWED}")
    return BoardTarget(root=root)


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
