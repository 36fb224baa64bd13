"""Canonical keys that match results across reports.

Operating-point dictionaries (``params.operating_point.requested`` / ``read_back``) use the
keys ``power_mode``, ``cpu_freq_hz``, ``gpu_freq_hz``, ``emc_freq_hz``, ``cpu_cores`` and
``governor``; any other key is kept and compared as given.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, NamedTuple

DEFAULT_OP = "default"
"""Key of an operating point that pinned nothing (the board's own DVFS)."""


def _fmt(value: Any) -> str:
    kind = type(value)
    if kind is int or kind is str:
        return str(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _op_dict(params: Mapping[str, Any], which: str) -> Mapping[str, Any]:
    op = params.get("operating_point")
    if not isinstance(op, Mapping):
        return {}
    chosen = op.get(which)
    return chosen if isinstance(chosen, Mapping) else {}


def op_key(params: Mapping[str, Any]) -> str:
    """Canonical key of a test's requested operating point, e.g. ``gpu_freq_hz=612000000``.

    The requested values, not the read-back ones, so that two runs asking for the same point
    match even when the clocks settle a step apart; :data:`DEFAULT_OP` when nothing pinned.
    """
    op = params.get("operating_point")
    requested = op.get("requested") if type(op) is dict else None
    if type(requested) is not dict:
        requested = _op_dict(params, "requested")
    if not requested:
        return DEFAULT_OP
    if not _CACHEABLE.issuperset(map(type, requested.values())):
        return _op_key(requested)
    # Reports repeat a handful of operating points thousands of times. Only int and str
    # values are cached: among them equal items format equally (True == 1 == 1.0 would not).
    items = tuple(requested.items())
    key = _OP_KEYS.get(items)
    if key is None:
        if len(_OP_KEYS) >= _OP_KEYS_MAX:
            _OP_KEYS.clear()
        key = _OP_KEYS[items] = _op_key(requested)
    return key


_CACHEABLE = frozenset({int, str})
_OP_KEYS: dict[tuple[tuple[Any, Any], ...], str] = {}
_OP_KEYS_MAX = 4096


def _op_key(requested: Mapping[str, Any]) -> str:
    return ",".join([f"{k}={_fmt(v)}" for k, v in sorted(requested.items())])


@lru_cache(maxsize=4096)
def op_label(key: str) -> str:
    """Readable form of :func:`op_key`: frequencies in MHz, ``_hz`` suffixes dropped."""
    if key == DEFAULT_OP:
        return "DVFS (default)"
    parts = []
    for item in key.split(","):
        name, _, value = item.partition("=")
        if name.endswith("_freq_hz"):
            with contextlib.suppress(ValueError):
                value = f"{float(value) / 1e6:g}MHz"
            name = name[: -len("_freq_hz")]
        parts.append(f"{name} {value}")
    return ", ".join(parts)


def op_value(params: Mapping[str, Any], name: str) -> Any:
    """One operating-point value, read back if the board reported it, else as requested."""
    read_back = _op_dict(params, "read_back")
    if name in read_back:
        return read_back[name]
    return _op_dict(params, "requested").get(name)


def is_dvfs(params: Mapping[str, Any]) -> bool:
    """True when the test pinned no clock frequency (the governors chose)."""
    return not any(k.endswith("_freq_hz") for k in _op_dict(params, "requested"))


def workload_of(entry: Mapping[str, Any]) -> str:
    """The workload name, or the test's nodeid without its parameter part."""
    params = entry.get("params") or {}
    workload = params.get("workload")
    if workload:
        return str(workload)
    return str(entry["id"]).split("[", 1)[0]


class JoinKey(NamedTuple):
    """What makes two results 'the same experiment' across devices."""

    workload: str
    batch_size: int | None
    graph_mode: str | None
    precision: str | None
    op: str

    def __reduce__(self) -> tuple[Any, ...]:
        # Unpickled by tuple.__new__, not by the generated Python __new__: digests carry
        # thousands of keys between processes.
        return (tuple.__new__, (type(self), tuple(self)))

    def sort_key(self) -> tuple[str, int, str, str, str]:
        return (
            self.workload,
            self.batch_size if self.batch_size is not None else -1,
            self.graph_mode or "",
            self.precision or "",
            self.op,
        )


_new_key = tuple.__new__


def join_key(entry: Mapping[str, Any]) -> JoinKey:
    """Workload x batch size x graph mode x precision x operating point of a test entry."""
    params = entry.get("params") or {}
    batch = params.get("batch_size")
    workload = params.get("workload")
    key: JoinKey = _new_key(
        JoinKey,
        (
            str(workload) if workload else str(entry["id"]).split("[", 1)[0],
            int(batch) if batch is not None else None,
            params.get("graph_mode"),
            params.get("precision"),
            op_key(params),
        ),
    )
    return key
