"""Write a model's ``/etc/nvpmodel.conf`` in the real grammar, with paths of its tree."""

from __future__ import annotations

from .models import BoardModel, ModeSpec

CPU_DIR = "/sys/devices/system/cpu"


def _param(kind: str, name: str, lines: list[str]) -> list[str]:
    return [f"< PARAM TYPE={kind} NAME={name} >", *lines, ""]


def _clock_lines(table: str | None, max_path: str, min_path: str | None, knext: bool) -> list[str]:
    lines: list[str] = []
    if table is not None:
        lines.append(f"FREQ_TABLE {table}")
    lines.append(f"MAX_FREQ {max_path}")
    if min_path is not None:
        lines.append(f"MIN_FREQ {min_path}")
    if knext:
        lines += [f"{line.split(' ', 1)[0]}_KNEXT {line.split(' ', 1)[1]}" for line in list(lines)]
    return lines


def _gpu_knext_dir(model: BoardModel) -> str:
    # L4T 35 names the next-kernel GPU node devfreq_dev beside the devfreq directory.
    return model.gpu.conf_devfreq.split("/devfreq/")[0] + "/devfreq_dev"


def param_section(model: BoardModel) -> list[str]:
    """The PARAM definitions of ``model``'s nvpmodel.conf, as lines."""
    gpu = model.gpu
    knext = model.l4t_major == 35
    out: list[str] = []
    out += _param(
        "FILE",
        "CPU_ONLINE",
        [f"CORE_{i} {CPU_DIR}/cpu{i}/online" for i in range(model.cpu_count)],
    )
    if gpu.tpcs:
        out += _param("FILE", "TPC_POWER_GATING", [f"TPC_PG_MASK {gpu.conf_device}/tpc_pg_mask"])
    if gpu.has_fbp_mask:
        out += _param("FILE", "FBP_POWER_GATING", [f"FBP_PG_MASK {gpu.conf_device}/fbp_pg_mask"])
    out += _param("FILE", "GPU_POWER_CONTROL_ENABLE", [f"GPU_PWR_CNTL_EN {gpu.conf_power_control}"])
    out += _param(
        "FILE", "GPU_POWER_CONTROL_DISABLE", [f"GPU_PWR_CNTL_DIS {gpu.conf_power_control}"]
    )
    for name, cpu in model.cpu_params:
        d = f"{CPU_DIR}/cpu{cpu}/cpufreq"
        out += _param(
            "CLOCK",
            name,
            _clock_lines(
                f"{d}/scaling_available_frequencies",
                f"{d}/scaling_max_freq",
                f"{d}/scaling_min_freq",
                knext,
            ),
        )
    g = gpu.conf_devfreq
    gpu_lines = _clock_lines(
        f"{g}/available_frequencies", f"{g}/max_freq", f"{g}/min_freq", knext=False
    )
    if knext:
        k = _gpu_knext_dir(model)
        gpu_lines += [
            f"FREQ_TABLE_KNEXT {k}/available_frequencies",
            f"MAX_FREQ_KNEXT {k}/max_freq",
            f"MIN_FREQ_KNEXT {k}/min_freq",
        ]
    out += _param("CLOCK", "GPU", gpu_lines)
    out += _param(model.emc.conf_type, "EMC", [f"MAX_FREQ /{model.emc.cap_path}"])
    return out


def mode_section(model: BoardModel, mode: ModeSpec) -> list[str]:
    """One POWER_MODEL block, as lines."""
    out = [f"< POWER_MODEL ID={mode.id} NAME={mode.name} >"]
    out += [f"CPU_ONLINE CORE_{i} {1 if i in mode.online else 0}" for i in range(model.cpu_count)]
    if model.gpu.tpcs:
        out.append(f"TPC_POWER_GATING TPC_PG_MASK {mode.tpc_pg_mask or 0}")
    if model.gpu.has_fbp_mask:
        out.append(f"FBP_POWER_GATING FBP_PG_MASK {mode.fbp_pg_mask or 0}")
    out.append("GPU_POWER_CONTROL_ENABLE GPU_PWR_CNTL_EN on")
    for name, cpu in model.cpu_params:
        idx = model.clusters.index(model.cluster_of(cpu))
        out.append(f"{name} MIN_FREQ {mode.cpu_min_khz}")
        out.append(f"{name} MAX_FREQ {mode.cpu_max_khz[idx]}")
    out.append(f"GPU MIN_FREQ {mode.gpu_min_hz}")
    out.append(f"GPU MAX_FREQ {mode.gpu_max_hz}")
    out.append("GPU_POWER_CONTROL_DISABLE GPU_PWR_CNTL_DIS auto")
    out.append(f"EMC MAX_FREQ {mode.emc_max_hz}")
    out.append("")
    return out


def conf_text(model: BoardModel) -> str:
    """The whole nvpmodel.conf of ``model``."""
    banner = "#" * 27
    lines = [
        f"# nvpmodel configuration of a virtual {model.name} board "
        f"(L4T {model.l4t}), written by pytest_edgeenergy.sim",
        "",
        banner,
        "#                         #",
        "#    PARAM DEFINITIONS    #",
        "#                         #",
        banner,
        "",
        *param_section(model),
        banner,
        "#                         #",
        "# POWER_MODEL DEFINITIONS #",
        "#                         #",
        banner,
        "",
    ]
    for mode in model.modes:
        lines += mode_section(model, mode)
    lines.append(f"< PM_CONFIG DEFAULT={model.default_mode} >")
    return "\n".join(lines) + "\n"
