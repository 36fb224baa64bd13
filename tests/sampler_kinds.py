"""Run a meters test module under both samplers, and a source no sysfs file can play.

``from sampler_kinds import sampler_kind`` in a test module makes its ``sampler_kind``
fixture autouse there: every test then runs once with the python sampler and once with the
native reader (skipped where the extension was not built).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from pytest_edgeenergy.board.types import TotalMethod
from pytest_edgeenergy.meters.native import ENV_VAR, load_extension
from pytest_edgeenergy.meters.source import Quantity

SAMPLER_KINDS = [
    "python",
    pytest.param(
        "native",
        marks=pytest.mark.skipif(load_extension()[0] is None, reason="native reader not built"),
    ),
]


@pytest.fixture(autouse=True, params=SAMPLER_KINDS)
def sampler_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test under both samplers: ``native`` lets each source the native reader can
    read (plain INA files) use it; an injected pread or another source stays ``python``."""
    kind = str(request.param)
    monkeypatch.setenv(ENV_VAR, "python" if kind == "python" else "auto")
    return kind


class ScriptedSource:
    """A PowerSource for behaviours no sysfs file can produce (bugs, blocking reads); not
    read by pread, as tegrastats, RAPL, NVML and jtop are not."""

    name = "scripted"
    quantity: Quantity = "power_w"
    channels = ("A",)
    total_channel = None
    total_method: TotalMethod = "sum"
    min_interval_s = None
    simulated = True

    def __init__(self, read: Callable[[], Sequence[float]] = lambda: [1.0]) -> None:
        self._read = read

    def read(self) -> Sequence[float]:
        return self._read()

    def close(self) -> None:
        pass
