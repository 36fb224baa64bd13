"""nvpmodel.conf, ``nvpmodel -q`` and ``jetson_clocks --show`` parsers on real samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.board.nvpmodel import (
    JetsonClocksShowError,
    ModeSetting,
    NvpmodelConf,
    NvpmodelConfError,
    NvpmodelQueryError,
    ParamDef,
    UnknownPowerMode,
    parse_conf,
    parse_jetson_clocks_show,
    parse_query,
)

SAMPLES = Path(__file__).resolve().parent / "shared" / "reference" / "samples"


def sample(name: str) -> str:
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"reference sample {path} is missing (shared/ must sit beside the repo)")
    return path.read_text()


# ------------------------------------------------------------------ conf samples


def test_nano_conf_without_param_section_parses_and_exposes_semantics() -> None:
    conf = parse_conf(sample("nvpmodel-conf_nano_power-models.txt"))
    assert conf.params == {}
    assert [(m.id, m.name) for m in conf.modes] == [(0, "MAXN"), (1, "5W")]
    assert conf.default_id is None
    maxn = conf.mode("maxn")
    assert len(maxn.settings) == 11
    assert maxn.settings[0] == ModeSetting("CPU_ONLINE", "CORE_0", "1")
    cpu_max = maxn.get("CPU_A57", "MAX_FREQ")
    assert cpu_max is not None and cpu_max.unlimited and cpu_max.as_int() is None
    emc = maxn.get("EMC", "MAX_FREQ")
    assert emc is not None and emc.value == "0" and emc.unlimited
    # GPU MIN_FREQ 0 is a real floor of 0, not "unlimited": only EMC MAX_FREQ 0 is.
    gpu_min = maxn.get("GPU", "MIN_FREQ")
    assert gpu_min is not None and not gpu_min.unlimited and gpu_min.as_int() == 0
    five = conf.mode(1)
    assert five is conf.mode("1") is conf.mode("5w")
    assert five.online_cores() == (0, 1)
    assert maxn.online_cores() == (0, 1, 2, 3)
    five_emc = five.get("EMC", "MAX_FREQ")
    assert five_emc is not None and five_emc.as_int() == 1_600_000_000
    on = five.get("GPU_POWER_CONTROL_ENABLE", "GPU_PWR_CNTL_EN")
    assert on is not None and on.value == "on" and on.as_int() is None


def test_orin_nano_super_abbreviated_conf_keeps_default_and_gaps_in_ids() -> None:
    conf = parse_conf(sample("nvpmodel-conf_orin-nano-super_abbreviated.txt"))
    assert [(m.id, m.name) for m in conf.modes] == [(0, "15W"), (2, "MAXN_SUPER")]
    assert conf.default_id == 1
    # The abbreviated file drops mode 1: the default is recorded but not resolvable.
    assert conf.default_mode is None
    assert conf.mode("maxn_super").get("GPU", "MAX_FREQ") == ModeSetting("GPU", "MAX_FREQ", "-1")
    assert conf.mode("15w").get("EMC", "MAX_FREQ") == ModeSetting("EMC", "MAX_FREQ", "2133000000")
    with pytest.raises(UnknownPowerMode) as info:
        conf.mode(1)
    assert "0 15W" in str(info.value) and "2 MAXN_SUPER" in str(info.value)


def test_agx_orin_param_section_and_knext_paths(tmp_path: Path) -> None:
    conf = parse_conf(sample("nvpmodel-conf_agx-orin_l4t35_param-section.txt"))
    assert conf.modes == ()
    assert len(conf.params) == 15
    assert conf.params["CPU_ONLINE"].type == "FILE"
    assert conf.params["CPU_ONLINE"].args["CORE_11"] == "/sys/devices/system/cpu/cpu11/online"
    gpu = conf.params["GPU"]
    assert gpu.type == "CLOCK"
    assert gpu.args["MAX_FREQ_KNEXT"] == "/sys/devices/17000000.ga10b/devfreq_dev/max_freq"
    # Neither exists: the plain path is returned.
    plain = tmp_path / "sys/devices/17000000.ga10b/devfreq/17000000.ga10b/max_freq"
    knext = tmp_path / "sys/devices/17000000.ga10b/devfreq_dev/max_freq"
    assert gpu.path_for("MAX_FREQ", tmp_path) == plain
    # Only the newer-kernel path exists: it is chosen.
    knext.parent.mkdir(parents=True)
    knext.write_text("1300500000\n")
    assert gpu.path_for("MAX_FREQ", tmp_path) == knext
    # Both exist: the plain one wins.
    plain.parent.mkdir(parents=True)
    plain.write_text("1300500000\n")
    assert gpu.path_for("MAX_FREQ", tmp_path) == plain
    assert gpu.path_for("NO_SUCH_ARG", tmp_path) is None
    assert conf.params["EMC"].path_for("MAX_FREQ", tmp_path) == (
        tmp_path / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"
    )


def test_knext_only_param_falls_back_to_knext_path(tmp_path: Path) -> None:
    param = ParamDef("GPU", "CLOCK", {"MAX_FREQ_KNEXT": "/sys/x/max_freq"})
    assert param.path_for("MAX_FREQ", tmp_path) == tmp_path / "sys/x/max_freq"


FULL_CONF = """\
# test conf
< PARAM TYPE=FILE NAME=CPU_ONLINE >
CORE_0 /sys/devices/system/cpu/cpu0/online
CORE_1   /sys/devices/system/cpu/cpu1/online

< PARAM TYPE=FILE NAME=TPC_POWER_GATING >
TPC_PG_MASK /sys/devices/gpu.0/tpc_pg_mask
< PARAM TYPE=FILE NAME=FBP_POWER_GATING >
FBP_PG_MASK /sys/devices/gpu.0/fbp_pg_mask
<PARAM TYPE=CLOCK NAME=GPU>
MAX_FREQ /sys/devices/gpu/max_freq   # trailing comment

< POWER_MODEL ID=0 NAME=MAXN >
CPU_ONLINE CORE_0 1
CPU_ONLINE CORE_1 1
TPC_POWER_GATING TPC_PG_MASK 0
FBP_POWER_GATING FBP_PG_MASK 0
GPU MAX_FREQ -1

<   POWER_MODEL   ID=1   NAME=MODE_7W   >
CPU_ONLINE CORE_0 1
CPU_ONLINE CORE_1 0
TPC_POWER_GATING TPC_PG_MASK 2
FBP_POWER_GATING FBP_PG_MASK 2
GPU MAX_FREQ 408000000

< POWER_MODEL ID=2 NAME=MODE_10W >
TPC_POWER_GATING TPC_PG_MASK 0
FBP_POWER_GATING FBP_PG_MASK 0
GPU MAX_FREQ 624750000

< PM_CONFIG DEFAULT=2 >
"""


def test_full_conf_gating_masks_and_reboot_detection() -> None:
    conf = parse_conf(FULL_CONF, source="x.conf")
    assert conf.default_id == 2
    assert conf.default_mode is not None and conf.default_mode.name == "MODE_10W"
    assert conf.params["GPU"].args == {"MAX_FREQ": "/sys/devices/gpu/max_freq"}
    assert conf.gating_masks("MODE_7W") == {
        "TPC_POWER_GATING TPC_PG_MASK": "2",
        "FBP_POWER_GATING FBP_PG_MASK": "2",
    }
    assert conf.gating_masks(0) == {
        "TPC_POWER_GATING TPC_PG_MASK": "0",
        "FBP_POWER_GATING FBP_PG_MASK": "0",
    }
    assert conf.needs_reboot("MODE_7W", "MODE_10W")
    assert not conf.needs_reboot(0, "mode_10w")
    assert conf.mode(" 1 ").name == "MODE_7W"


def test_unknown_mode_lists_every_allowed_mode() -> None:
    conf = parse_conf(FULL_CONF, source="x.conf")
    for wanted in ("MODE_99W", 7, "7", ""):
        with pytest.raises(UnknownPowerMode) as info:
            conf.mode(wanted)
        message = str(info.value)
        assert "x.conf" in message
        for allowed in ("0 MAXN", "1 MODE_7W", "2 MODE_10W"):
            assert allowed in message
    assert issubclass(UnknownPowerMode, ValueError)


@pytest.mark.parametrize(
    ("text", "line_no", "fragment"),
    [
        ("< POWER_MODEL ID=0 NAME=MAXN\nGPU MAX_FREQ -1\n", 1, "unterminated"),
        ("# c\n< POWER_MODEL NAME=MAXN >\n", 2, "ID=N and NAME=X"),
        ("< POWER_MODEL ID=0 >\n", 1, "ID=N and NAME=X"),
        ("< PARAM TYPE=FILE >\nX /a\n", 1, "TYPE=... and NAME=..."),
        ("GPU MAX_FREQ -1\n", 1, "before any block"),
        ("< PM_CONFIG DEFAULT=0 >\nGPU MAX_FREQ -1\n", 2, "after PM_CONFIG"),
        ("< POWER_MODEL ID=x1 NAME=A >\n", 1, "not an integer"),
        ("< PM_CONFIG DEFAULT=abc >\n", 1, "not an integer"),
        ("< POWER_MODEL ID=0 NAME=A >\n\n< POWER_MODEL ID=0 NAME=B >\n", 3, "already defined"),
        (
            "< PARAM TYPE=CLOCK NAME=GPU >\nMAX_FREQ /g\n< POWER_MODEL ID=0 NAME=A >\n"
            "GPU MAX_FREQ -1\nCPU_X MAX_FREQ -1\n",
            5,
            "PARAM CPU_X",
        ),
        ("< POWER_MODEL ID=0 NAME=A >\nGPU MAX_FREQ\n", 2, "PARAM ARG VALUE"),
        ("< PARAM TYPE=FILE NAME=EMC >\nMAX_FREQ\n", 2, "ARG /path"),
        ("< PARAM TYPE=FILE NAME=EMC >\n< PARAM TYPE=FILE NAME=EMC >\n", 2, "twice"),
        ("< POWER_MODEL ID=0 NAME=A junk >\n", 1, "KEY=VALUE"),
        ("< POWER_MODEL ID=0 NAME=A > x\n", 1, "malformed"),
    ],
)
def test_broken_conf_names_source_line_and_problem(text: str, line_no: int, fragment: str) -> None:
    with pytest.raises(NvpmodelConfError) as info:
        parse_conf(text, source="/etc/nvpmodel.conf")
    message = str(info.value)
    assert message.startswith(f"/etc/nvpmodel.conf:{line_no}: ")
    assert fragment in message
    assert info.value.line_no == line_no
    assert isinstance(info.value, ValueError)


def test_unknown_block_kinds_are_skipped() -> None:
    conf = parse_conf("< FAN_CONFIG DEFAULT=cool >\nFAN x y\n< POWER_MODEL ID=3 NAME=Z >\n")
    assert [m.id for m in conf.modes] == [3]


# ------------------------------------------------------------------ hypothesis round trip

_IDENT = st.from_regex(r"[A-Z][A-Z0-9_]{0,10}", fullmatch=True)
_PATH = st.from_regex(r"/sys/[a-z0-9_./@-]{1,24}", fullmatch=True)
_VALUE = st.one_of(st.integers(-1, 2**40).map(str), st.sampled_from(["on", "auto", "-1", "0"]))
_SPACE = st.sampled_from([" ", "  ", "\t", " \t "])


@st.composite
def _confs(
    draw: st.DrawFn,
) -> tuple[
    str, dict[str, dict[str, str]], list[tuple[int, str, list[tuple[str, str, str]]]], int | None
]:
    params = draw(
        st.dictionaries(_IDENT, st.dictionaries(_IDENT, _PATH, min_size=1, max_size=3), max_size=4)
    )
    ids = draw(st.lists(st.integers(0, 99), unique=True, max_size=4))
    modes: list[tuple[int, str, list[tuple[str, str, str]]]] = []
    for mode_id in ids:
        if params:
            param = st.sampled_from(sorted(params))
            settings_ = draw(
                st.lists(
                    param.flatmap(
                        lambda p: st.tuples(st.just(p), st.sampled_from(sorted(params[p])), _VALUE)
                    ),
                    max_size=5,
                )
            )
        else:
            settings_ = draw(st.lists(st.tuples(_IDENT, _IDENT, _VALUE), max_size=5))
        modes.append((mode_id, draw(_IDENT), settings_))
    default = draw(st.none() | (st.sampled_from(ids) if ids else st.integers(0, 9)))

    sp = draw(_SPACE)
    lines: list[str] = ["# generated", ""]
    for name, args in params.items():
        lines.append(
            f"<{sp}PARAM{sp}TYPE={draw(st.sampled_from(['FILE', 'CLOCK']))}{sp}NAME={name}{sp}>"
        )
        for arg, path in args.items():
            lines.append(f"{arg}{draw(_SPACE)}{path}")
        lines.append(draw(st.sampled_from(["", "# comment", "   "])))
    for mode_id, name, settings_ in modes:
        lines.append(f"< POWER_MODEL{sp}ID={mode_id} NAME={name} >")
        for param_name, arg, value in settings_:
            lines.append(f"{draw(_SPACE)}{param_name}{draw(_SPACE)}{arg}{draw(_SPACE)}{value}")
        lines.append("")
    if default is not None:
        lines.append(f"< PM_CONFIG DEFAULT={default} >")
    return "\n".join(lines) + "\n", params, modes, default


@settings(max_examples=150, deadline=None)
@given(_confs())
def test_parse_conf_round_trips_generated_confs(
    case: tuple[
        str,
        dict[str, dict[str, str]],
        list[tuple[int, str, list[tuple[str, str, str]]]],
        int | None,
    ],
) -> None:
    text, params, modes, default = case
    conf = parse_conf(text)
    assert isinstance(conf, NvpmodelConf)
    assert {name: p.args for name, p in conf.params.items()} == params
    assert [(m.id, m.name) for m in conf.modes] == [(i, n) for i, n, _ in modes]
    for mode, (mode_id, _, settings_) in zip(conf.modes, modes, strict=True):
        assert [(s.param, s.arg, s.value) for s in mode.settings] == settings_
        assert conf.mode(mode_id) is mode
        assert conf.mode(str(mode_id)) is mode
    assert conf.default_id == default


# ------------------------------------------------------------------ nvpmodel -q


def _split_outputs(text: str) -> list[str]:
    """Split the multi-output sample at source headers, shell prompts and command lines."""
    chunks: list[list[str]] = [[]]
    for line in text.splitlines():
        is_separator = (
            line.startswith("# source")
            or "$ " in line
            or line.startswith("nvpmodel ")
            or not line.strip()
        )
        if is_separator:
            if chunks[-1]:
                chunks.append([])
            continue
        chunks[-1].append(line)
    return ["\n".join(c) for c in chunks if c]


def test_nvpmodel_q_outputs_from_nano_thor_orin_nano() -> None:
    outputs = _split_outputs(sample("nvpmodel-q_nano-thor-orin-nano.txt"))
    assert len(outputs) == 5
    jetbot_user, jetbot_root, thor, orin_fail, jetson_release = outputs

    first = parse_query(jetbot_user)
    assert (first.name, first.id) == ("5W", 1)
    assert first.errors == (
        "NVPM ERROR: Error opening /sys/kernel/nvpmodel_emc_cap/emc_iso_cap: 13",
        "NVPM ERROR: failed to read PARAM EMC: ARG MAX_FREQ: PATH "
        "/sys/kernel/nvpmodel_emc_cap/emc_iso_cap",
    )
    assert first.params == ()

    second = parse_query(jetbot_root)
    assert (second.name, second.id, second.errors) == ("5W", 1, ())

    assert (parse_query(thor).name, parse_query(thor).id) == ("MAXN", 0)

    with pytest.raises(NvpmodelQueryError) as info:
        parse_query(orin_fail)
    assert len(info.value.errors) == 4
    assert "failed to set power mode!" in str(info.value)

    # jetson_release prints "NV Power Mode[1]: 120W": not nvpmodel -q output.
    with pytest.raises(NvpmodelQueryError):
        parse_query(jetson_release)


def test_nvpmodel_q_verbose_orin_nx() -> None:
    result = parse_query(sample("nvpmodel-q-verbose_orin-nx-16gb_r36.5.txt"))
    assert (result.name, result.id, result.errors) == ("40W", 4, ())
    assert len(result.params) == 37
    first = result.params[0]
    assert (first.param, first.arg, first.path, first.real_value, first.conf_value) == (
        "CPU_ONLINE",
        "CORE_0",
        "/sys/devices/system/cpu/cpu0/online",
        "1",
        "1",
    )
    by_key = {(p.param, p.arg): p for p in result.params}
    emc = by_key[("EMC", "MAX_FREQ")]
    assert emc.path == "/sys/kernel/nvpmodel_clk_cap/emc"
    assert (emc.real_value, emc.conf_value) == ("3199000000", "9223372036854775807")
    power = by_key[("GPU_POWER_CONTROL_ENABLE", "GPU_PWR_CNTL_EN")]
    assert (power.real_value, power.conf_value) == ("auto", "on")
    dla = by_key[("DLA0_CORE", "MAX_FREQ")]
    assert (
        dla.path == "/sys/devices/platform/bus@0/13e00000.host1x/15880000.nvdla0/clk_cap/dla0_core"
    )


def test_nvpmodel_q_verbose_orin_nano_super_partial() -> None:
    result = parse_query(sample("nvpmodel-q-verbose_orin-nano-super_r36_partial.txt"))
    assert (result.name, result.id) == ("MAXN_SUPER", 2)
    assert [(p.param, p.arg, p.real_value, p.conf_value) for p in result.params] == [
        ("CPU_ONLINE", "CORE_0", "1", "1"),
        ("GPU", "MAX_FREQ", "1020000000", "9223372036854775807"),
    ]


def test_nvpmodel_q_ignores_warnings_and_rejects_missing_id() -> None:
    result = parse_query("NVPM WARN: fan mode is not set!\nNV Power Mode: MODE_15W\n\n2\n")
    assert (result.name, result.id, result.errors) == ("MODE_15W", 2, ())
    with pytest.raises(NvpmodelQueryError, match="numeric mode id"):
        parse_query("NV Power Mode: MAXN\nNVPM WARN: x\n")
    with pytest.raises(NvpmodelQueryError, match="no 'NV Power Mode"):
        parse_query("")


# ------------------------------------------------------------------ jetson_clocks --show


def test_jetson_clocks_show_orin_nano_super() -> None:
    show = parse_jetson_clocks_show(sample("jetson_clocks-show_orin-nano-super_r36.txt"))
    assert show.soc_family == "tegra234"
    assert show.machine == "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super"
    assert show.online_cpus == (0, 1, 2, 3, 4, 5)
    assert [c.cpu for c in show.cpus] == [0, 4]
    cpu0 = show.cpus[0]
    assert cpu0.online is True and cpu0.governor == "schedutil"
    assert (cpu0.min_freq_hz, cpu0.max_freq_hz, cpu0.cur_freq_hz) == (
        729_600_000,
        1_728_000_000,
        1_267_200_000,
    )
    assert show.cpus[1].cur_freq_hz == 1_728_000_000
    assert show.gpu is not None
    assert (show.gpu.min_freq_hz, show.gpu.max_freq_hz, show.gpu.cur_freq_hz) == (
        306_000_000,
        1_020_000_000,
        306_000_000,
    )
    assert show.emc is not None
    assert (show.emc.min_freq_hz, show.emc.max_freq_hz, show.emc.cur_freq_hz) == (
        204_000_000,
        3_199_000_000,
        2_133_000_000,
    )
    assert show.emc.freq_override is False
    assert show.power_mode == "MAXN_SUPER"
    assert show.other_clocks == ()


def test_jetson_clocks_show_tx2_style_and_errors() -> None:
    text = (
        "SOC family:tegra186  Machine:quill\n"
        "Online CPUs: 0,3-5\n"
        "cpu1: Online=0 Governor=schedutil MinFreq=345600 MaxFreq=2035200 CurrentFreq=2035200\n"
        "DLA0_CORE MinFreq=0 MaxFreq=1600000000 CurrentFreq=1600000000\n"
        "EMC MinFreq=40800000 MaxFreq=1866000000 CurrentFreq=1866000000 FreqOverride=1\n"
    )
    show = parse_jetson_clocks_show(text)
    assert (show.soc_family, show.machine, show.online_cpus) == ("tegra186", "quill", (0, 3, 4, 5))
    assert show.cpus[0].online is False
    assert show.gpu is None and show.power_mode is None
    assert show.emc is not None and show.emc.freq_override is True
    assert [c.name for c in show.other_clocks] == ["DLA0_CORE"]
    with pytest.raises(JetsonClocksShowError, match="CPU list"):
        parse_jetson_clocks_show("Online CPUs: 0-x\n")
    with pytest.raises(JetsonClocksShowError):
        parse_jetson_clocks_show("hello\n")
