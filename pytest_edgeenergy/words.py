"""Wording: counted nouns (``1 test``, ``2 tests``), names made visible (``<U+202E>``)."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (``plural`` for irregular nouns)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def visible(text: str) -> str:
    """``text`` with every character that prints nothing or moves what follows (a bidi
    override such as U+202E, a zero-width space, a newline, a control character: what
    Python does not call printable) written as ``<U+202E>``, so that a name shown in a
    table or a page cannot pass for another or break the lines around it."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else f"<U+{ord(ch):04X}>" for ch in text)
