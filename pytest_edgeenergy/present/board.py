"""``edgeenergy board``'s text: identity, rails, the sampler, power modes and knobs (cores,
CPU/GPU clocks, EMC), from the ``board --json`` object, so both forms show the same values."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..board.sysfs import format_cpu_list
from .tables import align

SHORT_LIST = 8
"""Offered frequencies are listed up to this many; longer tables show count and range."""

_INDENT = "  "


def board_text(data: Mapping[str, Any]) -> str:
    """The board (``board --json``'s object) for people."""
    ident = data["identity"]
    lines = [
        f"model:   {ident.get('model') or 'unknown'}"
        + ("  (SIMULATED virtual board)" if ident.get("simulated") else ""),
        f"soc:     {ident.get('soc') or '-'}   L4T {ident.get('l4t') or '-'}   "
        f"JetPack {ident.get('jetpack') or '-'}",
    ]
    total = data["total"]
    lines.append(
        "total:   "
        + (f"rail {total['rail']}" if total["method"] == "rail" else "sum of all rails")
        + (f"  ({total['note']})" if total.get("note") else "")
    )
    lines.append("rails:")
    rails = [
        [
            r["name"],
            f"{r.get('chip', '')} {r.get('layout', '')} {r.get('device', '')} ch{r.get('channel')}",
            r.get("unit", "") + ("  (total)" if r["is_total"] else ""),
        ]
        for r in data["rails"]
    ]
    lines += align(rails, indent=_INDENT)
    if data.get("sampler"):
        note = data.get("sampler_note")
        lines.append(f"sampler: {data['sampler']}" + (f"  ({note})" if note else ""))
    modes = data.get("power_modes") or []
    if modes:
        lines.append("power modes: " + ", ".join(f"{m['id']} {m['name']}" for m in modes))
    current = data.get("current_power_mode")
    if current:
        lines.append(f"current power mode: {current['id']} {current['name']}")
    lines.extend(knob_lines(data["knobs"]))
    return "\n".join(lines)


def _mhz(hz: object) -> str:
    return f"{int(hz) / 1e6:g}" if isinstance(hz, int) else "-"


def cpu_list(cpus: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 6]`` -> ``0-3,6`` (the kernel's CPU list syntax); ``none`` for none."""
    return format_cpu_list(list(cpus)) or "none"


def offered_text(freqs_hz: Sequence[int] | None) -> str:
    """Offered frequencies: the list when short, else the count and the range (MHz)."""
    if not freqs_hz:
        return "offers no frequency table"
    values = sorted(freqs_hz)
    if len(values) <= SHORT_LIST:
        return "offers " + ", ".join(_mhz(f) for f in values) + " MHz"
    return f"offers {len(values)} steps, {_mhz(values[0])}..{_mhz(values[-1])} MHz"


def _clock_rows(
    items: Sequence[Mapping[str, Any]], name_of: Callable[[Mapping[str, Any]], str]
) -> list[str]:
    rows = [
        [
            name_of(k),
            str(k.get("governor") or "-"),
            f"min {_mhz(k.get('min_freq_hz'))}  max {_mhz(k.get('max_freq_hz'))}  "
            f"cur {_mhz(k.get('cur_freq_hz'))} MHz; {offered_text(k.get('available_freqs_hz'))}",
        ]
        for k in items
    ]
    return align(rows, indent=_INDENT)


def _emc_line(emc: Mapping[str, Any] | None) -> str:
    if not emc:
        return "emc:     not found"
    parts = []
    if emc.get("rate_hz") is not None:
        parts.append(f"{_mhz(emc['rate_hz'])} MHz" + (" (pinned)" if emc.get("locked") else ""))
    if emc.get("min_rate_hz") is not None and emc.get("max_rate_hz") is not None:
        parts.append(f"range {_mhz(emc['min_rate_hz'])}..{_mhz(emc['max_rate_hz'])} MHz")
    if emc.get("cap_hz"):
        parts.append(f"nvpmodel cap {_mhz(emc['cap_hz'])} MHz")
    if emc.get("interface") is None:
        parts.append("no clock interface found (cannot be pinned)")
    return "emc:     " + ", ".join(parts)


def knob_lines(knobs: Mapping[str, Any]) -> list[str]:
    """Lines for the knobs of a board: online cores, CPU policies, GPU, EMC."""
    cpu = knobs.get("cpu") or {}
    present = cpu.get("present") or []
    online = cpu.get("online") or []
    lines = [f"cpu:     {len(online)} of {len(present)} cores online ({cpu_list(online)})"]
    policies = knobs.get("cpufreq") or []
    lines += _clock_rows(policies, lambda p: f"{p['name']} (cpus {cpu_list(p['cpus'])})")
    if not policies:
        lines.append("  no cpufreq policy found")
    gpus = knobs.get("gpus") or ([knobs["gpu"]] if knobs.get("gpu") else [])
    lines.append("gpu:" if gpus else "gpu:     no GPU devfreq found")
    lines += _clock_rows(gpus, lambda g: str(g["name"]))
    lines.append(_emc_line(knobs.get("emc")))
    return lines
