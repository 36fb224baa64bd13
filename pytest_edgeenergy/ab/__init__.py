"""``edgeenergy ab``: the two versions of a project measured interleaved on one board.

A gate against runs made hours earlier sees the board's drift between them (thermals,
DVFS, background load) as much as the change. ``edgeenergy ab`` measures both versions
in the same minutes: round 1 runs A (base) then B (head), round 2 B then A, and so on
(ABBA: a steady drift cancels over two rounds), every session with the same pytest
arguments, so at the same operating point. The board's lock is held by the ``ab`` process
for all rounds; its pytest sessions run inside it (the hand-off of
:mod:`pytest_edgeenergy.control.state`), and nothing else measures in between.

After ``--rounds`` rounds the paired verdict (:func:`pytest_edgeenergy.verdict.paired.
paired_verdict`) pairs round i of A with round i of B per test; tests it cannot decide yet
get more rounds, one at a time and only them (``--edge-only``), up to ``--max-rounds``.

Modules: :mod:`.pytest_args` (what ab reads from and refuses in the pytest arguments),
:mod:`.checkout` (a git ref as a temporary worktree, a directory as is), :mod:`.board`
(the board: a virtual one made for the run, the lock), :mod:`.rounds` (the sessions),
:mod:`.driver` (a live run, and the pairing of saved reports for ``--reports``; the
command is :mod:`pytest_edgeenergy.commands.ab`).
"""

from __future__ import annotations

from ..errors import EdgeEnergyError
from ..safefs import Terminated as Terminated  # SIGTERM as an interrupt: cleanup as Ctrl-C


class AbError(EdgeEnergyError):
    """Bad input for ``edgeenergy ab`` (exit 2): the message names the thing and what is
    allowed."""
