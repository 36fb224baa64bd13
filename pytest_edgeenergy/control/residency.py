"""Frequency residency: the share of a window each CPU policy and the GPU spent at each
``cur_freq`` value (DVFS sat at the top GPU clock 83 % of the time on a Nano...).

A small daemon thread polls the ``cur_freq`` files; each reading is taken to hold until the
next one, so shares are time-weighted. Plain Python, one short file read per clock per poll.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .knobset import KnobSet

Residency = dict[str, dict[int, float]]
"""``{"gpu": {freq_hz: share}, "cpu0": {...}, "cpu4": {...}}``; shares of a clock sum to 1."""


def _read_hz(path: Path, scale: int) -> int | None:
    try:
        text = path.read_bytes().split()
    except OSError:
        return None
    try:
        return int(text[0]) * scale if text else None
    except ValueError:
        return None


class ResidencySampler:
    """Poll CPU (``scaling_cur_freq``, kHz) and GPU (``cur_freq``, Hz) clocks in a window.

    ``start()`` ... ``stop() -> Residency``; or ``with ResidencySampler(knobs) as r: ...``
    then ``r.result``. Keys: ``gpu`` and ``cpuN`` per policy (N = its first CPU).
    """

    def __init__(
        self,
        knobs: KnobSet,
        *,
        interval_s: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"residency interval_s {interval_s}: must be > 0")
        self.interval_s = interval_s
        self._clock = clock
        self._sources: list[tuple[str, Path, int]] = []
        for policy in knobs.policies:
            first = min(policy.cpus) if policy.cpus else 0
            self._sources.append((f"cpu{first}", policy.cur_file, 1000))
        if knobs.gpu is not None:
            self._sources.append(("gpu", knobs.gpu.cur_file, 1))
        self._time: dict[str, dict[int, float]] = {name: {} for name, _, _ in self._sources}
        self._last: dict[str, int | None] = {}
        self._last_t: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.samples = 0
        self.result: Residency = {}

    @property
    def clocks(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self._sources)

    def poll(self) -> None:
        """Take one reading now (the thread calls this every ``interval_s``)."""
        now = self._clock()
        values = {name: _read_hz(path, scale) for name, path, scale in self._sources}
        with self._lock:
            if self._last_t is not None:
                held = now - self._last_t
                for name, value in self._last.items():
                    if value is not None:
                        bucket = self._time[name]
                        bucket[value] = bucket.get(value, 0.0) + held
            self._last = values
            self._last_t = now
            self.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("residency sampler already started")
        self.poll()
        self._thread = threading.Thread(target=self._run, name="edgeenergy-residency", daemon=True)
        self._thread.start()

    def stop(self) -> Residency:
        """Stop polling; the shares per clock (a single reading counts as 100 %)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        self.poll()
        result: Residency = {}
        with self._lock:
            for name, bucket in self._time.items():
                total = sum(bucket.values())
                if total > 0:
                    result[name] = {f: t / total for f, t in sorted(bucket.items())}
                elif self._last.get(name) is not None:
                    value = self._last[name]
                    assert value is not None
                    result[name] = {value: 1.0}
        self.result = result
        return result

    def __enter__(self) -> ResidencySampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


SHARE_DIGITS = 6
"""Digits kept of a share in reports."""


def _rounded(shares: dict[int, float]) -> dict[str, float]:
    """Round to :data:`SHARE_DIGITS` digits by largest remainder, so the rounded shares of a
    clock still sum to 1 (rounding each one alone drifts by up to half a unit per share,
    which a clock visiting many frequencies adds up)."""
    unit = 10**SHARE_DIGITS
    total = sum(shares.values())
    exact = {f: s * unit / total for f, s in shares.items()} if total > 0 else {}
    units = {f: int(x) for f, x in exact.items()}
    short = unit - sum(units.values())
    for f in sorted(exact, key=lambda f: (units[f] - exact[f], f))[: max(short, 0)]:
        units[f] += 1
    return {str(f): units[f] / unit for f in sorted(units)}


def residency_to_json(residency: Residency) -> dict[str, Any]:
    """JSON form: frequency keys as strings of Hz, shares rounded to 6 digits (summing to 1
    per clock)."""
    return {clock: _rounded(shares) for clock, shares in residency.items()}
