"""InaSource over real files in tmp_path trees laid out like Jetson sysfs."""

from __future__ import annotations

import errno
import math
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.board.types import Rail, RailMap
from pytest_edgeenergy.meters.ina import InaSource, naive_read_w, parse_int
from pytest_edgeenergy.meters.source import (
    FailedFile,
    PartialReading,
    PowerSource,
    PreadSource,
    ReadError,
    SourceUnavailable,
)

HWMON = "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon1"
IIO = "sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0"
INA238 = "sys/bus/i2c/drivers/ina238/2-0044/hwmon/hwmon6"


def write_in_place(path: Path, text: str) -> None:
    """Overwrite a file's bytes without replacing its inode (as sysfs values change)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        data = text.encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def hwmon_rail(root: Path, name: str, channel: int, mv: str, ma: str) -> Rail:
    d = root / HWMON
    d.mkdir(parents=True, exist_ok=True)
    (d / f"in{channel}_label").write_text(name + "\n")
    (d / f"in{channel}_input").write_text(mv)
    (d / f"curr{channel}_input").write_text(ma)
    return Rail(
        name,
        "ina3221",
        "hwmon",
        "1-0040",
        channel,
        d,
        voltage_file=d / f"in{channel}_input",
        current_file=d / f"curr{channel}_input",
    )


def iio_rail(root: Path, name: str, channel: int, mw: str) -> Rail:
    d = root / IIO
    d.mkdir(parents=True, exist_ok=True)
    (d / f"rail_name_{channel}").write_text(name + "\n")
    (d / f"in_power{channel}_input").write_text(mw)
    return Rail(
        name,
        "ina3221",
        "iio",
        "6-0040",
        channel,
        d,
        power_file=d / f"in_power{channel}_input",
        power_scale_w=1e-3,
    )


def ina238_rail(root: Path, uw: str) -> Rail:
    d = root / INA238
    d.mkdir(parents=True, exist_ok=True)
    (d / "power1_input").write_text(uw)
    return Rail(
        "VIN",
        "ina238",
        "hwmon",
        "2-0044",
        1,
        d,
        power_file=d / "power1_input",
        power_scale_w=1e-6,
        is_total=True,
    )


def one_rail(tmp_path: Path, mv: str = "5000\n", ma: str = "2000\n") -> RailMap:
    return RailMap((hwmon_rail(tmp_path, "VDD_IN", 1, mv, ma),), total_rail="VDD_IN")


def test_reads_every_driver_style_in_watts(tmp_path: Path) -> None:
    rails = RailMap(
        (
            ina238_rail(tmp_path, "5500000\n"),
            hwmon_rail(tmp_path, "VDD_CPU_GPU_CV", 2, "5000\n", "2000\n"),
            iio_rail(tmp_path, "POM_5V_GPU", 1, "1234\n"),
        ),
        total_rail="VIN",
        update_interval_s=0.002,
    )
    with InaSource(rails, simulated=True) as src:
        assert isinstance(src, PowerSource)
        assert src.name == "ina"
        assert src.quantity == "power_w"
        assert src.channels == ("VIN", "VDD_CPU_GPU_CV", "POM_5V_GPU")
        assert src.total_channel == "VIN"
        assert src.total_method == "rail"
        assert src.min_interval_s == 0.002
        assert src.simulated is True
        assert src.read() == pytest.approx([5.5, 10.0, 1.234])


def test_sum_method_when_there_is_no_total_rail(tmp_path: Path) -> None:
    rails = RailMap((hwmon_rail(tmp_path, "VDD_GPU_SOC", 1, "5000\n", "100\n"),), None)
    with InaSource(rails) as src:
        assert src.total_channel is None
        assert src.total_method == "sum"
        assert src.min_interval_s is None
        assert src.simulated is False


def test_padded_values_and_unit_suffixes_are_read(tmp_path: Path) -> None:
    rails = one_rail(tmp_path, mv="     5000\n", ma="32760 ma\n")
    with InaSource(rails) as src:
        assert src.read() == pytest.approx([5000 * 32760 * 1e-6])


def test_values_written_in_place_are_seen_on_the_next_read(tmp_path: Path) -> None:
    rails = one_rail(tmp_path)
    with InaSource(rails) as src:
        assert src.read() == pytest.approx([10.0])
        write_in_place(rails.rails[0].current_file or Path(), "500\n")
        assert src.read() == pytest.approx([2.5])
        write_in_place(rails.rails[0].current_file or Path(), "123456\n")
        assert src.read() == pytest.approx([5000 * 123456 * 1e-6])


def test_naive_reader_gives_the_same_watts(tmp_path: Path) -> None:
    rails = RailMap(
        (
            hwmon_rail(tmp_path, "VDD_IN", 1, "5080\n", "1500\n"),
            iio_rail(tmp_path, "POM_5V_CPU", 2, "  777\n"),
            ina238_rail(tmp_path, "12000000\n"),
        ),
        total_rail="VIN",
    )
    with InaSource(rails) as src:
        assert naive_read_w(rails) == pytest.approx(src.read())
    assert naive_read_w(rails.rails) == pytest.approx([7.62, 0.777, 12.0])


@pytest.mark.parametrize(
    ("mv", "ma", "reason"),
    [
        ("", "100\n", "empty"),
        ("\n", "100\n", "empty"),
        ("5000\n", "   \n", "empty"),
        ("abc\n", "100\n", "garbage"),
        ("5000\n", "12.5\n", "garbage"),
        ("-5000\n", "-100\n", "negative"),
        ("5000\n", "-2000\n", "negative"),
        ("5000\n", "99999999\n", "out_of_range"),
    ],
)
def test_bad_text_raises_read_error_with_reason(
    tmp_path: Path, mv: str, ma: str, reason: str
) -> None:
    with InaSource(one_rail(tmp_path, mv=mv, ma=ma)) as src, pytest.raises(ReadError) as info:
        src.read()
    assert info.value.channel == "VDD_IN"
    assert info.value.reason == reason


def test_small_negative_current_is_noise_not_an_error(tmp_path: Path) -> None:
    with InaSource(one_rail(tmp_path, mv="5000\n", ma="-8\n")) as src:
        assert src.read() == pytest.approx([-0.04])


@pytest.mark.parametrize("code", [errno.EAGAIN, errno.EIO, errno.ENODEV])
def test_os_errors_from_the_read_are_read_errors_named_by_errno(tmp_path: Path, code: int) -> None:
    failing = {"on": True}

    def pread(fd: int, n: int, offset: int) -> bytes:
        if failing["on"]:
            raise OSError(code, os.strerror(code))
        return os.pread(fd, n, offset)

    with InaSource(one_rail(tmp_path), pread=pread) as src:
        with pytest.raises(ReadError) as info:
            src.read()
        assert info.value.reason == errno.errorcode[code]
        failing["on"] = False
        assert src.read() == pytest.approx([10.0])


@pytest.mark.parametrize("failing_rail", ["VIN", "VDD_CPU_GPU_CV", "POM_5V_GPU"])
def test_an_os_error_names_the_rail_whose_file_failed(tmp_path: Path, failing_rail: str) -> None:
    rails = RailMap(
        (
            ina238_rail(tmp_path, "5500000\n"),
            hwmon_rail(tmp_path, "VDD_CPU_GPU_CV", 2, "5000\n", "2000\n"),
            iio_rail(tmp_path, "POM_5V_GPU", 1, "1234\n"),
        ),
        total_rail="VIN",
    )
    rail = next(r for r in rails.rails if r.name == failing_rail)
    bad_file = rail.files[-1]  # for the hwmon rail: its current file, the second fd

    def pread(fd: int, n: int, offset: int) -> bytes:
        if os.path.samefile(f"/proc/self/fd/{fd}", bad_file):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return os.pread(fd, n, offset)

    with InaSource(rails, pread=pread) as src, pytest.raises(PartialReading) as info:
        src.read()
    assert (info.value.channel, info.value.reason) == (failing_rail, "EIO")
    # Only that rail failed: the other files were read one by one.
    assert info.value.failures == [(failing_rail, "EIO")]
    expected = {"VIN": 5.5, "VDD_CPU_GPU_CV": 10.0, "POM_5V_GPU": 1.234}
    for name, value in zip(src.channels, info.value.values, strict=True):
        if name == failing_rail:
            assert math.isnan(value)
        else:
            assert value == pytest.approx(expected[name]), name


@pytest.mark.parametrize(
    ("bad_rail", "text", "reason"),
    [
        ("VIN", "garbage\n", "garbage"),
        ("VDD_CPU_GPU_CV", "garbage\n", "garbage"),
        ("POM_5V_GPU", "garbage\n", "garbage"),
        ("POM_5V_GPU", "", "empty"),
        ("VDD_CPU_GPU_CV", "-2000\n", "negative"),
        ("VIN", "9999999999999\n", "out_of_range"),
    ],
)
def test_a_bad_text_fails_its_rail_alone(
    tmp_path: Path, bad_rail: str, text: str, reason: str
) -> None:
    rails = RailMap(
        (
            ina238_rail(tmp_path, "5500000\n"),
            hwmon_rail(tmp_path, "VDD_CPU_GPU_CV", 2, "5000\n", "2000\n"),
            iio_rail(tmp_path, "POM_5V_GPU", 1, "1234\n"),
        ),
        total_rail="VIN",
    )
    write_in_place(next(r for r in rails.rails if r.name == bad_rail).files[-1], text)
    with InaSource(rails) as src, pytest.raises(PartialReading) as info:
        src.read()
    assert info.value.failures == [(bad_rail, reason)]
    assert not info.value.all_failed
    good = {"VIN": 5.5, "VDD_CPU_GPU_CV": 10.0, "POM_5V_GPU": 1.234}
    values = dict(zip(("VIN", "VDD_CPU_GPU_CV", "POM_5V_GPU"), info.value.values, strict=True))
    assert math.isnan(values.pop(bad_rail))
    assert values == pytest.approx({k: v for k, v in good.items() if k != bad_rail})


def test_the_pread_plan_decodes_to_what_read_returns(tmp_path: Path) -> None:
    rails = RailMap(
        (
            hwmon_rail(tmp_path, "VDD_IN", 1, "5000\n", "2000\n"),
            iio_rail(tmp_path, "POM_5V_GPU", 1, "1234\n"),
        ),
        total_rail="VDD_IN",
    )
    with InaSource(rails) as src:
        assert isinstance(src, PreadSource)
        plan = src.pread_plan()
        assert len(plan.fds) == 3
        raw = [plan.pread(fd, plan.size, 0) for fd in plan.fds]
        assert src.decode(raw) == src.read() == pytest.approx([10.0, 1.234])
        with pytest.raises(PartialReading) as info:
            src.decode([raw[0], b"", raw[2]])
        assert (info.value.channel, info.value.reason) == ("VDD_IN", "empty")
        assert info.value.values[1] == pytest.approx(1.234)
        with pytest.raises(PartialReading) as failed:
            src.decode([raw[0], raw[1], FailedFile("EIO")])
        assert failed.value.failures == [("POM_5V_GPU", "EIO")]
        assert failed.value.values[0] == pytest.approx(10.0)
        with pytest.raises(PartialReading) as both:
            src.decode([FailedFile("EAGAIN"), raw[1], FailedFile("EIO")])
        assert both.value.all_failed
        assert both.value.failures == [("VDD_IN", "EAGAIN"), ("POM_5V_GPU", "EIO")]


def test_a_replaced_file_is_reopened_onto_the_same_descriptor(tmp_path: Path) -> None:
    rails = one_rail(tmp_path)
    voltage = rails.rails[0].voltage_file
    assert voltage is not None
    with InaSource(rails, vanish_check_interval_s=0.0) as src:
        fds = src.pread_plan().fds
        before = _open_fds()
        tmp = voltage.with_name("new")
        tmp.write_text("12000\n")
        os.replace(tmp, voltage)
        assert src.maintain() == (0,)  # the rail's first plan position: fail it once
        # A reader holding the old numbers (the sampler) now reads the new file.
        assert src.pread_plan().fds == fds
        assert _open_fds() == before
        assert src.decode([os.pread(fd, 64, 0) for fd in fds]) == pytest.approx([24.0])
        assert src.maintain() == ()  # nothing changed since


def test_removed_file_is_vanished_until_it_comes_back(tmp_path: Path) -> None:
    rails = one_rail(tmp_path)
    current = rails.rails[0].current_file
    assert current is not None
    with InaSource(rails, vanish_check_interval_s=0.0) as src:
        assert src.read() == pytest.approx([10.0])
        current.unlink()
        for _ in range(3):
            with pytest.raises(ReadError) as info:
                src.read()
            assert info.value.reason == "vanished"
            assert info.value.channel == "VDD_IN"
        current.write_text("1000\n")
        # The check that finds it back still flags the read in progress, then it recovers.
        with pytest.raises(ReadError, match="vanished"):
            src.read()
        assert src.read() == pytest.approx([5.0])


def test_replaced_file_is_flagged_once_then_reopened(tmp_path: Path) -> None:
    rails = one_rail(tmp_path)
    voltage = rails.rails[0].voltage_file
    assert voltage is not None
    with InaSource(rails, vanish_check_interval_s=0.0) as src:
        assert src.read() == pytest.approx([10.0])
        tmp = voltage.with_name("new")
        tmp.write_text("12000\n")
        os.replace(tmp, voltage)
        with pytest.raises(ReadError, match="vanished"):
            src.read()
        assert src.read() == pytest.approx([24.0])


def test_vanish_check_is_rate_limited_not_per_sample(tmp_path: Path) -> None:
    rails = one_rail(tmp_path)
    assert rails.rails[0].voltage_file is not None
    with InaSource(rails, vanish_check_interval_s=3600.0) as src:
        rails.rails[0].voltage_file.unlink()
        # The open descriptor still reads the old inode; no stat happens on this read.
        assert src.read() == pytest.approx([10.0])


def test_missing_file_at_open_is_source_unavailable_naming_it(tmp_path: Path) -> None:
    rails = one_rail(tmp_path)
    assert rails.rails[0].current_file is not None
    rails.rails[0].current_file.unlink()
    with pytest.raises(SourceUnavailable, match="curr1_input"):
        InaSource(rails)


def test_empty_map_and_inconsistent_maps_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match="no INA rails"):
        InaSource(RailMap((), None))
    rail = hwmon_rail(tmp_path, "VDD_IN", 1, "1\n", "1\n")
    with pytest.raises(ValueError, match="duplicated: VDD_IN"):
        InaSource(RailMap((rail, rail), None))
    with pytest.raises(ValueError, match="total rail 'VIN' is not one of the rails"):
        InaSource(RailMap((rail,), "VIN"))


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_close_releases_descriptors_and_later_reads_fail(tmp_path: Path) -> None:
    rails = RailMap(
        (
            hwmon_rail(tmp_path, "VDD_IN", 1, "5000\n", "1\n"),
            iio_rail(tmp_path, "POM_5V_GPU", 1, "1\n"),
        ),
        total_rail="VDD_IN",
    )
    before = _open_fds()
    src = InaSource(rails)
    assert _open_fds() == before + 3
    src.close()
    src.close()
    assert _open_fds() == before
    with pytest.raises(ReadError, match="closed"):
        src.read()


@given(
    n=st.integers(-(2**40), 2**40),
    left=st.integers(0, 12),
    suffix=st.sampled_from(["", "\n", " ma\n", " mV", "\t\n"]),
)
def test_parse_int_reads_padded_and_suffixed_integers(n: int, left: int, suffix: str) -> None:
    assert parse_int((" " * left + str(n) + suffix).encode()) == n


@given(text=st.text(alphabet=" \t\n", max_size=10))
def test_parse_int_whitespace_only_is_empty(text: str) -> None:
    assert parse_int(text.encode()) == "empty"


@given(text=st.from_regex(r"\A[a-zA-Z.][a-zA-Z0-9. ]{0,20}\Z"))
def test_parse_int_non_numbers_are_garbage(text: str) -> None:
    assert parse_int(text.encode()) in ("garbage", "empty")
    if text.strip():
        assert parse_int(text.encode()) == "garbage"
