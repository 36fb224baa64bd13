"""Grid expansion on virtual boards and ordering for the fewest board changes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.control.errors import ValueSpecError
from pytest_edgeenergy.control.grid import count_changes, expand, order_for_fewest_changes
from pytest_edgeenergy.control.knobset import KnobSet, knobs_at
from pytest_edgeenergy.control.operating_point import OperatingPoint

tree = pytest.importorskip("pytest_edgeenergy.sim.tree", reason="virtual boards not available")


@pytest.fixture(scope="module")
def orin_nano(tmp_path_factory: pytest.TempPathFactory) -> KnobSet:
    return knobs_at(Path(tree.create("orin-nano", tmp_path_factory.mktemp("grid") / "orin-nano")))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and "edgeenergy-sim" not in str(p)
    }


def test_cartesian_product_with_ids(orin_nano: KnobSet) -> None:
    points = expand({"gpu_freq": ["min,max"], "cpu_cores": ["2", "all"]}, orin_nano)
    assert [p.id for p in points] == [
        "gpu306MHz-2cores",
        "gpu306MHz-6cores",
        "gpu1.02GHz-2cores",
        "gpu1.02GHz-6cores",
    ]
    assert all(p.power_mode is None and p.cpu_freq_hz is None for p in points)


def test_all_and_duplicates_and_dvfs(orin_nano: KnobSet) -> None:
    points = expand({"gpu_freq": ["all", "max", "dvfs"]}, orin_nano)
    gpu = [p.gpu_freq_hz for p in points]
    assert len(gpu) == len(set(gpu)) == 9  # 8 offered + dvfs (None)
    assert gpu[-1] is None and OperatingPoint() in points
    assert expand({}, orin_nano) == [OperatingPoint()]


def test_every_value_checked_before_anything(orin_nano: KnobSet) -> None:
    before = _snapshot(orin_nano.root)
    with pytest.raises(ValueSpecError, match=r"--cpu-cores 9: more cores than the board has"):
        expand({"gpu_freq": ["max"], "cpu_cores": ["2,9"]}, orin_nano)
    with pytest.raises(ValueSpecError, match=r"^ini edge_gpu_freq 700MHz: not offered"):
        expand({"gpu_freq": ["700MHz"]}, orin_nano, sources={"gpu_freq": "ini edge_gpu_freq"})
    with pytest.raises(
        ValueSpecError, match=r"unknown grid option\(s\) 'gpu'; allowed: power_mode"
    ):
        expand({"gpu": ["max"]}, orin_nano)
    assert _snapshot(orin_nano.root) == before


AXES: dict[str, list[Any]] = {
    "power_mode": [None, "15W", "25W"],
    "cpu_cores": [None, 2, 4],
    "gpu_freq_hz": [None, 306000000, 612000000],
    "cpu_freq_hz": [None, 729600000],
}
GRID = [
    OperatingPoint(power_mode=m, cpu_cores=c, gpu_freq_hz=g, cpu_freq_hz=f)
    for m, c, g, f in itertools.product(*AXES.values())
]


def test_full_grid_walk_is_boustrophedon() -> None:
    ordered = order_for_fewest_changes(GRID)
    assert sorted(map(repr, ordered)) == sorted(map(repr, GRID))
    # Each step between neighbours changes exactly one knob.
    assert count_changes(ordered) == len(GRID) - 1
    # Power modes (nvpmodel resets clocks) change only twice.
    modes = [p.power_mode for p in ordered]
    assert sum(a != b for a, b in itertools.pairwise(modes)) == 2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(GRID), min_size=1, max_size=40),
    st.randoms(use_true_random=False),
)
def test_ordering_properties(picked: list[OperatingPoint], rnd: object) -> None:
    items = [(point, batch) for batch, point in enumerate(picked)]
    ordered = order_for_fewest_changes(items, key=lambda item: item[0])
    assert sorted(ordered, key=lambda i: i[1]) == items  # a permutation
    points = [p for p, _ in ordered]
    # Equal points are adjacent: the board changes once per distinct point at most.
    runs = [k for k, _ in itertools.groupby(points)]
    assert len(runs) == len(set(points))
    # Items of one point keep their relative order.
    for point in set(points):
        batches = [b for p, b in ordered if p == point]
        assert batches == sorted(batches)
    # Never more changes than running the distinct points in the order they came in.
    plain = list(dict.fromkeys(picked))
    assert count_changes(runs) <= count_changes(plain)


def test_rejects_non_points() -> None:
    with pytest.raises(TypeError, match="not an OperatingPoint"):
        order_for_fewest_changes(["15W"])
