"""``--edge-only=FILE``: run only the tests whose node ids a file lists.

``edgeenergy ab`` runs its extra rounds with only the tests still undecided; it names them
in a file rather than rewriting the user's arguments (a node id holds characters that
``-k`` would read as an expression). Read once in ``pytest_configure`` (a missing or
unreadable file is a usage error), applied in ``pytest_collection_modifyitems``: the other
tests are deselected as ``-k`` deselects, and one line says how many were kept and which
listed ids were not collected.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ..inputfiles import InputFileError, read_text
from ..ranges import shown
from ..words import counted
from .options import SettingsError, only_file

MAX_ONLY_BYTES = 64 * 1024 * 1024
"""The largest ``--edge-only`` file read (a node id is rarely 200 bytes)."""
MAX_SHOWN_MISSING = 5
"""Ids listed but not collected named in the line (the rest counted)."""


@dataclass(frozen=True)
class OnlySelection:
    """The node ids of an ``--edge-only`` file, in its order."""

    path: Path
    ids: tuple[str, ...]


def read_selection(config: pytest.Config) -> OnlySelection | None:
    """The ``--edge-only`` file's ids (None when the option is not given);
    :class:`SettingsError` naming the option's source when the file cannot be read."""
    given = only_file(config)
    if given is None:
        return None
    path = Path(given.text)
    try:
        text = read_text(path, MAX_ONLY_BYTES, "a text file")
    except InputFileError as e:
        raise SettingsError(
            f"{given.origin}: {shown(given.text)} cannot be read: {e.problem}; give a file of "
            "test node ids, one per line"
        ) from None
    lines = (line.strip() for line in text.splitlines())
    ids = tuple(dict.fromkeys(line for line in lines if line and not line.startswith("#")))
    return OnlySelection(path, ids)


def deselect(config: pytest.Config, selection: OnlySelection, items: list[pytest.Item]) -> str:
    """Keep only the listed tests in ``items`` (the others reported as deselected);
    returns the line that says what was kept."""
    wanted = set(selection.ids)
    kept = [item for item in items if item.nodeid in wanted]
    dropped = [item for item in items if item.nodeid not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    total = len(kept) + len(dropped)
    line = f"edgeenergy: --edge-only {selection.path}: kept {len(kept)} of {counted(total, 'test')}"
    collected = {item.nodeid for item in kept}
    missing = [i for i in selection.ids if i not in collected]
    if missing:
        named = ", ".join(missing[:MAX_SHOWN_MISSING])
        more = len(missing) - MAX_SHOWN_MISSING
        line += f"; {counted(len(missing), 'listed id')} not collected: {named}"
        line += f" and {more} more" if more > 0 else ""
    return line
