"""nvpmodel, jetson_clocks and tegrastats of virtual boards, against the real formats."""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pytest_edgeenergy.board.nvpmodel import parse_jetson_clocks_show, parse_query
from pytest_edgeenergy.sim.models import get_model
from pytest_edgeenergy.sim.railfiles import rail_files
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, Animator
from pytest_edgeenergy.sim.shims import _Tegrastats, jetson_clocks, nvpmodel
from pytest_edgeenergy.sim.tree import create

SAMPLES = Path(__file__).resolve().parent / "shared" / "reference" / "samples"
GPU_JP6 = "sys/devices/platform/17000000.gpu/devfreq_dev"


def _sample(name: str) -> str:
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"reference sample {path} is missing (shared/ not beside the repo)")
    return path.read_text()


def _nvp(root: Path, *argv: str, stdin: str = "") -> tuple[int, str]:
    out = io.StringIO()
    rc = nvpmodel(root, list(argv), io.StringIO(stdin), out)
    return rc, out.getvalue()


def _jc(root: Path, *argv: str, stdin: str = "") -> tuple[int, str]:
    out = io.StringIO()
    rc = jetson_clocks(root, list(argv), io.StringIO(stdin), out)
    return rc, out.getvalue()


def _val(root: Path, rel: str) -> str:
    return (root / rel).read_text().strip()


def _snapshot(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                files[str(path.relative_to(root))] = path.read_bytes()
    return files


@pytest.fixture
def nano(tmp_path: Path) -> Path:
    return create("nano", tmp_path / "nano")


@pytest.fixture
def orin_nano(tmp_path: Path) -> Path:
    return create("orin-nano", tmp_path / "orin-nano")


# ------------------------------------------------------------------ nvpmodel


def test_nano_mode_5w_applies_and_is_reported(nano: Path) -> None:
    assert _nvp(nano, "-q") == (0, "NV Power Mode: MAXN\n0\n")
    rc, out = _nvp(nano, "-m", "1")
    assert (rc, out) == (0, "")
    cpu = "sys/devices/system/cpu"
    assert [_val(nano, f"{cpu}/cpu{c}/online") for c in (1, 2, 3)] == ["1", "0", "0"]
    assert _val(nano, f"{cpu}/cpu0/cpufreq/scaling_max_freq") == "918000"
    assert _val(nano, f"{cpu}/cpu0/cpufreq/scaling_min_freq") == "102000"
    gpu = "sys/devices/57000000.gpu/devfreq/57000000.gpu"
    assert _val(nano, f"{gpu}/max_freq") == "640000000"
    assert _val(nano, f"{gpu}/min_freq") == "76800000"
    assert _val(nano, "sys/kernel/nvpmodel_emc_cap/emc_iso_cap") == "1600000000"
    assert _nvp(nano, "-q") == (0, "NV Power Mode: 5W\n1\n")  # the real Nano output
    assert _val(nano, "var/lib/nvpmodel/status") == "pmode:0001 fmode:fanNull"
    (nano / LOAD_OVERRIDE).write_text("1.0\n")
    animator = Animator(nano)
    try:
        animator.tick()
    finally:
        animator.close()
    assert int(_val(nano, f"{gpu}/cur_freq")) == 614400000  # highest step below 640 MHz
    assert _val(nano, f"{cpu}/online") == "0-1"


def test_orin_nano_maxn_super_verbose_query_matches_the_real_tool(orin_nano: Path) -> None:
    assert _nvp(orin_nano, "-m", "2") == (0, "")
    rc, out = _nvp(orin_nano, "-q", "--verbose")
    assert rc == 0
    sample = _sample("nvpmodel-q-verbose_orin-nano-super_r36_partial.txt")
    for line in sample.splitlines()[1:]:
        assert line in out.splitlines(), line
    query = parse_query(out)
    assert (query.name, query.id) == ("MAXN_SUPER", 2)
    by_key = {(p.param, p.arg): p for p in query.params}
    assert by_key[("CPU_A78_0", "MAX_FREQ")].real_value == "1728000"
    assert by_key[("EMC", "MAX_FREQ")].real_value == "3199000000"
    assert by_key[("GPU", "MIN_FREQ")].real_value == "306000000"
    assert by_key[("GPU", "MIN_FREQ")].conf_value == "0"


def test_agx_orin_l4t35_uses_int32_for_unlimited(tmp_path: Path) -> None:
    root = create("agx-orin", tmp_path / "agx")
    assert _nvp(root, "-m", "0", "--force")[0] == 0
    query = parse_query(_nvp(root, "-q", "--verbose")[1])
    conf_values = {(p.param, p.arg): p.conf_value for p in query.params}
    assert conf_values[("GPU", "MAX_FREQ")] == "2147483647"
    assert conf_values[("EMC", "MAX_FREQ")] == "0"


def test_gating_change_prompts_and_declining_changes_nothing(orin_nano: Path) -> None:
    before = _snapshot(orin_nano)
    rc, out = _nvp(orin_nano, "-m", "3", stdin="NO\n")
    assert rc == 0
    assert "NVPM WARN: Reboot required for changing to this power mode: 3" in out
    assert "DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:" in out
    assert _snapshot(orin_nano) == before
    rc, out = _nvp(orin_nano, "-m", "3", stdin="YES\n")
    assert rc == 0 and "reboot is simulated" in out
    assert _val(orin_nano, "sys/devices/platform/gpu.0/tpc_pg_mask") == "252"
    assert _val(orin_nano, "sys/devices/system/cpu/cpu4/online") == "0"
    assert _nvp(orin_nano, "-q") == (0, "NV Power Mode: 7W\n3\n")


def test_force_applies_a_gating_mode_without_asking(tmp_path: Path) -> None:
    root = create("agx-orin", tmp_path / "agx")
    rc, out = _nvp(root, "-m", "1", "--force")
    assert rc == 0 and "DO YOU WANT" not in out
    assert _val(root, "sys/devices/gpu.0/tpc_pg_mask") == "248"
    for policy in (0, 4, 8):
        path = f"sys/devices/system/cpu/cpu{policy}/cpufreq/scaling_max_freq"
        assert _val(root, path) == "1113600"
    online = [_val(root, f"sys/devices/system/cpu/cpu{c}/online") for c in range(1, 12)]
    assert online == ["1", "1", "1"] + ["0"] * 8
    assert _nvp(root, "-q")[1] == "NV Power Mode: MODE_15W\n1\n"


def test_unknown_mode_id_is_an_nvpm_error(orin_nano: Path) -> None:
    before = _snapshot(orin_nano)
    rc, out = _nvp(orin_nano, "-m", "9")
    assert rc == 1
    assert out.startswith("NVPM ERROR:")
    assert "0 (15W)" in out and "3 (7W)" in out
    assert _snapshot(orin_nano) == before


def test_parse_verbose_satisfies_jtop(tmp_path: Path) -> None:
    root = create("agx-xavier", tmp_path / "x")
    rc, out = _nvp(root, "-p", "--verbose")
    assert rc == 0
    default = re.search(r"PM_CONFIG: DEFAULT=(?P<name>\w+)\((?P<id>\d+)\)", out)
    assert default is not None and default.group("name", "id") == ("MODE_15W", "2")
    modes = re.findall(r"POWER_MODEL: ID=(?P<id>\d+) NAME=(?P<name>\w+)", out)
    assert [int(i) for i, _ in modes] == list(range(8))
    assert len(re.findall(r"TPC_POWER_GATING TPC_PG_MASK (\w+)", out)) >= 8


def test_scripts_in_the_tree_act_on_their_own_tree(tmp_path: Path) -> None:
    first = create("orin-nx", tmp_path / "first")
    moved = tmp_path / "moved"
    shutil.move(str(first), moved)
    query = subprocess.run(
        [str(moved / "usr/bin/nvpmodel"), "-q"], capture_output=True, text=True, timeout=60
    )
    assert query.stdout == "NV Power Mode: 15W\n2\n", query.stderr
    setting = subprocess.run(
        [str(moved / "usr/bin/nvpmodel"), "-m", "4"], capture_output=True, text=True, timeout=60
    )
    assert setting.returncode == 0, setting.stdout + setting.stderr
    assert _val(moved, f"{GPU_JP6}/max_freq") == "1173000000"
    bad = subprocess.run(
        [str(moved / "usr/bin/nvpmodel"), "-m", "12"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1 and bad.stdout.startswith("NVPM ERROR")


# ------------------------------------------------------------------ jetson_clocks


def test_show_has_the_real_format(orin_nano: Path) -> None:
    _nvp(orin_nano, "-m", "2")
    rc, out = _jc(orin_nano, "--show")
    assert rc == 0
    sample = _sample("jetson_clocks-show_orin-nano-super_r36.txt").splitlines()[1:]

    def shape(line: str) -> str:
        return re.sub(r"\d+", "N", line)

    ours = [shape(line) for line in out.splitlines()]
    for line in sample:
        if line.startswith("FAN"):
            continue  # the virtual board has no fan
        assert shape(line) in ours, line
    show = parse_jetson_clocks_show(out)
    assert show.soc_family == "tegra234"
    assert show.power_mode == "MAXN_SUPER"
    assert show.online_cpus == (0, 1, 2, 3, 4, 5)
    assert [c.cpu for c in show.cpus] == [0, 4]
    assert show.gpu is not None and show.gpu.max_freq_hz == 1020000000
    assert show.emc is not None and show.emc.freq_override is False


@pytest.mark.parametrize("name", ["nano", "agx-xavier", "orin-nano", "thor"])
def test_store_max_restore_round_trip_is_byte_identical(tmp_path: Path, name: str) -> None:
    root = create(name, tmp_path / name)
    model = get_model(name)
    store = tmp_path / "l4t_dfs.conf"
    before = _snapshot(root)
    assert _jc(root, "--store", str(store)) == (0, "")
    assert all(re.match(r"^/[^:]+:\S+$", ln) for ln in store.read_text().splitlines())
    assert _jc(root) == (0, "")
    show = parse_jetson_clocks_show(_jc(root, "--show")[1])
    for cpu in show.cpus:
        assert cpu.min_freq_hz == cpu.max_freq_hz
    assert show.gpu is not None and show.gpu.min_freq_hz == show.gpu.max_freq_hz
    if model.emc.style != "bwmgr":
        assert show.emc is not None and show.emc.freq_override is True
    if model.l4t_major <= 32:
        assert show.online_cpus == tuple(range(model.cpu_count))
    assert _snapshot(root) != before
    animator = Animator(root)
    try:
        animator.tick(load=0.0)
    finally:
        animator.close()
    gpu = root / model.gpu.devfreq_dir
    assert _val(gpu, "cur_freq") == _val(gpu, "max_freq")
    assert _jc(root, "--restore", str(store)) == (0, "")
    animator = Animator(root)
    try:
        animator.tick(load=0.0, noise=False)
    finally:
        animator.close()
    after = _snapshot(root)
    volatile = "var/lib/edgeenergy-sim/truth.bin"
    assert {k: v for k, v in after.items() if k != volatile} == {
        k: v for k, v in before.items() if k != volatile
    }


def test_store_asks_before_overwriting(nano: Path, tmp_path: Path) -> None:
    store = tmp_path / "saved.conf"
    store.write_text("keep\n")
    rc, out = _jc(nano, "--store", str(store), stdin="N\n")
    assert rc == 0 and "already exists. Can I overwrite it? Y/N:" in out
    assert store.read_text() == "keep\n"
    rc, _ = _jc(nano, "--store", str(store), stdin="Y\n")
    assert rc == 0 and store.read_text() != "keep\n"


def test_restore_without_a_file_fails(nano: Path, tmp_path: Path) -> None:
    rc, out = _jc(nano, "--restore", str(tmp_path / "missing.conf"))
    assert rc == 1 and "missing.conf" in out


# ------------------------------------------------------------------ tegrastats

WATT_RE = re.compile(r"\b(\w+) ([0-9.]+)(\w?)W?\/([0-9.]+)(\w?)W?\b")  # jetson-stats' regex
TEMP_RE = re.compile(r"\b(\w+)@(-?[0-9.]+)C\b")
LINE_SHAPES = {
    "l4t32": re.compile(
        r"^RAM \d+/\d+MB \(lfb \d+x\d+MB\) (SWAP \d+/\d+MB \(cached \d+MB\) )?.*"
        r"CPU \[((\d+%@\d+|off),?)+\] EMC_FREQ \d+%@\d+ GR3D_FREQ \d+%@\d+ .*"
        r"(\w+@-?[\d.]+C ?)+( \w+ \d+/\d+)+$"
    ),
    "jp5": re.compile(
        r"^\d\d-\d\d-\d{4} \d\d:\d\d:\d\d RAM \d+/\d+MB \(lfb \d+x\d+MB\) .*"
        r"CPU \[((\d+%@\d+|off),?)+\] EMC_FREQ \d+%@\d+ GR3D_FREQ \d+%@\d+ .*"
        r"(\w+@-?[\d.]+C ?)+( \w+ \d+mW/\d+mW)+$"
    ),
    "jp6": re.compile(
        r"^\d\d-\d\d-\d{4} \d\d:\d\d:\d\d RAM \d+/\d+MB \(lfb \d+x\d+MB\) .*"
        r"CPU \[((\d+%@\d+|off),?)+\] .*GR3D_FREQ \d+%(@\[\d+\])?.*"
        r"(\w+@-?[\d.]+C ?)+( \w+ \d+mW/\d+mW)+$"
    ),
    "jp7": re.compile(
        r"^\d\d-\d\d-\d{4} \d\d:\d\d:\d\d RAM \d+/\d+MB \(lfb \d+x\d+MB\) .*"
        r"CPU \[((\d+%@\d+|off),?)+\] EMC_FREQ \d+%@\d+ GR3D_FREQ \d+%@\[[\d,]+\] .*"
        r"(\w+@-?[\d.]+C/-?[\d.]+C ?)+( \w+ \d+mW/\d+mW/\d+mW)+$"
    ),
}
REAL_LINES = {
    "l4t32": ("tegrastats_tx1-tx2-xavier-orin-nano_l4t32-35.txt", "RAM 331/3964MB"),
    "jp5": ("tegrastats_tx1-tx2-xavier-orin-nano_l4t32-35.txt", "01-03-2023"),
    "jp6": ("tegrastats_orin-nano_jp6.txt", "05-05-2025"),
    "jp7": ("tegrastats_agx-orin_jp7.2.txt", "07-25-2026"),
}


def _lines_from_script(root: Path, count: int, *args: str) -> tuple[list[str], int]:
    proc = subprocess.Popen(
        [str(root / "usr/bin/tegrastats"), "--interval", "30", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        while len(lines) < count:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
    return lines, rc


@pytest.mark.parametrize(
    ("name", "style"), [("nano", "l4t32"), ("agx-orin", "jp5"), ("orin-nano", "jp6"),
                        ("thor", "jp7")],
)  # fmt: skip
def test_tegrastats_lines_have_the_generation_format(tmp_path: Path, name: str, style: str) -> None:
    sample_file, prefix = REAL_LINES[style]
    real = next(ln for ln in _sample(sample_file).splitlines() if ln.startswith(prefix))
    assert LINE_SHAPES[style].match(real), "the shape regex must accept the real line"
    root = create(name, tmp_path / name)
    lines, rc = _lines_from_script(root, 2)
    assert rc == 0 and len(lines) == 2
    model = get_model(name)
    for line in lines:
        assert LINE_SHAPES[style].match(line), line
        rails = [m.group(1) for m in WATT_RE.finditer(line)]
        expected = list(model.tegrastats_rails) or [c for ch in model.chips for c in ch.channels]
        assert rails == expected
        temps = dict(TEMP_RE.findall(line))
        assert len(temps) == len({z.type for z in model.thermal})
    if name == "agx-orin":
        assert "CV0@-256C" in lines[0] and "NC 0mW/0mW" in lines[0]
    if name == "nano":
        assert "PMIC@100C" in lines[0]


def test_tegrastats_values_and_running_average(orin_nano: Path) -> None:
    model = get_model("orin-nano")
    stats = _Tegrastats(orin_nano, model)
    vin = next(rf for rf in rail_files(model) if rf.name == "VDD_IN")
    volts = int(_val(orin_nano, vin.voltage))
    shown = []
    for current in (1000, 2000, 4000):
        (orin_nano / vin.current).write_text(f"{current}\n")
        line = stats.line()
        match = re.search(r"VDD_IN (\d+)mW/(\d+)mW", line)
        assert match is not None
        cur, avg = int(match.group(1)), int(match.group(2))
        shown.append(cur)
        assert cur == volts * current // 1000
        assert avg == sum(shown) // len(shown)


def test_tegrastats_logfile_gets_flushed_lines(nano: Path, tmp_path: Path) -> None:
    log = tmp_path / "tegrastats.log"
    proc = subprocess.Popen([str(nano / "usr/bin/tegrastats"), "--interval", "20",
                             "--logfile", str(log)])  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if log.exists() and len(log.read_text().splitlines()) >= 2:
                break
            time.sleep(0.02)
        lines = log.read_text().splitlines()
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
    assert rc == 0
    assert len(lines) >= 2
    assert all(LINE_SHAPES["l4t32"].match(ln) for ln in lines)
