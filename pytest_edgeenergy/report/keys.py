"""Canonical keys that match results across reports, and the one short label of a point.

Operating-point dictionaries (``params.operating_point.requested`` / ``read_back``) use the
keys ``power_mode``, ``cpu_freq_hz``, ``gpu_freq_hz``, ``emc_freq_hz``, ``cpu_cores`` and
``governor``; ``requested.as`` maps a field to the word it was asked for by (``min``,
``max``, ``all``), so that ``--gpu-freq=min`` on two boards is one point although it
resolves to each board's own Hz. ``id`` is the test id's part and never part of a key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, NamedTuple

DEFAULT_OP = "dvfs"
"""Key and label of an operating point that pinned nothing (the board's own DVFS)."""

KNOWN_PARAMS = frozenset({"workload", "batch_size", "graph_mode", "precision", "operating_point"})
"""Parameters that have their own place in a :class:`JoinKey`; every other one goes into
its ``params`` part."""
DEFAULT_RUNTIME = "torch"
"""The ``runtime`` of a result that names none (reports before the runtime dimension): in
the key, ``runtime=torch`` and no runtime are the same, so an old baseline still matches."""
OBSERVED_PARAMS = frozenset({"export_cache", "onnx_opset"})
"""Parameters that say how this run went (the exported model came from the cache, the
opset the installed exporter chose), not which experiment it was: recorded, never part of
a key."""

# Fields of a requested point in label order, with their short names.
_LABEL_FIELDS = (
    ("power_mode", ""),
    ("gpu_freq_hz", "gpu"),
    ("cpu_freq_hz", "cpu"),
    ("emc_freq_hz", "emc"),
    ("cpu_cores", "cores"),
    ("governor", ""),
)
_KEY_FIELDS = frozenset(name for name, _ in _LABEL_FIELDS)
MODE_ROLES = ("max", "min", "default")
"""Power-mode roles (``--power-mode=max``), as :data:`pytest_edgeenergy.control.values.
POWER_MODE_ROLES` (the report layer does not import control): a key holds the role, the
label says ``mode max``."""


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
    """Canonical key of a test's requested operating point, e.g. ``gpu_freq_hz=min`` or
    ``gpu_freq_hz=612000000,power_mode=15W``; :data:`DEFAULT_OP` when nothing was pinned.

    What was requested, not what was read back, so that two runs asking for the same point
    match even when the clocks settle a step apart; a word (``min``, ``max``) where the
    point was asked for by one, so that the same request joins across devices.
    """
    op = params.get("operating_point")
    requested = op.get("requested") if type(op) is dict else None
    if type(requested) is not dict:
        requested = _op_dict(params, "requested")
    if not requested:
        return DEFAULT_OP
    if not _CACHEABLE.issuperset(map(type, requested.values())):
        return _op_key(requested)
    # Reports repeat a handful of operating points thousands of times. Only int, str and
    # None values are cached: among them equal items format equally (True == 1 would not).
    items = tuple(requested.items())
    key = _OP_KEYS.get(items)
    if key is None:
        if len(_OP_KEYS) >= _OP_KEYS_MAX:
            _OP_KEYS.clear()
        key = _OP_KEYS[items] = _op_key(requested)
    return key


_CACHEABLE = frozenset({int, str, type(None)})
_OP_KEYS: dict[tuple[tuple[Any, Any], ...], str] = {}
_OP_KEYS_MAX = 4096


def _op_key(requested: Mapping[str, Any]) -> str:
    words = requested.get("as")
    words = words if isinstance(words, Mapping) else {}
    parts = []
    for name, value in sorted(requested.items()):
        if name in ("id", "as") or value is None:
            continue
        word = words.get(name)
        parts.append(f"{name}={word if isinstance(word, str) else _fmt(value)}")
    return ",".join(parts) or DEFAULT_OP


def _freq_text(value: str) -> str:
    try:
        hz = float(value)
    except ValueError:
        return f" {value}"  # a word: "gpu min"
    if hz >= 1e9:
        return f"{hz / 1e9:g}GHz"
    return f"{hz / 1e6:g}MHz"


@lru_cache(maxsize=4096)
def op_label(key: str) -> str:
    """The one short label of :func:`op_key`'s point: ``15W``, ``15W gpu612MHz``,
    ``gpu min``, ``mode max``, ``4cores``, ``dvfs``. A text that is not a key is returned
    as it is."""
    if key == DEFAULT_OP or "=" not in key:
        return key
    values: dict[str, str] = {}
    others: list[str] = []
    for item in key.split(","):
        name, _, value = item.partition("=")
        if name in _KEY_FIELDS:
            values[name] = value
        else:
            others.append(f"{name}={value}")
    parts = []
    for name, short in _LABEL_FIELDS:
        text = values.get(name)
        if text is None:
            continue
        if name.endswith("_freq_hz"):
            parts.append(short + _freq_text(text))
        elif name == "cpu_cores":
            parts.append(f"cores {text}" if not text.isdigit() else f"{text}cores")
        elif name == "power_mode" and text in MODE_ROLES:
            parts.append(f"mode {text}")
        else:
            parts.append(text)
    return " ".join(parts + others) or DEFAULT_OP


def op_words(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label of the word, its value)`` for each field of the requested point asked for
    by a word: ``("mode max", "MAXN_SUPER")``, ``("gpu min", "306MHz")``; empty when none
    was."""
    requested = _op_dict(params, "requested")
    words = requested.get("as")
    if not isinstance(words, Mapping) or not words:
        return []
    out = []
    for name, word in sorted(words.items()):
        value = requested.get(name)
        if isinstance(word, str) and value is not None and name in _KEY_FIELDS:
            text = _fmt(value)
            resolved = _freq_text(text) if name.endswith("_freq_hz") else op_label(f"{name}={text}")
            out.append((op_label(f"{name}={word}"), resolved))
    return out


_PARAM_SPLIT = re.compile(r",(?=[A-Za-z_][\w.-]*=)")


@lru_cache(maxsize=4096)
def split_params(params: str) -> tuple[tuple[str, str], ...]:
    """:func:`params_key`'s text as ``(name, value)`` pairs (a comma inside a value, as in
    a JSON list, stays in the value)."""
    if not params:
        return ()
    pairs = []
    for item in _PARAM_SPLIT.split(params):
        name, _, value = item.partition("=")
        pairs.append((name, value))
    return tuple(pairs)


def graph_shown(graph_mode: Any, runtime: Any) -> Any:
    """What a table's graph (or config) column says: the runtime where it is not torch
    (``onnxruntime``, ``tensorrt``, as the benchmark table names it), else the graph mode
    (``eager``, ``torchscript``)."""
    return runtime if runtime not in (None, DEFAULT_RUNTIME) else graph_mode


def op_value(params: Mapping[str, Any], name: str) -> Any:
    """One operating-point value, read back if the board reported it, else as requested."""
    read_back = _op_dict(params, "read_back")
    if name in read_back:
        return read_back[name]
    return _op_dict(params, "requested").get(name)


def is_dvfs(params: Mapping[str, Any]) -> bool:
    """True when the test pinned no clock frequency (the governors chose)."""
    requested = _op_dict(params, "requested")
    return not any(k.endswith("_freq_hz") and v is not None for k, v in requested.items())


def test_name(entry: Mapping[str, Any]) -> str:
    """The test's nodeid without its parameter part (``suites/x.py::test_y``)."""
    return str(entry["id"]).split("[", 1)[0]


def workload_of(entry: Mapping[str, Any]) -> str:
    """The workload name, or the test's nodeid without its parameter part."""
    params = entry.get("params") or {}
    workload = params.get("workload")
    if workload:
        return str(workload)
    return test_name(entry)


def params_key(params: Mapping[str, Any]) -> str:
    """Every parameter besides those of :data:`KNOWN_PARAMS` and :data:`OBSERVED_PARAMS`,
    as ``name=value`` pairs (sorted, comma separated; empty when there is none);
    ``runtime`` only when it is not :data:`DEFAULT_RUNTIME`."""
    if len(params) <= len(KNOWN_PARAMS) and KNOWN_PARAMS.issuperset(params):
        return ""
    return ",".join(
        f"{k}={_fmt(v)}"
        for k, v in sorted(params.items())
        if k not in KNOWN_PARAMS
        and k not in OBSERVED_PARAMS
        and v is not None
        and not (k == "runtime" and v == DEFAULT_RUNTIME)
    )


class JoinKey(NamedTuple):
    """What makes two results 'the same experiment' across runs and devices: the test,
    its parameters (every one pytest gave it) and the requested operating point."""

    workload: str
    batch_size: int | None
    graph_mode: str | None
    precision: str | None
    op: str
    test: str
    params: str
    window: str = ""
    """A window label (``load``) for the figures of a labelled window or phase; empty for
    the test's main figures."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Unpickled by tuple.__new__, not by the generated Python __new__: digests carry
        # thousands of keys between processes.
        return (tuple.__new__, (type(self), tuple(self)))

    def sort_key(self) -> tuple[str, int, str, str, str, str, str, str]:
        return (
            self.workload,
            self.batch_size if self.batch_size is not None else -1,
            self.graph_mode or "",
            self.precision or "",
            self.op,
            self.test,
            self.params,
            self.window,
        )


_new_key = tuple.__new__


def join_key(entry: Mapping[str, Any]) -> JoinKey:
    """Workload x batch size x graph mode x precision x operating point x test x the
    other parameters of a test entry."""
    params = entry.get("params") or {}
    batch = params.get("batch_size")
    workload = params.get("workload")
    test = test_name(entry)
    key: JoinKey = _new_key(
        JoinKey,
        (
            str(workload) if workload else test,
            int(batch) if batch is not None else None,
            params.get("graph_mode"),
            params.get("precision"),
            op_key(params),
            test,
            params_key(params),
            "",
        ),
    )
    return key
