"""``--edge-shard=K/N``: the selection (a pure function) and the plugin on a virtual board.

The selection's properties are checked with hypothesis: every unit lands in exactly one
shard, the parts depend on the keys and weights only (not their order), and two shards'
loads differ by at most the largest unit. The plugin runs real pytest sessions: the union
of the shards is the unsharded run, a searched test's trials stay in one shard, bad values
are usage errors naming the option, and the report records the shard.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.errors import InvalidValue
from pytest_edgeenergy.options_spec import MAX_SHARDS, parse_shard
from pytest_edgeenergy.plugin.shard import (
    ShardRequest,
    durations_of,
    plan_shards,
    select,
    unit_weights,
)
from pytest_edgeenergy.plugin.shard_durations import Durations

RUN_TIMEOUT_S = 240.0

keys = st.text(alphabet="abcdefghij[]-_:/0123456789", min_size=1, max_size=12)
weights_st = st.dictionaries(keys, st.floats(0.0, 1000.0, allow_nan=False), max_size=60)


@settings(max_examples=200, deadline=None)
@given(weights=weights_st, count=st.integers(1, 12))
def test_every_unit_lands_in_exactly_one_shard(weights: dict[str, float], count: int) -> None:
    shards = plan_shards(weights, count)
    assert len(shards) == count
    placed = [k for shard in shards for k in shard]
    assert sorted(placed) == sorted(weights)


@settings(max_examples=200, deadline=None)
@given(weights=weights_st, count=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_the_parts_do_not_depend_on_the_order(
    weights: dict[str, float], count: int, seed: int
) -> None:
    shuffled = list(weights.items())
    random.Random(seed).shuffle(shuffled)
    assert plan_shards(dict(shuffled), count) == plan_shards(weights, count)


@settings(max_examples=200, deadline=None)
@given(weights=weights_st, count=st.integers(1, 12))
def test_loads_differ_by_at_most_the_largest_unit(weights: dict[str, float], count: int) -> None:
    loads = [sum(weights[k] for k in shard) for shard in plan_shards(weights, count)]
    largest = max(weights.values(), default=0.0)
    assert max(loads) - min(loads) <= largest + 1e-9


@settings(max_examples=100, deadline=None)
@given(
    groups=st.dictionaries(keys, st.integers(1, 6), min_size=1, max_size=30),
    count=st.integers(1, 6),
)
def test_a_unit_stays_whole_and_counts_balance(groups: dict[str, int], count: int) -> None:
    """Items of one unit (a searched test's trials) land in one shard; by count, shard
    sizes differ by at most the largest unit."""
    items = [f"{g}[trial{i}]" for g, n in groups.items() for i in range(n)]
    unit_of = {f"{g}[trial{i}]": g for g, n in groups.items() for i in range(n)}.__getitem__
    parts = [select(items, unit_of, ShardRequest(k, count)).kept for k in range(1, count + 1)]
    assert sorted(t for p in parts for t in p) == sorted(items)
    for g in groups:
        owners = [i for i, p in enumerate(parts) if f"{g}[trial0]" in p]
        assert len(owners) == 1
        assert all(f"{g}[trial{i}]" in parts[owners[0]] for i in range(groups[g]))
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= max(groups.values())


def test_durations_balance_and_missing_ones_count_the_mean() -> None:
    """A test the durations lack counts the mean of those they have, as in pytest-split's
    least_duration (not the median: the shards' sums are what is balanced)."""
    durations = {"a": 10.0, "b": 1.0, "c": 1.0, "d": 4.0}
    weights, how = unit_weights({k: [k] for k in "abcde"}, durations)
    assert how == "durations"
    assert weights["e"] == 4.0  # the mean of 10, 1, 1, 4 (their median is 2.5)
    request = ShardRequest(1, 2, Durations.of(durations))
    chosen = select(list("abcde"), lambda t: t, request)
    assert chosen.kept == {"a"}  # 10 s alone against 1 + 1 + 4 + 4
    assert chosen.timing is not None and chosen.timing.unmatched == 0
    assert unit_weights({"x": ["x"]}, {"other": 5.0}) == ({"x": 1.0}, "count")
    assert unit_weights({"x": ["x"]}, None) == ({"x": 1.0}, "count")


@settings(max_examples=150, deadline=None)
@given(
    weights=st.dictionaries(keys, st.floats(0.0, 1e6, allow_nan=False), min_size=1, max_size=40),
    missing=st.sets(keys, max_size=10),
    count=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_shards_by_durations_do_not_depend_on_the_collection_order(
    weights: dict[str, float], missing: set[str], count: int, seed: int
) -> None:
    """Tests the durations lack count the mean of the others whatever order the tests come
    in, to the last bit: every board computes the same parts."""
    items = sorted(set(weights) | missing)
    shuffled = items[:]
    random.Random(seed).shuffle(shuffled)
    known = Durations.of({k: w for k, w in weights.items() if k not in missing})
    for k in range(1, count + 1):
        request = ShardRequest(k, count, known)
        assert select(items, lambda t: t[:1], request) == select(shuffled, lambda t: t[:1], request)


def test_a_units_weight_is_exact_in_any_order() -> None:
    """0.1 + 0.2 + 0.3 is 0.6000000000000001 in one order and 0.6 in the other: summed as
    collected, the unit ``b`` would tie with ``a`` (0.6) on one board and not on another."""
    durations = Durations.of({"b1": 0.1, "b2": 0.2, "b3": 0.3, "a": 0.6})
    parts = [
        select(order, lambda t: t[:1], ShardRequest(1, 2, durations)).kept
        for order in (["b1", "b2", "b3", "a"], ["b3", "b2", "b1", "a"])
    ]
    assert parts == [{"a"}, {"a"}]  # a tie: the smaller key goes first


def test_durations_of_takes_the_median_of_each_test() -> None:
    reports: list[dict[str, Any]] = [
        {"tests": [{"id": "t", "duration_s": 1.0}, {"id": "u", "duration_s": None}]},
        {"tests": [{"id": "t", "duration_s": 3.0}]},
        {"tests": [{"id": "t", "duration_s": 4.0}]},
    ]
    assert durations_of(reports) == {"t": 3.0}


@pytest.mark.parametrize(
    ("text", "expected"), [("1/1", (1, 1)), ("2/3", (2, 3)), (" 3/3 ", (3, 3))]
)
def test_parse_shard_reads_k_of_n(text: str, expected: tuple[int, int]) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize(
    "text", ["0/2", "3/2", "1", "1/0", "a/b", "-1/2", "1/2/3", "", f"1/{MAX_SHARDS + 1}", "1.5/2"]
)
def test_parse_shard_refuses_what_is_not_a_shard(text: str) -> None:
    with pytest.raises(InvalidValue, match="is not a shard; use K/N with whole numbers"):
        parse_shard(text)


# -- the plugin ------------------------------------------------------------------------------

SUITE = """
import time

import pytest


@pytest.mark.parametrize("n", range(7))
def test_work(energy, n):
    with energy.window("work"):
        time.sleep(0.02)


@pytest.mark.parametrize("k", ["a", "b", "c"])
def test_plain(k):
    pass
"""

SEARCHED = """
import time


def test_work(operating_point, edge_bench):
    edge_bench.run(lambda: time.sleep(0.005), items_per_call=2)


def test_other(operating_point, edge_bench):
    edge_bench.run(lambda: time.sleep(0.005), items_per_call=2)
"""

REVERSED = """
def pytest_collection_modifyitems(items):
    items.reverse()
"""

PLAIN = """
import pytest


@pytest.mark.parametrize("n", range(10))
def test_n(n):
    pass
"""

BASE = ("--edge-board=sim:orin-nano", "--edge-idle-s=0", "-p", "no:cacheprovider", "-q")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*BASE, *args, timeout=RUN_TIMEOUT_S)


def _report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _ids(path: Path) -> set[str]:
    return {t["id"] for t in _report(path)["tests"]}


def test_the_shards_together_are_the_unsharded_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    full = pytester.path / "full.json"
    _run(pytester, f"--edge-report={full}").assert_outcomes(passed=10)
    seen: list[set[str]] = []
    kept: list[int] = []
    for k in (1, 2, 3):
        report = pytester.path / f"s{k}.json"
        monkeypatch.setenv("PYTHONHASHSEED", str(k * 17))  # must not change the parts
        result = _run(pytester, f"--edge-shard={k}/3", f"--edge-report={report}")
        result.stdout.fnmatch_lines(
            [f"edgeenergy: shard {k}/3: kept * of 10 tests (balanced by count)"]
        )
        shard = _report(report)["shard"]
        assert shard["index"] == k and shard["count"] == 3 and shard["balanced_by"] == "count"
        kept.append(shard["tests"])
        seen.append(_ids(report))
    assert sorted(kept) == [3, 3, 4]
    assert set().union(*seen) == _ids(full)
    assert sum(len(s) for s in seen) == len(_ids(full))
    # The same shard again, collected in another order: the same tests.
    pytester.makeconftest(REVERSED)
    again = pytester.path / "again.json"
    _run(pytester, "--edge-shard=2/3", f"--edge-report={again}")
    assert _ids(again) == seen[1]


def test_durations_from_earlier_reports_balance_the_shards(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    earlier = pytester.path / "earlier.json"
    _run(pytester, f"--edge-report={earlier}").assert_outcomes(passed=10)
    report = pytester.path / "s1.json"
    result = _run(
        pytester,
        "--edge-shard=1/2",
        f"--edge-shard-durations={pytester.path}",
        f"--edge-report={report}",
    )
    result.stdout.fnmatch_lines(
        [f"*shard 1/2: kept * of 10 tests (balanced by durations in {pytester.path}: 7 of 10*"]
    )
    assert _report(report)["shard"]["balanced_by"] == "durations"


def test_a_searched_tests_trials_stay_in_one_shard(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=SEARCHED)
    search = ("--edge-search=random", "--edge-trials=2", "--gpu-freq=all", "--edge-quick")
    parts = []
    for k in (1, 2):
        report = pytester.path / f"s{k}.json"
        result = _run(pytester, *search, f"--edge-shard={k}/2", f"--edge-report={report}")
        result.assert_outcomes(passed=3)  # one test's dvfs reference and its 2 trials
        parts.append(_ids(report))
    functions = [{i.split("[")[0] for i in part} for part in parts]
    assert all(len(f) == 1 for f in functions) and functions[0] != functions[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--edge-shard=3/2",), "--edge-shard (command line): '3/2' is not a shard; use K/N"),
        (("--edge-shard=x",), "--edge-shard (command line): 'x' is not a shard"),
        (
            ("--edge-shard-durations=nowhere",),
            "--edge-shard-durations (command line): balances --edge-shard, which is not given",
        ),
        (("--edge-shard=\u0663/\u0663",), "'\u0663/\u0663' is not a shard"),  # Arabic-Indic 3/3
        (("--edge-shard=\u00b2/3",), "'\u00b2/3' is not a shard"),  # a superscript 2
        (
            ("--edge-shard=1/2", "--edge-shard-durations=nowhere"),
            "--edge-shard-durations (command line): 'nowhere' does not exist; give an energy "
            "report, pytest-split's .test_durations",
        ),
        (
            ("--edge-shard=1/2", "--edge-shard-durations=/dev/zero"),
            "--edge-shard-durations (command line): '/dev/zero' is a character device; give an "
            "energy report",
        ),
    ],
)
def test_bad_values_are_usage_errors(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(*args, timeout=RUN_TIMEOUT_S)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_the_environment_gives_the_shard(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_plain=PLAIN)
    monkeypatch.setenv("EDGEENERGY_SHARD", "1/10")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=RUN_TIMEOUT_S)
    result.stdout.fnmatch_lines(["edgeenergy: shard 1/10: kept 1 of 10 tests (balanced by count)"])
    result.assert_outcomes(passed=1, deselected=9)
