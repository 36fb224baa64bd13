"""Board identity from real file trees (nv_tegra_release sample, device-tree strings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.board.identity import (
    L4T_TO_JETPACK,
    jetpack_for_l4t,
    module_from_boardids,
    module_from_compatible,
    parse_nv_tegra_release,
    read_identity,
    split_nul_strings,
)

SAMPLES = Path(__file__).resolve().parent / "shared" / "reference" / "samples"


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def release_sample() -> list[str]:
    path = SAMPLES / "nv_tegra_release_r36.txt"
    if not path.is_file():
        pytest.skip(f"reference sample {path} is missing (shared/ must sit beside the repo)")
    return [ln for ln in path.read_text().splitlines() if not ln.startswith("# source")]


def test_every_release_line_of_the_sample(tmp_path: Path) -> None:
    lines = release_sample()
    expected = {
        "REVISION: 4.7": ("36.4.7", "6.2.1"),
        "REVISION: 5.0": ("36.5.0", "6.2.2"),
        "REVISION: 3.0": ("36.3.0", "6.0"),
        "REVISION: 4.0": ("36.4.0", "6.1"),
    }
    release_lines = [ln for ln in lines if ln.startswith("# R")]
    assert len(release_lines) == 4
    for line in release_lines:
        key = next(k for k in expected if k in line)
        write(tmp_path, "etc/nv_tegra_release", line + "\n")
        identity = read_identity(tmp_path)
        assert (identity.l4t, identity.jetpack) == expected[key], line
    # The first block is a whole file: the other lines do not disturb parsing.
    write(tmp_path, "etc/nv_tegra_release", "\n".join(lines[:4]) + "\n")
    identity = read_identity(tmp_path)
    assert (identity.l4t, identity.jetpack) == ("36.4.7", "6.2.1")


@pytest.mark.parametrize(
    ("line", "l4t", "jetpack"),
    [
        (
            "# R32 (release), REVISION: 7.1, GCID: 1, BOARD: t210ref, EABI: aarch64",
            "32.7.1",
            "4.6.1",
        ),
        ("# R32 (release), REVISION: 7.6, GCID: 1", "32.7.6", "4.6.6"),
        ("# R35 (release), REVISION: 1.0, GCID: 1", "35.1.0", "5.0.2"),
        ("# R35 (release), REVISION: 2.1, GCID: 1", "35.2.1", "5.1"),
        ("# R35 (release), REVISION: 6.0, GCID: 1", "35.6.0", "5.1.4"),
        ("# R36 (release), REVISION: 2.0, GCID: 1", "36.2.0", "6.0DP"),
        ("# R36 (release), REVISION: 4.3, GCID: 1", "36.4.3", "6.2"),
        ("# R36 (release), REVISION: 4.4, GCID: 1", "36.4.4", "6.2.1"),
        ("# R38 (release), REVISION: 2.0, GCID: 1", "38.2.0", "7.0"),
        ("# R38 (release), REVISION: 4, GCID: 1", "38.4.0", "7.1"),
        ("# R39 (release), REVISION: 2.0, GCID: 1", "39.2.0", "7.2"),
        # Known L4T formats with no known JetPack pair: None, never a guess.
        ("# R36 (release), REVISION: 4.2, GCID: 1", "36.4.2", None),
        ("# R32 (release), REVISION: 6.1, GCID: 1", "32.6.1", None),
        ("# R40 (release), REVISION: 1.0, GCID: 1", "40.1.0", None),
    ],
)
def test_l4t_and_jetpack_mapping(line: str, l4t: str, jetpack: str | None) -> None:
    assert parse_nv_tegra_release(line) == l4t
    assert jetpack_for_l4t(l4t) == jetpack


def test_jetpack_map_short_keys_and_garbage() -> None:
    assert jetpack_for_l4t("36.3") == "6.0"
    assert jetpack_for_l4t("35.1") == "5.0.2"
    assert jetpack_for_l4t("38.2") == "7.0"
    assert jetpack_for_l4t("36.4.7") == "6.2.1"
    assert jetpack_for_l4t(None) is None
    assert jetpack_for_l4t("R36") is None
    assert jetpack_for_l4t("36.4.7.1") is None
    assert parse_nv_tegra_release("garbage\n") is None
    assert all(len(k.split(".")) == 3 for k in L4T_TO_JETPACK)


def test_device_tree_strings_with_nul(tmp_path: Path) -> None:
    write(
        tmp_path,
        "proc/device-tree/model",
        b"NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super\0",
    )
    write(
        tmp_path,
        "proc/device-tree/compatible",
        b"nvidia,p3768-0000+p3767-0005\0nvidia,p3767-0005\0nvidia,tegra234\0",
    )
    write(tmp_path, "proc/sys/kernel/osrelease", "5.15.148-tegra\n")
    identity = read_identity(tmp_path)
    assert identity.model == "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super"
    assert identity.compatible == (
        "nvidia,p3768-0000+p3767-0005",
        "nvidia,p3767-0005",
        "nvidia,tegra234",
    )
    assert identity.soc == "tegra234"
    assert identity.module == "p3767-0005"
    assert identity.kernel == "5.15.148-tegra"
    assert identity.l4t is None and identity.jetpack is None
    assert identity.simulated is False and identity.sim_model is None


def test_firmware_devicetree_fallback_and_boardids(tmp_path: Path) -> None:
    base = "sys/firmware/devicetree/base"
    write(tmp_path, f"{base}/model", b"NVIDIA Jetson Nano Developer Kit\0")
    write(tmp_path, f"{base}/compatible", b"nvidia,jetson-nano\0nvidia,tegra210\0")
    write(tmp_path, f"{base}/nvidia,boardids", b"3448:0000:A02\0")
    identity = read_identity(tmp_path)
    assert identity.model == "NVIDIA Jetson Nano Developer Kit"
    assert identity.soc == "tegra210"
    assert identity.module == "p3448-0000"


def test_module_helpers() -> None:
    assert module_from_compatible(("nvidia,p3737-0000+p3701-0005", "nvidia,tegra234")) == (
        "p3701-0005"
    )
    assert module_from_compatible(("nvidia,tegra264",)) is None
    assert module_from_compatible(("acme,p1234-0000",)) is None
    assert module_from_boardids("2888:0001:400") == "p2888-0001"
    assert module_from_boardids("none") is None


def test_simulated_marker(tmp_path: Path) -> None:
    write(
        tmp_path,
        "etc/edgeenergy-virtual-board.json",
        json.dumps({"simulated": True, "model": "orin-nano"}),
    )
    identity = read_identity(tmp_path)
    assert identity.simulated is True
    assert identity.sim_model == "orin-nano"
    write(tmp_path, "etc/edgeenergy-virtual-board.json", "{not json")
    assert read_identity(tmp_path).simulated is False
    write(tmp_path, "etc/edgeenergy-virtual-board.json", json.dumps({"simulated": "yes"}))
    assert read_identity(tmp_path).simulated is False


def test_non_jetson_and_broken_roots_never_crash(tmp_path: Path) -> None:
    empty = read_identity(tmp_path)
    assert empty.model is None and empty.soc is None and empty.l4t is None
    assert empty.compatible == () and empty.kernel is None
    # Directories where files should be, and undecodable bytes.
    (tmp_path / "etc/nv_tegra_release").mkdir(parents=True)
    write(tmp_path, "proc/device-tree/model", b"\xff\xfeJetson\0")
    (tmp_path / "proc/device-tree/compatible").mkdir(parents=True)
    identity = read_identity(tmp_path)
    assert identity.l4t is None
    assert identity.model is not None and identity.model.endswith("Jetson")
    assert identity.compatible == ()


@given(
    st.lists(
        st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), min_size=1),
        max_size=5,
    )
)
def test_split_nul_strings_round_trip(parts: list[str]) -> None:
    raw = b"".join(p.encode() + b"\0" for p in parts)
    assert split_nul_strings(raw) == tuple(p.strip() for p in parts if p.strip())
