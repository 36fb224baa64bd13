"""NVML and jtop sources: clean SourceUnavailable where they cannot work, real path if they can.

This CI machine has no NVIDIA GPU and no jtop service, so the real-reading tests skip here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_edgeenergy.meters.jtop_source import JtopSource
from pytest_edgeenergy.meters.nvml import NvmlSource
from pytest_edgeenergy.meters.source import PowerSource, SourceUnavailable


def nvml_initialises() -> str | None:
    """None when NVML works on this machine, else why not."""
    try:
        import pynvml
    except ImportError as exc:
        return f"pynvml not importable: {exc}"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML does not initialise here: {exc}"
    pynvml.nvmlShutdown()
    return None


def jtop_service_present() -> bool:
    return Path("/run/jtop.sock").exists()


def test_nvml_unavailable_without_gpu() -> None:
    if nvml_initialises() is None:
        pytest.skip("NVML works on this machine; the unavailable path cannot be shown")
    with pytest.raises(SourceUnavailable, match=r"NVML cannot initialise .*NVIDIA"):
        NvmlSource()


def test_nvml_unavailable_without_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # the third-party package is absent
    with pytest.raises(SourceUnavailable, match="nvidia-ml-py"):
        NvmlSource()


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"device_index": -1}, "device_index"), ({"mode": "joules"}, "mode")]
)
def test_nvml_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        NvmlSource(**kwargs)  # type: ignore[arg-type]


def test_nvml_real_gpu() -> None:
    why = nvml_initialises()
    if why is not None:
        pytest.skip(why)
    with NvmlSource(0) as src:
        assert isinstance(src, PowerSource)
        assert src.channels == ("gpu0",) and src.total_channel == "gpu0"
        first = src.read()[0]
        second = src.read()[0]
        assert first >= 0.0
        if src.quantity == "energy_j":
            assert second >= first  # cumulative counter
    with pytest.raises(SourceUnavailable, match="does not exist"):
        NvmlSource(10_000)


def test_jtop_unavailable_without_service() -> None:
    if jtop_service_present():
        pytest.skip("a jtop service socket exists on this machine")
    with pytest.raises(SourceUnavailable) as info:
        JtopSource()
    msg = str(info.value)
    assert "jtop service is not active" in msg
    assert "systemctl start jtop" in msg


def test_jtop_unavailable_without_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jtop", None)  # jetson-stats not installed
    with pytest.raises(SourceUnavailable, match="jetson-stats"):
        JtopSource()


def test_jtop_bad_interval() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        JtopSource(interval_s=0.0)


def test_jtop_real_service() -> None:
    if not jtop_service_present():
        pytest.skip("no jtop service here (needs a Jetson with `sudo systemctl start jtop`)")
    with JtopSource(interval_s=0.5) as src:
        assert isinstance(src, PowerSource)
        assert src.channels
        values = src.read()
        assert len(values) == len(src.channels)
        assert all(v >= 0.0 for v in values)
