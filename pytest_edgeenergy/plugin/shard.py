"""``--edge-shard=K/N``: run one deterministic, balanced part of the collected tests.

The selection (:func:`plan_shards`) is a pure function of unit keys and weights: units
sorted by weight (largest first), ties by key, each given to the least loaded shard
(lowest index on a tie): greedy LPT. It depends on the keys only, never on the collection
order, the hash seed or ``-p randomly``, so every board running the same collection gets
the same parts, and two shards' loads differ by at most the largest unit's weight.

A unit is one test item, except a searched test: its ``dvfs`` and ``trialN`` items are one
unit (the search proposes each trial from the earlier ones, in one process). Weights are
the items' durations in ``--edge-shard-durations`` (earlier energy reports, pytest-split's
``.test_durations``, JUnit XML: :mod:`.shard_durations`; an item they lack counts the mean
of those they time, as pytest-split's ``least_duration`` does, so that on the same
durations both make shards of the same loads), else 1 per item. Applied in
``pytest_collection_modifyitems`` after the other deselections and before the plugin orders
the tests by operating point; the report records ``shard: {index, count, tests,
balanced_by}``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from ..errors import InvalidValue
from ..options_spec import OPTIONS, parse_shard
from ..words import counted
from .options import SettingsError, Value, lookup
from .shard_durations import Durations, DurationsError, Timing, durations_of, read_durations

__all__ = [
    "Selection",
    "ShardPlugin",
    "ShardRequest",
    "durations_of",
    "plan_shards",
    "read_request",
    "select",
    "unit_weights",
]

BalancedBy = Literal["durations", "count"]


@dataclass(frozen=True)
class ShardRequest:
    """``--edge-shard=K/N`` (``index`` from 1) and the durations it balances by."""

    index: int
    count: int
    durations: Durations | None = None
    """The tests' durations in earlier runs' files; None: balance by count."""
    durations_from: str | None = None


@dataclass(frozen=True)
class Selection:
    """The test ids of one shard, what balanced the shards, and the durations' match."""

    kept: set[str]
    balanced_by: BalancedBy
    timing: Timing | None
    """The collected tests' durations; None when none were given."""


def plan_shards(weights: Mapping[str, float], count: int) -> list[list[str]]:
    """The unit keys of each of ``count`` shards (greedy LPT; see the module docstring).

    Every key lands in exactly one shard; the result depends only on ``weights``.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, not {count}")
    loads = [0.0] * count
    shards: list[list[str]] = [[] for _ in range(count)]
    for key in sorted(weights, key=lambda k: (-weights[k], k)):
        target = min(range(count), key=lambda i: (loads[i], i))
        shards[target].append(key)
        loads[target] += weights[key]
    return [sorted(keys) for keys in shards]


def unit_weights(
    units: Mapping[str, Sequence[str]], durations: Mapping[str, float] | None
) -> tuple[dict[str, float], BalancedBy]:
    """Each unit's weight: the sum of its tests' durations (a test without one counts the
    mean of those known), or its test count when no test has a known duration. Sums are
    exact to the last bit whatever the order of the tests (``math.fsum``)."""
    known = [durations[t] for ts in units.values() for t in ts if durations and t in durations]
    if not durations or not known:
        return {key: float(len(tests)) for key, tests in units.items()}, "count"
    fill = statistics.fmean(known)
    return {
        key: math.fsum(durations.get(t, fill) for t in tests) for key, tests in units.items()
    }, "durations"


def select(items: Sequence[str], unit_of: Callable[[str], str], request: ShardRequest) -> Selection:
    """The test ids of ``items`` in shard ``request.index``, and what balanced them."""
    units: dict[str, list[str]] = {}
    for test_id in items:
        units.setdefault(unit_of(test_id), []).append(test_id)
    timing = None if request.durations is None else request.durations.timing(items)
    weights, balanced_by = unit_weights(units, None if timing is None else timing.seconds)
    chosen = plan_shards(weights, request.count)[request.index - 1]
    return Selection({t for key in chosen for t in units[key]}, balanced_by, timing)


# -- reading the options -------------------------------------------------------------------


def _value(config: pytest.Config, key: str) -> Value | None:
    opt = OPTIONS[key]
    return lookup(config, opt, f"edge_{key}")


def _read_durations(v: Value) -> Durations:
    try:
        return read_durations(Path(v.text))
    except DurationsError as e:
        raise SettingsError(f"{v.origin}: {e}") from None


def read_request(config: pytest.Config) -> ShardRequest | None:
    """``--edge-shard`` and ``--edge-shard-durations`` (CLI > env > ini); None when no
    shard is asked for. :class:`SettingsError` names the option and what is allowed."""
    shard_v = _value(config, "shard")
    durations_v = _value(config, "shard_durations")
    if shard_v is None:
        if durations_v is not None:
            raise SettingsError(
                f"{durations_v.origin}: balances --edge-shard, which is not given; add "
                "--edge-shard=K/N"
            )
        return None
    try:
        index, count = parse_shard(shard_v.text)
    except InvalidValue as e:
        raise SettingsError(f"{shard_v.origin}: {e}") from None
    if durations_v is None:
        return ShardRequest(index, count)
    return ShardRequest(index, count, _read_durations(durations_v), durations_v.text)


def _balance_words(chosen: Selection, request: ShardRequest, tests: int) -> str:
    """What balanced the shards: by count, or the durations and how well they matched."""
    timing, source = chosen.timing, request.durations_from
    if timing is None:
        return "count"
    if not timing.entries:
        return f"count: no durations in {source}"
    entries = counted(timing.entries, "entry", "entries")
    if chosen.balanced_by == "count":
        return f"count: none of the {entries} in {source} matches a collected test"
    words = f"durations in {source}: {len(timing.seconds)} of {counted(tests, 'test')} timed"
    if timing.unmatched:
        words += f"; {timing.unmatched} of its {entries} match no collected test"
    return words


# -- the pytest glue -------------------------------------------------------------------------


def _unit_key(items: Sequence[pytest.Item], searched: bool) -> Callable[[str], str]:
    """A searched test's items share the search's key; every other item is its own unit."""
    if not searched:
        return lambda nodeid: nodeid
    from .search import search_key

    by_id = {
        i.nodeid: search_key(i) if "operating_point" in getattr(i, "fixturenames", ()) else i.nodeid
        for i in items
    }
    return lambda nodeid: by_id[nodeid]


class ShardPlugin:
    """Deselects the tests outside the shard and puts the shard in the report (once the
    report file exists: a run that measured nothing still leaves none)."""

    def __init__(self, request: ShardRequest, config: pytest.Config) -> None:
        self.request = request
        self._config = config
        self.record: dict[str, Any] | None = None
        self._written = False

    def apply(self, config: pytest.Config, items: list[pytest.Item], searched: bool) -> str:
        """Keep only this shard's tests in ``items``; returns the line saying what was kept."""
        r = self.request
        ids = [i.nodeid for i in items]
        chosen = select(ids, _unit_key(items, searched), r)
        kept = [i for i in items if i.nodeid in chosen.kept]
        dropped = [i for i in items if i.nodeid not in chosen.kept]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        self.record = {
            "index": r.index,
            "count": r.count,
            "tests": len(kept),
            "balanced_by": chosen.balanced_by,
        }
        return (
            f"edgeenergy: shard {r.index}/{r.count}: kept {len(kept)} of "
            f"{counted(len(ids), 'test')} (balanced by {_balance_words(chosen, r, len(ids))})"
        )

    def write(self, config: pytest.Config, nodeid: str | None = None) -> None:
        """The shard into the report, once, when the report holds a test."""
        if self._written or self.record is None:
            return
        from . import SESSION_KEY

        es = config.stash.get(SESSION_KEY, None)
        if es is None or es.report_path is None:
            return
        tests = es.engine.tests
        if (nodeid is not None and nodeid not in tests) or not tests:
            return
        es.update_report(shard=self.record)
        self._written = True

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.write(self._config, nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.write(session.config)
