"""Report metrics and validity of energy windows: the one result model of the ``energy``
fixture's windows, ``edge_bench`` repeats and phases alike.

Per window (one sample each), aggregated by :func:`.model.make_metric`:

* ``energy_j`` / ``energy_net_j``: gross / idle-subtracted energy of the total, J;
* ``power_mean`` / ``power_peak``: mean / peak total power, W;
* ``duration_s``: window length, s;
* ``energy_j.RAIL``: gross energy of each rail, J.

Energy-derived values come only from valid windows; when any window of a set is invalid
the metric's ``value`` is null (its ``samples`` keep the valid windows' figures). Never 0 J.
Validity is per rail: a rail whose own reads failed in a window has a null
``energy_j.RAIL`` value while the total's metrics (and the test) stay valid when the total
does not depend on it; ``validity.invalid_rails`` says which rail failed and how often.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pytest_edgeenergy.report.model import Metric, Validity, build_validity, make_metric
from pytest_edgeenergy.words import counted

if TYPE_CHECKING:
    from pytest_edgeenergy.meters.window import WindowResult

WINDOW_METRICS = ("energy_j", "energy_net_j", "power_mean", "power_peak", "duration_s")
"""The metrics of every window set, besides ``energy_j.RAIL`` per rail."""


def metric(
    name: str, values: Iterable[float | None], *, trusted: bool = True, unit: str | None = None
) -> Metric:
    """A metric from per-window (or per-repeat) values; None and non-finite values are
    dropped; ``value`` is null unless ``trusted``."""
    samples = [float(v) for v in values if v is not None and math.isfinite(v)]
    m = make_metric(name, samples, unit=unit)
    if not trusted:
        m["value"] = None
    return m


def window_metrics(
    windows: Sequence[WindowResult], *, trusted: bool | None = None
) -> dict[str, Metric]:
    """The metrics of one set of windows (see the module docstring); ``trusted`` defaults
    to "every window is valid"."""
    ok = all(w.valid for w in windows) if trusted is None else trusted
    out: dict[str, Metric] = {
        "energy_j": metric("energy_j", (w.total.energy_j for w in windows), trusted=ok),
        "energy_net_j": metric("energy_net_j", (w.net_energy_j for w in windows), trusted=ok),
        "power_mean": metric("power_mean", (w.total.mean_w for w in windows), trusted=ok),
        "power_peak": metric(
            "power_peak", (w.total.peak_w if w.valid else None for w in windows), trusted=ok
        ),
        "duration_s": metric("duration_s", (w.duration_s for w in windows), unit="s"),
    }
    rails: dict[str, None] = {}
    for w in windows:
        rails.update(dict.fromkeys(w.rails))
    for rail in rails:
        rail_ok = ok and all(rail in w.rails and w.rails[rail].valid for w in windows)
        out[f"energy_j.{rail}"] = metric(
            f"energy_j.{rail}",
            (w.rails[rail].energy_j if rail in w.rails else None for w in windows),
            trusted=rail_ok,
            unit="J",
        )
    return out


def invalid_rails_of(windows: Sequence[WindowResult]) -> dict[str, str]:
    """Rails invalid on their own in any window: in how many windows, and how many of
    their reads failed over all the windows, by reason."""
    out: dict[str, str] = {}
    for name in dict.fromkeys(n for w in windows for n in w.invalid_rails):
        bad = [w.invalid_rails[name] for w in windows if name in w.invalid_rails]
        errors: dict[str, int] = {}
        reads = 0
        for w in windows:
            rail = w.rails.get(name)
            if rail is not None:
                reads += w.reads
                for reason, n in (rail.read_errors or {}).items():
                    errors[reason] = errors.get(reason, 0) + n
        text = f"invalid in {len(bad)} of {counted(len(windows), 'window')}"
        if errors:
            detail = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items()))
            text += f"; {sum(errors.values())} of {reads} reads failed ({detail})"
        else:
            text += f": {bad[0]}"
        out[name] = text
    return out


def labelled_metrics(windows: Sequence[WindowResult]) -> dict[str, Metric]:
    """Metrics of an ``energy`` fixture test: one sample per window, per window label.

    Windows of the first label give the plain names (``energy_j``, ``duration_s``...);
    other labels are prefixed (``load.energy_j``), as ``edge_bench`` phases are.
    """
    by_label: dict[str, list[WindowResult]] = {}
    for w in windows:
        by_label.setdefault(w.label, []).append(w)
    out: dict[str, Metric] = {}
    for i, (label, ws) in enumerate(by_label.items()):
        prefix = "" if i == 0 else f"{label}."
        out.update({prefix + name: m for name, m in window_metrics(ws).items()})
    return out


def validity_of(windows: Sequence[WindowResult]) -> Validity:
    """The report's ``validity`` over several windows: all must be valid; the mean interval
    is weighted by each window's samples, the jitter is the worst window's."""
    samples = sum(w.samples for w in windows)
    weighted = [(w.interval_ms_mean, w.samples) for w in windows if w.interval_ms_mean is not None]
    n = sum(s for _, s in weighted)
    interval = math.fsum(m * s for m, s in weighted) / n if n else None
    jitters = [w.interval_ms_jitter for w in windows if w.interval_ms_jitter is not None]
    reasons = [f"{w.label}: {w.invalid_reason}" for w in windows if not w.valid]
    if not windows:
        reasons.append("no measured window")
    validity = build_validity(
        samples=samples,
        valid=not reasons,
        reason="; ".join(reasons) if reasons else None,
        interval_ms_mean=interval,
        interval_ms_jitter=max(jitters) if jitters else None,
        sampler_cpu_s=math.fsum(w.sampler_cpu_s for w in windows),
        read_errors=sum(sum(w.read_errors.values()) for w in windows),
    )
    failed_rails = invalid_rails_of(windows)
    if failed_rails:
        validity["invalid_rails"] = failed_rails
    samplers = sorted({w.sampler for w in windows if w.sampler})
    if samplers:
        validity["sampler"] = "+".join(samplers)
    return validity
