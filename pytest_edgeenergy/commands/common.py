"""What several verbs share: the usage error, and the board a command names
(``--board auto|sim:MODEL`` or ``--root DIR``, the words of ``--edge-board`` and
``--edge-root``, read by their one description). Cheap to import: the virtual board's
process imports it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EdgeEnergyError

if TYPE_CHECKING:
    from ..options_spec import BoardTarget


class CliError(EdgeEnergyError):
    """Bad input: printed as ``edgeenergy: <message>`` with exit status 2."""


def board_arguments(parser: argparse.ArgumentParser) -> None:
    """``--board auto|sim:MODEL`` or ``--root DIR``: the words of ``--edge-board`` and
    ``--edge-root``."""
    from ..options_spec import add_arguments

    where = parser.add_mutually_exclusive_group()
    add_arguments(where, ["board", "root"])


def target(args: argparse.Namespace) -> BoardTarget:
    """The board ``--board``/``--root`` name, as their types read it (the board under ``/``
    when neither is given)."""
    from ..options_spec import BoardTarget

    board = args.board
    if isinstance(board, BoardTarget) and board.sim_model is not None:
        return board
    return BoardTarget(root=args.root if args.root is not None else Path("/"))
