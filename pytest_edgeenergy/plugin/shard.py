"""``--edge-shard=K/N``: run one deterministic, balanced part of the collected tests.

The selection (:func:`plan_shards`) is a pure function of unit keys and weights: units
sorted by weight (largest first), ties by key, each given to the least loaded shard
(lowest index on a tie): greedy LPT. It depends on the keys only, never on the collection
order, the hash seed or ``-p randomly``, so every board running the same collection gets
the same parts, and two shards' loads differ by at most the largest unit's weight.

A unit is one test item, except a searched test: its ``dvfs`` and ``trialN`` items are one
unit (the search proposes each trial from the earlier ones, in one process). Weights are
the items' ``duration_s`` in earlier reports (``--edge-shard-durations``; an item they
lack counts their median), else 1 per item. Applied in ``pytest_collection_modifyitems``
after the other deselections and before the plugin orders the tests by operating point;
the report records ``shard: {index, count, tests, balanced_by}``.
"""

from __future__ import annotations

import stat
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from ..errors import InvalidValue
from ..inputfiles import InputFileError, kind_of, stat_input
from ..options_spec import OPTIONS, parse_shard
from ..ranges import shown
from ..words import counted
from .options import SettingsError, Value, lookup

__all__ = [
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
    durations: Mapping[str, float] | None = None
    """Seconds per test id from earlier reports; None: balance by count."""
    durations_from: str | None = None


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
    median of those known), or its test count when no test has a known duration."""
    known = [durations[t] for ts in units.values() for t in ts if durations and t in durations]
    if not durations or not known:
        return {key: float(len(tests)) for key, tests in units.items()}, "count"
    fill = statistics.median(known)
    return {
        key: sum(durations.get(t, fill) for t in tests) for key, tests in units.items()
    }, "durations"


def select(
    items: Sequence[str], unit_of: Callable[[str], str], request: ShardRequest
) -> tuple[set[str], BalancedBy]:
    """The test ids of ``items`` in shard ``request.index``, and what balanced them."""
    units: dict[str, list[str]] = {}
    for test_id in items:
        units.setdefault(unit_of(test_id), []).append(test_id)
    weights, balanced_by = unit_weights(units, request.durations)
    chosen = plan_shards(weights, request.count)[request.index - 1]
    return {t for key in chosen for t in units[key]}, balanced_by


# -- reading the options -------------------------------------------------------------------


def _value(config: pytest.Config, key: str) -> Value | None:
    opt = OPTIONS[key]
    return lookup(config, opt, f"edge_{key}")


def durations_of(reports: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Seconds per test id: the median of its ``duration_s`` over ``reports`` (tests
    without one are left out)."""
    seen: dict[str, list[float]] = {}
    for report in reports:
        for test in report["tests"]:
            d = test.get("duration_s")
            if isinstance(d, (int, float)) and not isinstance(d, bool):
                seen.setdefault(test["id"], []).append(float(d))
    return {test_id: statistics.median(ds) for test_id, ds in seen.items()}


def _read_durations(v: Value) -> dict[str, float]:
    from ..report.load import ReportError, load_report

    path = Path(v.text)
    try:
        found = stat_input(path)
    except InputFileError as e:
        raise SettingsError(f"{v.origin}: {e}; give a report or a directory of reports") from None
    if found is not None and stat.S_ISDIR(found.st_mode):
        files = sorted(p for p in path.glob("*.json") if p.is_file())
    elif found is not None and stat.S_ISREG(found.st_mode):
        files = [path]
    else:
        what = "does not exist" if found is None else f"is {kind_of(found.st_mode)}"
        raise SettingsError(
            f"{v.origin}: {shown(v.text)} {what}; give a report or a directory of reports"
        )
    reports = []
    for f in files:
        try:
            reports.append(load_report(f))
        except (ReportError, OSError) as e:
            raise SettingsError(f"{v.origin}: {e}") from None
    return durations_of(reports)


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
        kept_ids, balanced_by = select(ids, _unit_key(items, searched), r)
        kept = [i for i in items if i.nodeid in kept_ids]
        dropped = [i for i in items if i.nodeid not in kept_ids]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
        self.record = {
            "index": r.index,
            "count": r.count,
            "tests": len(kept),
            "balanced_by": balanced_by,
        }
        how = f"durations in {r.durations_from}" if balanced_by == "durations" else "count"
        return (
            f"edgeenergy: shard {r.index}/{r.count}: kept {len(kept)} of "
            f"{counted(len(ids), 'test')} (balanced by {how})"
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
