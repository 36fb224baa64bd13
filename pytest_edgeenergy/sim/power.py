"""The virtual board's power model: pure functions of a :class:`PowerState`, no I/O.

Power is split into domains (``cpu``, ``gpu``, ``cv``, ``soc``, ``ddr``, ``io``); each rail of
a model carries some domains (:class:`~pytest_edgeenergy.sim.models.RailSpec`). Per domain:

* cpu: base + per online core ``core_idle + core_dyn * (f/f_top)**1.3 * (0.15 + 0.85*load)``;
* gpu: ``gpu_idle * (0.5 + 0.5*f/f_top)`` + ``gpu_dyn * active_tpc_share *
  (0.85*f/f_top + 0.15*(f/f_top)**2) * (0.06 + 0.94*load)`` — near-linear in GPU frequency;
* soc: ``soc + soc_emc * emc/emc_top``; ddr: ``ddr + ddr_dyn * emc/emc_top * (0.25 + 0.75*load)``;
* cv, io: constants.

``load`` (0..1) is the utilisation proxy for both CPU and GPU: the animator takes it from the
host machine's real CPU load (busy cores, capped at 1), so a workload running beside the
virtual board shows up in its power. The module-input total rail is
``sum(all domains) / regulator_efficiency + carrier``: always larger than its sub-rails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .models import BoardModel, PowerCoefficients

DOMAINS: tuple[str, ...] = ("cpu", "gpu", "cv", "soc", "ddr", "io")

NOISE_FRACTION = 0.01
"""Rails carry multiplicative noise of at most ±1 %."""


@dataclass(frozen=True)
class ClusterState:
    """One CPU cluster: its running frequency, its top frequency, how many cores are online."""

    freq_khz: int
    top_khz: int
    online: int


@dataclass(frozen=True)
class PowerState:
    """Everything the power model depends on at one instant."""

    clusters: tuple[ClusterState, ...]
    gpu_freq_hz: int
    gpu_top_hz: int
    emc_freq_hz: int
    emc_top_hz: int
    load: float
    """Utilisation 0..1."""
    gpu_active_share: float = 1.0
    """Share of TPCs not power-gated."""


def domain_power_w(coeff: PowerCoefficients, state: PowerState) -> dict[str, float]:
    """Power per domain (W)."""
    load = min(1.0, max(0.0, state.load))
    cpu = coeff.cpu_base_w
    activity = 0.15 + 0.85 * load
    for cluster in state.clusters:
        if cluster.online <= 0:
            continue
        ratio = cluster.freq_khz / cluster.top_khz if cluster.top_khz else 0.0
        per_core = coeff.core_idle_w + coeff.core_dyn_w * ratio**1.3 * activity
        cpu += cluster.online * per_core
    g = state.gpu_freq_hz / state.gpu_top_hz if state.gpu_top_hz else 0.0
    gpu = coeff.gpu_idle_w * (0.5 + 0.5 * g) + coeff.gpu_dyn_w * state.gpu_active_share * (
        0.85 * g + 0.15 * g * g
    ) * (0.06 + 0.94 * load)
    e = state.emc_freq_hz / state.emc_top_hz if state.emc_top_hz else 0.0
    return {
        "cpu": cpu,
        "gpu": gpu,
        "cv": coeff.cv_w,
        "soc": coeff.soc_w + coeff.soc_emc_w * e,
        "ddr": coeff.ddr_w + coeff.ddr_dyn_w * e * (0.25 + 0.75 * load),
        "io": coeff.io_w,
    }


def rail_power_w(
    model: BoardModel, state: PowerState, noise: Sequence[float] | None = None
) -> dict[str, float]:
    """Power per connected rail (W), in ``model.rail_names`` order.

    ``noise`` holds one value in [-1, 1] per rail (same order), scaled to ±1 %; None = exact.
    """
    domains = domain_power_w(model.coefficients, state)
    coeff = model.coefficients
    total_w = sum(domains.values()) / coeff.regulator_efficiency + coeff.carrier_w
    out: dict[str, float] = {}
    for i, (name, rail_domains) in enumerate(_rail_plan(model)):
        value = total_w if rail_domains is None else sum(domains[d] for d in rail_domains)
        if noise is not None:
            value *= 1.0 + NOISE_FRACTION * max(-1.0, min(1.0, noise[i]))
        out[name] = value
    return out


_PLANS: dict[str, tuple[tuple[str, tuple[str, ...] | None], ...]] = {}


def _rail_plan(model: BoardModel) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
    """(rail, domains) per connected rail; None marks the total rail. Cached per model."""
    plan = _PLANS.get(model.name)
    if plan is None or len(plan) != len(model.rail_names):
        plan = tuple(
            (name, None if name == model.total_rail else model.rail(name).domains)
            for name in model.rail_names
        )
        _PLANS[model.name] = plan
    return plan


def total_power_w(model: BoardModel, rails_w: dict[str, float]) -> float:
    """The board total: the total-input rail when the board has one, else the sum of rails."""
    if model.total_rail is not None:
        return rails_w[model.total_rail]
    return sum(rails_w.values())
