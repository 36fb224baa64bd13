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

import gc
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_edgeenergy.extras import require
from pytest_edgeenergy.report.keys import (
    is_dvfs,
    op_key,
    op_label,
    op_value,
    params_key,
    workload_of,
)
from pytest_edgeenergy.report.model import TOOL_NAME, device_label
from pytest_edgeenergy.report.schema import SCHEMA_VERSION, SchemaError, validate

from ..errors import EdgeEnergyError

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


def _optional_orjson() -> Callable[[bytes], Any] | None:
    try:
        import orjson  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    loads: Callable[[bytes], Any] = orjson.loads
    return loads


# orjson (optional, the ``analysis`` extra) parses reports about 2.5x faster than json. Every
# document it accepts json accepts alike, except integers beyond 64 bits, which it reads as
# floats: a file with a run of 19 digits (only such integers have one: floats are written
# with at most 17) goes to json. What orjson refuses (NaN, 1e400, lone surrogates, bad
# bytes) goes to json too, which accepts it or words the error as before.
_orjson_loads = _optional_orjson()
_LONG_DIGITS = re.compile(rb"\d{19}")


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


def _read_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ReportError(path, "no such file") from None
    except IsADirectoryError:
        raise ReportError(path, "is a directory, not a report file") from None
    except OSError as exc:
        raise ReportError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise ReportError(path, "is empty (0 bytes of JSON); the writer never left it so")
    if _orjson_loads is not None and _LONG_DIGITS.search(raw) is None:
        try:
            with gc_paused():
                return _orjson_loads(raw)
        except ValueError:  # orjson.JSONDecodeError; json below words the error
            pass
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
            return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(path, _json_problem(text, exc)) from None


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
    return doc


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
    return check_report(_read_json(Path(path)), path)


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
