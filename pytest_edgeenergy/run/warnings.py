"""What makes a run's figures doubtful without making any window invalid, for the terminal
summary and the report's top-level ``warnings`` (``{"kind", "message"}`` each):

* ``frozen_readings``: a virtual board that nothing animated while windows were measured
  (no ``edgeenergy sim run``): its rail files never changed, so every window read the same
  values. Told by the ground-truth record the animator stamps at every tick
  (:mod:`..sim.liveness`, as ``edgeenergy measure`` does): a window that opened after the
  last tick read frozen files.
* ``idle_not_idle``: an idle baseline whose total power varied by more than
  :data:`IDLE_SPREAD_MAX` of its mean (standard deviation over its samples): something ran
  while it was measured.
* ``unprotected``: the board's lock and journal directory could not be written, so the
  session held no lock: another session may have pinned the board while this one measured.
* ``negative_net_energy``: windows whose net energy (gross less idle power x duration) is
  below zero: the idle baseline was taken while the board, or on a virtual board the host,
  was busier than during those windows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..words import counted

if TYPE_CHECKING:
    from ..meters.window import IdleBaseline, WindowResult
    from .records import TestEnergy

__all__ = ["IDLE_SPREAD_MAX", "RunView", "run_warnings"]

IDLE_SPREAD_MAX = 0.10
"""An idle baseline whose power's standard deviation exceeds this fraction of its mean was
not idle (a quiet Jetson's VDD_IN varies by a few per cent)."""


class RunView(Protocol):
    """What the warnings read of a session (:class:`.session.EnergySession` and the
    plugin's ``PluginSession`` are)."""

    @property
    def root(self) -> Path | None: ...

    @property
    def simulated(self) -> bool: ...

    @property
    def idle(self) -> IdleBaseline | None: ...

    @property
    def idle_by_point(self) -> Mapping[str, IdleBaseline]: ...

    @property
    def tests(self) -> Mapping[str, TestEnergy]: ...

    @property
    def unprotected(self) -> str | None: ...


def run_warnings(session: RunView) -> list[dict[str, str]]:
    """Every warning about this run's figures so far (empty when there is none)."""
    windows = [(rec.nodeid, w) for rec in session.tests.values() for w in rec.windows]
    out: list[dict[str, str]] = []
    if session.unprotected is not None:
        out.append(
            {
                "kind": "unprotected",
                "message": f"{session.unprotected}: this session held no lock, so another "
                "session may have pinned the board while it measured",
            }
        )
    frozen = _frozen(session, [w for _, w in windows])
    if frozen is not None:
        out.append({"kind": "frozen_readings", "message": frozen})
    out.extend({"kind": "idle_not_idle", "message": text} for text in _idle_spread(session))
    negative = _negative_net(windows)
    if negative is not None:
        out.append({"kind": "negative_net_energy", "message": negative})
    return out


def _frozen(session: RunView, windows: list[WindowResult]) -> str | None:
    root = session.root
    if not session.simulated or root is None or not windows:
        return None
    from ..sim.liveness import frozen_warning
    from ..sim.truth import TruthUnavailable, read_truth

    try:
        last = read_truth(root, attempts=10)
    except (TruthUnavailable, ValueError, KeyError):
        last = None
    if last is not None:
        # Stamps share CLOCK_MONOTONIC with the animator; one tick after a window opened
        # means that window (and every earlier one) saw live files.
        stale = sum(1 for w in windows if w.start_s > last.t_s)
        if stale == 0:
            return None
    else:
        stale = len(windows)
    text = frozen_warning(root, last.seq if last is not None else None)
    if text is None:  # it ticked just now: animated after all
        return None
    if stale < len(windows):
        return f"{stale} of {len(windows)} windows: {text}"
    return text


def _baselines(session: RunView) -> Iterable[tuple[str, IdleBaseline]]:
    seen: set[int] = set()
    for point, idle in session.idle_by_point.items():
        seen.add(id(idle))
        yield f"the idle baseline at operating point {point}", idle
    if session.idle is not None and id(session.idle) not in seen:
        yield "the idle baseline", session.idle


def _idle_spread(session: RunView) -> list[str]:
    out = []
    for what, idle in _baselines(session):
        mean_w, spread_w = idle.power_w, idle.spread_w
        if not idle.valid or mean_w is None or spread_w is None or mean_w <= 0:
            continue
        if spread_w <= IDLE_SPREAD_MAX * mean_w:
            continue
        out.append(
            f"{what} was not idle: its power varied by {spread_w:.3g} W (standard deviation, "
            f"{spread_w / mean_w:.0%} of its {mean_w:.3g} W mean, above {IDLE_SPREAD_MAX:.0%}) "
            f"over {idle.duration_s:.3g} s, so the net figures (less idle power) are doubtful; "
            "measure it on a quiet board, or longer (--edge-idle-s)"
        )
    return out


def _negative_net(windows: list[tuple[str, WindowResult]]) -> str | None:
    nets = [(w.net_energy_j, nodeid, w) for nodeid, w in windows if w.net_energy_j is not None]
    below = [item for item in nets if item[0] < 0]
    if not below:
        return None
    net_j, nodeid, worst = min(below, key=lambda item: item[0])
    mean_w, idle_w = worst.total.mean_w, worst.idle_w
    power = (
        f": mean {mean_w:.3g} W < idle {idle_w:.3g} W"
        if mean_w is not None and idle_w is not None
        else ""
    )
    return (
        f"{counted(len(below), 'window')} of {len(nets)} had net energy below zero "
        f"(lowest {net_j:.3g} J in {nodeid} '{worst.label}'{power}): the idle baseline was "
        "taken while the board (on a virtual board, the host) was busier than during these "
        "windows, so it was not idle and the net figures (energy_net_j, energy_per_item_net) "
        "are not trustworthy; measure idle on a quiet board"
    )
