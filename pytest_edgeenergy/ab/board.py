"""The one board of an A/B run: opened (or made) once, locked for all rounds.

With ``--edge-board=sim:MODEL`` ab writes ONE virtual board tree and animates it with one
simulator process for the whole run (each session would otherwise make its own board, and
nothing would be shared or locked); it is removed afterwards. Otherwise the board is the
tree of ``--edge-root``, or ``/``. Either way ab takes the board's lock
(:class:`~pytest_edgeenergy.control.state.StateLock`) with a hand-off token and keeps it
until the last session has ended; the sessions, given the token, run inside it. When the
board's lock directory cannot be written, the run goes on unprotected, as a pytest session
does (it says so).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from ..control.state import (
    STATE_IN_ROOT,
    StateLock,
    choose_state_path,
    new_handoff_token,
    state_dir_problem,
)
from ..sim.runner import SimProcess
from ..sim.tree import create
from .pytest_args import PytestArgs


@dataclass(frozen=True)
class AbBoard:
    """The board every session of the run measures."""

    root: Path
    name: str
    """For messages: ``sim:orin-nano (virtual, made for this run)`` or the root."""
    token: str
    """The hand-off token the sessions get (:func:`pytest_edgeenergy.handoff.give`)."""
    unprotected: str | None = None
    """Why the board is not locked (its lock directory cannot be written); None: locked."""


def open_board(args: PytestArgs, stack: ExitStack, *, say: Callable[[str], None]) -> AbBoard:
    """Make or find the board, lock it; ``stack`` releases the lock, stops the simulator
    and removes a virtual board made here (in that order)."""
    if args.sim_model is not None:
        root = Path(tempfile.mkdtemp(prefix=f"edgeenergy-ab-{args.sim_model}-"))
        stack.callback(shutil.rmtree, root, True)
        create(args.sim_model, root, load=args.sim_load)
        stack.enter_context(SimProcess(root, owns_tree=True))
        load = "host load" if args.sim_load is None else f"load {args.sim_load:g}"
        name = f"sim:{args.sim_model} (virtual, {load}, made for this run at {root})"
    else:
        root = args.root if args.root is not None else Path("/")
        name = str(root)
    token = new_handoff_token()
    problem = state_dir_problem(root)
    if problem is not None:
        why = f"the board's lock directory {(root / STATE_IN_ROOT).parent} {problem}"
        say(
            f"WARNING: {why}; the sessions run unprotected: another session may measure or "
            "pin the board between them"
        )
        return AbBoard(root, name, token, why)
    state_path = choose_state_path(root)
    lock = StateLock(state_path, root=root, handoff=token)
    lock.acquire(
        who="edgeenergy ab",
        timeout_s=args.lock_timeout_s,
        on_wait=lambda line: say(f"{line} (--edge-lock-timeout)"),
    )
    stack.callback(_release, lock, state_path)
    return AbBoard(root, name, token)


def _release(lock: StateLock, state_path: Path) -> None:
    lock.release(remove=not state_path.exists())
    with contextlib.suppress(OSError):
        state_path.parent.rmdir()  # only when empty, as a session leaves it
