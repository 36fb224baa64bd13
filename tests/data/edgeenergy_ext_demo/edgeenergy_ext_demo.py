"""An extension of pytest-edgeenergy from outside the project.

* ``demo-first`` (``--edge-search=demo-first``, ``edgeenergy search --strategy demo-first``):
  profiles the points fastest first, every knob at its highest value and walking down (the
  search space's product order, reversed).
* ``demo-usb`` (``--edge-source=demo-usb``): an external USB power meter whose driver
  exposes one directory per meter, ``sys/class/demo_usb_meter/<meter>/`` under the board's
  root, holding ``energy_uj``: the energy that passed through the meter since it was
  plugged in, in microjoules. Each meter is a channel; the total is their sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pytest_edgeenergy.meters.factory import SourceRequest
from pytest_edgeenergy.meters.source import ReadError, SourceUnavailable
from pytest_edgeenergy.search import Knobs, Space, StrategyRequest, Trial

METER_DIR = Path("sys/class/demo_usb_meter")
"""Where the meters are, relative to the board's root (``/`` on a real board)."""
UPDATE_INTERVAL_S = 0.01
"""The meter refreshes its counter every 10 ms."""


class FastestFirst:
    """Proposes the points of the space from the fastest (every knob at its highest value)
    down, skipping those already profiled. A function of the history only, so a resumed
    search continues where it stopped."""

    name = "demo-first"

    def __init__(self, space: Space) -> None:
        self.space = space
        self._order = list(reversed(space.all_points()))

    def propose(self, history: Sequence[Trial]) -> Knobs | None:
        done = set()
        for trial in history:
            try:
                done.add(self.space.point(trial.knobs))
            except ValueError:  # a point of an earlier, larger space (a resumed report)
                continue
        for point in self._order:
            if point not in done:
                return self.space.knobs(point)
        return None


def create_strategy(request: StrategyRequest) -> FastestFirst:
    """``demo-first``: every objective; the seed, prior and budget are not used."""
    return FastestFirst(request.space)


class UsbMeterSource:
    """The cumulative energy counter of each demo USB meter, in joules."""

    name = "demo-usb"
    quantity: Literal["energy_j"] = "energy_j"
    total_channel = None
    total_method: Literal["sum"] = "sum"
    min_interval_s = UPDATE_INTERVAL_S

    def __init__(self, root: Path, *, simulated: bool) -> None:
        base = root / METER_DIR
        meters = sorted(p for p in base.glob("*") if (p / "energy_uj").is_file())
        if not meters:
            raise SourceUnavailable(
                f"no demo USB meter under {base} (a directory per meter holding energy_uj): "
                "is the meter plugged in and its driver loaded?"
            )
        self._files = tuple(m / "energy_uj" for m in meters)
        self.channels = tuple(m.name for m in meters)
        self.simulated = simulated

    def read(self) -> Sequence[float]:
        values = []
        for channel, path in zip(self.channels, self._files, strict=True):
            try:
                text = path.read_text().strip()
            except OSError as exc:
                raise ReadError(channel, f"{path}: {exc.strerror or exc}") from exc
            try:
                values.append(int(text) / 1e6)
            except ValueError:
                raise ReadError(channel, f"{path}: {text!r} is not a count of µJ") from None
        return values

    def close(self) -> None:
        """Nothing held open: every reading opens its files."""


def open_usb_meter(request: SourceRequest) -> UsbMeterSource:
    """``demo-usb``: the meters under the board's root."""
    return UsbMeterSource(request.root, simulated=request.board.identity.simulated)
