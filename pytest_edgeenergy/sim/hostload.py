"""The host machine's real CPU load, from ``/proc/stat`` (not from the virtual tree)."""

from __future__ import annotations

import os
import time

PROC_STAT = "/proc/stat"


def parse_cpu_line(text: str) -> tuple[int, int]:
    """(busy, total) jiffies from the aggregate ``cpu`` line of ``/proc/stat`` text.

    Idle time is ``idle + iowait``; guest time is already inside user/nice.
    """
    for line in text.splitlines():
        if line.startswith("cpu "):
            fields = [int(v) for v in line.split()[1:9]]
            fields += [0] * (8 - len(fields))
            total = sum(fields)
            idle = fields[3] + fields[4]
            return total - idle, total
    raise ValueError(f"{PROC_STAT}: no aggregate 'cpu ' line")


class HostLoad:
    """Busy share of the host's CPUs over the last window of at least ``window_jiffies``.

    ``/proc/stat`` counts in 1/100 s per CPU, so a window shorter than a few jiffies is all
    quantisation noise: the value is refreshed only once ``window_jiffies`` jiffies per CPU
    (default 5, i.e. 50 ms) have passed, and held in between.
    :meth:`sample` returns busy cores (0..ncpu) over that window, and
    :meth:`utilisation` the same capped at 1.0: one busy core counts as a fully loaded
    virtual board, so a single-threaded workload beside the simulator drives it to the top.
    """

    def __init__(self, path: str = PROC_STAT, window_jiffies: int = 5) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        self._ncpu = os.cpu_count() or 1
        self._min_total = max(1, window_jiffies) * self._ncpu
        # /proc/stat moves in 10 ms jiffies and the window is longer: reading it more often
        # than every 20 ms only costs CPU.
        self._min_read_gap_s = 0.02
        self._next_read = 0.0
        self._busy, self._total = self._read()
        self.busy_cores = 0.0

    def _read(self) -> tuple[int, int]:
        # The aggregate line comes first and is far shorter than 512 bytes.
        data = os.pread(self._fd, 512, 0)
        return parse_cpu_line(data.decode("ascii", "replace"))

    def sample(self) -> float:
        """Busy cores over the last complete window (held until the next one completes)."""
        now = time.monotonic()
        if now < self._next_read:
            return self.busy_cores
        self._next_read = now + self._min_read_gap_s
        busy, total = self._read()
        d_total = total - self._total
        if d_total >= self._min_total:
            d_busy = max(0, busy - self._busy)
            self.busy_cores = self._ncpu * d_busy / d_total
            self._busy, self._total = busy, total
        return self.busy_cores

    def utilisation(self) -> float:
        """Busy cores since the previous sample, capped at 1.0."""
        return min(1.0, self.sample())

    def close(self) -> None:
        os.close(self._fd)
