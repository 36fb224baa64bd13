"""The one interface every power or energy source implements.

A source has a fixed list of channels (rails, or e.g. ``package-0`` for RAPL). The sampler
calls :meth:`PowerSource.read` from its own thread and timestamps each reading with
``time.monotonic()``; a push-style source (a live ``tegrastats``) may block in ``read``
until its next value arrives.

Two kinds of quantity exist:

* ``"power_w"``: each reading is instantaneous power per channel in watts (INA3221, INA238,
  tegrastats, jtop, NVML power); windows integrate it (trapezoid).
* ``"energy_j"``: each reading is a cumulative energy counter per channel in joules, already
  unwrapped (RAPL ``energy_uj``, NVML total energy); windows take differences.

A source whose channels nest (RAPL ``core`` inside ``package-0``) may declare an optional
``sum_channels`` attribute: the channels whose sum is the total when there is no total
channel. Without it the total is the sum of all channels.

A source whose reading is one ``pread`` of each of a fixed set of open files (the INA rails)
may also implement :class:`PreadSource`: the sampler then reads the files itself, with no
Python call per file, and decodes the texts in batches off the sampling slot. Its channels
fail one by one: a reading whose file of one rail failed still gives the other rails
(:class:`PartialReading`), and the meter also reads it synchronously at window edges.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, runtime_checkable

from ..board.types import TotalMethod
from ..errors import EdgeEnergyError

Quantity = Literal["power_w", "energy_j"]


class ReadError(Exception):
    """One reading failed (EAGAIN, EIO, empty or garbage text, a vanished file).

    The sampler drops that sample, counts it under ``reason`` and carries on.
    """

    def __init__(self, channel: str, reason: str) -> None:
        super().__init__(f"{channel}: {reason}")
        self.channel = channel
        self.reason = reason


class PartialReading(ReadError):
    """Some channels of a reading failed; the others are good.

    ``values`` has one entry per channel, NaN for each failed one; ``failures`` lists
    ``(channel, reason)`` in channel order. The sampler keeps the good values and counts
    the failures per channel; as a :class:`ReadError` it names the first failed channel.
    """

    def __init__(self, values: list[float], failures: list[tuple[str, str]]) -> None:
        super().__init__(failures[0][0], failures[0][1])
        self.args = (", ".join(f"{ch}: {reason}" for ch, reason in failures),)
        self.values = values
        self.failures = failures

    @property
    def all_failed(self) -> bool:
        return all(math.isnan(v) for v in self.values)


class FailedFile(NamedTuple):
    """Stands in a reading's texts for a file whose pread failed (``reason``: errno name,
    ``vanished``, ``closed``); :meth:`PreadSource.decode` fails that file's channel only."""

    reason: str


class SourceUnavailable(EdgeEnergyError, OSError):
    """The source cannot be used on this machine; the message says why and what to do."""


@runtime_checkable
class PowerSource(Protocol):
    """A source of readings for a fixed set of channels."""

    @property
    def name(self) -> str:
        """Short id used by ``--edge-source``: ina, tegrastats, jtop, nvml or rapl."""

    @property
    def quantity(self) -> Quantity: ...

    @property
    def channels(self) -> tuple[str, ...]: ...

    @property
    def total_channel(self) -> str | None:
        """The channel that is the whole input, or None when the total is the sum."""

    @property
    def total_method(self) -> TotalMethod: ...

    @property
    def min_interval_s(self) -> float | None:
        """Shortest useful sampling period (the sensor's update period), None if unknown."""

    @property
    def simulated(self) -> bool:
        """True when the readings come from a virtual board."""

    def read(self) -> Sequence[float]:
        """One value per channel, in :attr:`channels` order. Raises :class:`ReadError`."""

    def close(self) -> None: ...


PreadFn = Callable[[int, int, int], bytes]
"""Signature of :func:`os.pread`: ``(fd, length, offset) -> bytes``."""


@dataclass(frozen=True)
class PreadPlan:
    """What one reading of a :class:`PreadSource` is: ``pread(fd, size, 0)`` of each fd.

    The descriptors stay valid (same numbers) until the source is closed; a file found
    replaced is reopened onto the same number.
    """

    fds: tuple[int, ...]
    size: int
    pread: PreadFn
    maintain_interval_s: float
    """How often :meth:`PreadSource.maintain` is due; 0 means before every reading."""


@runtime_checkable
class PreadSource(PowerSource, Protocol):
    """A :class:`PowerSource` whose ``read`` is ``decode`` of one pread per file."""

    def pread_plan(self) -> PreadPlan: ...

    def decode(self, raw: Sequence[bytes | FailedFile]) -> list[float]:
        """Values per channel from the texts read by the plan (a :class:`FailedFile` where a
        pread failed). Raises :class:`PartialReading` when some channels failed, and
        :class:`ReadError` when the whole reading is unusable. Safe to call from any
        thread."""

    def read_failed(self, index: int, exc: OSError) -> ReadError:
        """The error for an OS failure of the pread of ``plan.fds[index]``."""

    def maintain(self) -> tuple[int, ...]:
        """Periodic upkeep (reopen replaced files); call from one thread only. Returns the
        plan positions of the files to fail as ``vanished`` in the reading in progress
        (a file found gone or replaced: the values read since it changed may be stale)."""


def pread_each(
    fds: Sequence[int], size: int, pread: PreadFn, failed: Callable[[int, OSError], ReadError]
) -> tuple[bytes | FailedFile, ...]:
    """One reading file by file: the slow path once a reading's single ``map`` of preads
    raised. A file that fails again becomes a :class:`FailedFile`; the others are read."""
    out: list[bytes | FailedFile] = []
    for index, fd in enumerate(fds):
        try:
            out.append(pread(fd, size, 0))
        except OSError as exc:
            out.append(FailedFile(failed(index, exc).reason))
    return tuple(out)


VANISHED = FailedFile("vanished")


def mark_vanished(
    raw: tuple[bytes | FailedFile, ...], positions: Sequence[int]
) -> tuple[bytes | FailedFile, ...]:
    """``raw`` with the files at plan ``positions`` failed as ``vanished``."""
    if not positions:
        return raw
    return tuple(VANISHED if k in positions else text for k, text in enumerate(raw))
