"""``jetson_clocks --show`` as JetPack 7 (Thor) prints it, older accelerator and TX1 forms,
and the jetson_clocks knob's verification read back from it (issue 13)."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from pytest_edgeenergy.board.nvpmodel import (
    JetsonClocksShow,
    JetsonClocksShowError,
    parse_jetson_clocks_show,
)
from pytest_edgeenergy.control.jetson_clocks import (
    JetsonClocksKnob,
    named_clocks,
    pinning_mismatches,
)
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.nvpmodel import NvpmodelKnob
from pytest_edgeenergy.sim.models import get_model
from pytest_edgeenergy.sim.shims import jetson_clocks, nvpmodel
from pytest_edgeenergy.sim.tree import create

SAMPLES = Path(__file__).resolve().parent / "samples"
THOR = "jetson_clocks-show_thor_jp7.txt"
AGX_ORIN_30W = "jetson_clocks-show_agx-orin-30w_l4t35.txt"
TX1 = "jetson_clocks-show_tx1_l4t28.txt"
TOOL = Path("/usr/bin/jetson_clocks")


def sample(name: str) -> str:
    lines = (SAMPLES / name).read_text().splitlines()
    assert lines[0].startswith("# source: written by hand from the description in issue 13")
    return "\n".join(lines[1:]) + "\n"


def without(text: str, pattern: str) -> str:
    return "".join(ln for ln in text.splitlines(keepends=True) if not re.match(pattern, ln))


def reasons(shown: JetsonClocksShow) -> list[str]:
    return [m.describe() for m in pinning_mismatches(shown, TOOL)]


# ------------------------------------------------------------------ parsing


def test_thor_jp7_sample() -> None:
    show = parse_jetson_clocks_show(sample(THOR))
    assert (show.soc_family, show.machine) == (
        "tegra264",
        "NVIDIA Jetson AGX Thor Developer Kit",
    )
    assert show.online_cpus == tuple(range(14)) and show.offline_cpus == ()
    assert [c.cpu for c in show.cpus] == list(range(14))
    for cpu in show.cpus:
        assert cpu.online is True  # from the header: the lines carry no Online=
        assert cpu.governor == "schedutil"
        assert (cpu.min_freq_hz, cpu.max_freq_hz, cpu.cur_freq_hz) == (2_601_000_000,) * 3
    assert show.gpu is not None and show.gpu.name == "gpu-gpc-0"
    assert (show.gpu.min_freq_hz, show.gpu.max_freq_hz, show.gpu.cur_freq_hz) == (
        1_575_000_000,
    ) * 3
    assert [c.name for c in show.gpu_clocks] == ["gpu-gpc-0", "gpu-nvd-0"]
    assert show.emc is not None
    assert (show.emc.min_freq_hz, show.emc.max_freq_hz, show.emc.cur_freq_hz) == (
        665_600_000,
        4_266_000_000,
        4_266_000_000,
    )
    assert show.emc.freq_override is True
    assert [(c.name, c.online, c.max_freq_hz) for c in show.other_clocks] == [
        ("PVA0_VPS0", False, 1_215_000_000),
        ("PVA0_AXI", False, 909_000_000),
    ]
    assert show.power_mode == "MAXN"
    assert reasons(show) == []


def test_thor_codec_clock_is_named_beside_the_graphics_clock() -> None:
    clocks = named_clocks(parse_jetson_clocks_show(sample(THOR)))
    assert list(clocks) == ["gpu-gpc-0", "gpu-nvd-0", "EMC", "PVA0_VPS0", "PVA0_AXI"]
    nvd = clocks["gpu-nvd-0"]
    assert (nvd.min_freq_hz, nvd.max_freq_hz, nvd.cur_freq_hz) == (1_692_000_000,) * 3
    assert clocks["gpu-gpc-0"].max_freq_hz == 1_575_000_000


def test_the_knob_shows_thors_codec_clock_by_name(tmp_path: Path) -> None:
    """The tool's real output as it is: ``show()`` keeps the ``gpu-nvd-0`` line by name."""
    root = create("thor", tmp_path / "thor")
    printed = tmp_path / "show.txt"
    printed.write_text(sample(THOR))
    tool = root / "usr/bin/jetson_clocks"
    tool.write_text(f"#!/bin/sh\nexec cat '{printed}'\n")
    tool.chmod(0o755)
    shown = JetsonClocksKnob(knobs_at(root)).show()
    assert shown["gpu"]["name"] == "gpu-gpc-0"
    assert shown["clocks"]["gpu-nvd-0"] == {
        "name": "gpu-nvd-0",
        "min_freq_hz": 1_692_000_000,
        "max_freq_hz": 1_692_000_000,
        "cur_freq_hz": 1_692_000_000,
        "freq_override": None,
        "online": None,
    }
    assert list(shown["clocks"]) == ["gpu-gpc-0", "gpu-nvd-0", "EMC", "PVA0_VPS0", "PVA0_AXI"]


def test_agx_orin_30w_accelerator_lines() -> None:
    show = parse_jetson_clocks_show(sample(AGX_ORIN_30W))
    assert show.online_cpus == tuple(range(8))
    assert [(c.cpu, c.online) for c in show.cpus] == [(0, True), (4, True), (8, False)]
    assert show.gpu is not None and show.gpu.name == "GPU"
    assert show.gpu.max_freq_hz == 624_750_000
    assert [(c.name, c.online, c.min_freq_hz, c.max_freq_hz) for c in show.other_clocks] == [
        ("DLA0_CORE", True, 0, 1_024_000_000),
        ("DLA0_FALCON", True, 0, 640_000_000),
        ("DLA1_CORE", False, 0, 1_024_000_000),
        ("DLA1_FALCON", False, 0, 640_000_000),
        ("PVA0_VPS", True, 0, 1_100_000_000),
        ("PVA0_AXI", True, 0, 710_400_000),
    ]
    assert show.power_mode == "MODE_30W"
    # cpu8 is offline and not pinned: skipped; once shown online it must be pinned.
    assert reasons(show) == []
    online8 = sample(AGX_ORIN_30W).replace("cpu8:  Online=0", "cpu8:  Online=1")
    assert reasons(parse_jetson_clocks_show(online8)) == [
        "/usr/bin/jetson_clocks: expected cpu8 MinFreq == MaxFreq, "
        "read MinFreq 115200000 Hz, MaxFreq 1728000000 Hz"
    ]


def test_tx1_gonvernor_typo_is_the_governor() -> None:
    show = parse_jetson_clocks_show(sample(TX1))
    assert show.soc_family == "tegra210"
    assert [(c.cpu, c.online, c.governor) for c in show.cpus] == [
        (n, True, "interactive") for n in range(4)
    ]
    assert show.cpus[0].max_freq_hz == 1_734_000_000
    assert show.gpu is not None and show.gpu.max_freq_hz == 998_400_000
    assert show.emc is not None and show.emc.cur_freq_hz == 1_600_000_000
    assert reasons(show) == []


@pytest.mark.parametrize(
    ("header", "online", "offline"),
    [
        ("Online CPUs: 0-13, Offline CPUs:", tuple(range(14)), ()),
        ("Online CPUs: 0-7, Offline CPUs: 8-11", tuple(range(8)), (8, 9, 10, 11)),
        ("Online CPUs: 0,2, Offline CPUs: 1,3", (0, 2), (1, 3)),
        ("Online CPUs: , Offline CPUs: 0-3", (), (0, 1, 2, 3)),
        ("Online CPUs: 0,3-5", (0, 3, 4, 5), ()),
    ],
)
def test_cpu_header_decides_online_when_lines_do_not(
    header: str, online: tuple[int, ...], offline: tuple[int, ...]
) -> None:
    lines = [f"cpu{n}: Governor=schedutil MinFreq=1 MaxFreq=1 CurrentFreq=1" for n in range(4)]
    show = parse_jetson_clocks_show("\n".join([header, *lines]) + "\n")
    assert (show.online_cpus, show.offline_cpus) == (online, offline)
    assert [c.online for c in show.cpus] == [n in online for n in range(4)]


def test_online_field_wins_over_the_header_and_empty_means_unsaid() -> None:
    show = parse_jetson_clocks_show(
        "Online CPUs: 0-1, Offline CPUs: 2\n"
        "cpu1: Online=0 Governor=schedutil MinFreq=1 MaxFreq=1\n"
        "cpu2: Online= Governor=schedutil MinFreq=1 MaxFreq=1\n"
    )
    assert [(c.cpu, c.online) for c in show.cpus] == [(1, False), (2, False)]
    no_header = parse_jetson_clocks_show("cpu2: Online= Governor=schedutil MaxFreq=1\n")
    assert no_header.cpus[0].online is None


def test_bad_offline_list_is_named() -> None:
    with pytest.raises(JetsonClocksShowError, match=r"CPU list ' 8-x'.*bad item '8-x'"):
        parse_jetson_clocks_show("Online CPUs: 0-7, Offline CPUs: 8-x\n")


# ------------------------------------------------------------------ verification


def test_output_without_the_gpu_fails_verification() -> None:
    no_gpu = without(sample(THOR), r"gpu-")
    assert reasons(parse_jetson_clocks_show(no_gpu)) == [
        "/usr/bin/jetson_clocks: expected a GPU line (GPU or gpu-gpc-N) with MinFreq == "
        "MaxFreq, read no GPU graphics clock in jetson_clocks --show (GPU lines: none)"
    ]
    codec_only = without(sample(THOR), r"gpu-gpc-")
    (reason,) = reasons(parse_jetson_clocks_show(codec_only))
    assert "no GPU graphics clock" in reason and "(GPU lines: gpu-nvd-0)" in reason


@pytest.mark.parametrize(
    ("pattern", "replacement", "expected"),
    [
        (r"^cpu\d+:.*\n", "", "no online CPU in jetson_clocks --show (CPU lines: none)"),
        (
            r"Online CPUs: 0-13, Offline CPUs:",
            "Online CPUs: , Offline CPUs: 0-13",
            "no online CPU in jetson_clocks --show (CPU lines: 0,1,2,",
        ),
        (r"^EMC .*\n", "", "no EMC line in jetson_clocks --show"),
        (
            r"CurrentFreq=4266000000 FreqOverride=1",
            "CurrentFreq=665600000 FreqOverride=1",
            "expected EMC CurrentFreq == MaxFreq (4266000000 Hz), read 665600000 Hz",
        ),
        (r"FreqOverride=1", "FreqOverride=0", "expected EMC FreqOverride=1, read FreqOverride=0"),
        (
            r"gpu-gpc-0 MinFreq=\d+ MaxFreq=\d+",
            "gpu-gpc-0 MinFreq= MaxFreq=",
            "expected gpu-gpc-0 MinFreq == MaxFreq, read MinFreq ? Hz, MaxFreq ? Hz",
        ),
        (
            r"gpu-nvd-0 MinFreq=\d+",
            "gpu-nvd-0 MinFreq=115000000",
            "expected gpu-nvd-0 MinFreq == MaxFreq, read MinFreq 115000000 Hz",
        ),
    ],
)
def test_verification_never_passes_vacuously(pattern: str, replacement: str, expected: str) -> None:
    text = re.sub(pattern, replacement, sample(THOR), flags=re.MULTILINE)
    found = reasons(parse_jetson_clocks_show(text))
    assert len(found) == 1 and expected in found[0], found


# ------------------------------------------------------------------ the Thor virtual board


def test_thor_virtual_board_prints_the_jp7_layout(tmp_path: Path) -> None:
    root = create("thor", tmp_path / "thor")
    assert nvpmodel(root, ["-m", "0"], io.StringIO(), io.StringIO()) == 0
    out = io.StringIO()
    assert jetson_clocks(root, ["--show"], io.StringIO(), out) == 0

    def shape(line: str) -> str:
        return re.sub(r"\d+", "N", line)

    ours = {shape(line) for line in out.getvalue().splitlines()}
    for line in sample(THOR).splitlines():
        if line.startswith(("gpu-nvd-", "PVA", "FAN")):
            continue  # the virtual board has no codec clock, PVA or fan
        assert shape(line) in ours, line


def test_pinning_on_thor_verifies_cpu_gpu_and_emc(tmp_path: Path) -> None:
    root = create("thor", tmp_path / "thor")
    knobs = knobs_at(root)
    modes = NvpmodelKnob(knobs)
    modes.apply(modes.plan("MAXN"))
    knob = JetsonClocksKnob(knobs)
    store = tmp_path / "clocks.conf"
    knob.apply(knob.plan("store", store))
    before = pinning_mismatches(knob.read_show(), TOOL)
    # Every CPU, the GPU and the EMC are read back, not assumed: unpinned, each one fails.
    assert [m.expected for m in before] == [
        *(f"cpu{n} MinFreq == MaxFreq" for n in range(14)),
        "gpu-gpc-0 MinFreq == MaxFreq",
        "EMC CurrentFreq == MaxFreq (4266000000 Hz)",
        "EMC FreqOverride=1",
    ]
    assert knob.verify() == []  # nothing pinned by this knob yet
    knob.apply(knob.plan("pin"))
    assert knob.verify() == []
    shown = knob.read_show()
    expected = parse_jetson_clocks_show(sample(THOR))
    assert shown.power_mode == expected.power_mode == "MAXN"
    assert shown.online_cpus == expected.online_cpus
    assert [(c.cpu, c.online, c.min_freq_hz, c.max_freq_hz) for c in shown.cpus] == [
        (c.cpu, c.online, c.min_freq_hz, c.max_freq_hz) for c in expected.cpus
    ]
    assert shown.gpu is not None and expected.gpu is not None
    assert (shown.gpu.name, shown.gpu.min_freq_hz, shown.gpu.max_freq_hz) == (
        expected.gpu.name,
        expected.gpu.min_freq_hz,
        expected.gpu.max_freq_hz,
    )
    assert shown.emc == expected.emc
    knob.apply(knob.plan("restore", store))
    assert pinning_mismatches(knob.read_show(), TOOL) == before


def test_pinning_on_thor_without_its_gpu_fails_verification(tmp_path: Path) -> None:
    root = create("thor", tmp_path / "thor")
    knob = JetsonClocksKnob(knobs_at(root))
    knob.apply(knob.plan("pin"))
    assert knob.verify() == []
    # The GPU driver gone (Thor's GPU is PCIe-like): --show no longer prints its clock.
    shutil.rmtree(root / get_model("thor").gpu.devfreq_dir)
    (mismatch,) = knob.verify()
    assert mismatch.path == root / "usr/bin/jetson_clocks"
    assert "no GPU graphics clock in jetson_clocks --show" in mismatch.describe(root)


def test_capped_emc_is_shown_as_max_and_verifies(tmp_path: Path) -> None:
    root = create("agx-orin", tmp_path / "agx-orin")
    knobs = knobs_at(root)
    modes = NvpmodelKnob(knobs)
    modes.apply(modes.plan("MODE_15W", force=True))  # TPC mask change: simulated reboot
    knob = JetsonClocksKnob(knobs)
    knob.apply(knob.plan("pin"))
    shown = knob.read_show()
    assert shown.emc is not None
    assert (shown.emc.max_freq_hz, shown.emc.cur_freq_hz) == (2_133_000_000, 2_133_000_000)
    assert knob.verify() == []
