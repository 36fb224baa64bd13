"""Read reports back: validation with clear errors, and a long table for analysis.

The long table (:func:`load`, one row per test x metric) has the columns in
:data:`LONG_COLUMNS`:

``source`` file the row came from; ``run_id``; ``device_fingerprint``; ``device_model`` (the
model string); ``device`` (readable label, ``(simulated)`` for virtual boards); ``simulated``;
``test_id``; ``workload`` (params.workload, else the nodeid without its parameters);
``batch_size``; ``graph_mode``; ``precision``; ``op`` (the requested operating point's
short label: ``15W``, ``15W gpu612MHz``, ``gpu min``, ``dvfs``; see :mod:`.keys`);
``params`` (the test's other parameters, ``n=64,device=cpu``); ``power_mode``,
``cpu_freq_hz``, ``gpu_freq_hz``, ``emc_freq_hz``
(read back when reported, else as requested, else null); ``dvfs`` (no clock pinned);
``status``; ``valid`` (validity.valid, null when not measured); ``metric``; ``unit``;
``value``; ``mean``, ``median``, ``stdev``, ``n`` (from the metric's stats, null without);
``samples`` (list of per-repeat values).
"""

from __future__ import annotations

import functools
import gc
import json
import math
import operator
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pytest_edgeenergy.extras import require
from pytest_edgeenergy.report.keys import (
    is_dvfs,
    op_key,
    op_label,
    op_value,
    params_key,
    workload_of,
)
from pytest_edgeenergy.report.model import TOOL_NAME, compute_stats, device_label
from pytest_edgeenergy.report.schema import SCHEMA_VERSION, SchemaError, validate

from ..errors import EdgeEnergyError
from ..inputfiles import InputFileError, open_regular, too_large
from ..words import counted

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]

LONG_COLUMNS: tuple[str, ...] = (
    "source",
    "run_id",
    "device_fingerprint",
    "device_model",
    "device",
    "simulated",
    "test_id",
    "workload",
    "batch_size",
    "graph_mode",
    "precision",
    "op",
    "params",
    "power_mode",
    "cpu_freq_hz",
    "gpu_freq_hz",
    "emc_freq_hz",
    "dvfs",
    "status",
    "valid",
    "metric",
    "unit",
    "value",
    "mean",
    "median",
    "stdev",
    "n",
    "samples",
)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while handling large reports.

    Report trees hold no reference cycles (reference counting frees them), yet with millions
    of live dicts every collection the allocations trigger re-scans them all: pausing halves
    the time of loading and comparing 50 large reports."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _optional_orjson() -> tuple[Callable[[bytes], Any], Callable[[Any], bytes]] | None:
    try:
        import orjson  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    loads: Callable[[bytes], Any] = orjson.loads
    dumps: Callable[[Any], bytes] = orjson.dumps
    return loads, dumps


# orjson (optional, the ``analysis`` extra) parses reports about 2.5x faster than json. Every
# document it accepts json accepts alike, except integers beyond 64 bits, which it reads as
# floats: a file with such an integer goes to json (see _has_long_integer). What orjson
# refuses (NaN, 1e400, lone surrogates, bad bytes) goes to json too, which accepts it or
# words the error as before. Neither parser tells of a key given twice in one object (the
# last one wins): see _may_repeat_keys.
_orjson = _optional_orjson()
_orjson_loads = _orjson[0] if _orjson is not None else None
_orjson_dumps = _orjson[1] if _orjson is not None else None
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def _has_long_integer(raw: bytes) -> bool:
    """Whether ``raw`` may hold an integer of 19 digits or more (beyond 64 bits, maybe).

    Only such an integer has a run of 19 digits that follows no '.': a float is written
    with at most 17 significant digits, the integer part of one below 1e16 and its fraction
    (0.0016956194305141829) after its point, in at most 20 digits. So the runs of 19 digits
    (counted from the left, without overlap) all follow a point exactly when there is no such
    integer; a string of many digits only sends the file to json, which reads it alike."""
    digits = raw.translate(_DIGITS_AS_ZERO)
    return digits.count(_LONG_RUN) != digits.count(b"." + _LONG_RUN)


class ReportError(EdgeEnergyError, ValueError):
    """A file cannot be used as a report; the message names the file and the problem."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable, message as worded: reports may be read in worker processes.
        return (_rebuild_report_error, (type(self), self.path, self.problem, str(self)))


def _rebuild_report_error(
    cls: type[ReportError], path: Path, problem: str, message: str
) -> ReportError:
    error = cls.__new__(cls)
    ValueError.__init__(error, message)
    error.path = path
    error.problem = problem
    return error


MAX_REPORT_BYTES = 256 * 1024 * 1024
"""The largest report read (256 MiB: 50 reports of 2,000 results are 4 MiB each); the
environment variable :data:`MAX_REPORT_BYTES_ENV` sets another limit."""
MAX_REPORT_BYTES_ENV = "EDGEENERGY_MAX_REPORT_BYTES"
_HEAD_BYTES = 64 * 1024
_BLANK = b" \t\r\n"


def max_report_bytes() -> int:
    """The size limit of a report file: ``$EDGEENERGY_MAX_REPORT_BYTES`` or
    :data:`MAX_REPORT_BYTES`; :class:`ReportError` for a setting that is no size."""
    text = os.environ.get(MAX_REPORT_BYTES_ENV, "").strip()
    if not text:
        return MAX_REPORT_BYTES
    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if limit < 1:
        raise ReportError(
            MAX_REPORT_BYTES_ENV,
            f"{text!r} is not a size: give a whole number of bytes >= 1 "
            f"(default {MAX_REPORT_BYTES})",
        )
    return limit


def _too_large(size: int | str, limit: int) -> str:
    return (
        f"{too_large(size, limit, 'a report')} (set {MAX_REPORT_BYTES_ENV} to read larger reports)"
    )


_REPORT_FILE = "a report file (a report is a JSON file)"


def _read_bytes(path: Path) -> bytes:
    """The bytes of a regular file of at most :func:`max_report_bytes`, read in bounded
    memory; a text not starting with ``{`` is refused after its first block."""
    limit = max_report_bytes()
    try:
        with open_regular(path, _REPORT_FILE) as (handle, size):
            if size > limit:
                raise ReportError(path, _too_large(size, limit))
            head = handle.read(_HEAD_BYTES)
            whole = len(head) < _HEAD_BYTES  # a regular file reads short only at its end
            _check_start(path, head, whole=whole)
            rest = [] if whole else _read_rest(handle, len(head), size, limit)
    except InputFileError as exc:
        raise ReportError(path, exc.problem) from None
    raw = b"".join([head, *rest]) if rest else head
    if len(raw) > limit:
        raise ReportError(path, _too_large(f"more than {limit}", limit))
    return raw


def _read_rest(handle: BinaryIO, have: int, expected: int, limit: int) -> list[bytes]:
    """The file after its first ``have`` bytes, to its end or one byte past ``limit``: what
    fstat said is left (``expected``: the file's size then) in one read, then blocks (it
    may have grown); never a buffer much larger than the file."""
    chunks = []
    while have <= limit:
        chunk = handle.read(min(limit + 1 - have, max(expected + 1 - have, _HEAD_BYTES)))
        if not chunk:
            break
        chunks.append(chunk)
        have += len(chunk)
    return chunks


def _check_start(path: Path, head: bytes, *, whole: bool) -> None:
    """Refuse a text whose first non-blank byte shows it is no JSON object (a report is
    one), before reading the rest; ``whole``: ``head`` is the whole file, whose other
    problems the parser words."""
    stripped = head.lstrip(_BLANK)
    if not stripped or stripped[0] == ord("{"):
        return
    if stripped[0] == ord("["):  # parsing a deeply nested list would exhaust the stack
        raise ReportError(
            path, "not a pytest-edgeenergy report (top level is a JSON list, not an object)"
        )
    if whole:
        return
    where = len(head) - len(stripped)
    raise ReportError(
        path,
        f"not a pytest-edgeenergy report: a report is a JSON object, and this file starts "
        f"with {bytes(stripped[:1])!r} (byte {where}), not '{{'",
    )


def read_json(path: Path) -> Any:
    """The parsed JSON of a report file, not yet validated (see :func:`check_report`):
    regular files of at most :func:`max_report_bytes` only, a key given twice in an object
    refused; :class:`ReportError` names the file and the problem."""
    raw = _read_bytes(path)
    if not raw.strip():
        raise ReportError(path, "is empty (0 bytes of JSON); the writer never left it so")
    try:
        return _parse(path, raw)
    except RecursionError:
        raise ReportError(
            path, "JSON nested too deeply to read (a report is a few levels deep); not a report"
        ) from None


def _parse(path: Path, raw: bytes) -> Any:
    if _orjson_loads is not None and not _has_long_integer(raw):
        try:
            with gc_paused():
                doc = _orjson_loads(raw)
        except ValueError:  # orjson.JSONDecodeError; json below words the error
            pass
        else:
            if not _may_repeat_keys(raw, doc):
                return doc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end == len(raw) and exc.reason == "unexpected end of data":
            raise ReportError(
                path,
                f"truncated JSON: the text ends early, inside a UTF-8 character at byte "
                f"{exc.start} of {len(raw)}",
            ) from None
        raise ReportError(path, f"is not UTF-8 text (byte {exc.start}); not a report") from None
    try:
        with gc_paused():
            return json.loads(text, object_pairs_hook=functools.partial(_unique_keys, path))
    except json.JSONDecodeError as exc:
        raise ReportError(path, _json_problem(text, exc)) from None


def _unique_keys(path: Path, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``; :class:`ReportError` when a key is given twice."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ReportError(
                    path,
                    f"the key {key!r} appears twice in one JSON object (which value counts "
                    "is ambiguous); a report names each key once",
                )
            seen.add(key)
    return doc


def _may_repeat_keys(raw: bytes, doc: Any) -> bool:
    """False when no object of the text ``raw``, parsed as ``doc``, gives a key twice.

    Every pair of the text has one colon outside strings; the document written again holds
    one per pair kept and every colon its strings hold. So the colons of the two differ
    exactly when a pair was dropped, a repeated key, unless a string writes a colon as an
    escape (``\\u003a``): such a text, as any doubt, goes to the exact check (json).
    Costs about a tenth of the parse, against a walk over every object that costs more than
    the parse itself."""
    if _orjson_dumps is None:
        return True
    if b"\\" in raw and (b"\\u003a" in raw or b"\\u003A" in raw):
        return True
    try:
        again = _orjson_dumps(doc)
    except TypeError:  # orjson.JSONEncodeError: cannot be, but json will say
        return True
    return raw.count(b":") != again.count(b":")


_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")


def _json_problem(text: str, exc: json.JSONDecodeError) -> str:
    """Why ``text`` is not JSON, and where: a text cut inside a value (a string, a literal,
    an escape) reads as truncated where it ends, not as corrupt where the value began."""
    where = f"line {exc.lineno}, column {exc.colno}"
    rest = text[exc.pos :].rstrip()
    if not rest:
        cut = exc.msg.removesuffix(" at")
    elif re.fullmatch(r"[.eE][-+]?", rest):  # "1." or "2e+": json stops before the cut
        cut = "inside a number"
    elif exc.msg.startswith("Unterminated string"):  # no closing quote before the end
        cut = f"inside a string that starts at {where}"
    elif exc.msg == "Expecting value" and any(w.startswith(rest) for w in _LITERALS):
        cut = f"inside the value {rest!r} at {where}"
    elif exc.msg.startswith("Invalid \\uXXXX escape") and len(rest) < 6:
        cut = f"inside a \\u escape at {where}"
    else:
        return f"corrupt JSON at {where}: {exc.msg.removesuffix(' at')}"
    kept = text.rstrip()
    line = kept.count("\n") + 1
    column = len(kept) - kept.rfind("\n")
    return f"truncated JSON: the text ends early at line {line}, column {column} ({cut})"


def _foreign_hint(doc: Any) -> str:
    if isinstance(doc, Mapping):
        if "benchmarks" in doc and "machine_info" in doc:
            return " (it looks like a pytest-benchmark file)"
        keys = ", ".join(sorted(str(k) for k in doc)[:6])
        return f" (top-level keys: {keys})" if keys else " (an empty object)"
    return f" (top level is a JSON {type(doc).__name__}, not an object)"


def check_report(doc: Any, path: Path | str) -> dict[str, Any]:
    """Validate an already parsed document as a report read from ``path``."""
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise ReportError(path, f"not a pytest-edgeenergy report{_foreign_hint(doc)}")
    tool = doc.get("tool")
    if isinstance(tool, Mapping) and tool.get("name") not in (None, TOOL_NAME):
        raise ReportError(path, f"not a pytest-edgeenergy report (written by {tool.get('name')})")
    version = doc["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ReportError(path, f"schema_version {version!r} is not a positive integer")
    if version > SCHEMA_VERSION:
        raise ReportError(
            path,
            f"written by a newer pytest-edgeenergy (schema {version}); "
            f"this version reads {SCHEMA_VERSION}",
        )
    try:
        validate(doc)
    except SchemaError as exc:
        raise ReportError(path, str(exc)) from None
    if doc["simulated"] != doc["device"]["simulated"]:
        raise ReportError(path, "'simulated' disagrees with 'device.simulated'")
    if version < SCHEMA_VERSION:
        migrate(doc)
    check_numbers(doc, path)
    return doc


# -- the numbers of a report: finite, of the sign their metric has, stats from samples -----

POSITIVE_METRICS = frozenset(
    {
        "energy_j",
        "energy_per_item",
        "power_mean",
        "power_peak",
        "duration_s",
        "edp",
        "latency_mean",
        "latency_p50",
        "latency_p90",
        "latency_p99",
        "throughput",
        "energy_per_prefill_token_j",
        "energy_per_decode_token_j",
        "energy_per_request_j",
        "time_to_first_token_s",
        "decode_tokens_per_s",
        "latency_per_output_token_p50_s",
        "latency_per_output_token_p90_s",
    }
)
"""Gross energy, time, power and rates: a measured value is > 0 (also behind a ``LABEL.``
prefix). Net energies (``energy_net_j``, ``*_net*``) may be below zero, and other metrics
have no sign rule."""
NON_NEGATIVE_METRICS = frozenset({"memory_peak", "memory_board_used", "memory_cuda_peak"})
"""Metrics that may be 0 but never below; so is a rail's energy, ``energy_j.RAIL`` (a rail
that is switched off reads 0)."""

STATS_REL_TOL = 1e-6
"""How far a report's ``stats`` may be from the figures recomputed from its ``samples``
(relative, of the samples' largest magnitude below it): rounding, never a different run."""

_POSITIVE, _NON_NEGATIVE = "positive", "non-negative"


def sign_rule(name: str) -> str | None:
    """``"positive"``, ``"non-negative"`` or None (any sign) for a metric name."""
    parts = name.split(".")
    if "energy_j" in parts[:-1]:
        return _NON_NEGATIVE  # energy_j.RAIL
    last = parts[-1]
    if last in POSITIVE_METRICS:
        return _POSITIVE
    return _NON_NEGATIVE if last in NON_NEGATIVE_METRICS else None


def _word(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)


def _is_finite(x: float) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer beyond any float
        return False


def _bad_number(x: float, rule: str | None) -> str | None:
    """Why ``x`` cannot be a value of a metric with ``rule``, or None."""
    if not _is_finite(x):
        what = _word(x) if isinstance(x, float) else "beyond any float"
        return f"is {what}; a report holds finite numbers only"
    if rule == _POSITIVE and x <= 0:
        return f"is {x!r}; a measured energy, time, power or rate is > 0"
    if rule == _NON_NEGATIVE and x < 0:
        return f"is {x!r}; this metric is never below 0"
    return None


_STATS = operator.itemgetter("n", "min", "max", "mean", "median", "stdev", "ci95_low", "ci95_high")
_EPS = sys.float_info.epsilon


def _fast_ok(metric: Mapping[str, Any], rule: str | None) -> bool:
    """True for the usual metric, as the writer makes it, by cheap checks only (reports of
    thousands of results are checked at every load); False sends it to :func:`_problem`,
    which words what is wrong, if anything."""
    samples = metric["samples"]
    stats = metric["stats"]
    value = metric["value"]
    if value is not None:
        try:
            if not math.isfinite(value):
                return False
        except OverflowError:
            return False
        if rule is not None and (value <= 0 if rule is _POSITIVE else value < 0):
            return False
    if not samples or stats is None:
        return not samples and stats is None
    try:
        # Finite only when every sample is: NaN stays NaN, an infinity stays or raises.
        total = math.fsum(samples)
    except (OverflowError, ValueError):
        return False
    if not math.isfinite(total):
        return False
    xs = sorted(samples)
    lo, hi = xs[0], xs[-1]
    if rule is not None and (lo <= 0 if rule is _POSITIVE else lo < 0):
        return False
    n_, min_, max_, mean_, median_, sd, ci_low, ci_high = _STATS(stats)
    n = len(xs)
    if n_ != n or min_ != lo or max_ != hi:
        return False
    mean = total / n
    mid = n >> 1
    median = xs[mid] if n & 1 else (xs[mid - 1] + xs[mid]) * 0.5
    scale: float = hi if hi > -lo else -lo
    tol = STATS_REL_TOL * scale
    if not (abs(mean_ - mean) <= tol and abs(median_ - median) <= tol):
        return False
    if n < 2:
        return (sd is None or sd == 0) and ci_low is None and ci_high is None
    if sd is None or not sd >= 0:
        return False
    if not (ci_low is None or math.isfinite(ci_low)) or not (
        ci_high is None or math.isfinite(ci_high)
    ):
        return False
    # sd**2 against the variance from the sums (no list of deviations): within tol of the
    # stdev, allowing for the rounding of the sums.
    try:
        var = (math.fsum(map(operator.mul, xs, xs)) - n * mean * mean) / (n - 1)
    except OverflowError:  # huge values: the exact check words it (or accepts them)
        return False
    spread: float = sd
    return abs(spread * spread - var) <= tol * (2.0 * spread + tol) + 8.0 * n * _EPS * scale * scale


def _problem(metric: Mapping[str, Any], rule: str | None) -> str | None:
    """Why a metric's numbers cannot be judged, worded; None when they can (what
    :func:`_fast_ok` refused only by its exact comparisons)."""
    samples = metric["samples"]
    for i, x in enumerate(samples):
        bad = _bad_number(x, rule)
        if bad is not None:
            return f"sample {i} {bad}"
    value = metric["value"]
    if value is not None:
        bad = _bad_number(value, rule)
        if bad is not None:
            return f"value {bad}"
    stats = metric["stats"]
    for key in ("mean", "median", "min", "max", "stdev", "ci95_low", "ci95_high"):
        x = stats.get(key) if stats else None
        if x is not None and not _is_finite(x):
            return f"stats.{key} {_bad_number(x, None)}"
    return _stats_problem(samples, stats)


def _stats_problem(samples: Sequence[float], stats: Mapping[str, Any] | None) -> str | None:
    """How ``stats`` differ from :func:`.model.compute_stats` of ``samples``, or None."""
    if stats is None or not samples:
        if stats is None and not samples:
            return None
        if stats is None:
            return f"has {counted(len(samples), 'sample')} but no stats"
        return f"has stats of {counted(stats['n'], 'sample')} but no samples"
    own = compute_stats(samples)
    assert own is not None  # finite samples, checked first
    if stats["n"] != own["n"]:
        verb = "is" if own["n"] == 1 else "are"
        return f"stats.n is {stats['n']} but there {verb} {counted(own['n'], 'sample')}"
    scale = max(abs(own["min"]), abs(own["max"]))
    for key in ("min", "max", "mean", "median", "stdev"):
        claimed, recomputed = stats[key], own[key]
        if key == "stdev" and own["n"] < 2:
            if claimed not in (None, 0):
                return f"stats.stdev is {claimed!r} but one sample has no spread"
        elif not _close(claimed, recomputed, STATS_REL_TOL * scale):
            return (
                f"stats.{key} is {claimed!r} but the samples give {recomputed!r} "
                "(stats must follow from the samples)"
            )
    return None


def _close(claimed: float | None, recomputed: float | None, tol: float) -> bool:
    """Within ``tol``; None (a spread beyond any float) only as None."""
    if claimed is None or recomputed is None:
        return claimed is recomputed
    return abs(claimed - recomputed) <= tol


def check_numbers(doc: Mapping[str, Any], path: Path | str) -> None:
    """Raise :class:`ReportError` naming the test and metric whose numbers cannot be judged:
    a non-finite number, a value of the wrong sign (:func:`sign_rule`; checked for passed
    results, the ones a gate judges), or ``stats`` that do not follow from ``samples``."""
    rules: dict[str, str | None] = {}
    for test in doc["tests"]:
        passed = test["status"] == "passed"
        for name, metric in test["metrics"].items():
            if name not in rules:
                rules[name] = sign_rule(name)
            rule = rules[name] if passed else None
            if _fast_ok(metric, rule):
                continue
            problem = _problem(metric, rule)
            if problem is not None:
                raise ReportError(path, f"test {test['id']}: metric {name}: {problem}")
        duration = test["duration_s"]
        if duration is not None and not _is_finite(duration):
            raise ReportError(path, f"test {test['id']}: duration_s {_bad_number(duration, None)}")
    idle = doc["idle"]
    if idle is not None:
        for key, x in (("power_w", idle["power_w"]), *idle["rails_w"].items()):
            if not _is_finite(x):
                raise ReportError(path, f"idle {key} {_bad_number(x, None)}")


def _v1_metric_name(name: str) -> str:
    """A version 1 energy-fixture metric name as version 2 spells it."""
    head, dot, last = name.rpartition(".")
    if last == "duration":
        return f"{head}{dot}duration_s"
    prefix, rail_mark, rest = name.partition("rail.")
    if rail_mark and (not prefix or prefix.endswith(".")) and rest.endswith(".energy_j"):
        return f"{prefix}energy_j.{rest[: -len('.energy_j')]}"
    return name


def migrate(doc: dict[str, Any]) -> dict[str, Any]:
    """Bring a validated report of an older ``schema_version`` to the current one, in place.

    Version 1 named the ``energy`` fixture's metrics ``duration`` and ``rail.RAIL.energy_j``
    (``LABEL.`` prefixed for later window labels); version 2 names them as ``edge_bench``
    does: ``duration_s`` and ``energy_j.RAIL``.
    """
    if doc["schema_version"] == 1:
        for test in doc["tests"]:
            metrics = test["metrics"]
            if any(n.endswith("duration") or "rail." in n for n in metrics):
                test["metrics"] = {_v1_metric_name(n): m for n, m in metrics.items()}
        doc["schema_version"] = 2
    return doc


def load_report(path: Path | str) -> dict[str, Any]:
    """Read and validate one report; :class:`ReportError` names the file and the problem.

    A report with no tests loads fine (see :func:`require_tests`); a newer
    ``schema_version`` is refused.
    """
    return check_report(read_json(Path(path)), path)


def require_tests(report: Mapping[str, Any], path: Path | str) -> None:
    """Raise :class:`ReportError` when a report holds no test results."""
    if not report["tests"]:
        raise ReportError(path, "has no test results (the session finished no test)")


def version_notes(reports: Sequence[tuple[Path | str, Mapping[str, Any]]]) -> list[str]:
    """Remarks worth showing about a set of reports: differing tool versions, unfinished runs."""
    notes = []
    versions = {str(p): r["tool"]["version"] for p, r in reports}
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{p} {v}" for p, v in versions.items())
        notes.append(f"reports come from different pytest-edgeenergy versions: {listed}")
    for p, r in reports:
        if r.get("finished_at") is None:
            notes.append(f"{p}: the run did not finish (interrupted or still running)")
    return notes


def long_rows(report: Mapping[str, Any], source: str = "") -> list[dict[str, Any]]:
    """One dict per test x metric with the columns of :data:`LONG_COLUMNS`."""
    device = report["device"]
    base = {
        "source": source,
        "run_id": report["run_id"],
        "device_fingerprint": device["fingerprint"],
        "device_model": device.get("model"),
        "device": device_label(device),
        "simulated": bool(report["simulated"]),
    }
    rows: list[dict[str, Any]] = []
    for test in report["tests"]:
        params = test.get("params") or {}
        validity = test.get("validity")
        test_part = {
            **base,
            "test_id": test["id"],
            "workload": workload_of(test),
            "batch_size": params.get("batch_size"),
            "graph_mode": params.get("graph_mode"),
            "precision": params.get("precision"),
            "op": op_label(op_key(params)),
            "params": params_key(params),
            "power_mode": op_value(params, "power_mode"),
            "cpu_freq_hz": op_value(params, "cpu_freq_hz"),
            "gpu_freq_hz": op_value(params, "gpu_freq_hz"),
            "emc_freq_hz": op_value(params, "emc_freq_hz"),
            "dvfs": is_dvfs(params),
            "status": test["status"],
            "valid": validity["valid"] if validity else None,
        }
        for name, metric in test["metrics"].items():
            stats = metric.get("stats") or {}
            rows.append(
                {
                    **test_part,
                    "metric": name,
                    "unit": metric["unit"],
                    "value": metric["value"],
                    "mean": stats.get("mean"),
                    "median": stats.get("median"),
                    "stdev": stats.get("stdev"),
                    "n": stats.get("n"),
                    "samples": list(metric.get("samples") or ()),
                }
            )
    return rows


def frame_from_rows(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """A long DataFrame with exactly :data:`LONG_COLUMNS` (also when there are no rows)."""
    require("pandas", "analysis", "the long table of reports (report.load.load, plots)")
    import pandas as pd

    frame = pd.DataFrame(list(rows), columns=list(LONG_COLUMNS))
    for column in ("cpu_freq_hz", "gpu_freq_hz", "emc_freq_hz", "value", "mean", "median"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    frame["batch_size"] = pd.to_numeric(frame["batch_size"], errors="coerce").astype("Int64")
    return frame


def load(paths: Iterable[Path | str]) -> pd.DataFrame:
    """Load reports into one long DataFrame (columns: :data:`LONG_COLUMNS`).

    Every file is validated first (:class:`ReportError` on the first bad one); reports
    without tests contribute no rows.
    """
    rows: list[dict[str, Any]] = []
    for path in paths:
        rows.extend(long_rows(load_report(path), str(path)))
    return frame_from_rows(rows)
