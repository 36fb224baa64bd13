"""Parsers for nvpmodel's configuration and outputs, and for ``jetson_clocks --show``.

Nothing here runs a command: callers pass the text (of ``/etc/nvpmodel.conf``, of
``nvpmodel -q [--verbose]``, of ``jetson_clocks --show``) and get plain values back.

Conventions of ``/etc/nvpmodel.conf`` exposed here: a setting value of ``-1`` means "no
limit, use the highest available value"; ``EMC MAX_FREQ 0`` means "no EMC cap". CPU values
are kHz, GPU/EMC/DLA values Hz, exactly as written in the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import EdgeEnergyError
from .sysfs import CpuListError, parse_cpu_list

GATING_PARAMS = ("TPC_POWER_GATING", "FBP_POWER_GATING", "GPU_POWER_GATING")
"""PARAMs whose values are GPU power-gating masks: changing them needs a reboot."""

KNEXT_SUFFIX = "_KNEXT"


class NvpmodelConfError(EdgeEnergyError, ValueError):
    """``/etc/nvpmodel.conf`` is malformed; the message names source, line and problem."""

    def __init__(self, source: str, line_no: int, problem: str) -> None:
        super().__init__(f"{source}:{line_no}: {problem}")
        self.source = source
        self.line_no = line_no
        self.problem = problem


class UnknownPowerMode(EdgeEnergyError, ValueError):
    """A power mode name or id that the conf does not define; the message lists all."""


class NvpmodelQueryError(EdgeEnergyError, ValueError):
    """``nvpmodel -q`` output without a usable ``NV Power Mode`` line."""

    def __init__(self, message: str, errors: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.errors = errors


class JetsonClocksShowError(EdgeEnergyError, ValueError):
    """``jetson_clocks --show`` output that cannot be parsed."""


@dataclass(frozen=True)
class ParamDef:
    """A ``< PARAM TYPE=... NAME=... >`` block: the files behind one nvpmodel knob."""

    name: str
    type: str
    args: dict[str, str]
    """ARG -> path as written in the conf (absolute on the board), ``*_KNEXT`` keys kept."""

    def path_for(self, arg: str, root: Path) -> Path | None:
        """Path of ``arg`` under ``root``: the plain one if it exists there, else the
        ``_KNEXT`` one if that exists, else the plain one (or the KNEXT one when only it
        is defined); None when the PARAM does not define ``arg`` at all."""
        plain = self.args.get(arg)
        knext = self.args.get(arg + KNEXT_SUFFIX)
        candidates = [_under_root(root, p) for p in (plain, knext) if p is not None]
        for candidate in candidates:
            if candidate.exists():
                return candidate
        return candidates[0] if candidates else None


def _under_root(root: Path, board_path: str) -> Path:
    return root / board_path.lstrip("/")


@dataclass(frozen=True)
class ModeSetting:
    """One ``PARAM ARG VALUE`` line inside a POWER_MODEL block."""

    param: str
    arg: str
    value: str

    @property
    def unlimited(self) -> bool:
        """True for ``-1`` (use the highest value) and for ``EMC MAX_FREQ 0`` (no cap)."""
        if self.value == "-1":
            return True
        return self.param == "EMC" and self.arg == "MAX_FREQ" and self.value == "0"

    def as_int(self) -> int | None:
        """The value as an integer; None when it is unlimited or not a number."""
        if self.unlimited:
            return None
        try:
            return int(self.value)
        except ValueError:
            return None


@dataclass(frozen=True)
class PowerMode:
    """A ``< POWER_MODEL ID=N NAME=X >`` block."""

    id: int
    name: str
    settings: tuple[ModeSetting, ...]

    def get(self, param: str, arg: str) -> ModeSetting | None:
        """The last setting for ``param``/``arg`` (nvpmodel applies lines in order)."""
        found: ModeSetting | None = None
        for setting in self.settings:
            if setting.param == param and setting.arg == arg:
                found = setting
        return found

    def online_cores(self) -> tuple[int, ...] | None:
        """CPU numbers this mode brings online (``CPU_ONLINE CORE_N 1``), None if unset."""
        cores = {
            int(s.arg.removeprefix("CORE_")): s.value.strip() == "1"
            for s in self.settings
            if s.param == "CPU_ONLINE" and s.arg.removeprefix("CORE_").isdigit()
        }
        if not cores:
            return None
        return tuple(sorted(cpu for cpu, online in cores.items() if online))


@dataclass(frozen=True)
class NvpmodelConf:
    """A parsed ``/etc/nvpmodel.conf``."""

    params: dict[str, ParamDef]
    modes: tuple[PowerMode, ...]
    default_id: int | None
    source: str = "/etc/nvpmodel.conf"

    def allowed(self) -> str:
        """Every mode as ``ID NAME``, comma separated, for messages."""
        return ", ".join(f"{m.id} {m.name}" for m in self.modes) or "(none defined)"

    def mode(self, name_or_id: str | int) -> PowerMode:
        """Look a mode up by id (int or digit string) or by name (case-insensitive)."""
        wanted = name_or_id.strip() if isinstance(name_or_id, str) else name_or_id
        if isinstance(wanted, int) or wanted.isdigit():
            mode_id = int(wanted)
            for mode in self.modes:
                if mode.id == mode_id:
                    return mode
        else:
            for mode in self.modes:
                if mode.name.lower() == wanted.lower():
                    return mode
        raise UnknownPowerMode(
            f"power mode {name_or_id!r} is not defined in {self.source}; "
            f"allowed (ID NAME): {self.allowed()}"
        )

    @property
    def default_mode(self) -> PowerMode | None:
        """The PM_CONFIG default mode, None when unset or not defined in this conf."""
        if self.default_id is None:
            return None
        for mode in self.modes:
            if mode.id == self.default_id:
                return mode
        return None

    def gating_masks(self, mode: PowerMode | str | int) -> dict[str, str]:
        """GPU power-gating mask values of ``mode`` keyed ``PARAM ARG``
        (e.g. ``{"TPC_POWER_GATING TPC_PG_MASK": "240"}``)."""
        resolved = mode if isinstance(mode, PowerMode) else self.mode(mode)
        masks: dict[str, str] = {}
        for setting in resolved.settings:
            if setting.param in GATING_PARAMS:
                masks[f"{setting.param} {setting.arg}"] = setting.value
        return masks

    def needs_reboot(
        self, from_mode: PowerMode | str | int, to_mode: PowerMode | str | int
    ) -> bool:
        """True when switching modes changes a GPU power-gating mask (nvpmodel reboots)."""
        return self.gating_masks(from_mode) != self.gating_masks(to_mode)


_HEADER_RE = re.compile(r"^<\s*(?P<kind>[A-Za-z_][A-Za-z0-9_]*)(?P<attrs>[^>]*)>\s*$")


def _strip_comment(line: str) -> str:
    # '#' never occurs in a path or value of a real conf, so anything after it is a comment.
    hash_at = line.find("#")
    return (line if hash_at < 0 else line[:hash_at]).strip()


def _header_attrs(attrs_text: str, source: str, line_no: int) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for token in attrs_text.split():
        key, sep, value = token.partition("=")
        if not sep or not key or not value:
            raise NvpmodelConfError(
                source, line_no, f"block header attribute {token!r} is not KEY=VALUE"
            )
        attrs[key.upper()] = value
    return attrs


def _parse_id(text: str, what: str, source: str, line_no: int) -> int:
    try:
        return int(text)
    except ValueError:
        raise NvpmodelConfError(source, line_no, f"{what}={text!r} is not an integer") from None


@dataclass
class _ModeBuilder:
    id: int
    name: str
    line_no: int
    settings: list[tuple[ModeSetting, int]] = field(default_factory=list)


def parse_conf(text: str, *, source: str = "/etc/nvpmodel.conf") -> NvpmodelConf:
    """Parse the text of an ``nvpmodel.conf``.

    Raises :class:`NvpmodelConfError` naming ``source``, the line number and the problem.
    References from modes to PARAMs are checked only when the conf has a PARAM section.
    Unknown block kinds are skipped with their bodies.
    """
    params: dict[str, ParamDef] = {}
    modes: list[_ModeBuilder] = []
    default_id: int | None = None
    # Current block: ("PARAM", name) / ("POWER_MODEL", index) / ("PM_CONFIG", "") /
    # ("OTHER", kind) / None before the first header.
    block: tuple[str, str] | None = None
    param_args: dict[str, str] = {}
    seen_ids: dict[int, int] = {}

    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        if not line:
            continue
        if line.startswith("<"):
            if ">" not in line:
                raise NvpmodelConfError(source, line_no, f"unterminated '<' in {line!r}")
            match = _HEADER_RE.match(line)
            if match is None:
                raise NvpmodelConfError(source, line_no, f"malformed block header {line!r}")
            kind = match.group("kind").upper()
            attrs = _header_attrs(match.group("attrs"), source, line_no)
            if kind == "PARAM":
                name = attrs.get("NAME")
                ptype = attrs.get("TYPE")
                if name is None or ptype is None:
                    raise NvpmodelConfError(
                        source, line_no, "PARAM block header needs TYPE=... and NAME=..."
                    )
                if name in params:
                    raise NvpmodelConfError(source, line_no, f"PARAM {name} defined twice")
                param_args = {}
                params[name] = ParamDef(name=name, type=ptype.upper(), args=param_args)
                block = ("PARAM", name)
            elif kind == "POWER_MODEL":
                if "ID" not in attrs or "NAME" not in attrs:
                    raise NvpmodelConfError(
                        source, line_no, "POWER_MODEL block header needs ID=N and NAME=X"
                    )
                mode_id = _parse_id(attrs["ID"], "POWER_MODEL ID", source, line_no)
                if mode_id in seen_ids:
                    raise NvpmodelConfError(
                        source,
                        line_no,
                        f"POWER_MODEL ID={mode_id} already defined on line {seen_ids[mode_id]}",
                    )
                seen_ids[mode_id] = line_no
                modes.append(_ModeBuilder(mode_id, attrs["NAME"], line_no))
                block = ("POWER_MODEL", str(len(modes) - 1))
            elif kind == "PM_CONFIG":
                if "DEFAULT" not in attrs:
                    raise NvpmodelConfError(source, line_no, "PM_CONFIG header needs DEFAULT=N")
                default_id = _parse_id(attrs["DEFAULT"], "PM_CONFIG DEFAULT", source, line_no)
                block = ("PM_CONFIG", "")
            else:
                block = ("OTHER", kind)
            continue
        if ">" in line and "<" not in line:
            raise NvpmodelConfError(source, line_no, f"'>' without '<' in {line!r}")

        tokens = line.split()
        if block is None or block[0] == "PM_CONFIG":
            where = "before any block" if block is None else "after PM_CONFIG"
            raise NvpmodelConfError(
                source,
                line_no,
                f"line {line!r} {where}: settings belong in a POWER_MODEL or PARAM block",
            )
        if block[0] == "OTHER":
            continue
        if block[0] == "PARAM":
            if len(tokens) != 2:
                raise NvpmodelConfError(
                    source,
                    line_no,
                    f"PARAM {block[1]}: expected 'ARG /path', got {line!r}",
                )
            param_args[tokens[0]] = tokens[1]
            continue
        if len(tokens) != 3:
            raise NvpmodelConfError(
                source,
                line_no,
                f"POWER_MODEL {modes[int(block[1])].name}: expected 'PARAM ARG VALUE', "
                f"got {line!r}",
            )
        modes[int(block[1])].settings.append((ModeSetting(*tokens), line_no))

    if params:
        for builder in modes:
            for setting, line_no in builder.settings:
                if setting.param not in params:
                    raise NvpmodelConfError(
                        source,
                        line_no,
                        f"POWER_MODEL {builder.name} uses PARAM {setting.param}, "
                        f"which no PARAM block defines",
                    )
    return NvpmodelConf(
        params=params,
        modes=tuple(PowerMode(b.id, b.name, tuple(s for s, _ in b.settings)) for b in modes),
        default_id=default_id,
        source=source,
    )


# ---------------------------------------------------------------- nvpmodel -q [--verbose]


@dataclass(frozen=True)
class QueryParam:
    """One ``NVPM VERB: PARAM ...`` line of ``nvpmodel -q --verbose``."""

    param: str
    arg: str
    path: str
    real_value: str
    conf_value: str


@dataclass(frozen=True)
class QueryResult:
    """The current power mode as ``nvpmodel -q [--verbose]`` reports it."""

    name: str
    id: int
    errors: tuple[str, ...] = ()
    params: tuple[QueryParam, ...] = ()


_MODE_LINE_RE = re.compile(r"NV Power Mode:\s*(?P<name>\S+)")
_VERB_PARAM_RE = re.compile(
    r"^NVPM VERB:\s*PARAM (?P<param>\S+?):\s*ARG (?P<arg>\S+?):\s*PATH (?P<path>.+?):"
    r"\s*REAL_VAL:\s*(?P<real>\S*)\s+CONF_VAL:\s*(?P<conf>\S*)\s*$"
)


def parse_query(text: str) -> QueryResult:
    """Parse ``nvpmodel -q`` or ``nvpmodel -q --verbose`` output.

    ``NVPM WARN`` lines are ignored, ``NVPM ERROR`` lines are kept in ``errors``. Raises
    :class:`NvpmodelQueryError` when there is no ``NV Power Mode`` line followed by an id.
    """
    lines = [line.strip() for line in text.splitlines()]
    errors = tuple(line for line in lines if line.startswith("NVPM ERROR"))
    params: list[QueryParam] = []
    for line in lines:
        match = _VERB_PARAM_RE.match(line)
        if match is not None:
            params.append(
                QueryParam(
                    param=match.group("param"),
                    arg=match.group("arg"),
                    path=match.group("path").strip(),
                    real_value=match.group("real"),
                    conf_value=match.group("conf"),
                )
            )
    for index, line in enumerate(lines):
        if line.startswith(("NVPM WARN", "NVPM ERROR")):
            continue
        match = _MODE_LINE_RE.search(line)
        if match is None:
            continue
        following = next((ln for ln in lines[index + 1 :] if ln), None)
        if following is None or not following.isdigit():
            raise NvpmodelQueryError(
                f"nvpmodel -q: 'NV Power Mode: {match.group('name')}' is not followed by "
                f"a numeric mode id (got {following!r})",
                errors,
            )
        return QueryResult(match.group("name"), int(following), errors, tuple(params))
    detail = "; errors: " + " | ".join(errors) if errors else ""
    raise NvpmodelQueryError(f"nvpmodel -q: no 'NV Power Mode: NAME' line found{detail}", errors)


# ---------------------------------------------------------------- jetson_clocks --show


@dataclass(frozen=True)
class CpuClockShow:
    """One ``cpuN:`` line of ``jetson_clocks --show`` (frequencies converted kHz -> Hz)."""

    cpu: int
    online: bool | None
    """From the line's ``Online=``; when the line has none (JetPack 7), from the
    ``Online CPUs: ..., Offline CPUs: ...`` header; None when neither says."""
    governor: str | None
    min_freq_hz: int | None
    max_freq_hz: int | None
    cur_freq_hz: int | None


@dataclass(frozen=True)
class ClockShow:
    """A ``NAME MinFreq=... MaxFreq=... CurrentFreq=...`` line (Hz)."""

    name: str
    min_freq_hz: int | None
    max_freq_hz: int | None
    cur_freq_hz: int | None
    freq_override: bool | None = None
    """EMC only: ``FreqOverride=1`` (jetson_clocks pinned the rate)."""
    online: bool | None = None
    """Accelerators (``DLA0_CORE: Online=1 ...``): the line's ``Online=``."""


@dataclass(frozen=True)
class JetsonClocksShow:
    """Parsed ``jetson_clocks --show``."""

    soc_family: str | None
    machine: str | None
    online_cpus: tuple[int, ...]
    cpus: tuple[CpuClockShow, ...]
    gpu: ClockShow | None
    """The GPU's graphics clock: ``GPU`` (before JetPack 7) or the first ``gpu-gpc-N``."""
    emc: ClockShow | None
    power_mode: str | None
    other_clocks: tuple[ClockShow, ...] = ()
    """Further ``NAME MinFreq=...`` lines (DLA, PVA, CVNAS on L4T 35+), names without ``:``."""
    offline_cpus: tuple[int, ...] = ()
    """The JetPack 7 header's ``Offline CPUs: ...`` list."""
    gpu_clocks: tuple[ClockShow, ...] = ()
    """Every GPU clock line: ``GPU``, ``gpu-gpc-N`` and ``gpu-nvd-N`` (Thor's codec clock)."""


_KV_RE = re.compile(r"(\w+)=(\S*)")
_CPU_LINE_RE = re.compile(r"^cpu(\d+):\s*(.*)$")
_GPU_GRAPHICS_RE = re.compile(r"^(GPU|gpu-gpc-\d+)$")
_GPU_CLOCK_RE = re.compile(r"^gpu-[a-z]+-\d+$")
_ONLINE_HEADER = "Online CPUs:"
_OFFLINE_HEADER = "Offline CPUs:"
_GOVERNOR_KEYS = ("Governor", "Gonvernor")
"""``Gonvernor`` is NVIDIA's own typo in the TX1-era script."""


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _khz_to_hz(text: str | None) -> int | None:
    value = _int_or_none(text)
    return None if value is None else value * 1000


def _flag(text: str | None) -> bool | None:
    return {"1": True, "0": False}.get(text or "")


def _cpu_header(line: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``Online CPUs: 0-5`` or ``Online CPUs: 0-13, Offline CPUs: 14-15`` (either empty)."""
    rest = line[len(_ONLINE_HEADER) :]
    online_text, _, offline_text = rest.partition(_OFFLINE_HEADER)
    try:
        return (
            parse_cpu_list(online_text.strip().rstrip(",")),
            parse_cpu_list(offline_text),
        )
    except CpuListError as exc:
        raise JetsonClocksShowError(f"jetson_clocks --show: {exc}") from None


def _cpu_line(number: str, rest: str) -> CpuClockShow:
    kv = dict(_KV_RE.findall(rest))
    governor = next((kv[k] for k in _GOVERNOR_KEYS if kv.get(k)), None)
    return CpuClockShow(
        cpu=int(number),
        online=_flag(kv.get("Online")),
        governor=governor,
        min_freq_hz=_khz_to_hz(kv.get("MinFreq")),
        max_freq_hz=_khz_to_hz(kv.get("MaxFreq")),
        cur_freq_hz=_khz_to_hz(kv.get("CurrentFreq")),
    )


def _clock_line(line: str) -> ClockShow | None:
    name, _, rest = line.partition(" ")
    kv = dict(_KV_RE.findall(rest))
    if "MaxFreq" not in kv:
        return None
    return ClockShow(
        name=name.rstrip(":"),
        min_freq_hz=_int_or_none(kv.get("MinFreq")),
        max_freq_hz=_int_or_none(kv.get("MaxFreq")),
        cur_freq_hz=_int_or_none(kv.get("CurrentFreq")),
        freq_override=_flag(kv.get("FreqOverride")),
        online=_flag(kv.get("Online")),
    )


def _with_header(cpu: CpuClockShow, online: tuple[int, ...] | None) -> CpuClockShow:
    if cpu.online is not None or online is None:
        return cpu
    return replace(cpu, online=cpu.cpu in online)


def parse_jetson_clocks_show(text: str) -> JetsonClocksShow:
    """Parse ``jetson_clocks --show`` of any generation (L4T 28 to JetPack 7).

    Raises :class:`JetsonClocksShowError` on a bad ``Online CPUs`` list or when nothing
    recognisable is found."""
    soc: str | None = None
    machine: str | None = None
    online: tuple[int, ...] | None = None
    offline: tuple[int, ...] = ()
    cpus: list[CpuClockShow] = []
    gpu_clocks: list[ClockShow] = []
    emc: ClockShow | None = None
    power_mode: str | None = None
    others: list[ClockShow] = []
    recognised = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("SOC family:"):
            recognised = True
            rest = line[len("SOC family:") :]
            soc_part, _, machine_part = rest.partition("Machine:")
            soc = soc_part.strip() or None
            machine = machine_part.strip() or None
            continue
        if line.startswith(_ONLINE_HEADER):
            recognised = True
            online, offline = _cpu_header(line)
            continue
        mode_match = _MODE_LINE_RE.match(line)
        if mode_match is not None:
            recognised = True
            power_mode = mode_match.group("name")
            continue
        cpu_match = _CPU_LINE_RE.match(line)
        if cpu_match is not None:
            recognised = True
            cpus.append(_cpu_line(cpu_match.group(1), cpu_match.group(2)))
            continue
        clock = _clock_line(line)
        if clock is None:
            continue
        recognised = True
        if _GPU_GRAPHICS_RE.match(clock.name) or _GPU_CLOCK_RE.match(clock.name):
            gpu_clocks.append(clock)
        elif clock.name == "EMC":
            emc = clock
        else:
            others.append(clock)
    if not recognised:
        raise JetsonClocksShowError("jetson_clocks --show: no recognisable line in the output")
    return JetsonClocksShow(
        soc_family=soc,
        machine=machine,
        online_cpus=online or (),
        cpus=tuple(_with_header(c, online) for c in cpus),
        gpu=next((c for c in gpu_clocks if _GPU_GRAPHICS_RE.match(c.name)), None),
        emc=emc,
        power_mode=power_mode,
        other_clocks=tuple(others),
        offline_cpus=offline,
        gpu_clocks=tuple(gpu_clocks),
    )
