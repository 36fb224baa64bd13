"""tegrastats as a power source: live (a running ``tegrastats``) and log replay.

The parser lives in :mod:`.tegrastats_parse`, log integration in :mod:`.tegrastats_log`;
both are re-exported here (``edgeenergy tegrastats-energy`` is
:mod:`pytest_edgeenergy.commands.tegrastats_energy`).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from ..board.types import TotalMethod
from .source import Quantity, ReadError, SourceUnavailable
from .tegrastats_log import ChannelEnergy, LogEnergy, integrate_log
from .tegrastats_parse import (
    TOTAL_RAIL_PRIORITY,
    CpuCore,
    LoadFreq,
    RailReading,
    TegrastatsSample,
    parse_line,
    total_power_w,
    total_rail_of,
)

__all__ = [
    "TOTAL_RAIL_PRIORITY",
    "ChannelEnergy",
    "CpuCore",
    "LoadFreq",
    "LogEnergy",
    "RailReading",
    "TegrastatsSample",
    "TegrastatsSource",
    "integrate_log",
    "parse_line",
    "total_power_w",
    "total_rail_of",
]

TEGRASTATS_RELPATH = Path("usr/bin/tegrastats")
VIRTUAL_BOARD_MARKER = Path("etc/edgeenergy-virtual-board.json")
_STDERR_TAIL_CHARS = 400


def _stop_process(proc: subprocess.Popen[str]) -> None:
    """Stop the process group we started (a shim script may have children holding stdout).

    Only while the leader is alive and unreaped: then its pid cannot name anyone else's group.
    """
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _pump(stdout: IO[str], lines: queue.Queue[str | None]) -> None:
    """Reader thread body; holds no reference to the source, so an unclosed source can
    still be garbage-collected (its finalizer then stops tegrastats)."""
    try:
        for line in stdout:
            lines.put(line)
    except (OSError, ValueError):
        pass  # pipe closed under us by close()
    finally:
        lines.put(None)


class TegrastatsSource:
    """Live power from ``<root>/usr/bin/tegrastats --interval MS`` (root ``/`` on a board).

    Channels are the connected (non-``NC``) rails of the first line. :meth:`read` blocks
    until a line arrives and returns the *newest* one; lines that queued up unread are
    dropped (counted in :attr:`dropped_lines`) because their arrival time is unknown to
    the sampler, which stamps each reading when ``read`` returns.
    """

    name = "tegrastats"

    def __init__(
        self, root: Path, *, interval_s: float, read_timeout_s: float | None = None
    ) -> None:
        if not (math.isfinite(interval_s) and interval_s > 0):
            raise ValueError(f"interval_s={interval_s!r}: must be a positive number of seconds")
        interval_ms = round(interval_s * 1000)
        if interval_ms < 1:
            raise ValueError(
                f"interval_s={interval_s!r}: tegrastats takes whole milliseconds, at least 1 ms"
            )
        self._interval_s = interval_ms / 1000
        self._timeout_s = read_timeout_s if read_timeout_s else max(5.0, 5 * self._interval_s)
        self._root = root
        self.executable = root / TEGRASTATS_RELPATH
        self.dropped_lines = 0
        self.last_sample: TegrastatsSample | None = None
        self._ended = False
        self._closed = False
        if not self.executable.is_file():
            raise SourceUnavailable(
                f"tegrastats not found at {self.executable}: it ships with L4T on Jetson boards "
                "(and with virtual boards from `edgeenergy sim create`)"
            )
        if not os.access(self.executable, os.X_OK):
            raise SourceUnavailable(f"{self.executable} is not executable")
        # closed in close(): it must outlive __init__
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._proc = subprocess.Popen(
                [str(self.executable), "--interval", str(interval_ms)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                start_new_session=True,
            )
        except OSError as exc:
            self._stderr.close()
            raise SourceUnavailable(f"cannot start {self.executable}: {exc}") from exc
        self._finalizer = weakref.finalize(self, _stop_process, self._proc)
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self._proc.stdout is not None
        self._reader = threading.Thread(
            target=_pump,
            args=(self._proc.stdout, self._lines),
            name="edgeenergy-tegrastats",
            daemon=True,
        )
        self._reader.start()
        try:
            first = self._first_line()
        except BaseException:
            self.close()
            raise
        self._channels = tuple(first.rails_w)
        self._total_rail = total_rail_of(self._channels)

    def _exit_reason(self) -> str:
        try:
            code = self._proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr.seek(0)
        tail = self._stderr.read().decode("utf-8", errors="replace").strip()
        tail = tail[-_STDERR_TAIL_CHARS:]
        return f"{self.executable} exited (code {code})" + (f": {tail}" if tail else "")

    def _first_line(self) -> TegrastatsSample:
        deadline = time.monotonic() + self._timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(left, 0.0))
            except queue.Empty:
                raise SourceUnavailable(
                    f"{self.executable} printed no line within {self._timeout_s:.1f} s"
                ) from None
            if line is None:
                self._ended = True
                raise SourceUnavailable(f"{self._exit_reason()} before printing a line")
            if not line.strip():
                continue
            sample = parse_line(line)
            if not sample.has_power:
                raise SourceUnavailable(
                    f"{self.executable} prints no power fields (line: {line.strip()[:120]!r}); "
                    "some boards show rails only when tegrastats runs as root"
                )
            return sample

    @property
    def quantity(self) -> Quantity:
        return "power_w"

    @property
    def channels(self) -> tuple[str, ...]:
        return self._channels

    @property
    def total_channel(self) -> str | None:
        return self._total_rail

    @property
    def total_method(self) -> TotalMethod:
        return "rail" if self._total_rail is not None else "sum"

    @property
    def min_interval_s(self) -> float | None:
        return self._interval_s

    @property
    def simulated(self) -> bool:
        return (self._root / VIRTUAL_BOARD_MARKER).exists()

    @property
    def pid(self) -> int:
        """Process id of the running tegrastats."""
        return self._proc.pid

    def read(self) -> Sequence[float]:
        """Power (W) per channel from the newest tegrastats line; blocks until one arrives."""
        if self._closed:
            raise ReadError(self.name, "source is closed")
        if self._ended:
            time.sleep(self._interval_s)  # keep a caller that retries from spinning
            raise ReadError(self.name, self._exit_reason())
        try:
            line = self._lines.get(timeout=self._timeout_s)
        except queue.Empty:
            raise ReadError(self.name, f"no line within {self._timeout_s:.1f} s") from None
        while line is not None:
            try:
                newer = self._lines.get_nowait()
            except queue.Empty:
                break
            if newer is None:
                self._ended = True
                break
            self.dropped_lines += 1
            line = newer
        if line is None:
            self._ended = True
            raise ReadError(self.name, self._exit_reason())
        sample = parse_line(line)
        rails_w = sample.rails_w
        for channel in self._channels:
            if channel not in rails_w:
                raise ReadError(channel, f"missing from tegrastats line {line.strip()[:120]!r}")
        self.last_sample = sample
        return [rails_w[c] for c in self._channels]

    def close(self) -> None:
        """Stop tegrastats and release its pipes (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._finalizer()
        if self._proc.stdout is not None:
            self._reader.join(timeout=2.0)
            self._proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> TegrastatsSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
