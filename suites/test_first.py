"""A first suite: a small real CPU workload (zlib compression) measured in energy windows.

It runs on a Jetson or on a virtual board (``--edge-board=sim:orin-nano``); the virtual
board's power model follows this machine's real CPU load, so the work shows up as energy.
"""

from __future__ import annotations

import random
import zlib

import pytest

REPEATS = 12


@pytest.mark.parametrize("size_kib", [256, 1024])
def test_compress_energy(energy, size_kib: int) -> None:  # type: ignore[no-untyped-def]
    data = random.Random(size_kib).randbytes(size_kib * 1024)
    with energy.window("compress") as w:
        for _ in range(REPEATS):
            zlib.compress(data, 6)
    r = w.result
    assert r.valid, r.invalid_reason
    assert r.total.energy_j is not None and r.total.energy_j > 0
    assert r.samples >= 5
