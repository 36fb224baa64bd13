"""Allowed ranges of the numbers a user gives: plugin options, ``edgeenergy`` arguments.

Every numeric option has one range type here, so that each number is read the same way:
parsed, finite, inside its range, else refused with a message that names the value and the
range (``'nan' must be > 0 and <= 7200 s``). The plugin prefixes where the value came from
(``--edge-settle-s (command line): ...``); argparse prefixes the argument. A range is also an
argparse ``type=``: a refused value is a usage error (exit 2), never a traceback or a run
without end (``time.sleep(inf)``, a sampler with a 28-hour period).

Cheap to import (standard library only): pytest reads the option tables on every run.
"""

from __future__ import annotations

import argparse
import math
import re
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from .errors import InvalidValue

__all__ = ["FloatRange", "IntRange", "NumberRange", "shown"]

T = TypeVar("T", int, float)

_SHOWN_CHARS = 40
"""A refused value is quoted in at most this many characters (a pasted file is not echoed)."""
_DIGITS_RE = re.compile(r"\s*[+-]?\d[\d_]*\s*")


def shown(text: str) -> str:
    """``text`` quoted for a message in at most :data:`_SHOWN_CHARS` characters (cut with
    ``...``; escapes such as ``\\x00`` count as the characters they print)."""
    quoted = repr(text)
    if len(quoted) <= _SHOWN_CHARS:
        return quoted
    n = min(len(text), _SHOWN_CHARS)
    while len(quoted := repr(text[:n] + "...")) > _SHOWN_CHARS:
        n -= 1  # ends by n == 0 at the latest: "'...'"
    return quoted


def _number_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class NumberRange(Generic[T]):
    """``low <= x <= high`` (``low < x`` with ``above_low``), in ``unit``."""

    low: float
    high: float
    unit: str = ""
    above_low: bool = False
    """The low end itself is refused (``> 0``: a duration that must pass)."""

    kind: ClassVar[str] = "number"

    @property
    def bounds(self) -> str:
        """``> 0 and <= 7200 s``."""
        unit = f" {self.unit}" if self.unit else ""
        low_op = ">" if self.above_low else ">="
        return f"{low_op} {_number_text(self.low)} and <= {_number_text(self.high)}{unit}"

    def describe(self) -> str:
        """``a finite number > 0 and <= 7200 s`` (for help texts and messages)."""
        return f"a {self.kind} {self.bounds}"

    def contains(self, x: float) -> bool:
        above = x > self.low if self.above_low else x >= self.low
        return above and x <= self.high

    def parse(self, text: str) -> T:
        """The number in ``text``; :class:`~.errors.InvalidValue` naming the value and the
        range when it is not a number of this kind or lies outside."""
        raise NotImplementedError

    def _outside(self, text: str) -> InvalidValue:
        return InvalidValue(f"{shown(text)} must be {self.bounds}")

    def __call__(self, text: str) -> T:
        """As an argparse ``type=``: a refused value becomes argparse's usage error."""
        try:
            return self.parse(text)
        except InvalidValue as e:
            raise argparse.ArgumentTypeError(str(e)) from None


@dataclass(frozen=True)
class FloatRange(NumberRange[float]):
    """A finite decimal number in a range (``nan`` and ``inf`` never are)."""

    kind: ClassVar[str] = "finite number"

    def parse(self, text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            problem = f"{shown(text)} is not a number; allowed: {self.describe()}"
            raise InvalidValue(problem) from None
        if not (math.isfinite(x) and self.contains(x)):
            raise self._outside(text)
        return x


@dataclass(frozen=True)
class IntRange(NumberRange[int]):
    """A whole number in a range (``1e3`` and ``2.0`` are refused: counts are written plain)."""

    kind: ClassVar[str] = "whole number"

    def parse(self, text: str) -> int:
        try:
            x = int(text)
        except ValueError:
            if _DIGITS_RE.fullmatch(text):  # more digits than int() converts: far outside
                raise self._outside(text) from None
            raise InvalidValue(
                f"{shown(text)} is not a whole number; allowed: {self.describe()}"
            ) from None
        if not self.contains(x):
            raise self._outside(text)
        return x
