"""tegrastats line parser: every real sample line, and generated lines of each generation."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.meters.tegrastats import TegrastatsSample, parse_line

SAMPLES = Path(__file__).resolve().parent / "shared" / "reference" / "samples"


def sample_lines(name: str) -> list[str]:
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"reference sample {path} is missing (../shared beside the repo)")
    return [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def board_lines() -> dict[str, str]:
    """The multi-board sample file, keyed by its ``# Board`` header lines."""
    path = SAMPLES / "tegrastats_tx1-tx2-xavier-orin-nano_l4t32-35.txt"
    if not path.is_file():
        pytest.skip(f"reference sample {path} is missing (../shared beside the repo)")
    out: dict[str, str] = {}
    board = None
    for ln in path.read_text().splitlines():
        if ln.startswith("# ") and "(run as root)" in ln:
            board = ln[2:].split()[0]
        elif ln.strip() and not ln.startswith("#") and board is not None:
            out[board] = ln
    return out


def test_nano_unitless_rails_are_milliwatts() -> None:
    s = parse_line(board_lines()["Nano"])
    assert s.rails_w == {"POM_5V_IN": 0.933, "POM_5V_GPU": 0.0, "POM_5V_CPU": 0.084}
    assert s.rails_avg_w["POM_5V_CPU"] == 0.105
    assert all(r.unit == "" for r in s.rails)
    assert s.total_rail == "POM_5V_IN"
    assert s.total_method == "rail"
    assert s.total_w == 0.933
    assert s.timestamp is None
    assert s.temps_c["PMIC"] == 100.0
    assert s.ram_mb == (331, 3964)
    assert s.swap_mb == (0, 1982)
    assert len(s.cpu) == 4 and s.cpu[0].freq_mhz == 102 and s.cpu[0].load_pct == 7.0
    assert s.gr3d is not None and s.gr3d.freq_mhz == (76,) and s.gr3d.load_pct == 35.0
    assert s.emc is not None and s.emc.freq_mhz == (204,)


def test_tx2_vdd_in_total() -> None:
    s = parse_line(board_lines()["TX2"])
    assert list(s.rails_w) == ["VDD_IN", "VDD_CPU", "VDD_GPU", "VDD_SOC", "VDD_WIFI", "VDD_DDR"]
    assert s.rails_w["VDD_IN"] == 1.383
    assert s.rails_avg_w["VDD_WIFI"] == 0.335
    assert s.total_rail == "VDD_IN"
    assert s.temps_c["thermal"] == 29.2


def test_xavier_cpu_gpu_rails_are_not_confused_with_load_and_temps() -> None:
    s = parse_line(board_lines()["Xavier"])
    assert s.rails_w == {
        "GPU": 1.155,
        "CPU": 0.385,
        "SOC": 2.502,
        "CV": 0.0,
        "VDDRQ": 0.192,
        "SYS5V": 2.692,
    }
    assert "RAM" not in s.rails_w and "SWAP" not in s.rails_w
    assert s.temps_c["GPU"] == 28.0 and s.temps_c["CPU"] == 28.0
    assert len(s.cpu) == 8 and all(c.freq_mhz == 2265 for c in s.cpu)
    assert s.ram_mb == (408, 15823)
    assert s.total_rail is None
    assert s.total_method == "sum"
    assert s.total_w == pytest.approx(1.155 + 0.385 + 2.502 + 0.0 + 0.192 + 2.692)


def test_tx1_line_without_rails_gives_empty_rails() -> None:
    s = parse_line(board_lines()["TX1"])
    assert s.rails == () and s.rails_w == {} and not s.has_power
    assert s.total_w == 0.0
    assert s.temps_c["Tdiode"] == 28.5
    assert s.engines_mhz["APE"] == 25


def test_agx_orin_l4t35_nc_rails_flagged_offline_temps_none() -> None:
    s = parse_line(board_lines()["Orin"])
    assert s.timestamp == datetime(2023, 1, 3, 16, 7, 54)
    names = [r.name for r in s.rails]
    assert names == ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "NC", "VDDQ_VDD2_1V8AO", "NC"]
    assert [r.connected for r in s.rails] == [True, True, True, False, True, False]
    assert "NC" not in s.rails_w
    assert s.rails_w["VIN_SYS_5V0"] == 3.522
    assert all(r.unit == "mW" for r in s.rails)
    # VIN_SYS_5V0 is the 5 V system rail, not the module input: the total is the sum
    assert s.total_rail is None
    assert s.total_w == pytest.approx(2.39 + 0.796 + 3.522 + 0.301)
    for offline in ("CV0", "CV1", "GPU", "CV2"):
        assert s.temps_c[offline] is None
    assert s.temps_c["tj"] == 41.656
    assert s.loads["GR3D2_FREQ"].freq_mhz == (0,)
    assert s.engines_mhz["VIC_FREQ"] == 115
    assert s.engines_mhz["NVJPG1"] == 729


def test_agx_orin_jp7_three_values() -> None:
    (line,) = sample_lines("tegrastats_agx-orin_jp7.2.txt")
    s = parse_line(line)
    assert s.timestamp == datetime(2026, 7, 25, 9, 8, 28)
    assert s.rails_w == {"VDD_GPU_SOC": 5.139, "VDD_CPU_CV": 3.268, "VIN_SYS_5V0": 5.5}
    assert [r.third_mw for r in s.rails] == [5139.0, 3268.0, 5500.0]
    assert s.total_method == "sum"
    assert s.temps_c == {"cpu": 52.968, "soc2": 48.406, "soc0": 49.531, "gpu": 47.625}
    assert s.gr3d is not None and s.gr3d.freq_mhz == (1300, 1300) and s.gr3d.load_pct == 12.0
    assert s.engines_mhz["NVENC0"] is None and s.engines_mhz["PVA0_FREQ"] is None
    assert s.engines_mhz["APE"] == 174
    assert len(s.cpu) == 12
    assert s.ram_mb == (20642, 62817)


def test_orin_nano_jp6_lines() -> None:
    lines = sample_lines("tegrastats_orin-nano_jp6.txt")
    parsed = [parse_line(ln) for ln in lines]
    for s in parsed:
        assert list(s.rails_w) == ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]
        assert s.total_rail == "VDD_IN"
        assert s.timestamp is not None
        assert s.rails[0].third_mw is None
    assert parsed[0].rails_w["VDD_IN"] == 5.263
    assert parsed[0].gr3d is not None and parsed[0].gr3d.freq_mhz == ()
    assert parsed[1].rails_w["VDD_IN"] == 5.251 and parsed[1].rails_avg_w["VDD_IN"] == 8.535
    assert parsed[1].gr3d is not None and parsed[1].gr3d.freq_mhz == (305,)
    assert parsed[2].total_w == 16.321
    offline_core = parsed[3].cpu[1]
    assert not offline_core.online and offline_core.load_pct is None
    assert parsed[3].temps_c["cpu"] == 51.0


def test_orin_nano_super_lines() -> None:
    idle, loaded = (parse_line(ln) for ln in sample_lines("tegrastats_orin-nano-super_r36.txt"))
    assert idle.rails_w["VDD_IN"] == 4.654
    assert loaded.rails_avg_w["VDD_SOC"] == 1.473
    assert loaded.gr3d is not None and loaded.gr3d.load_pct == 62.0
    assert loaded.gr3d.freq_mhz == (612,)
    assert (loaded.timestamp - idle.timestamp).total_seconds() == 13  # type: ignore[operator]


@pytest.mark.parametrize(
    ("field", "load", "freqs"),
    [
        ("GR3D_FREQ @[1000,1000,1000]", None, (1000, 1000, 1000)),
        ("GR3D_FREQ 0%", 0.0, ()),
        ("GR3D_FREQ 0%@[305]", 0.0, (305,)),
        ("GR3D_FREQ 62%@612", 62.0, (612,)),
    ],
)
def test_gr3d_forms(field: str, load: float | None, freqs: tuple[int, ...]) -> None:
    s = parse_line(f"RAM 4722/7844MB (lfb 1x512kB) EMC_FREQ 2%@1866 {field} APE 150")
    assert s.gr3d is not None
    assert s.gr3d.load_pct == load
    assert s.gr3d.freq_mhz == freqs
    assert s.rails_w == {}


def test_unit_forms_with_spaces_and_watts() -> None:
    s = parse_line("VDD_GPU_SOC 5139 mW/5100 mW/5200 mW VDD_IN 1.5W/1.25W")
    assert s.rails_w == {"VDD_GPU_SOC": 5.139, "VDD_IN": 1.5}
    assert s.rails_avg_w == {"VDD_GPU_SOC": 5.1, "VDD_IN": 1.25}
    assert s.rails[0].third_mw == 5200.0 and s.rails[1].unit == "W"


def test_garbage_and_unknown_tokens_never_crash() -> None:
    s = parse_line("FOO [bar WOW 12%@@ VDD_IN 100mW/200mW ZZZ 1/2/3/4 x@yC")
    assert s.rails_w == {"VDD_IN": 0.1}
    assert parse_line("").rails == ()
    assert parse_line("13-45-2026 99:99:99 VDD_IN 1/1").timestamp is None


@given(st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_parse_line_never_raises(text: str) -> None:
    assert isinstance(parse_line(text), TegrastatsSample)


# -- round trip: generate lines of each generation's format and parse them back --------

rail_names = st.from_regex(r"[A-Z][A-Z0-9_]{1,14}", fullmatch=True).filter(lambda n: n != "NC")
milliwatts = st.integers(min_value=0, max_value=120_000)
temp_names = st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,8}", fullmatch=True)
temps = st.one_of(
    st.just(-256.0), st.integers(min_value=-20_000, max_value=120_000).map(lambda m: m / 1000)
)
stamps = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)).map(
        lambda d: d.replace(microsecond=0)
    ),
)


@st.composite
def generated_lines(draw: st.DrawFn) -> tuple[str, str, dict[str, tuple[int, int, int]], dict]:
    generation = draw(st.sampled_from(["l4t32", "orin", "jp7"]))
    names = draw(st.lists(rail_names, min_size=1, max_size=7, unique=True))
    values = {n: (draw(milliwatts), draw(milliwatts), draw(milliwatts)) for n in names}
    tnames = draw(st.lists(temp_names, max_size=6, unique=True))
    tvals = {n: draw(temps) for n in tnames}
    stamp = draw(stamps) if generation != "l4t32" else None
    nc_count = draw(st.integers(min_value=0, max_value=2)) if generation == "orin" else 0

    def rail(name: str, cur: int, avg: int, third: int) -> str:
        if generation == "l4t32":
            return f"{name} {cur}/{avg}"
        if generation == "orin":
            return f"{name} {cur}mW/{avg}mW"
        return f"{name} {cur}mW/{avg}mW/{third}mW"

    parts = []
    if stamp is not None:
        parts.append(stamp.strftime("%m-%d-%Y %H:%M:%S"))
    parts += [
        "RAM 2257/30536MB (lfb 5392x4MB) SWAP 0/15268MB (cached 0MB)",
        "CPU [7%@729,off,3%@729] EMC_FREQ 0%@204 GR3D_FREQ 35%@[612,612] APE 233 NVENC off",
    ]
    parts += [f"{n}@{t:g}C" for n, t in tvals.items()]
    parts += [rail(n, *values[n]) for n in names]
    parts += ["NC 0mW/0mW"] * nc_count
    expected = {"stamp": stamp, "temps": tvals, "nc": nc_count}
    return generation, " ".join(parts), values, expected


@given(generated_lines())
@settings(max_examples=300, deadline=None)
def test_generated_lines_round_trip(
    case: tuple[str, str, dict[str, tuple[int, int, int]], dict],
) -> None:
    generation, line, values, expected = case
    s = parse_line(line)
    assert s.rails_w == {n: v[0] / 1000 for n, v in values.items()}
    assert s.rails_avg_w == {n: v[1] / 1000 for n, v in values.items()}
    connected = [r for r in s.rails if r.connected]
    if generation == "jp7":
        assert [r.third_mw for r in connected] == [float(v[2]) for v in values.values()]
    else:
        assert all(r.third_mw is None for r in connected)
    assert sum(not r.connected for r in s.rails) == expected["nc"]
    assert s.timestamp == expected["stamp"]
    assert s.temps_c == {n: (None if t == -256.0 else t) for n, t in expected["temps"].items()}
    assert [c.online for c in s.cpu] == [True, False, True]
    assert s.ram_mb == (2257, 30536)
