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
Python call per file, and decodes the texts in batches off the sampling slot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from ..board.types import TotalMethod

Quantity = Literal["power_w", "energy_j"]


class ReadError(Exception):
    """One reading failed (EAGAIN, EIO, empty or garbage text, a vanished file).

    The sampler drops that sample, counts it under ``reason`` and carries on.
    """

    def __init__(self, channel: str, reason: str) -> None:
        super().__init__(f"{channel}: {reason}")
        self.channel = channel
        self.reason = reason


class SourceUnavailable(OSError):
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

    def decode(self, raw: Sequence[bytes]) -> list[float]:
        """Values per channel from the texts read by the plan. Raises :class:`ReadError`."""

    def read_failed(self, index: int, exc: OSError) -> ReadError:
        """The error for an OS failure of the pread of ``plan.fds[index]``."""

    def maintain(self) -> None:
        """Periodic upkeep (reopen replaced files). Raises :class:`ReadError` when it
        finds a file gone: the reading in progress is dropped."""
