"""Write a virtual Jetson board: a directory tree with the generation's real layout.

The tree holds identity files, INA3221/INA238 monitors (real directories under
``sys/devices`` reached through relative symlinks from ``sys/bus/i2c``), cpufreq policies,
CPU hotplug files, GPU devfreq, EMC clock and cap files, thermal zones, ``proc/meminfo``,
``etc/nvpmodel.conf`` and shims for ``nvpmodel``, ``jetson_clocks`` and ``tegrastats``.
Every link is relative, so the tree can be moved or copied (``shutil.copytree(...,
symlinks=True)``). The board starts in its default power mode, idle.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import zlib
from pathlib import Path

from ..board.sysfs import format_cpu_list
from ..errors import EdgeEnergyError
from .files import LIST_WIDTH, relative_symlink, write_live, write_text
from .models import BoardModel, ModeSpec, get_model
from .nvpconf import conf_text
from .power import ClusterState, PowerState, rail_power_w
from .railfiles import write_static
from .runner import LOAD_OVERRIDE, MARKER, Animator, acquire_lock
from .truth import TRUTH_DIR

CPU_DIR = "sys/devices/system/cpu"
SHIM_TOOLS = ("nvpmodel", "jetson_clocks", "tegrastats")
NVPMODEL_STATUS = "var/lib/nvpmodel/status"

_CPUFREQ_DRIVER = {
    "tegra210": "tegra",
    "tegra186": "tegra186",
    "tegra194": "tegra194",
    "tegra234": "tegra194",
    "tegra264": "cppc_cpufreq",
}


class TreeNotEmpty(EdgeEnergyError, FileExistsError):
    """The target directory holds something that is not a virtual board."""


def _resolve(value: int, table: tuple[int, ...], *, zero_is_min: bool = True) -> int:
    """A conf value as the kernel ends up holding it: -1 = top, 0 = bottom."""
    if value == -1:
        return table[-1]
    if value == 0 and zero_is_min:
        return table[0]
    return value


def _prepare_root(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise TreeNotEmpty(f"{root}: exists and is not a directory")
    root.mkdir(parents=True, exist_ok=True)
    entries = list(root.iterdir())
    if not entries:
        return
    if not (root / MARKER).is_file():
        raise TreeNotEmpty(
            f"refusing to write a virtual board into {root}: the directory is not empty and "
            f"is not a virtual board (no {MARKER}); use an empty or new directory"
        )
    lock_fd = acquire_lock(root)  # refuses while a simulator animates the old tree
    try:
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    finally:
        os.close(lock_fd)


def _identity(root: Path, model: BoardModel) -> None:
    write_text(root / "etc/nv_tegra_release", "\n".join(model.release_lines) + "\n")
    model_bytes = model.dt_model.encode() + b"\0"
    compatible = b"".join(c.encode() + b"\0" for c in model.dt_compatible)
    serial = b"1423" + str(zlib.crc32(model.name.encode()) % 10**9).zfill(9).encode() + b"\0"
    for base in ("proc/device-tree", "sys/firmware/devicetree/base"):
        d = root / base
        d.mkdir(parents=True, exist_ok=True)
        (d / "model").write_bytes(model_bytes)
        (d / "compatible").write_bytes(compatible)
        (d / "serial-number").write_bytes(serial)
        (d / "nvidia,dtsfilename").write_bytes(
            f"tegra-{model.module}-{model.name}.dts".encode() + b"\0"
        )
    write_text(root / "proc/sys/kernel/osrelease", f"{model.kernel}\n")
    write_text(root / "etc/hostname", f"virtual-{model.name}\n")


def _cpus(root: Path, model: BoardModel, mode: ModeSpec) -> None:
    cpu_dir = root / CPU_DIR
    everything = format_cpu_list(list(range(model.cpu_count)))
    write_text(cpu_dir / "present", f"{everything}\n")
    write_text(cpu_dir / "possible", f"{everything}\n")
    write_live(cpu_dir / "online", format_cpu_list(list(mode.online)), LIST_WIDTH)
    driver = _CPUFREQ_DRIVER.get(model.soc, "tegra194")
    for idx, cluster in enumerate(model.clusters):
        policy = cpu_dir / "cpufreq" / f"policy{cluster.policy}"
        table = cluster.freqs_khz
        cpus = " ".join(str(c) for c in cluster.cpus)
        static = {
            "affected_cpus": cpus,
            "related_cpus": cpus,
            "cpuinfo_min_freq": str(table[0]),
            "cpuinfo_max_freq": str(table[-1]),
            "cpuinfo_transition_latency": "500000",
            "scaling_available_frequencies": " ".join(str(f) for f in table) + " ",
            "scaling_available_governors": " ".join(model.cpu_governors),
            "scaling_driver": driver,
            "scaling_governor": model.cpu_governor,
            "scaling_min_freq": str(_resolve(mode.cpu_min_khz, table)),
            "scaling_max_freq": str(_resolve(mode.cpu_max_khz[idx], table)),
            "scaling_setspeed": "<unsupported>",
        }
        for name, value in static.items():
            write_text(policy / name, value + "\n")
        for name in ("scaling_cur_freq", "cpuinfo_cur_freq"):
            write_live(policy / name, table[0])
        for cpu in cluster.cpus:
            relative_symlink(
                root, f"{CPU_DIR}/cpu{cpu}/cpufreq", f"{CPU_DIR}/cpufreq/policy{cluster.policy}"
            )
    for cpu in range(model.cpu_count):
        d = cpu_dir / f"cpu{cpu}"
        if cpu != 0:  # cpu0 cannot be hot-unplugged and has no online file, as on the boards
            write_text(d / "online", f"{1 if cpu in mode.online else 0}\n")
        for k, state in enumerate(model.idle_states):
            write_text(d / "cpuidle" / f"state{k}" / "name", f"{state}\n")
            write_text(d / "cpuidle" / f"state{k}" / "disable", "0\n")


def _gpu(root: Path, model: BoardModel, mode: ModeSpec) -> None:
    g = model.gpu
    devfreq = root / g.devfreq_dir
    device = root / g.device_dir
    table = g.freqs_hz
    static = {
        "available_frequencies": " ".join(str(f) for f in table),
        "available_governors": " ".join(g.governors),
        "governor": g.governor,
        "min_freq": str(_resolve(mode.gpu_min_hz, table)),
        "max_freq": str(_resolve(mode.gpu_max_hz, table)),
        "polling_interval": "50",
        "name": devfreq.name,
    }
    for name, value in static.items():
        write_text(devfreq / name, value + "\n")
    write_text(devfreq / "userspace" / "set_freq", f"{table[-1]}\n")
    for name in ("cur_freq", "target_freq"):
        write_live(devfreq / name, table[0])
    if g.has_load:
        write_live(device / "load", 0)
    if g.has_railgate:
        write_text(device / "railgate_enable", "1\n")
    if g.tpcs:
        write_text(device / "tpc_pg_mask", f"{mode.tpc_pg_mask or 0}\n")
    if g.has_fbp_mask:
        write_text(device / "fbp_pg_mask", f"{mode.fbp_pg_mask or 0}\n")
    if g.has_3d_scaling:
        write_text(device / "enable_3d_scaling", "1\n")
    write_text(root / g.power_dir / "power" / "control", "auto\n")
    if g.device_dir != g.devfreq_dir:
        write_text(device / "of_node" / "name", f"{g.of_name}\n")
        write_text(
            device / "of_node" / "compatible",
            "".join(c + "\0" for c in g.of_compatible),
        )
    for link, target in g.links:
        relative_symlink(root, link, target)
    if model.soc == "tegra264":
        write_text(
            root / "proc/driver/nvidia/gpus/0000:01:00.0/power",
            "Runtime D3 status:          Enabled (fine-grained)\n"
            "Video Memory:               Active\n\n"
            "GPU Hardware Support:\n Video Memory Self Refresh: Not Supported\n"
            " Video Memory Off:          Not Supported\n\nRail-Gating: Enabled\n",
        )


def _emc(root: Path, model: BoardModel, mode: ModeSpec) -> None:
    e = model.emc
    rates = e.rates_hz
    d = root / e.files_dir
    if e.style == "bpmp":
        write_live(d / "rate", rates[0])
        write_text(d / "min_rate", f"{rates[0]}\n")
        write_text(d / "max_rate", f"{rates[-1]}\n")
        write_text(d / "mrq_rate_locked", "0\n")
    elif e.style == "t210":
        write_live(d / "clk_rate", rates[0])
        write_text(d / "clk_state", "0\n")
        write_text(d / "clk_update_rate", "0\n")
        bw = root / "sys/kernel/debug/tegra_bwmgr"
        write_text(bw / "emc_min_rate", f"{rates[0]}\n")
        write_text(bw / "emc_max_rate", f"{rates[-1]}\n")
    else:
        write_text(d / "available_frequencies", " ".join(str(r) for r in rates) + "\n")
        write_text(d / "available_governors", "nvhost_podgov performance userspace\n")
        write_text(d / "governor", "nvhost_podgov\n")
        write_text(d / "min_freq", f"{rates[0]}\n")
        write_text(d / "max_freq", f"{rates[-1]}\n")
        write_live(d / "cur_freq", rates[0])
        relative_symlink(root, "sys/class/devfreq/bwmgr", e.files_dir)
    cap = mode.emc_max_hz
    if e.conf_type == "CLOCK":
        cap = _resolve(cap, rates, zero_is_min=False)
    write_text(root / e.cap_path, f"{cap}\n")
    write_text(root / "sys/kernel/actmon_avg_activity/mc_all", "0\n")


def _thermal(root: Path, model: BoardModel) -> None:
    for i, zone in enumerate(model.thermal):
        rel = f"sys/devices/virtual/thermal/thermal_zone{i}"
        d = root / rel
        write_text(d / "type", f"{zone.type}\n")
        write_text(d / "mode", "enabled\n")
        write_text(d / "policy", "step_wise\n")
        celsius = zone.fixed_c if zone.fixed_c is not None else zone.idle_c
        write_live(d / "temp", round(celsius * 1000))
        relative_symlink(root, f"sys/class/thermal/thermal_zone{i}", rel)


def meminfo_text(model: BoardModel) -> str:
    """A ``/proc/meminfo`` for the model's RAM, about 15 % used."""
    total = model.ram_kb
    used = total * 15 // 100
    cached = total * 12 // 100
    free = total - used - cached
    fields = [
        ("MemTotal", total),
        ("MemFree", free),
        ("MemAvailable", total - used),
        ("Buffers", total // 200),
        ("Cached", cached),
        ("SwapCached", 0),
        ("Active", used // 2),
        ("Inactive", cached),
        ("SwapTotal", model.swap_kb),
        ("SwapFree", model.swap_kb),
        ("Dirty", 64),
        ("Writeback", 0),
        ("AnonPages", used // 2),
        ("Mapped", total // 50),
        ("Shmem", total // 100),
        ("Slab", total // 60),
        ("CommitLimit", total // 2 + model.swap_kb),
        ("Committed_AS", used * 2),
        ("CmaTotal", 262144),
        ("CmaFree", 240000),
    ]
    return "".join(f"{name + ':':<16}{value:>8} kB\n" for name, value in fields)


def _shim_script(tool: str) -> str:
    package_parent = str(Path(__file__).resolve().parents[2])
    python = shlex.quote(sys.executable)
    return (
        "#!/bin/sh\n"
        f"# {tool} of a virtual Jetson board (pytest_edgeenergy.sim): acts on the tree that\n"
        "# holds this script (its root is two directories above it).\n"
        'root=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)\n'
        f'PYTHONPATH={shlex.quote(package_parent)}"${{PYTHONPATH:+:$PYTHONPATH}}" '
        f"exec {python} -m pytest_edgeenergy.sim.shims {tool} "
        '--root "$root" "$@"\n'
    )


def _peak_power_w(model: BoardModel) -> dict[str, float]:
    clusters = tuple(
        ClusterState(c.freqs_khz[-1], c.freqs_khz[-1], len(c.cpus)) for c in model.clusters
    )
    top = model.gpu.freqs_hz[-1]
    emc = model.emc.rates_hz[-1]
    return rail_power_w(model, PowerState(clusters, top, top, emc, emc, 1.0))


def create(
    model: str, root: Path, *, update_interval_ms: float = 5.0, load: float | None = None
) -> Path:
    """Write a virtual ``model`` board into ``root`` and return ``root``.

    Raises :class:`~pytest_edgeenergy.sim.models.UnknownBoardModel` for an unknown model,
    :class:`TreeNotEmpty` when ``root`` is a non-empty directory that is not a virtual board
    (an existing virtual board is replaced), :class:`SimAlreadyRunning` when a simulator is
    animating it, ValueError for a non-positive ``update_interval_ms``. ``load`` (0..1)
    pins the board's utilisation; None lets it follow the host's CPU load.
    """
    spec = get_model(model)
    if not update_interval_ms > 0:
        raise ValueError(f"update_interval_ms must be > 0 ms, got {update_interval_ms}")
    root = Path(root)
    _prepare_root(root)
    mode = spec.mode(spec.default_mode)
    _identity(root, spec)
    _cpus(root, spec, mode)
    _gpu(root, spec, mode)
    _emc(root, spec, mode)
    _thermal(root, spec)
    peak = _peak_power_w(spec)
    for chip in spec.chips:
        write_static(root, spec, chip, peak, update_interval_ms)
    write_text(root / "proc/meminfo", meminfo_text(spec))
    write_text(root / "etc/nvpmodel.conf", conf_text(spec))
    write_text(root / NVPMODEL_STATUS, f"pmode:{mode.id:04d} fmode:fanNull\n")
    write_text(root / LOAD_OVERRIDE, "host\n" if load is None else f"{load:g}\n")
    (root / TRUTH_DIR).mkdir(parents=True, exist_ok=True)
    for tool in SHIM_TOOLS:
        write_text(root / "usr/bin" / tool, _shim_script(tool), mode=0o755)
    marker = {"simulated": True, "model": spec.name, "update_interval_ms": update_interval_ms}
    write_text(root / MARKER, json.dumps(marker) + "\n")
    animator = Animator(root, seed=0)
    try:
        animator.tick(load=0.0, noise=False)
    finally:
        animator.close()
    return root
