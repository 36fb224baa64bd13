"""The gate's expression language: ``metric:statistic:threshold`` (see
:data:`ALLOWED_FORMS`), parsed once into a :class:`GateExpr` with its threshold in the unit
family's base unit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from pytest_edgeenergy.report.metric_names import did_you_mean
from pytest_edgeenergy.report.model import METRIC_UNITS

from ..errors import EdgeEnergyError

STATISTICS = ("mean", "median", "min", "max")

ALLOWED_FORMS = """\
allowed gate expressions are METRIC:STATISTIC:THRESHOLD, for example
  energy_per_item:mean:5%     relative: fail when the mean rises more than 5 %
  energy_j:median:0.02J       absolute, energy: J, mJ, uJ, kJ
  latency_p90:mean:10ms       absolute, time: s, ms, us
  power_mean:mean:0.5W        absolute, power: W, mW
  memory_peak:max:50MB        absolute, memory: B, kB, MB, GB, KiB, MiB, GiB
  throughput:mean:2items/s    absolute, rate: items/s
  edp:mean:0.01J*s            absolute, energy-delay: J*s, mJ*s
STATISTIC is one of mean, median, min, max; an absolute unit must match the metric's unit
(J/item metrics take energy units, per item)"""

_UNIT_SCALES: dict[str, dict[str, float]] = {
    "J": {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6, "µJ": 1e-6, "kJ": 1e3},
    "s": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6},
    "W": {"W": 1.0, "mW": 1e-3, "kW": 1e3},
    "B": {"B": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9}
    | {"KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3},
    "items/s": {"items/s": 1.0, "item/s": 1.0},
    "J·s": {"J·s": 1.0, "J*s": 1.0, "Js": 1.0, "mJ·s": 1e-3, "mJ*s": 1e-3},
}
_SUFFIX_FAMILY = {suffix: family for family, s in _UNIT_SCALES.items() for suffix in s}
_THRESHOLD = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*(%|\S+)$")


class GateExprError(EdgeEnergyError, ValueError):
    """A gate expression is unusable (a usage error): it cannot be parsed (the message lists
    the allowed forms), or it names a metric that no result of the gated report carries (the
    message lists the metrics present)."""


def unit_family(unit: str) -> str:
    """The unit a threshold must be given in: ``J/item`` -> ``J``, ``J*s`` -> ``J·s``."""
    if unit.endswith("/item"):
        unit = unit[: -len("/item")]
    return _SUFFIX_FAMILY.get(unit, unit)


@dataclass(frozen=True)
class GateExpr:
    """A parsed ``metric:statistic:threshold``; absolute thresholds in the family's base
    unit (J, s, W, B, items/s, J·s), relative ones as a fraction (5 % -> 0.05)."""

    metric: str
    statistic: str
    threshold: float
    relative: bool
    family: str | None
    text: str

    @cached_property
    def threshold_text(self) -> str:
        """The threshold for display: ``5%`` or ``0.01s``."""
        if self.relative:
            return f"{self.threshold * 100:g}%"
        return f"{self.threshold:g}{self.family}"


def parse_expr(text: str) -> GateExpr:
    """Parse ``metric:statistic:threshold``; :class:`GateExprError` lists the allowed forms."""

    def bad(why: str) -> GateExprError:
        return GateExprError(f"gate expression {text!r}: {why}\n{ALLOWED_FORMS}")

    parts = [p.strip() for p in text.strip().split(":")]
    if len(parts) != 3 or not all(parts):
        raise bad("expected three parts separated by ':'")
    metric, statistic, threshold = parts
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", metric):
        raise bad(f"metric {metric!r} is not a metric name")
    if statistic not in STATISTICS:
        hint = did_you_mean(statistic, STATISTICS)
        raise bad(f"statistic {statistic!r} is not one of {', '.join(STATISTICS)}{hint}")
    match = _THRESHOLD.match(threshold)
    if not match:
        raise bad(f"threshold {threshold!r} is not a number followed by % or a unit")
    suffix = match.group(2)
    number = float(threshold[: len(threshold) - len(suffix)].strip())
    if suffix == "%":
        return GateExpr(metric, statistic, number / 100.0, True, None, text.strip())
    family = _SUFFIX_FAMILY.get(suffix)
    if family is None:
        raise bad(f"unit {suffix!r} is not a known unit")
    if metric in METRIC_UNITS and unit_family(METRIC_UNITS[metric]) != family:
        raise bad(f"unit {suffix!r} measures {family} but {metric} is in {METRIC_UNITS[metric]}")
    scale = _UNIT_SCALES[family][suffix]
    return GateExpr(metric, statistic, number * scale, False, family, text.strip())


def _as_expr(expr: str | GateExpr) -> GateExpr:
    return expr if isinstance(expr, GateExpr) else parse_expr(expr)
