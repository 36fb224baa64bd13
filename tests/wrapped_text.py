"""Text as it was before the notes under a table were wrapped to its width
(``present.tables.wrapped_notes``): for tests that look for a whole sentence of a note.
``from wrapped_text import unwrapped`` in a test module."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

_CONTINUATION = re.compile(r"\n {2,}")
"""A line break before a wrapped note's continuation (indented two spaces more)."""


def unwrapped(text: str) -> str:
    """``text`` with each wrapped note's continuation lines joined back to it."""
    return _CONTINUATION.sub(" ", text)


def unwrapped_lines(lines: Sequence[str]) -> pytest.LineMatcher:
    """``lines`` (pytester's ``result.outlines``) unwrapped, to match with ``fnmatch_lines``."""
    return pytest.LineMatcher(unwrapped("\n".join(lines)).splitlines())
