"""The units of change: a file write or a tool call, and a read-back mismatch.

Knobs *plan* a list of steps; a :class:`StepRunner` carries them out. The default runner
writes directly; the session's runner records each step in the state file first, and a
dry-run runner only prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO

from ..safefs import open_nofollow


@dataclass(frozen=True)
class Write:
    """Write ``value`` to ``path`` (absolute, under the root); ``old_value`` as read."""

    path: Path
    value: str
    old_value: str | None
    knob: str = ""

    def describe(self, root: Path | None = None) -> str:
        shown = _shown(self.path, root)
        return f"{shown}: {self.old_value if self.old_value is not None else '?'} -> {self.value}"


@dataclass(frozen=True)
class ToolCall:
    """Run a board tool (``nvpmodel``, ``jetson_clocks``) as an argument list."""

    argv: tuple[str, ...]
    input: str | None = None
    knob: str = ""
    description: str = ""

    def describe(self, root: Path | None = None) -> str:
        del root
        text = " ".join(self.argv)
        return f"run {text}" + (f"  ({self.description})" if self.description else "")


Step = Write | ToolCall


@dataclass(frozen=True)
class Mismatch:
    """A knob file whose read-back differs from what was written."""

    path: Path
    expected: str
    actual: str | None
    knob: str = ""

    def describe(self, root: Path | None = None) -> str:
        return (
            f"{_shown(self.path, root)}: expected {self.expected}, "
            f"read {self.actual if self.actual is not None else '(unreadable)'}"
        )


def _shown(path: Path, root: Path | None) -> str:
    if root is None:
        return str(path)
    try:
        return "/" + str(path.relative_to(root))
    except ValueError:
        return str(path)


def read_value(path: Path) -> str | None:
    """The file's text stripped of whitespace, or None when unreadable."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace").strip()
    except OSError:
        return None


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` in one ``write`` call (sysfs wants that); never creates a file and
    never writes through a final symbolic link (:class:`~pytest_edgeenergy.safefs.OutsideError`)."""
    fd = open_nofollow(path, os.O_WRONLY | os.O_TRUNC, what="the knob file")
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(f"{path}: short write ({written} of {len(data)} bytes)")
    finally:
        os.close(fd)


def value_bytes(value: str) -> bytes:
    """Kernel-style content: the value and one newline."""
    return (value if value.endswith("\n") else value + "\n").encode()


@dataclass(frozen=True)
class ToolResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run_tool(call: ToolCall, *, timeout_s: float = 120.0) -> ToolResult:
    """Run ``call.argv`` (never a shell string) and capture its output."""
    try:
        proc = subprocess.run(
            list(call.argv),
            input=call.input if call.input is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise OSError(f"{' '.join(call.argv)}: no answer after {timeout_s:g} s") from exc
    return ToolResult(call.argv, proc.returncode, proc.stdout, proc.stderr)


class StepRunner(Protocol):
    """Carries out steps; knobs call it so a session can journal and a dry run can print."""

    def write(self, step: Write) -> None: ...

    def call(self, step: ToolCall) -> ToolResult | None:
        """Run the tool; None in a dry run."""


Guard = Callable[[Path], None]


class DirectRunner:
    """Writes and runs at once; every write path is checked by ``guard`` first."""

    def __init__(self, guard: Guard) -> None:
        self._guard = guard

    def write(self, step: Write) -> None:
        self._guard(step.path)
        write_bytes(step.path, value_bytes(step.value))

    def call(self, step: ToolCall) -> ToolResult | None:
        return run_tool(step)


class DryRunner:
    """Prints every step (``path: old -> new``) and makes none."""

    def __init__(self, guard: Guard, root: Path, out: TextIO | None = None) -> None:
        self._guard = guard
        self._root = root
        self._out = out
        self.steps: list[Step] = []

    def _print(self, text: str) -> None:
        print(f"edgeenergy dry-run: {text}", file=self._out or sys.stdout)

    def write(self, step: Write) -> None:
        self._guard(step.path)
        self.steps.append(step)
        self._print(step.describe(self._root))

    def call(self, step: ToolCall) -> ToolResult | None:
        self.steps.append(step)
        self._print(step.describe(self._root))
        return None
