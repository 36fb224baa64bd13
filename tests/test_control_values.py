"""Parsing and resolving pinned values: frequencies, cores, governors, power modes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.board.nvpmodel import UnknownPowerMode, parse_conf
from pytest_edgeenergy.control.errors import NotOffered, ValueSpecError
from pytest_edgeenergy.control.values import (
    FreqSpec,
    UnknownMode,
    format_freq,
    format_mhz,
    format_mhz_list,
    nearest,
    parse_cores,
    parse_freq,
    parse_freq_list,
    resolve_cores,
    resolve_freqs,
    resolve_governor,
    resolve_governors,
    resolve_power_mode,
)

ORIN_NX_GPU_HZ = (306000000, 408000000, 510000000, 612000000, 714000000, 816000000, 918000000)


@pytest.mark.parametrize(
    ("text", "hz"),
    [
        ("612MHz", 612_000_000),
        ("612 MHz", 612_000_000),
        ("612mhz", 612_000_000),
        ("1.2GHz", 1_200_000_000),
        ("1.4976GHz", 1_497_600_000),
        ("115200kHz", 115_200_000),
        ("115.2MHz", 115_200_000),
        ("306000000Hz", 306_000_000),
        ("306000000", 306_000_000),
        (" 76.8MHz ", 76_800_000),
    ],
)
def test_frequency_units(text: str, hz: int) -> None:
    assert parse_freq(text).hz == hz


def test_bare_number_is_hz_and_flagged() -> None:
    spec = parse_freq("306000000")
    assert spec.bare and spec.hz == 306_000_000
    assert not parse_freq("306MHz").bare


@pytest.mark.parametrize("word", ["min", "MAX", "All", "dvfs"])
def test_words(word: str) -> None:
    spec = parse_freq(word)
    assert spec.word == word.lower() and spec.hz is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("fast", "not a frequency"),
        ("612 MegaHz", "not a frequency"),
        ("-612MHz", "not a frequency"),
        ("0MHz", "greater than 0"),
        ("0.5Hz", "whole number of Hz"),
        ("1.23456789MHz", "whole number of Hz"),
    ],
)
def test_bad_frequency_message_names_source(text: str, needle: str) -> None:
    with pytest.raises(ValueSpecError, match=needle) as info:
        parse_freq(text, source="--gpu-freq")
    assert str(info.value).startswith("--gpu-freq ")


def test_list_and_empty_items() -> None:
    specs = parse_freq_list("min,612MHz,max", source="--gpu-freq")
    assert [s.word or s.hz for s in specs] == ["min", 612_000_000, "max"]
    with pytest.raises(ValueSpecError, match="empty item"):
        parse_freq_list("612MHz,,max", source="--gpu-freq")
    with pytest.raises(ValueSpecError, match="empty item"):
        parse_freq_list("", source="--gpu-freq")


def test_not_offered_message_lists_offered_and_nearest() -> None:
    with pytest.raises(NotOffered) as info:
        resolve_freqs(parse_freq_list("700MHz"), ORIN_NX_GPU_HZ, source="--gpu-freq")
    assert str(info.value) == (
        "--gpu-freq 700MHz: not offered; offered: 306, 408, 510, 612, 714, 816, 918 MHz; "
        "nearest: 714 MHz"
    )


def test_bare_small_number_gets_a_hint() -> None:
    with pytest.raises(NotOffered, match="did you mean 612MHz"):
        resolve_freqs(parse_freq_list("612"), ORIN_NX_GPU_HZ, source="EDGEENERGY_GPU_FREQ")


def test_words_resolve() -> None:
    resolved = resolve_freqs(
        parse_freq_list("max,min,dvfs,612MHz,max"), ORIN_NX_GPU_HZ, source="--gpu-freq"
    )
    assert resolved == (918000000, 306000000, None, 612000000)
    assert resolve_freqs(parse_freq_list("all"), ORIN_NX_GPU_HZ, source="x") == ORIN_NX_GPU_HZ


def test_empty_table_refuses_pins_but_allows_dvfs() -> None:
    assert resolve_freqs(parse_freq_list("dvfs"), (), source="--gpu-freq") == (None,)
    with pytest.raises(NotOffered, match="no GPU frequencies"):
        resolve_freqs(parse_freq_list("max"), (), source="--gpu-freq", clock="GPU")


def test_message_formats() -> None:
    assert format_mhz(115_200_000) == "115.2 MHz"
    assert format_mhz(1_109_250_000) == "1109.25 MHz"
    assert format_mhz_list([76_800_000, 921_600_000]) == "76.8, 921.6 MHz"
    assert format_freq(612_000_000) == "612MHz"
    assert format_freq(1_497_600_000) == "1.4976GHz"
    assert format_freq(2_000_000_000) == "2GHz"
    assert format_freq(800_000) == "800kHz"
    assert format_freq(5) == "5Hz"


@given(st.integers(min_value=1, max_value=10**13))
def test_format_parse_round_trip(hz: int) -> None:
    assert parse_freq(format_freq(hz)).hz == hz


@given(
    st.integers(min_value=1, max_value=10**7),
    st.sampled_from([("Hz", 1), ("kHz", 10**3), ("MHz", 10**6), ("GHz", 10**9)]),
    st.sampled_from(["", " "]),
)
def test_integer_with_any_unit(value: int, unit: tuple[str, int], space: str) -> None:
    name, scale = unit
    text = f"{value}{space}{name.upper() if value % 2 else name}"
    assert parse_freq(text).hz == value * scale


@given(st.text(max_size=20))
def test_parser_never_fails_uncleanly(text: str) -> None:
    try:
        spec = parse_freq(text, source="--cpu-freq")
    except ValueSpecError as exc:
        assert str(exc).startswith("--cpu-freq ")
    else:
        assert (spec.hz is not None and spec.hz > 0) or spec.word is not None


@given(
    st.lists(st.integers(min_value=1, max_value=4 * 10**9), min_size=1, max_size=30, unique=True),
    st.integers(min_value=1, max_value=4 * 10**9),
)
def test_resolution_accepts_exactly_the_offered(offered: list[int], hz: int) -> None:
    spec = FreqSpec(text=f"{hz}Hz", hz=hz)
    if hz in offered:
        assert resolve_freqs([spec], offered, source="s") == (hz,)
    else:
        with pytest.raises(NotOffered) as info:
            resolve_freqs([spec], offered, source="s")
        assert format_mhz(nearest(offered, hz)) in str(info.value)
        assert abs(nearest(offered, hz) - hz) == min(abs(f - hz) for f in offered)


# ---------------------------------------------------------------- cores


def test_cores_parse_and_resolve() -> None:
    items = parse_cores("2,4,all")
    assert items == (2, 4, "all")
    assert resolve_cores(items, list(range(6))) == (2, 4, 6)
    assert resolve_cores(parse_cores("all,6"), list(range(6))) == (6,)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("-1", "cannot be negative"),
        ("0", "cpu0 is never taken offline"),
        ("two", "not a core count"),
        ("2,,4", "empty item"),
    ],
)
def test_bad_cores(text: str, needle: str) -> None:
    with pytest.raises(ValueSpecError, match=needle) as info:
        parse_cores(text, source="--cpu-cores")
    assert str(info.value).startswith("--cpu-cores ")


def test_more_cores_than_exist() -> None:
    with pytest.raises(ValueSpecError, match=r"more cores than the board has \(4 present"):
        resolve_cores(parse_cores("8"), [0, 1, 2, 3], source="--cpu-cores")


@given(st.integers(min_value=-1000, max_value=1000), st.integers(min_value=1, max_value=32))
def test_core_counts_property(count: int, present: int) -> None:
    try:
        resolved = resolve_cores(parse_cores(str(count)), list(range(present)))
    except ValueSpecError:
        assert count < 1 or count > present
    else:
        assert resolved == (count,) and 1 <= count <= present


# ---------------------------------------------------------------- governors and modes


def test_governors() -> None:
    available = ("interactive", "performance", "schedutil")
    assert resolve_governor("Performance", available) == "performance"
    with pytest.raises(ValueSpecError, match="available: interactive, performance, schedutil"):
        resolve_governor("ondemand", available, source="--governor")
    assert resolve_governors("dvfs,performance", available) == (None, "performance")


CONF = """
< PARAM TYPE=CLOCK NAME=GPU >
MAX_FREQ /sys/gpu/max_freq
< POWER_MODEL ID=0 NAME=MAXN >
GPU MAX_FREQ -1
< POWER_MODEL ID=1 NAME=5W >
GPU MAX_FREQ 640000000
< PM_CONFIG DEFAULT=0 >
"""


def test_power_mode_by_name_any_case_or_id() -> None:
    conf = parse_conf(CONF)
    assert resolve_power_mode("5w", conf).id == 1
    assert resolve_power_mode("0", conf).name == "MAXN"


@pytest.mark.parametrize("text", ["MODE_15W", "7", "-1"])
def test_unknown_power_mode_lists_allowed(text: str) -> None:
    with pytest.raises(UnknownMode) as info:
        resolve_power_mode(text, parse_conf(CONF), source="--power-mode")
    message = str(info.value)
    assert message.startswith(f"--power-mode {text}:")
    assert "0 MAXN, 1 5W" in message
    assert isinstance(info.value, UnknownPowerMode) and isinstance(info.value, ValueError)


def test_no_conf_no_modes() -> None:
    with pytest.raises(ValueSpecError, match=r"no usable nvpmodel\.conf"):
        resolve_power_mode("MAXN", None)
