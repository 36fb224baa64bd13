"""``nvpmodel``, ``jetson_clocks`` and ``tegrastats`` for a virtual board.

``python -m pytest_edgeenergy.sim.shims TOOL --root ROOT [tool options]``; the scripts in a
tree's ``usr/bin`` call this with their own tree as ROOT. Each prints what the real tool
prints (formats from the project's reference) and acts on files under ROOT only.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TextIO

from ..board.nvpmodel import (
    GATING_PARAMS,
    NvpmodelConf,
    NvpmodelConfError,
    ParamDef,
    PowerMode,
    parse_conf,
)
from ..board.sysfs import format_cpu_list
from ..errors import EdgeEnergyError
from ..safefs import resolves_inside
from .files import write_knob
from .hostload import HostLoad
from .models import NC, BoardModel, get_model
from .runner import read_marker

NVPMODEL_CONF = "/etc/nvpmodel.conf"
NVPMODEL_STATUS = "var/lib/nvpmodel/status"
CPU_DIR = "sys/devices/system/cpu"
INT32_MAX = "2147483647"
INT64_MAX = "9223372036854775807"


class ShimError(EdgeEnergyError):
    """A tool failed; the message is printed as the real tool would."""


def _under(root: Path, board_path: str) -> Path:
    return root / board_path.lstrip("/")


def _read(path: Path, default: str = "") -> str:
    try:
        parts = path.read_text().split()
    except OSError:
        return default
    return parts[0] if parts else default


def _model(root: Path) -> BoardModel:
    return get_model(str(read_marker(root).get("model")))


# --------------------------------------------------------------------------- nvpmodel


def _load_conf(root: Path, conf_arg: str | None) -> tuple[NvpmodelConf, str]:
    board_path = conf_arg or NVPMODEL_CONF
    path = Path(board_path)
    if conf_arg is None or not path.is_file():
        path = _under(root, board_path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ShimError(f"NVPM ERROR: Error opening {board_path}: {exc.errno}") from None
    try:
        return parse_conf(text, source=board_path), board_path
    except NvpmodelConfError as exc:
        raise ShimError(f"NVPM ERROR: failed to parse {board_path}: {exc}") from None


def current_mode_id(root: Path, conf: NvpmodelConf) -> int:
    """The mode recorded in ``var/lib/nvpmodel/status``, else the conf's default."""
    try:
        match = re.search(r"pmode:(\d+)", (root / NVPMODEL_STATUS).read_text())
    except OSError:
        match = None
    if match is not None:
        return int(match.group(1))
    if conf.default_id is not None:
        return conf.default_id
    raise ShimError("NVPM ERROR: no current power mode and no PM_CONFIG default")


def _write_status(root: Path, mode_id: int) -> None:
    path = root / NVPMODEL_STATUS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"pmode:{mode_id:04d} fmode:fanNull\n")


def _table(param: ParamDef, root: Path, model: BoardModel) -> list[int]:
    path = param.path_for("FREQ_TABLE", root)
    if path is not None:
        try:
            return sorted(int(v) for v in path.read_text().split())
        except (OSError, ValueError):
            pass
    if param.name == "EMC":
        return list(model.emc.rates_hz)
    return []


def resolve_value(param: ParamDef, arg: str, value: str, root: Path, model: BoardModel) -> str:
    """The text nvpmodel writes for one setting: -1 = top offered value, MIN 0 = lowest,
    ``EMC MAX_FREQ 0`` = no cap (written as 0); anything else verbatim."""
    if param.type != "CLOCK" or arg not in ("MAX_FREQ", "MIN_FREQ"):
        return value
    if param.name == "EMC" and arg == "MAX_FREQ" and value == "0":
        return "0"
    table = _table(param, root, model)
    if value == "-1" and table:
        return str(table[-1])
    if value == "0" and arg == "MIN_FREQ" and table:
        return str(table[0])
    return value


def _setting_path(conf: NvpmodelConf, param_name: str, arg: str, root: Path) -> Path | None:
    param = conf.params.get(param_name)
    return param.path_for(arg, root) if param is not None else None


def _gating_changes(conf: NvpmodelConf, mode: PowerMode, root: Path) -> list[str]:
    changes: list[str] = []
    for setting in mode.settings:
        if setting.param not in GATING_PARAMS:
            continue
        path = _setting_path(conf, setting.param, setting.arg, root)
        current = _read(path) if path is not None else ""
        try:
            same = int(current, 0) == int(setting.value, 0)
        except ValueError:
            same = current == setting.value
        if not same:
            changes.append(f"{setting.arg.lower()}: ({current or '?'}:{setting.value})")
    return changes


def apply_mode(root: Path, conf: NvpmodelConf, mode: PowerMode, model: BoardModel) -> None:
    """Write every setting of ``mode`` under ``root`` (in conf order) and record the mode.

    A virtual board is a tree the user owns, often written as root: a PARAM path that
    leaves it (``/sys/../../x``, or through a link) fails the whole mode before any write."""
    for setting in mode.settings:
        param = conf.params.get(setting.param)
        path = param.path_for(setting.arg, root) if param is not None else None
        if path is not None and not resolves_inside(path, root):
            raise ShimError(
                f"NVPM ERROR: PARAM {setting.param}: ARG {setting.arg}: PATH "
                f"{param.args.get(setting.arg) if param else path} resolves outside the virtual "
                f"board {root}\nNVPM ERROR: failed to set power mode!"
            )
    for setting in mode.settings:
        param = conf.params.get(setting.param)
        if param is None:
            raise ShimError(f"NVPM ERROR: PARAM {setting.param} is not defined")
        path = param.path_for(setting.arg, root)
        if path is None:
            raise ShimError(
                f"NVPM ERROR: PARAM {setting.param} has no ARG {setting.arg}\n"
                "NVPM ERROR: failed to set power mode!"
            )
        value = resolve_value(param, setting.arg, setting.value, root, model)
        if setting.param == "CPU_ONLINE" and not path.exists() and value == "1":
            continue  # cpu0 has no online file: it is always online
        try:
            if not path.exists():
                raise FileNotFoundError(2, "No such file or directory")
            write_knob(path, value)
        except OSError as exc:
            board = param.args.get(setting.arg, str(path))
            raise ShimError(
                f"NVPM ERROR: Error writing {value} to {board}: {exc.errno}\n"
                f"NVPM ERROR: failed to write PARAM {setting.param}: ARG {setting.arg}: "
                f"PATH: {board} VAL: {value}\n"
                "NVPM ERROR: failed to set power mode!"
            ) from None
    _write_status(root, mode.id)


def _conf_val(value: str, model: BoardModel) -> str:
    if value == "-1":
        return INT64_MAX if model.l4t_major >= 36 else INT32_MAX
    return value


def _query(root: Path, conf: NvpmodelConf, conf_path: str, verbose: bool, out: TextIO) -> None:
    model = _model(root)
    mode_id = current_mode_id(root, conf)
    mode = next((m for m in conf.modes if m.id == mode_id), None)
    name = mode.name if mode is not None else "UNKNOWN"
    if verbose:
        out.write(f"NVPM VERB: Config file: {conf_path}\n")
        out.write(f"NVPM VERB: parsing done for {conf_path}\n")
        out.write(f"NVPM VERB: Current mode: NV Power Mode: {name}\n{mode_id}\n")
    else:
        out.write(f"NV Power Mode: {name}\n{mode_id}\n")
    if not verbose or mode is None:
        return
    for s in mode.settings:
        param = conf.params.get(s.param)
        if param is None:
            continue
        path = param.path_for(s.arg, root)
        board = param.args.get(s.arg, "")
        real = _read(path, "1" if s.param == "CPU_ONLINE" else "") if path is not None else ""
        out.write(
            f"NVPM VERB: PARAM {s.param}: ARG {s.arg}: PATH {board}: REAL_VAL: {real} "
            f"CONF_VAL: {_conf_val(s.value, model)}\n"
        )


def _parse_verbose(conf: NvpmodelConf, conf_path: str, out: TextIO) -> None:
    out.write(f"NVPM VERB: Config file: {conf_path}\n")
    out.write(f"NVPM VERB: parsing done for {conf_path}\n")
    for param in conf.params.values():
        out.write(f"NVPM VERB: PARAM TYPE={param.type} NAME={param.name}\n")
        for arg, path in param.args.items():
            out.write(f"NVPM VERB: {arg} {path}\n")
    for mode in conf.modes:
        out.write(f"NVPM VERB: POWER_MODEL: ID={mode.id} NAME={mode.name}\n")
        for s in mode.settings:
            out.write(f"NVPM VERB: {s.param} {s.arg} {s.value}\n")
    default = conf.default_mode
    if default is not None:
        out.write(f"NVPM VERB: PM_CONFIG: DEFAULT={default.name}({default.id})\n")


NVPMODEL_USAGE = (
    "Usage: nvpmodel [-h] [--verbose] [-q|--query] [-p|--parse] [-u|--udata] "
    "[-w|--wait <sec>] [--boot] [-m|--mode <mode>] [-f|--conf <filename>] "
    "[-o|--os <android,l4t>] [--force]\n"
)


def nvpmodel(root: Path, argv: list[str], stdin: TextIO, out: TextIO) -> int:
    """The ``nvpmodel`` tool; returns its exit status."""
    parser = argparse.ArgumentParser(prog="nvpmodel", add_help=False)
    parser.add_argument("-h", "--help", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("-q", "--query", action="store_true")
    parser.add_argument("-p", "--parse", action="store_true")
    parser.add_argument("-m", "--mode")
    parser.add_argument("-f", "--conf")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("-u", "--udata", action="store_true")
    parser.add_argument("--boot", action="store_true")
    parser.add_argument("-w", "--wait")
    parser.add_argument("-o", "--os")
    args, unknown = parser.parse_known_args(argv)
    if args.help or unknown:
        out.write(NVPMODEL_USAGE)
        return 0 if args.help else 1
    try:
        conf, conf_path = _load_conf(root, args.conf)
        if args.parse:
            if args.verbose:
                _parse_verbose(conf, conf_path, out)
            return 0
        if args.mode is not None:
            return _set_mode(root, conf, args.mode, args.force, stdin, out)
        _query(root, conf, conf_path, args.verbose, out)
        return 0
    except ShimError as exc:
        out.write(f"{exc}\n")
        return 1


def _set_mode(root: Path, conf: NvpmodelConf, wanted: str, force: bool, stdin: TextIO,
              out: TextIO) -> int:  # fmt: skip
    model = _model(root)
    mode = next((m for m in conf.modes if wanted.strip().isdigit() and m.id == int(wanted)), None)
    if mode is None:
        ids = ", ".join(f"{m.id} ({m.name})" for m in conf.modes)
        raise ShimError(
            f"NVPM ERROR: Invalid power mode id {wanted!r}; this board defines: {ids}\n"
            "NVPM ERROR: failed to set power mode!"
        )
    changes = _gating_changes(conf, mode, root)
    if changes:
        for change in changes:
            out.write(f"NVPM WARN: patching {change}\n")
        out.write(f"NVPM WARN: Reboot required for changing to this power mode: {mode.id}\n")
        if not force:
            out.write("NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:\n")
            out.flush()
            answer = stdin.readline().strip()
            if answer not in ("YES", "yes"):
                out.write(
                    f"NVPM WARN: reboot declined: power mode stays "
                    f"{current_mode_id(root, conf)}, nothing was changed\n"
                )
                return 0
        apply_mode(root, conf, mode, model)
        out.write(
            "NVPM WARN: virtual board: the reboot is simulated; "
            f"power mode {mode.id} ({mode.name}) is in effect\n"
        )
        return 0
    apply_mode(root, conf, mode, model)
    return 0


# --------------------------------------------------------------------------- jetson_clocks


def _cpu_online(root: Path, cpu: int) -> bool:
    return cpu == 0 or _read(root / CPU_DIR / f"cpu{cpu}" / "online", "1") == "1"


def _idle_dirs(root: Path, cpu: int, model: BoardModel) -> list[tuple[str, Path]]:
    base = root / CPU_DIR / f"cpu{cpu}" / "cpuidle"
    return [(name, base / f"state{k}") for k, name in enumerate(model.idle_states)]


def _emc_paths(model: BoardModel) -> dict[str, str]:
    """Board-relative EMC files: min, max, cur, lock flag, pinned rate (None-safe keys)."""
    d = model.emc.files_dir
    if model.emc.style == "bpmp":
        return {"min": f"{d}/min_rate", "max": f"{d}/max_rate", "cur": f"{d}/rate",
                "lock": f"{d}/mrq_rate_locked", "pin": f"{d}/rate"}  # fmt: skip
    if model.emc.style == "t210":
        bw = "sys/kernel/debug/tegra_bwmgr"
        return {"min": f"{bw}/emc_min_rate", "max": f"{bw}/emc_max_rate",
                "cur": f"{d}/clk_rate", "lock": f"{d}/clk_state",
                "pin": f"{d}/clk_update_rate"}  # fmt: skip
    return {"min": f"{d}/min_freq", "max": f"{d}/max_freq", "cur": f"{d}/cur_freq",
            "pin": f"{d}/min_freq"}  # fmt: skip


JP7_L4T_MAJOR = 38
"""JetPack 7 (L4T 38/39): the ``--show`` layout without ``Online=`` on CPU lines."""


def _show_cpus(model: BoardModel, online: list[int]) -> list[int]:
    if model.l4t_major >= JP7_L4T_MAJOR:
        return online
    if model.l4t_major <= 32:
        return list(range(model.cpu_count))
    return [c.policy for c in model.clusters]


def _show_cpu_line(root: Path, model: BoardModel, cpu: int, online: bool) -> str:
    d = root / CPU_DIR / f"cpu{cpu}" / "cpufreq"
    idle = " ".join(
        f"{name}={1 - int(_read(p / 'disable', '0') or 0)}"
        for name, p in _idle_dirs(root, cpu, model)
    )
    head = f"cpu{cpu}:".ljust(6)
    online_field = "" if model.l4t_major >= JP7_L4T_MAJOR else f"Online={int(online)} "
    return (
        f"{head} {online_field}Governor={_read(d / 'scaling_governor')} "
        f"MinFreq={_read(d / 'scaling_min_freq')} MaxFreq={_read(d / 'scaling_max_freq')} "
        f"CurrentFreq={_read(d / 'scaling_cur_freq')} IdleStates: {idle}\n"
    )


def _show_gpu(root: Path, model: BoardModel) -> str:
    g = root / model.gpu.devfreq_dir
    if model.l4t_major >= JP7_L4T_MAJOR:
        # JetPack 7 names the line after the devfreq device, and prints only what exists.
        if not g.is_dir():
            return ""
        name = g.name
    else:
        name = "GPU"
    return (
        f"{name} MinFreq={_read(g / 'min_freq')} MaxFreq={_read(g / 'max_freq')} "
        f"CurrentFreq={_read(g / 'cur_freq')}\n"
    )


def jetson_clocks_show(root: Path, model: BoardModel, out: TextIO) -> None:
    """``jetson_clocks --show``. From JetPack 7 on: no blank second line, ``Online CPUs:
    ..., Offline CPUs: ...``, a line per online CPU without ``Online=``, and the GPU line
    named after its devfreq device (``gpu-gpc-0``)."""
    jp7 = model.l4t_major >= JP7_L4T_MAJOR
    out.write(f"SOC family:{model.soc}  Machine:{model.dt_model}\n" + ("" if jp7 else "\n"))
    online = [c for c in range(model.cpu_count) if _cpu_online(root, c)]
    header = f"Online CPUs: {format_cpu_list(online)}"
    if jp7:
        offline = [c for c in range(model.cpu_count) if c not in online]
        header = f"{header}, Offline CPUs: {format_cpu_list(offline)}".rstrip()
    out.write(header + "\n")
    for cpu in _show_cpus(model, online):
        out.write(_show_cpu_line(root, model, cpu, cpu in online))
    out.write(_show_gpu(root, model))
    if model.gpu.tpcs:
        mask = int(_read(root / model.gpu.device_dir / "tpc_pg_mask", "0") or "0", 0)
        active = sum(1 for i in range(model.gpu.tpcs) if not (mask >> i) & 1)
        out.write(f"Active GPU TPCs: {active}\n")
    e = _emc_paths(model)
    override = _read(root / e["lock"], "0") if "lock" in e else "0"
    # MaxFreq is nvpmodel's cap when it is lower, as the script shows (and pins) it.
    out.write(
        f"EMC MinFreq={_read(root / e['min'])} MaxFreq={_emc_top(root, model)} "
        f"CurrentFreq={_read(root / e['cur'])} FreqOverride={override}\n"
    )
    try:
        conf, _ = _load_conf(root, None)
        mode_id = current_mode_id(root, conf)
        name = next((m.name for m in conf.modes if m.id == mode_id), "UNKNOWN")
        out.write(f"NV Power Mode: {name}\n")
    except ShimError:
        pass


def _store_entries(root: Path, model: BoardModel) -> list[str]:
    """Board-relative files ``--store`` saves, in restore order."""
    files: list[str] = []
    files += [f"{CPU_DIR}/cpu{c}/online" for c in range(1, model.cpu_count)]
    for c in model.clusters:
        d = f"{CPU_DIR}/cpu{c.policy}/cpufreq"
        files += [f"{d}/scaling_governor", f"{d}/scaling_max_freq", f"{d}/scaling_min_freq"]
    for cpu in range(model.cpu_count):
        for _, p in _idle_dirs(root, cpu, model):
            files.append(str((p / "disable").relative_to(root)))
    g = model.gpu.devfreq_dir
    files += [f"{g}/governor", f"{g}/max_freq", f"{g}/min_freq"]
    if model.gpu.has_railgate:
        files.append(f"{model.gpu.device_dir}/railgate_enable")
    e = _emc_paths(model)
    files += [e["pin"]] + ([e["lock"]] if "lock" in e else [])
    return [f for f in files if (root / f).exists()]


def _emc_top(root: Path, model: BoardModel) -> str:
    top = int(_read(root / _emc_paths(model)["max"], str(model.emc.rates_hz[-1])))
    cap = int(_read(root / model.emc.cap_path, "0") or "0")
    return str(cap if 0 < cap < top else top)


def jetson_clocks_max(root: Path, model: BoardModel) -> None:
    """Plain ``jetson_clocks``: pin CPU and GPU min = max, EMC to its (capped) maximum."""
    if model.l4t_major <= 32:
        for cpu in range(1, model.cpu_count):
            write_knob(root / CPU_DIR / f"cpu{cpu}" / "online", "1")
    for c in model.clusters:
        d = root / CPU_DIR / f"cpu{c.policy}" / "cpufreq"
        write_knob(d / "scaling_min_freq", _read(d / "scaling_max_freq"))
    for cpu in range(model.cpu_count):
        for _, p in _idle_dirs(root, cpu, model):
            write_knob(p / "disable", "1")
    g = root / model.gpu.devfreq_dir
    if model.gpu.has_railgate:
        write_knob(root / model.gpu.device_dir / "railgate_enable", "0")
    write_knob(g / "min_freq", _read(g / "max_freq"))
    e = _emc_paths(model)
    top = _emc_top(root, model)
    if model.emc.style == "bwmgr":
        write_knob(root / e["min"], top)
        return
    write_knob(root / e["pin"], top)
    write_knob(root / e["lock"], "1")


def _confirm(question: str, stdin: TextIO, out: TextIO) -> bool:
    out.write(question + "\n")
    out.flush()
    return stdin.readline().strip() in ("Y", "y")


def jetson_clocks(root: Path, argv: list[str], stdin: TextIO, out: TextIO) -> int:
    """The ``jetson_clocks`` tool; returns its exit status."""
    parser = argparse.ArgumentParser(prog="jetson_clocks")
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--fan", action="store_true")
    parser.add_argument("--store", nargs="?", const="", default=None, metavar="FILE")
    parser.add_argument("--restore", nargs="?", const="", default=None, metavar="FILE")
    args = parser.parse_args(argv)
    model = _model(root)
    default_name = "l4t_dfs.conf" if model.l4t_major <= 32 else ".jetsonclocks_conf.txt"
    default_file = Path(os.path.expanduser("~")) / default_name
    if args.show:
        jetson_clocks_show(root, model, out)
        return 0
    if args.store is not None:
        target = Path(args.store) if args.store else default_file
        if target.exists() and not _confirm(
            f"File {target} already exists. Can I overwrite it? Y/N:", stdin, out
        ):
            out.write(f"Not overwriting {target}\n")
            return 0
        lines = [f"/{f}:{(root / f).read_text().strip()}" for f in _store_entries(root, model)]
        target.write_text("\n".join(lines) + "\n")
        return 0
    if args.restore is not None:
        source = Path(args.restore) if args.restore else default_file
        if not source.is_file():
            out.write(f"Error: {source} file not found!\n")
            return 1
        failed = 0
        for line in source.read_text().splitlines():
            path, sep, value = line.partition(":")
            if not sep:
                continue
            target_path = _under(root, path)
            if not target_path.exists():
                out.write(f"Error: {path}: No such file or directory\n")
                failed += 1
                continue
            write_knob(target_path, value)
        return 1 if failed else 0
    jetson_clocks_max(root, model)
    return 0


# --------------------------------------------------------------------------- tegrastats


def _fmt_temp(milli: int) -> str:
    text = f"{milli / 1000:.3f}".rstrip("0").rstrip(".")
    return text


def _rail_mw(root: Path, model: BoardModel) -> list[tuple[str, int]]:
    """(name, mW) for every monitor channel in tegrastats order (NC channels read 0)."""
    values: dict[str, int] = {}
    order: list[str] = []
    for chip in model.chips:
        d = root / chip.data_dir
        for i, name in enumerate(chip.channels):
            n = chip.first_channel + i
            order.append(name)
            if name == NC:
                continue
            try:
                if chip.driver == "ina3221x":
                    mw = int(_read(d / f"in_power{n}_input", "0"))
                elif chip.driver == "ina238":
                    mw = int(_read(d / "power1_input", "0")) // 1000
                else:
                    mw = (
                        int(_read(d / f"in{n}_input", "0"))
                        * int(_read(d / f"curr{n}_input", "0"))
                        // 1000
                    )
            except ValueError:
                mw = 0
            values[name] = mw
    if model.tegrastats_rails:
        order = list(model.tegrastats_rails)
    return [(name, values.get(name, 0)) for name in order]


class _Tegrastats:
    def __init__(self, root: Path, model: BoardModel) -> None:
        self.root = root
        self.model = model
        self.sums: dict[int, int] = {}
        self.peaks: dict[int, int] = {}
        self.temp_sums: dict[int, int] = {}
        self.count = 0
        self.host = HostLoad(window_jiffies=1)

    def _meminfo(self) -> dict[str, int]:
        out: dict[str, int] = {}
        try:
            for line in (self.root / "proc/meminfo").read_text().splitlines():
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts:
                    out[key] = int(parts[0])
        except (OSError, ValueError):
            pass
        return out

    def line(self) -> str:
        m = self.model
        root = self.root
        self.count += 1
        load = min(1.0, self.host.sample())
        pct = round(load * 100)
        mem = self._meminfo()
        total = mem.get("MemTotal", m.ram_kb) // 1024
        used = (mem.get("MemTotal", 0) - mem.get("MemAvailable", 0)) // 1024
        parts: list[str] = []
        if m.tegrastats != "l4t32":
            parts.append(time.strftime("%m-%d-%Y %H:%M:%S"))
        parts.append(f"RAM {used}/{total}MB (lfb 758x4MB)")
        swap_total = mem.get("SwapTotal", 0)
        if swap_total:
            swap_used = (swap_total - mem.get("SwapFree", swap_total)) // 1024
            parts.append(f"SWAP {swap_used}/{swap_total // 1024}MB (cached 0MB)")
        cpus: list[str] = []
        for cpu in range(m.cpu_count):
            if not _cpu_online(root, cpu):
                cpus.append("off")
                continue
            khz = _read(root / CPU_DIR / f"cpu{cpu}" / "cpufreq" / "scaling_cur_freq", "0")
            cpus.append(f"{pct}%@{int(khz or 0) // 1000}")
        parts.append(f"CPU [{','.join(cpus)}]")
        emc_mhz = int(_read(root / _emc_paths(m)["cur"], "0") or 0) // 1_000_000
        parts.append(f"EMC_FREQ {pct}%@{emc_mhz}")
        gpu_mhz = int(_read(root / m.gpu.devfreq_dir / "cur_freq", "0") or 0) // 1_000_000
        gpu_pct = pct
        if m.gpu.has_load:
            gpu_pct = int(_read(root / m.gpu.device_dir / "load", "0") or 0) // 10
        if m.tegrastats in ("l4t32", "jp5"):
            parts.append(f"GR3D_FREQ {gpu_pct}%@{gpu_mhz}")
        else:
            parts.append(f"GR3D_FREQ {gpu_pct}%@[{gpu_mhz}]")
        parts.append("APE 25" if m.tegrastats == "l4t32" else "APE 200")
        for i, zone in enumerate(m.thermal):
            temp = int(_read(root / f"sys/devices/virtual/thermal/thermal_zone{i}/temp", "0"))
            name = re.split(r"[-_]", zone.type)[0]
            if m.tegrastats == "jp7":
                self.temp_sums[i] = self.temp_sums.get(i, 0) + temp
                avg = self.temp_sums[i] // self.count
                parts.append(f"{name}@{_fmt_temp(temp)}C/{_fmt_temp(avg)}C")
            else:
                parts.append(f"{name}@{_fmt_temp(temp)}C")
        for i, (name, mw) in enumerate(_rail_mw(root, m)):
            self.sums[i] = self.sums.get(i, 0) + mw
            self.peaks[i] = max(self.peaks.get(i, 0), mw)
            avg = self.sums[i] // self.count
            if m.tegrastats == "l4t32":
                parts.append(f"{name} {mw}/{avg}")
            elif m.tegrastats == "jp7":
                parts.append(f"{name} {mw}mW/{avg}mW/{self.peaks[i]}mW")
            else:
                parts.append(f"{name} {mw}mW/{avg}mW")
        return " ".join(parts)


def tegrastats(root: Path, argv: list[str], out: TextIO) -> int:
    """The ``tegrastats`` tool: one line per ``--interval`` ms until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="tegrastats")
    parser.add_argument("--interval", type=int, default=1000, metavar="MS")
    parser.add_argument("--logfile", default=None)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.interval <= 0:
        out.write(f"tegrastats: --interval must be a positive number of ms, got {args.interval}\n")
        return 1
    stopped = False

    def _stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    stats = _Tegrastats(root, _model(root))
    sink = open(args.logfile, "a") if args.logfile else out  # noqa: SIM115
    try:
        next_t = time.monotonic()
        while not stopped:
            next_t += args.interval / 1000.0
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if stopped:
                break
            sink.write(stats.line() + "\n")
            sink.flush()
    except BrokenPipeError:
        pass
    finally:
        if sink is not out:
            sink.close()
    return 0


# --------------------------------------------------------------------------- entry point

_TOOLS: dict[str, Callable[[Path, list[str]], int]] = {
    "nvpmodel": lambda root, argv: nvpmodel(root, argv, sys.stdin, sys.stdout),
    "jetson_clocks": lambda root, argv: jetson_clocks(root, argv, sys.stdin, sys.stdout),
    "tegrastats": lambda root, argv: tegrastats(root, argv, sys.stdout),
}


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_edgeenergy.sim.shims TOOL --root ROOT [tool options]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in _TOOLS:
        sys.stderr.write(f"usage: shims {{{','.join(_TOOLS)}}} --root ROOT [options]\n")
        return 2
    tool = args.pop(0)
    if len(args) < 2 or args[0] != "--root":
        sys.stderr.write(f"{tool}: missing --root ROOT\n")
        return 2
    root = Path(args[1])
    try:
        read_marker(root)
    except FileNotFoundError as exc:
        sys.stderr.write(f"{tool}: {exc}\n")
        return 2
    try:
        return _TOOLS[tool](root, args[2:])
    except BrokenPipeError:
        # The reader went away (``| head``): exit quietly like the real tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
