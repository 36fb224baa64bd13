"""Tolerant readers for sysfs-style files under a root.

Every reader returns None instead of raising when a file is missing, unreadable (EACCES,
EAGAIN from a power-gated block, EIO) or holds garbage: discovery must never crash on a
half-populated board tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import EdgeEnergyError

_CPU_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


class CpuListError(EdgeEnergyError, ValueError):
    """A kernel CPU list (``0,3-5``) could not be parsed."""


def read_text(path: Path) -> str | None:
    """Return the file's text without surrounding whitespace or NULs, or None."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    return raw.decode("utf-8", errors="replace").strip().strip("\0").strip()


def read_int(path: Path) -> int | None:
    """Return the file's integer value, or None when missing or not an integer."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def read_ints(path: Path) -> tuple[int, ...] | None:
    """Return whitespace-separated integers (e.g. a frequency table), or None."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return tuple(int(tok) for tok in text.split())
    except ValueError:
        return None


def read_words(path: Path) -> tuple[str, ...] | None:
    """Return whitespace-separated words (e.g. available governors), or None."""
    text = read_text(path)
    if text is None:
        return None
    return tuple(text.split())


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """Parse a kernel CPU list such as ``0,3-5`` into sorted CPU numbers.

    An empty string is an empty list (``/sys/devices/system/cpu/offline`` when none is).
    Raises :class:`CpuListError` on anything else.
    """
    stripped = text.strip()
    if not stripped:
        return ()
    cpus: set[int] = set()
    for part in stripped.split(","):
        match = _CPU_RANGE_RE.match(part.strip())
        if match is None:
            raise CpuListError(
                f"CPU list {text!r}: bad item {part!r}; allowed: N or N-M separated by commas"
            )
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise CpuListError(f"CPU list {text!r}: range {part!r} runs backwards")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def format_cpu_list(cpus: tuple[int, ...] | list[int]) -> str:
    """Format CPU numbers the way the kernel does (``0,3-5``)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def relative_to_root(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` as a string, for reports; the path itself if outside."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
