"""The nvpmodel and jetson_clocks knobs: reference samples, error messages, and the tools
acting on virtual boards."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from pytest_edgeenergy.board.nvpmodel import (
    NvpmodelConfError,
    parse_conf,
    parse_jetson_clocks_show,
    parse_query,
)
from pytest_edgeenergy.control.errors import NvpmodelError, RebootRequired
from pytest_edgeenergy.control.jetson_clocks import JetsonClocksKnob
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.nvpmodel import NvpmodelKnob, nvpmodel_error
from pytest_edgeenergy.control.operating_point import resolve
from pytest_edgeenergy.control.state import STATE_IN_ROOT, Session
from pytest_edgeenergy.control.steps import ToolResult
from pytest_edgeenergy.control.values import UnknownMode

SAMPLES = Path(__file__).resolve().parent / "shared" / "reference" / "samples"
needs_samples = pytest.mark.skipif(
    not SAMPLES.is_dir(), reason=f"reference samples not found at {SAMPLES}"
)


def sample(name: str) -> str:
    lines = (SAMPLES / name).read_text().splitlines()
    return "\n".join(ln for ln in lines if not ln.startswith("# source:")) + "\n"


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    skip = {root / Path(STATE_IN_ROOT).parent, root / "var/lib/edgeenergy-sim"}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) in skip:
            dirnames[:] = []
            continue
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if not path.is_symlink():
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# ---------------------------------------------------------------- samples


@needs_samples
@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("nvpmodel-conf_*")))
def test_every_conf_sample_parses(name: str) -> None:
    conf = parse_conf(sample(name), source=name)
    assert conf.params or conf.modes


@needs_samples
def test_conf_sample_param_paths_become_knob_files(tmp_path: Path) -> None:
    text = sample("nvpmodel-conf_agx-orin_l4t35_param-section.txt")
    conf = parse_conf(text)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/nvpmodel.conf").write_text(text)
    for param in conf.params.values():
        for path in param.args.values():
            target = tmp_path / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("0\n")
    knobs = knobs_at(tmp_path)
    rels = {knobs.rel(p) for p in knobs.nvpmodel_files}
    assert "sys/devices/system/cpu/cpu11/online" in rels
    assert "sys/devices/gpu.0/tpc_pg_mask" in rels
    assert "sys/kernel/nvpmodel_emc_cap/emc_iso_cap" in rels
    assert "sys/devices/17000000.ga10b/devfreq_dev/max_freq" in rels  # a *_KNEXT path
    assert not any(r.endswith("available_frequencies") for r in rels)  # FREQ_TABLE is read-only
    knobs.check_writable(tmp_path / "sys/devices/gpu.0/power/control")


@needs_samples
def test_query_samples() -> None:
    nx = parse_query(sample("nvpmodel-q-verbose_orin-nx-16gb_r36.5.txt"))
    assert (nx.id, nx.name) == (4, "40W")
    ons = parse_query(sample("nvpmodel-q-verbose_orin-nano-super_r36_partial.txt"))
    assert (ons.id, ons.name) == (2, "MAXN_SUPER")
    text = sample("nvpmodel-q_nano-thor-orin-nano.txt")
    nano = text.split("jetbot@jetbot:~$ sudo nvpmodel -q")[0].split("nvpmodel -q\n", 1)[1]
    result = parse_query(nano)
    assert (result.id, result.name) == (1, "5W") and len(result.errors) == 2


@needs_samples
def test_real_failure_sample_names_param_and_path() -> None:
    raw = (SAMPLES / "nvpmodel-q_nano-thor-orin-nano.txt").read_text()
    block = raw.split("switching back from 7W mode to 10W)\n", 1)[1].split("\n\n", 1)[0]
    assert block.startswith("NVPM ERROR: Error writing 2")
    error = nvpmodel_error(("nvpmodel", "-m", "1"), ToolResult(("nvpmodel",), 255, block, ""))
    assert error is not None
    assert error.param == "FBP_POWER_GATING"
    assert error.path == "/sys/devices/gpu.0/fbp_pg_mask"
    assert "PARAM FBP_POWER_GATING" in str(error) and "/sys/devices/gpu.0/fbp_pg_mask" in str(error)
    clean = ToolResult(("nvpmodel",), 0, "NVPM WARN: fan mode is not set!\n", "")
    assert nvpmodel_error(("nvpmodel", "-m", "1"), clean) is None


@needs_samples
def test_jetson_clocks_sample() -> None:
    shown = parse_jetson_clocks_show(sample("jetson_clocks-show_orin-nano-super_r36.txt"))
    assert shown.power_mode == "MAXN_SUPER" and shown.gpu is not None
    assert shown.gpu.max_freq_hz == 1020000000


# ---------------------------------------------------------------- on virtual boards

tree = pytest.importorskip("pytest_edgeenergy.sim.tree", reason="virtual boards not available")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("pristine")
    return {m: tree.create(m, base / m) for m in ("agx-orin", "orin-nano")}


@pytest.fixture
def agx_orin(pristine: dict[str, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine["agx-orin"], tmp_path / "agx-orin", symlinks=True))


def test_power_mode_by_name_or_id_and_restore(agx_orin: Path) -> None:
    before = tree_hash(agx_orin)
    knob = NvpmodelKnob(knobs_at(agx_orin))
    assert knob.available() and knob.current() is not None
    assert knob.show()["current"]["name"] == "MODE_30W"
    with Session(knobs_at(agx_orin)) as session:
        point = resolve({"power_mode": "mode_30w"}, knobs_at(agx_orin))
        assert point.power_mode == "MODE_30W"
        assert session.apply(point).ok
        assert resolve({"power_mode": "2"}, knobs_at(agx_orin)) == point
    assert tree_hash(agx_orin) == before


@pytest.mark.parametrize(
    ("mode", "exc", "needle"),
    [
        ("MODE_99W", UnknownMode, "allowed (ID NAME): 0 MAXN, 1 MODE_15W, 2 MODE_30W, 3 MODE_50W"),
        ("9", UnknownMode, "--power-mode 9:"),
        ("MAXN", RebootRequired, "TPC_POWER_GATING TPC_PG_MASK 240 -> 0"),
    ],
)
def test_bad_modes_write_nothing(
    agx_orin: Path, mode: str, exc: type[Exception], needle: str
) -> None:
    before = tree_hash(agx_orin)
    with pytest.raises(exc) as info, Session(knobs_at(agx_orin)) as session:
        session.apply(resolve({"power_mode": mode}, knobs_at(agx_orin)))
    assert needle in str(info.value)
    assert tree_hash(agx_orin) == before


def test_forced_reboot_mode_applies_and_restores(agx_orin: Path) -> None:
    before = tree_hash(agx_orin)
    with Session(knobs_at(agx_orin), force=True) as session:
        point = resolve({"power_mode": "MAXN"}, knobs_at(agx_orin), force=True)
        assert session.apply(point).ok
        assert (agx_orin / "sys/devices/gpu.0/tpc_pg_mask").read_text().strip() == "0"
    assert tree_hash(agx_orin) == before


def test_broken_conf_is_a_clear_error(agx_orin: Path) -> None:
    conf = agx_orin / "etc/nvpmodel.conf"
    conf.write_text(conf.read_text().replace("< POWER_MODEL ID=1 NAME=MODE_15W >", "< POWER_MODEL"))
    before = tree_hash(agx_orin)
    with pytest.raises(NvpmodelConfError, match=r"nvpmodel.conf:\d+: unterminated"):
        resolve({"power_mode": "MAXN"}, knobs_at(agx_orin))
    assert tree_hash(agx_orin) == before


def test_nvpm_error_from_the_tool(agx_orin: Path) -> None:
    knobs = knobs_at(agx_orin)
    # Make one PARAM target unwritable the hard way (a directory: root ignores modes).
    target = agx_orin / "sys/devices/system/cpu/cpufreq/policy8/scaling_max_freq"
    target.unlink()
    target.mkdir()
    knob = NvpmodelKnob(knobs)
    with pytest.raises(NvpmodelError) as info:
        knob.apply(knob.plan("MODE_30W"))
    assert info.value.param is not None and info.value.path is not None
    assert f"PARAM {info.value.param}" in str(info.value)


def test_jetson_clocks_store_restore_round_trip(pristine: dict[str, Path], tmp_path: Path) -> None:
    board = Path(shutil.copytree(pristine["orin-nano"], tmp_path / "on", symlinks=True))
    knob = JetsonClocksKnob(knobs_at(board))
    assert knob.available()
    assert knob.read_show().gpu is not None
    store = tmp_path / "clocks.conf"
    before = tree_hash(board)
    knob.apply(knob.plan("store", store))
    knob.apply(knob.plan("pin"))
    assert knob.verify() == []
    assert tree_hash(board) != before
    knob.apply(knob.plan("restore", store))
    assert tree_hash(board) == before
