"""The virtual board's power model, clock selection and host-load parsing (pure code)."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.sim.dvfs import effective_limits, pick_freq
from pytest_edgeenergy.sim.hostload import parse_cpu_line
from pytest_edgeenergy.sim.models import MODEL_NAMES, BoardModel, get_model
from pytest_edgeenergy.sim.power import (
    ClusterState,
    PowerState,
    rail_power_w,
    total_power_w,
)


def _state(
    model: BoardModel,
    *,
    load: float,
    gpu_hz: int | None = None,
    cpu_khz: int | None = None,
    online: int | None = None,
    emc_hz: int | None = None,
) -> PowerState:
    clusters = tuple(
        ClusterState(
            cpu_khz or c.freqs_khz[0],
            c.freqs_khz[-1],
            len(c.cpus) if online is None else min(online, len(c.cpus)),
        )
        for c in model.clusters
    )
    return PowerState(
        clusters=clusters,
        gpu_freq_hz=gpu_hz or model.gpu.freqs_hz[0],
        gpu_top_hz=model.gpu.freqs_hz[-1],
        emc_freq_hz=emc_hz or model.emc.rates_hz[0],
        emc_top_hz=model.emc.rates_hz[-1],
        load=load,
    )


def _total(model: BoardModel, state: PowerState) -> float:
    return total_power_w(model, rail_power_w(model, state))


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_power_rises_with_gpu_frequency_nearly_linearly(name: str) -> None:
    model = get_model(name)
    freqs = model.gpu.freqs_hz
    totals = [_total(model, _state(model, load=1.0, gpu_hz=f)) for f in freqs]
    assert all(b > a for a, b in itertools.pairwise(totals))
    # Near-linear: the mid frequency's power is within 10 % of the straight line.
    mid = len(freqs) // 2
    share = (freqs[mid] - freqs[0]) / (freqs[-1] - freqs[0])
    line = totals[0] + share * (totals[-1] - totals[0])
    assert abs(totals[mid] - line) < 0.1 * (totals[-1] - totals[0])


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_cpu_frequency_matters_less_than_gpu_frequency(name: str) -> None:
    model = get_model(name)
    top_cpu = model.clusters[0].freqs_khz[-1]
    base = _total(model, _state(model, load=1.0))
    cpu_span = _total(model, _state(model, load=1.0, cpu_khz=top_cpu)) - base
    gpu_span = _total(model, _state(model, load=1.0, gpu_hz=model.gpu.freqs_hz[-1])) - base
    assert 0 < cpu_span < gpu_span


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_power_rises_with_load_cores_and_emc(name: str) -> None:
    model = get_model(name)
    top = model.gpu.freqs_hz[-1]
    assert _total(model, _state(model, load=0.9, gpu_hz=top)) > _total(
        model, _state(model, load=0.1, gpu_hz=top)
    )
    assert _total(model, _state(model, load=0.5, online=4)) > _total(
        model, _state(model, load=0.5, online=1)
    )
    assert _total(model, _state(model, load=0.5, emc_hz=model.emc.rates_hz[-1])) > _total(
        model, _state(model, load=0.5)
    )


def test_magnitudes_follow_the_domain_figures() -> None:
    nano = get_model("nano")
    idle = rail_power_w(nano, _state(nano, load=0.0))
    assert 1.2 <= idle["POM_5V_IN"] <= 2.0
    span = _total(nano, _state(nano, load=1.0, gpu_hz=921600000)) - _total(
        nano, _state(nano, load=1.0, gpu_hz=76800000)
    )
    assert 4.2 <= span <= 5.2  # about 4.7 W across the GPU range under load
    orin_nano = get_model("orin-nano")
    idle_on = rail_power_w(orin_nano, _state(orin_nano, load=0.0))
    assert 4.5 <= idle_on["VDD_IN"] <= 5.0
    assert 0.4 <= idle_on["VDD_CPU_GPU_CV"] <= 0.8
    assert 1.4 <= idle_on["VDD_SOC"] <= 1.9
    top = _state(orin_nano, load=1.0, gpu_hz=1020000000, cpu_khz=1728000, emc_hz=3199000000)
    assert 14.0 <= _total(orin_nano, top) <= 21.0
    agx = get_model("agx-orin")
    assert 6.0 <= _total(agx, _state(agx, load=0.0)) <= 8.0
    top_agx = _state(agx, load=1.0, gpu_hz=1300500000, cpu_khz=2201600, emc_hz=3199000000)
    assert _total(agx, top_agx) > 30.0


states = st.builds(
    lambda name, load, g, c, e, online: (name, load, g, c, e, online),
    st.sampled_from(MODEL_NAMES),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.integers(0, 4),
)


@given(states, st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_total_rail_exceeds_its_sub_rails_and_noise_is_bounded(
    args: tuple[str, float, float, float, float, int], noise: list[float]
) -> None:
    name, load, g, c, e, online = args
    model = get_model(name)
    gpu = model.gpu.freqs_hz
    emc = model.emc.rates_hz
    table = model.clusters[0].freqs_khz
    cpu_khz = table[round(c * (len(table) - 1))]
    state = dataclasses.replace(
        _state(model, load=load, online=online, cpu_khz=cpu_khz),
        gpu_freq_hz=gpu[round(g * (len(gpu) - 1))],
        emc_freq_hz=emc[round(e * (len(emc) - 1))],
    )
    exact = rail_power_w(model, state)
    noisy = rail_power_w(model, state, noise[: len(exact)])
    assert list(exact) == list(model.rail_names)
    for rail, value in exact.items():
        assert value >= 0
        assert abs(noisy[rail] - value) <= 0.01 * value + 1e-12
    if model.total_rail is not None:
        others = sum(v for k, v in exact.items() if k != model.total_rail)
        assert exact[model.total_rail] > others


offered = st.lists(st.integers(1, 10**10), min_size=1, max_size=30, unique=True).map(sorted)


@given(
    offered,
    st.integers(-1, 10**10),
    st.integers(-1, 10**10),
    st.floats(0.0, 2.0),
    st.sampled_from(["schedutil", "performance", "powersave", "userspace", "nvhost_podgov"]),
    st.integers(0, 10**10),
)
def test_picked_frequency_is_offered_and_within_limits(
    table: list[int], lo: int, hi: int, load: float, governor: str, setspeed: int
) -> None:
    f = pick_freq(governor, table, lo, hi, load, setspeed)
    low, high = effective_limits(table, lo, hi)
    assert f in table
    assert low <= f <= high
    if governor == "performance":
        assert f == high
    if governor == "powersave":
        assert f == low


def test_governors_behave_like_the_kernel() -> None:
    table = [100, 200, 300, 400, 500]
    assert pick_freq("performance", table, 0, 10**9, 0.0) == 500
    assert pick_freq("powersave", table, 0, 10**9, 1.0) == 100
    assert pick_freq("userspace", table, 0, 10**9, 0.0, setspeed=250) == 300
    assert pick_freq("schedutil", table, 200, 400, 0.0) == 200
    assert pick_freq("schedutil", table, 200, 400, 1.0) == 400
    assert pick_freq("schedutil", table, 0, 10**9, 0.5) in (300, 400)
    # A max limit between steps allows only the step below it (nvpmodel 5W: 640 MHz).
    assert pick_freq("performance", table, 0, 450, 1.0) == 400
    # Crossed limits: max wins.
    assert pick_freq("schedutil", table, 400, 200, 1.0) == 200


@given(st.lists(st.integers(0, 10**9), min_size=8, max_size=10))
def test_proc_stat_cpu_line_parses(fields: list[int]) -> None:
    text = "cpu  " + " ".join(map(str, fields)) + "\ncpu0 1 2 3 4 5 6 7 8\nintr 5\n"
    busy, total = parse_cpu_line(text)
    assert total == sum(fields[:8])
    assert busy == total - fields[3] - fields[4]


def test_proc_stat_without_cpu_line_is_an_error() -> None:
    with pytest.raises(ValueError, match="/proc/stat"):
        parse_cpu_line("intr 1 2 3\n")


@given(
    st.sampled_from(["hwmon", "iio", "ina238"]),
    st.integers(1000, 20000),
    st.floats(0.0, 200.0),
)
def test_quantised_rail_values_show_the_wanted_power(kind: str, volts: int, power: float) -> None:
    from pytest_edgeenergy.sim.railfiles import quantise

    v, i, file_value, shown_w = quantise(kind, volts, power)
    assert v % 8 == volts % 8 and v > 0 and i >= 0  # 8 mV bus-voltage steps
    expected_w = {"hwmon": v * i / 1e6, "iio": file_value / 1e3, "ina238": file_value / 1e6}
    assert shown_w == expected_w[kind]
    # Within half a current step (and half a mW for the iio power file) of the target.
    assert abs(shown_w - power) <= v * 0.5e-6 + 0.5e-3 + 1e-9
