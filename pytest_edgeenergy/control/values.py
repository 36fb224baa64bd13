"""Parse and resolve the values users pin: frequencies, core counts, governors, power modes.

Frequency syntax (case-insensitive, spaces allowed before the unit)::

    612MHz   1.2GHz   115200kHz   306000000Hz   306000000
    min  max  all  dvfs          612MHz,max,dvfs   (a comma list)

A bare number is **Hz** (the unit of devfreq files); ``612`` therefore means 612 Hz and is
rejected with a hint. ``min``/``max`` are the lowest/highest offered value, ``all`` is every
offered value, ``dvfs`` pins nothing (the default governor decides).

Power modes (:func:`resolve_power_mode`) are named as the board's nvpmodel.conf spells them
(any case), by id, or by a role that means the same on every board: ``max``, ``min``,
``default`` (:func:`mode_for_role`).

Every error message starts with the value's source as the caller names it (``--gpu-freq``,
``EDGEENERGY_GPU_FREQ``, ``ini edge_gpu_freq``, ``marker edge_point``) and the raw text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

from ..board.nvpmodel import NvpmodelConf, PowerMode, UnknownPowerMode
from .errors import NotOffered, ValueSpecError

FreqWord = Literal["min", "max", "all", "dvfs"]
FREQ_WORDS: tuple[FreqWord, ...] = ("min", "max", "all", "dvfs")

_UNITS: dict[str, int] = {"hz": 1, "khz": 1_000, "mhz": 1_000_000, "ghz": 1_000_000_000}
_FREQ_RE = re.compile(r"^(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[kmg]?hz)?$", re.IGNORECASE)
_BARE_HINT_BELOW_HZ = 100_000
"""A bare number below this is almost certainly meant as MHz; say so in the message."""


class UnknownMode(ValueSpecError, UnknownPowerMode):
    """A power mode the board's nvpmodel.conf does not define (message lists them all)."""


@dataclass(frozen=True)
class FreqSpec:
    """One parsed frequency item: a value in Hz or one of the words."""

    text: str
    hz: int | None = None
    word: FreqWord | None = None
    bare: bool = False
    """True when the text had no unit (so it was read as Hz)."""


def parse_freq(text: str, *, source: str = "frequency") -> FreqSpec:
    """Parse one frequency item (see the module docstring for the syntax)."""
    item = text.strip()
    lowered = item.lower()
    for word in FREQ_WORDS:
        if lowered == word:
            return FreqSpec(text=item, word=word)
    match = _FREQ_RE.match(item)
    if match is None:
        raise ValueSpecError(
            f"{source} {text!r}: not a frequency; allowed: a number with a unit Hz, kHz, MHz "
            f"or GHz (e.g. 612MHz, 1.2GHz; a bare number is Hz), or one of "
            f"{', '.join(FREQ_WORDS)}"
        )
    unit = (match.group("unit") or "hz").lower()
    try:
        value = Decimal(match.group("num")) * _UNITS[unit]
    except InvalidOperation:  # pragma: no cover - the regex admits only decimals
        raise ValueSpecError(f"{source} {text!r}: not a number") from None
    if value != value.to_integral_value():
        raise ValueSpecError(f"{source} {text!r}: not a whole number of Hz ({value} Hz)")
    hz = int(value)
    if hz <= 0:
        raise ValueSpecError(f"{source} {text!r}: a frequency must be greater than 0 Hz")
    return FreqSpec(text=item, hz=hz, bare=match.group("unit") is None)


def split_list(text: str, *, source: str) -> tuple[str, ...]:
    """Split a comma list, refusing empty items (``612MHz,,max``)."""
    items = tuple(part.strip() for part in text.split(","))
    if not text.strip() or any(not item for item in items):
        raise ValueSpecError(f"{source} {text!r}: empty item in the list")
    return items


def parse_freq_list(text: str, *, source: str = "frequency") -> tuple[FreqSpec, ...]:
    """Parse a comma list of frequency items."""
    return tuple(parse_freq(item, source=source) for item in split_list(text, source=source))


def _decimal_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_mhz(hz: int) -> str:
    """``714000000`` -> ``714 MHz``; ``115200000`` -> ``115.2 MHz`` (for messages)."""
    return f"{_decimal_text(Decimal(hz) / 1_000_000)} MHz"


def format_mhz_list(offered_hz: Sequence[int]) -> str:
    """``306, 408, 510 MHz``."""
    return ", ".join(_decimal_text(Decimal(f) / 1_000_000) for f in offered_hz) + " MHz"


def format_freq(hz: int) -> str:
    """Compact exact form used in ids: ``612MHz``, ``1.4976GHz``, ``115.2MHz``, ``800kHz``.

    :func:`parse_freq` of the result gives ``hz`` back.
    """
    for unit, scale in (("GHz", 10**9), ("MHz", 10**6), ("kHz", 10**3)):
        if hz >= scale:
            return f"{_decimal_text(Decimal(hz) / scale)}{unit}"
    return f"{hz}Hz"


def nearest(offered_hz: Sequence[int], hz: int) -> int:
    """The offered value closest to ``hz`` (the lower one on a tie)."""
    return min(offered_hz, key=lambda f: (abs(f - hz), f))


def resolve_freq(
    spec: FreqSpec, offered_hz: Sequence[int], *, source: str, clock: str = "clock"
) -> tuple[int | None, ...]:
    """Resolve one item against the offered values (ascending or not).

    Returns ``(None,)`` for ``dvfs``, every offered value for ``all``, else one value.
    Raises :class:`NotOffered` when the value is not offered.
    """
    if spec.word == "dvfs":
        return (None,)
    offered = tuple(sorted(set(offered_hz)))
    if not offered:
        raise NotOffered(
            f"{source} {spec.text}: the board offers no {clock} frequencies to pin "
            f"(no frequency table found); allowed: dvfs"
        )
    if spec.word == "all":
        return offered
    if spec.word == "min":
        return (offered[0],)
    if spec.word == "max":
        return (offered[-1],)
    assert spec.hz is not None
    if spec.hz in offered:
        return (spec.hz,)
    message = (
        f"{source} {spec.text}: not offered; offered: {format_mhz_list(offered)}; "
        f"nearest: {format_mhz(nearest(offered, spec.hz))}"
    )
    if spec.bare and spec.hz < _BARE_HINT_BELOW_HZ:
        message += f" (a bare number is Hz; did you mean {spec.text}MHz?)"
    raise NotOffered(message)


def resolve_freqs(
    specs: Sequence[FreqSpec], offered_hz: Sequence[int], *, source: str, clock: str = "clock"
) -> tuple[int | None, ...]:
    """Resolve a list of items; duplicates removed, order kept (None = dvfs)."""
    result: list[int | None] = []
    for spec in specs:
        for value in resolve_freq(spec, offered_hz, source=source, clock=clock):
            if value not in result:
                result.append(value)
    return tuple(result)


# ---------------------------------------------------------------- cores


CoresItem = int | Literal["all"]


def parse_cores(text: str, *, source: str = "--cpu-cores") -> tuple[CoresItem, ...]:
    """Parse ``2,4,all``: numbers of online cores (cpu0 .. cpuN-1), or ``all``."""
    items: list[CoresItem] = []
    for item in split_list(text, source=source):
        if item.lower() == "all":
            items.append("all")
            continue
        try:
            count = int(item)
        except ValueError:
            raise ValueSpecError(
                f"{source} {item!r}: not a core count; allowed: a whole number >= 1 or 'all'"
            ) from None
        if count < 0:
            raise ValueSpecError(
                f"{source} {item}: a core count cannot be negative; allowed: 1 .. the number "
                f"of cores, or 'all'"
            )
        if count == 0:
            raise ValueSpecError(
                f"{source} 0: at least one core must stay online (cpu0 is never taken "
                f"offline); allowed: 1 .. the number of cores, or 'all'"
            )
        items.append(count)
    return tuple(items)


def resolve_cores(
    items: Sequence[CoresItem], present: Sequence[int], *, source: str = "--cpu-cores"
) -> tuple[int, ...]:
    """Resolve core counts against the present CPUs; duplicates removed, order kept."""
    total = len(present)
    result: list[int] = []
    for item in items:
        count = total if item == "all" else item
        if count > total:
            raise ValueSpecError(
                f"{source} {count}: more cores than the board has ({total} present: "
                f"cpu{min(present)}-cpu{max(present)})"
                if total
                else f"{source} {count}: the board shows no CPUs to count"
            )
        if count not in result:
            result.append(count)
    return tuple(result)


# ---------------------------------------------------------------- governors


def resolve_governor(text: str, available: Sequence[str], *, source: str = "--governor") -> str:
    """A governor name that ``available`` lists (exact match, case-insensitive input)."""
    name = text.strip().lower()
    if not available:
        raise ValueSpecError(
            f"{source} {text}: the board lists no available CPU governors "
            f"(scaling_available_governors missing)"
        )
    if name not in available:
        raise ValueSpecError(
            f"{source} {text}: not an available governor; available: {', '.join(available)}"
        )
    return name


def resolve_governors(
    text: str, available: Sequence[str], *, source: str = "--governor"
) -> tuple[str | None, ...]:
    """A comma list of governors; ``dvfs`` means "leave the governor as it is" (None)."""
    result: list[str | None] = []
    for item in split_list(text, source=source):
        value = None if item.lower() == "dvfs" else resolve_governor(item, available, source=source)
        if value not in result:
            result.append(value)
    return tuple(result)


# ---------------------------------------------------------------- power modes

PowerModeRole = Literal["max", "min", "default"]
POWER_MODE_ROLES: tuple[PowerModeRole, ...] = ("max", "min", "default")
"""Power-mode words that mean the same on every board (as ``min``/``max`` do for clocks):
``max`` the highest-power mode, ``min`` the lowest, ``default`` the conf's PM_CONFIG
DEFAULT. See :func:`mode_for_role`."""

_WATTS_RE = re.compile(r"(?:^|_)(\d+(?:\.\d+)?)W(?:_|$)", re.IGNORECASE)
_UNLIMITED = float("inf")


def is_maxn(mode: PowerMode) -> bool:
    """The mode is NVIDIA's unconstrained one: named ``MAXN`` or ``MAXN_*`` (``MAXN_SUPER``)."""
    name = mode.name.upper()
    return name == "MAXN" or name.startswith("MAXN_")


def mode_watts(mode: PowerMode) -> float | None:
    """The power budget a mode's name states (``15W``, ``MODE_30W_ALL``: 30); None if none."""
    match = _WATTS_RE.search(mode.name)
    return float(match.group(1)) if match else None


def _cap(mode: PowerMode, param: str, arg: str = "MAX_FREQ") -> float:
    setting = mode.get(param, arg)
    if setting is None or setting.unlimited:
        return _UNLIMITED
    value = setting.as_int()
    return float(value) if value is not None else _UNLIMITED


def mode_limits(mode: PowerMode) -> tuple[float, float, float]:
    """What a mode lets the board draw, for ordering modes: the GPU cap, the CPU capacity
    (online cores x the highest CPU cap) and the EMC cap; unlimited (``-1``, ``EMC 0``)
    and unset count as infinite."""
    cpu_caps = [
        _cap(mode, s.param)
        for s in mode.settings
        if s.param.startswith("CPU_") and s.param != "CPU_ONLINE" and s.arg == "MAX_FREQ"
    ]
    cores = mode.online_cores()
    count = len(cores) if cores is not None else _UNLIMITED
    cpu = count * max(cpu_caps, default=_UNLIMITED)
    return (_cap(mode, "GPU"), cpu, _cap(mode, "EMC"))


def _power_order(modes: Sequence[PowerMode]) -> list[PowerMode]:
    """Modes from the lowest power to the highest: by the watts their names state when
    every mode but MAXN* states one (MAXN* counts as the most), then by :func:`mode_limits`;
    the conf's order breaks ties."""
    named = all(is_maxn(m) or mode_watts(m) is not None for m in modes)

    def key(mode: PowerMode) -> tuple[float, float, float, float]:
        watts = _UNLIMITED if is_maxn(mode) else (mode_watts(mode) or 0.0)
        return (watts if named else 0.0, *mode_limits(mode))

    return sorted(modes, key=key)


def mode_for_role(role: PowerModeRole, conf: NvpmodelConf, *, source: str) -> PowerMode:
    """The mode a role names on this board.

    ``max``: the mode named ``MAXN`` or ``MAXN_*`` (the highest limits among several);
    without one, the highest-power mode (watts in the name, ``MODE_30W_ALL`` over
    ``MODE_15W``, then the highest limits). ``min``: the lowest-power mode, by the same
    order. ``default``: the conf's ``PM_CONFIG DEFAULT``.
    """
    if not conf.modes:
        raise UnknownMode(f"{source} {role}: {conf.source} defines no power modes")
    if role == "default":
        mode = conf.default_mode
        if mode is None:
            raise UnknownMode(
                f"{source} default: {conf.source} names no default mode (PM_CONFIG DEFAULT "
                f"missing or undefined); name a mode instead, allowed (ID NAME): "
                f"{conf.allowed()}"
            )
        return mode
    if role == "max":
        maxn = [m for m in conf.modes if is_maxn(m)]
        return _power_order(maxn or conf.modes)[-1]
    return _power_order(conf.modes)[0]


def power_mode_role(text: str) -> PowerModeRole | None:
    """The role ``text`` names (any case), or None."""
    word = text.strip().lower()
    for role in POWER_MODE_ROLES:
        if word == role:
            return role
    return None


def _roles_text(conf: NvpmodelConf, source: str) -> str:
    parts = []
    for role in POWER_MODE_ROLES:
        try:
            parts.append(f"{role} ({mode_for_role(role, conf, source=source).name})")
        except UnknownMode:
            continue
    return ", ".join(parts)


def resolve_power_mode(
    text: str, conf: NvpmodelConf | None, *, source: str = "--power-mode"
) -> PowerMode:
    """A mode by name (any case), id or role (:data:`POWER_MODE_ROLES`, see
    :func:`mode_for_role`), or :class:`UnknownMode` listing every mode and role."""
    if conf is None:
        raise ValueSpecError(
            f"{source} {text}: this board has no usable nvpmodel.conf, so no power modes"
        )
    role = power_mode_role(text)
    if role is not None:
        return mode_for_role(role, conf, source=source)
    try:
        return conf.mode(text)
    except UnknownPowerMode as exc:
        message = f"{source} {text}: {exc}; or a role: {_roles_text(conf, source)}"
        close = difflib.get_close_matches(
            text.strip().lower(), [*POWER_MODE_ROLES, *(m.name.lower() for m in conf.modes)], 1
        )
        if close:
            message += f" (did you mean {close[0]!r}?)"
        raise UnknownMode(message) from None
