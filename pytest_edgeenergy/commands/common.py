"""What several verbs share: the usage error, and the board a command names
(``--board auto|sim:MODEL`` or ``--root DIR``, the words of ``--edge-board`` and
``--edge-root``). Cheap to import: the virtual board's process imports it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EdgeEnergyError

if TYPE_CHECKING:
    from ..run.target import BoardTarget


class CliError(EdgeEnergyError):
    """Bad input: printed as ``edgeenergy: <message>`` with exit status 2."""


def board_arguments(parser: argparse.ArgumentParser) -> None:
    """``--board auto|sim:MODEL`` or ``--root DIR``: the words of ``--edge-board`` and
    ``--edge-root``."""
    from ..options_spec import add_arguments

    where = parser.add_mutually_exclusive_group()
    add_arguments(where, ["board", "root"])


def target(args: argparse.Namespace) -> BoardTarget:
    """The board ``--board``/``--root`` name (root ``/`` when neither is given)."""
    from ..run.target import BoardTarget, parse_board

    if args.board is not None and args.board != "auto":
        return parse_board(args.board, what="--board")
    root = args.root if args.root is not None else Path("/")
    need_root(root)
    return BoardTarget(root=root)


def need_root(root: Path) -> None:
    if not root.is_dir():
        raise CliError(f"--root {root}: not a directory")
