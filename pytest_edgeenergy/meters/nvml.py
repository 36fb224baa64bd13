"""NVIDIA GPU energy through NVML (discrete GPUs, Thor); Jetson iGPUs before Thor lack it.

Volta and newer expose a total-energy counter in mJ (``nvmlDeviceGetTotalEnergyConsumption``):
the source then reports cumulative energy (``energy_j``). Older GPUs only give power in mW
(``nvmlDeviceGetPowerUsage``): the source reports ``power_w`` and windows integrate it.
``pynvml`` (package ``nvidia-ml-py``) is imported only when a source is created.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ..board.types import TotalMethod
from .source import Quantity, ReadError, SourceUnavailable

NvmlMode = Literal["auto", "energy", "power"]
_NOT_ON_THIS_MACHINE = (
    "no NVIDIA driver/GPU usable here; on a Jetson before Thor use the `ina` or "
    "`tegrastats` source instead"
)


class NvmlSource:
    """Energy (J, cumulative) or power (W) of one GPU; channel ``gpu<N>``.

    ``mode="auto"`` prefers the energy counter and falls back to power when the GPU does
    not support it; ``"energy"``/``"power"`` insist on one and raise SourceUnavailable.
    """

    name = "nvml"

    def __init__(self, device_index: int = 0, *, mode: NvmlMode = "auto") -> None:
        if device_index < 0:
            raise ValueError(f"device_index={device_index}: must be 0 or more")
        if mode not in ("auto", "energy", "power"):
            raise ValueError(f"mode={mode!r}: must be 'auto', 'energy' or 'power'")
        try:
            import pynvml
        except ImportError as exc:
            raise SourceUnavailable(
                "pynvml is not installed: `pip install nvidia-ml-py` "
                "(or the extra `pytest-edgeenergy[nvml]`)"
            ) from exc
        self._nvml: Any = pynvml
        self._channel = f"gpu{device_index}"
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise SourceUnavailable(
                f"NVML cannot initialise ({exc}): {_NOT_ON_THIS_MACHINE}"
            ) from exc
        self._initialised = True
        try:
            self._handle = self._open_device(device_index)
            self._quantity, self._reader = self._pick_reader(mode)
        except BaseException:
            self.close()
            raise

    def _open_device(self, device_index: int) -> Any:
        nvml = self._nvml
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except nvml.NVMLError as exc:
            raise SourceUnavailable(
                f"NVML cannot count GPUs ({exc}): {_NOT_ON_THIS_MACHINE}"
            ) from exc
        if device_index >= count:
            raise SourceUnavailable(
                f"NVML GPU index {device_index} does not exist: this machine has {count} GPU(s) "
                f"(indices 0..{count - 1})"
                if count
                else f"NVML finds no GPU: {_NOT_ON_THIS_MACHINE}"
            )
        try:
            return nvml.nvmlDeviceGetHandleByIndex(device_index)
        except nvml.NVMLError as exc:
            raise SourceUnavailable(f"NVML cannot open GPU {device_index}: {exc}") from exc

    def _is_not_supported(self, exc: BaseException) -> bool:
        nvml = self._nvml
        return isinstance(exc, nvml.NVMLError) and exc.value == nvml.NVML_ERROR_NOT_SUPPORTED

    def _pick_reader(self, mode: NvmlMode) -> tuple[Quantity, Callable[[], float]]:
        nvml = self._nvml
        handle = self._handle

        def energy_j() -> float:
            return int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle)) / 1e3

        def power_w() -> float:
            return int(nvml.nvmlDeviceGetPowerUsage(handle)) / 1e3

        candidates: list[tuple[Quantity, Callable[[], float], str]] = []
        if mode in ("auto", "energy"):
            candidates.append(("energy_j", energy_j, "total energy counter (Volta and newer)"))
        if mode in ("auto", "power"):
            candidates.append(("power_w", power_w, "power usage"))
        reasons: list[str] = []
        for quantity, reader, what in candidates:
            try:
                reader()
            except nvml.NVMLError as exc:
                if self._is_not_supported(exc):
                    reasons.append(f"{what} not supported")
                    continue
                raise SourceUnavailable(
                    f"NVML {self._channel}: reading {what} failed: {exc}"
                ) from exc
            return quantity, reader
        raise SourceUnavailable(f"NVML {self._channel}: " + "; ".join(reasons))

    @property
    def quantity(self) -> Quantity:
        return self._quantity

    @property
    def channels(self) -> tuple[str, ...]:
        return (self._channel,)

    @property
    def total_channel(self) -> str | None:
        return self._channel

    @property
    def total_method(self) -> TotalMethod:
        return "rail"

    @property
    def min_interval_s(self) -> float | None:
        return None  # the driver's update period varies by GPU and is not queryable

    @property
    def simulated(self) -> bool:
        return False

    def read(self) -> Sequence[float]:
        """``[energy_j]`` (cumulative) or ``[power_w]``, per :attr:`quantity`."""
        try:
            return [self._reader()]
        except self._nvml.NVMLError as exc:
            raise ReadError(self._channel, f"NVML: {exc}") from exc

    def close(self) -> None:
        """Shut NVML down (once)."""
        if getattr(self, "_initialised", False):
            self._initialised = False
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()

    def __enter__(self) -> NvmlSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
