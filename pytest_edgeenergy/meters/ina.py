"""INA3221 (iio and hwmon) and INA238 rails read straight from sysfs.

Every file is opened once and re-read with ``pread(fd, 64, 0)``: sysfs regenerates an
attribute's text on each read at offset 0, so no reopen is needed, which makes a sample a
few syscalls instead of an open/read/close per file (see :func:`naive_read_w`). A reading
is :meth:`InaSource.decode` of those texts; the sampler does the preads itself and decodes
in batches (:class:`~.source.PreadSource`). A rail whose file fails or reads garbage fails
alone: decode gives NaN for it and the other rails' watts (:class:`~.source.PartialReading`).
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..board.types import Rail, RailMap, TotalMethod
from .source import (
    FailedFile,
    PartialReading,
    PreadFn,
    PreadPlan,
    Quantity,
    ReadError,
    SourceUnavailable,
    mark_vanished,
    pread_each,
)

READ_SIZE = 64
NEGATIVE_LIMIT_W = -0.5
"""Rail power below this is nonsense, not shunt noise around 0 A; it is a read error."""
MAX_PLAUSIBLE_W = 5000.0
"""Rail power above this is a corrupt reading (the largest Jetson input is ~170 W)."""
VANISH_CHECK_INTERVAL_S = 1.0


def parse_int(data: bytes) -> int | str:
    """Integer in a sysfs attribute's text, or the error reason ``"empty"``/``"garbage"``.

    Accepts padding (``b"     1234\\n"``) and a trailing unit (``b"32760 ma"``): the first
    whitespace-separated token is the value.
    """
    try:
        return int(data)
    except ValueError:
        pass
    tokens = data.split()
    if not tokens:
        return "empty"
    try:
        return int(tokens[0])
    except ValueError:
        return "garbage"


def _decode_int(ch: _Channel, data: bytes | FailedFile) -> int:
    try:
        return int(data)  # type: ignore[arg-type]  # the common case, at C speed
    except (TypeError, ValueError):
        pass
    if isinstance(data, FailedFile):
        raise ReadError(ch.name, data.reason)
    value = parse_int(data)
    if isinstance(value, str):
        raise ReadError(ch.name, value)
    return value


def _errno_reason(exc: OSError) -> str:
    if exc.errno is None:
        return "OSError"
    return errno.errorcode.get(exc.errno, f"errno{exc.errno}")


class _Channel:
    """One rail's open files. ``fd_b`` is -1 when the rail has a power file; ``index_a``
    and ``index_b`` are their positions in the source's pread plan."""

    __slots__ = (
        "fd_a",
        "fd_b",
        "index_a",
        "index_b",
        "name",
        "paths",
        "scale",
        "stats",
        "vanished",
    )

    def __init__(self, name: str, paths: tuple[Path, ...], scale: float) -> None:
        self.name = name
        self.paths = paths
        self.scale = scale
        self.fd_a = -1
        self.fd_b = -1
        self.index_a = -1
        self.index_b = -1
        self.stats: list[tuple[int, int]] = []
        self.vanished = False

    @property
    def fds(self) -> list[int]:
        return [self.fd_a] if self.fd_b < 0 else [self.fd_a, self.fd_b]

    def open(self) -> None:
        fds = _open_all(self.paths)
        self.stats = [(st.st_dev, st.st_ino) for st in (os.fstat(fd) for fd in fds)]
        self.fd_a = fds[0]
        self.fd_b = fds[1] if len(fds) > 1 else -1
        self.vanished = False

    def reopen(self) -> None:
        """Open the paths again onto the same descriptor numbers (``dup2``), so a reader
        holding the numbers never reads a closed or reused descriptor. OSError if absent."""
        fresh = _open_all(self.paths)
        try:
            stats = [(st.st_dev, st.st_ino) for st in (os.fstat(fd) for fd in fresh)]
            for new, old in zip(fresh, self.fds, strict=True):
                os.dup2(new, old)
        finally:
            for fd in fresh:
                os.close(fd)
        self.stats = stats
        self.vanished = False

    def close(self) -> None:
        for fd in (self.fd_a, self.fd_b):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd_a = self.fd_b = -1

    def is_gone(self) -> bool:
        """True when a file was removed or replaced since it was opened."""
        for fd, path, (dev, ino) in zip(self.fds, self.paths, self.stats, strict=True):
            try:
                if os.fstat(fd).st_nlink == 0:
                    return True
                st = os.stat(path)
            except OSError:
                return True
            if (st.st_dev, st.st_ino) != (dev, ino):
                return True
        return False


def _open_all(paths: Iterable[Path]) -> list[int]:
    fds: list[int] = []
    try:
        for path in paths:
            fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def _validate(rails: RailMap) -> None:
    if not rails.rails:
        raise SourceUnavailable("no INA rails: the rail map is empty (no power monitor found)")
    names = rails.names
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"rail names must be unique, duplicated: {', '.join(dupes)}")
    if rails.total_rail is not None and rails.total_rail not in names:
        raise ValueError(
            f"total rail {rails.total_rail!r} is not one of the rails: {', '.join(names)}"
        )


def _scale(rail: Rail) -> float:
    # hwmon INA3221: mV x mA = µW.
    return rail.power_scale_w if rail.power_file is not None else 1e-6


class InaSource:
    """PowerSource over INA3221/INA238 rails; one pread per file per sample."""

    def __init__(
        self,
        rails: RailMap,
        *,
        simulated: bool = False,
        pread: PreadFn = os.pread,
        vanish_check_interval_s: float = VANISH_CHECK_INTERVAL_S,
    ) -> None:
        """Open every rail file. ``pread`` replaces the OS call only (tests inject errnos).

        Raises :class:`SourceUnavailable` when the map is empty or a file cannot be opened.
        """
        _validate(rails)
        self._rails = rails
        self._simulated = simulated
        self._pread = pread
        self._check_interval_s = vanish_check_interval_s
        self._next_check = 0.0
        self._closed = False
        self._channels = [_Channel(r.name, r.files, _scale(r)) for r in rails.rails]
        for ch in self._channels:
            try:
                ch.open()
            except OSError as exc:
                self.close()
                hint = " (run as root or grant read access)" if exc.errno == errno.EACCES else ""
                raise SourceUnavailable(
                    f"cannot open {exc.filename or ch.paths} for rail {ch.name}: "
                    f"{exc.strerror}{hint}"
                ) from exc
        owners: list[_Channel] = []
        for ch in self._channels:
            ch.index_a = len(owners)
            owners.append(ch)
            if ch.fd_b >= 0:
                ch.index_b = len(owners)
                owners.append(ch)
        self._owners = tuple(owners)
        self._fds = tuple(fd for ch in self._channels for fd in ch.fds)
        self._sizes = (READ_SIZE,) * len(self._fds)
        self._offsets = (0,) * len(self._fds)
        self._next_check = time.monotonic() + vanish_check_interval_s

    # PowerSource properties
    @property
    def name(self) -> str:
        return "ina"

    @property
    def quantity(self) -> Quantity:
        return "power_w"

    @property
    def channels(self) -> tuple[str, ...]:
        return self._rails.names

    @property
    def total_channel(self) -> str | None:
        return self._rails.total_rail

    @property
    def total_method(self) -> TotalMethod:
        return self._rails.total_method

    @property
    def min_interval_s(self) -> float | None:
        return self._rails.update_interval_s

    @property
    def simulated(self) -> bool:
        return self._simulated

    @property
    def rail_map(self) -> RailMap:
        return self._rails

    # PreadSource: the sampler's fast path; read() below is built from the same pieces.
    def pread_plan(self) -> PreadPlan:
        """Every rail file's descriptor, in the order :meth:`decode` expects the texts."""
        return PreadPlan(self._fds, READ_SIZE, self._pread, self._check_interval_s)

    def read_failed(self, index: int, exc: OSError) -> ReadError:
        """The error for an OS failure reading ``pread_plan().fds[index]``."""
        if self._closed:
            return ReadError("ina", "closed")
        ch = self._owners[index]
        return ReadError(ch.name, "vanished" if ch.vanished else _errno_reason(exc))

    def maintain(self) -> tuple[int, ...]:
        """Reopen files removed or replaced since they were opened (a driver rebind).

        Returns the plan positions of the rails found so: the reading in progress fails
        them as ``vanished`` (the values read since a file changed may be stale). A file
        still absent keeps its rail ``vanished`` until it is back.
        """
        flagged: list[int] = []
        for ch in self._channels:
            if ch.vanished or ch.is_gone():
                flagged.append(ch.index_a)
                try:
                    ch.reopen()
                except OSError:
                    ch.vanished = True
        return tuple(flagged)

    def decode(self, raw: Sequence[bytes | FailedFile]) -> list[float]:
        """Power in W per rail from the texts of one reading.

        Raises :class:`PartialReading` (NaN for each failed rail) when a rail's text is
        empty, garbage, negative or out of range, its file failed or it vanished.
        """
        out: list[float] = []
        failures: list[tuple[str, str]] | None = None
        for ch in self._channels:
            try:
                if ch.vanished:
                    raise ReadError(ch.name, "vanished")
                a = _decode_int(ch, raw[ch.index_a])
                if a < 0:
                    raise ReadError(ch.name, "negative")
                if ch.index_b < 0:
                    power_w = a * ch.scale
                else:
                    power_w = a * _decode_int(ch, raw[ch.index_b]) * 1e-6
                    if power_w < NEGATIVE_LIMIT_W:
                        raise ReadError(ch.name, "negative")
                if power_w > MAX_PLAUSIBLE_W:
                    raise ReadError(ch.name, "out_of_range")
            except ReadError as exc:
                if failures is None:
                    failures = []
                failures.append((ch.name, exc.reason))
                power_w = math.nan
            out.append(power_w)
        if failures is not None:
            raise PartialReading(out, failures)
        return out

    def decode_columns(self, raws: Sequence[Sequence[bytes]]) -> list[list[float]] | None:
        """Power in W per rail (one column per channel) of several readings at once: the
        native sampler's batch path. None when any reading needs :meth:`decode`'s per-rail
        handling (a failed, vanished, unreadable or implausible value); the values are
        otherwise exactly :meth:`decode`'s."""
        if not raws or any(ch.vanished for ch in self._channels):
            return None
        try:  # one C-speed int() pass per file
            ints = [list(map(int, col)) for col in zip(*raws, strict=True)]
        except (TypeError, ValueError):
            return None
        out: list[list[float]] = []
        for ch in self._channels:
            a = ints[ch.index_a]
            if min(a) < 0:
                return None
            if ch.index_b < 0:
                scale = ch.scale
                power_w = [x * scale for x in a]
            else:
                power_w = [x * y * 1e-6 for x, y in zip(a, ints[ch.index_b], strict=True)]
                if min(power_w) < NEGATIVE_LIMIT_W:
                    return None
            if max(power_w) > MAX_PLAUSIBLE_W:
                return None
            out.append(power_w)
        return out

    def read(self) -> list[float]:
        """Power in W per rail, in :attr:`channels` order. Raises :class:`ReadError`
        (:class:`PartialReading` when only some rails failed)."""
        if self._closed:
            raise ReadError("ina", "closed")
        flagged: tuple[int, ...] = ()
        if self._check_interval_s <= 0.0 or time.monotonic() >= self._next_check:
            self._next_check = time.monotonic() + self._check_interval_s
            flagged = self.maintain()
        try:
            raw: tuple[bytes | FailedFile, ...] = tuple(
                map(self._pread, self._fds, self._sizes, self._offsets)
            )
        except OSError:
            raw = pread_each(self._fds, READ_SIZE, self._pread, self.read_failed)
        return self.decode(mark_vanished(raw, flagged))

    def close(self) -> None:
        """Close every file; later reads raise ReadError ``closed``. Idempotent."""
        self._closed = True
        for ch in self._channels:
            ch.close()

    def __enter__(self) -> InaSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_file_int(rail: Rail, path: Path) -> int:
    try:
        with open(path, "rb") as f:
            data = f.read(READ_SIZE)
    except OSError as exc:
        raise ReadError(rail.name, _errno_reason(exc)) from None
    value = parse_int(data)
    if isinstance(value, str):
        raise ReadError(rail.name, value)
    return value


def naive_read_w(rails: RailMap | Iterable[Rail]) -> list[float]:
    """Power in W per rail with an open/read/close per file: the baseline for benchmarks."""
    rail_seq: Sequence[Rail] = rails.rails if isinstance(rails, RailMap) else tuple(rails)
    out: list[float] = []
    for rail in rail_seq:
        if rail.power_file is not None:
            out.append(_read_file_int(rail, rail.power_file) * rail.power_scale_w)
        else:
            assert rail.voltage_file is not None and rail.current_file is not None
            mv = _read_file_int(rail, rail.voltage_file)
            ma = _read_file_int(rail, rail.current_file)
            out.append(mv * ma * 1e-6)
    return out
