"""Power from jetson-stats (jtop), through its client and root service ``jtop.service``.

jtop samples the INA rails in its service, by default once a second; the client's
``ok()`` blocks until the service pushes the next sample, so :meth:`JtopSource.read`
returns fresh values at the service's pace. jtop takes ``VIN``/``POM_5V_IN``/``VDD_IN`` out
of its rail list as the total (``tot['name']``); boards without one get ``tot`` as the
sum of rails. jtop's ``avg`` is its own ``(new + old_avg) / 2``, not a time average, and is
not used. ``jtop`` is imported only when a source is created.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import Any

from ..board.types import TotalMethod
from .source import Quantity, ReadError, SourceUnavailable

JTOP_DEFAULT_INTERVAL_S = 1.0
_SERVICE_HINT = (
    "jtop service is not active: install jetson-stats (`sudo pip3 install jetson-stats`) "
    "and `sudo systemctl start jtop` (the service needs root and a Jetson board)"
)


class JtopSource:
    """Rail power (W) from a running jtop service; channels are its rails plus its total."""

    name = "jtop"

    def __init__(self, *, interval_s: float = JTOP_DEFAULT_INTERVAL_S) -> None:
        if not (math.isfinite(interval_s) and interval_s > 0):
            raise ValueError(f"interval_s={interval_s!r}: must be a positive number of seconds")
        try:
            from jtop import JtopException, jtop
        except ImportError as exc:
            raise SourceUnavailable(
                f"{_SERVICE_HINT}; the jtop module cannot be imported ({exc})"
            ) from exc
        self._client: Any = jtop(interval=interval_s)
        try:
            self._client.start()
        except JtopException as exc:
            self._close_client()
            reason = " ".join(str(exc).split())
            raise SourceUnavailable(f"{_SERVICE_HINT} (jtop says: {reason})") from exc
        except OSError as exc:
            self._close_client()
            raise SourceUnavailable(f"{_SERVICE_HINT} (cannot connect: {exc})") from exc
        try:
            power = self._client.power
            rails = tuple(power.get("rail", {}))
            total = power.get("tot", {})
            self._total_name: str | None = str(total["name"]) if total.get("name") else None
        except (AttributeError, KeyError, TypeError) as exc:
            self._close_client()
            raise SourceUnavailable(f"jtop reports no power data: {exc}") from exc
        self._rails = rails
        # jtop moves the total rail out of 'rail'; append it unless a version keeps it there.
        self._total_extra = bool(self._total_name) and self._total_name not in rails
        self._channels = rails + ((self._total_name,) if self._total_extra else ())
        if not self._channels:
            self._close_client()
            raise SourceUnavailable("jtop reports no power rails on this board")
        server_interval = getattr(self._client, "interval", None)
        self._interval_s = float(server_interval) if server_interval else interval_s

    def _close_client(self) -> None:
        # jtop's close joins its own helper thread; nothing to do if that fails
        with contextlib.suppress(Exception):
            self._client.close()

    @property
    def quantity(self) -> Quantity:
        return "power_w"

    @property
    def channels(self) -> tuple[str, ...]:
        return self._channels

    @property
    def total_channel(self) -> str | None:
        return self._total_name

    @property
    def total_method(self) -> TotalMethod:
        return "rail" if self._total_name else "sum"

    @property
    def min_interval_s(self) -> float | None:
        """The jtop service's sampling period (about 1 s by default, set by the service)."""
        return self._interval_s

    @property
    def simulated(self) -> bool:
        return False

    def read(self) -> Sequence[float]:
        """Power (W) per channel from jtop's next sample; blocks until it arrives."""
        try:
            alive = self._client.ok()
        except Exception as exc:  # jtop re-raises whatever its reader thread hit
            raise ReadError(self.name, f"jtop client failed: {exc}") from exc
        if not alive:
            raise ReadError(self.name, "no sample from the jtop service (stopped or too slow)")
        power = self._client.power
        values: list[float] = []
        for rail in self._rails:
            try:
                values.append(float(power["rail"][rail]["power"]) / 1e3)
            except (KeyError, TypeError, ValueError) as exc:
                raise ReadError(rail, f"missing from jtop power data: {exc}") from exc
        if self._total_extra:
            try:
                values.append(float(power["tot"]["power"]) / 1e3)
            except (KeyError, TypeError, ValueError) as exc:
                raise ReadError(str(self._total_name), f"missing from jtop total: {exc}") from exc
        return values

    def close(self) -> None:
        """Disconnect from the jtop service."""
        self._close_client()

    def __enter__(self) -> JtopSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
