"""A text stream that hands every complete line to a callback.

Code that prints to a stream (``print(..., file=out)``) can so reach the user through the
plugin's way of saying a line at once, past pytest's output capture.
"""

from __future__ import annotations

import io
from collections.abc import Callable


class LineWriter(io.StringIO):
    """``print(text, file=LineWriter(say))`` calls ``say(text)`` once the line ends."""

    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__()
        self._say = say
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._say(line)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            line, self._pending = self._pending, ""
            self._say(line)
