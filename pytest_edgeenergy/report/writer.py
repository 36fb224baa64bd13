"""Write a report to disk after every finished test, atomically.

Each write replaces the whole file (temp file in the same directory, flush, fsync,
``os.replace``, fsync of the directory), so a process killed at any moment leaves either the
previous or the new complete report, never a torn one.

Cost: every write is O(report size). Test entries are serialised once, when added, and kept
as compact JSON strings, so a write is a join and a disk write, not a re-serialisation; n
tests still write O(n²) bytes in total (a 2,000-test report of ~1 KiB entries rewrites ~2 MiB
at its last test). That is negligible next to measurement windows of seconds per test and
buys a report that is valid JSON at every instant; an append-only journal would be cheaper
but would need a repair step after a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_edgeenergy.report.model import utc_timestamp
from pytest_edgeenergy.report.schema import SchemaError, validate

from ..errors import EdgeEnergyError


class ReportExistsError(EdgeEnergyError, FileExistsError):
    """The report path already holds a different report and overwriting was not asked for."""


def default_report_path(reports_dir: Path, device_slug: str, now: datetime) -> Path:
    """``reports_dir/<device>-<YYYYmmdd-HHMMSS>.json`` (UTC), with ``-2``, ``-3``... added when
    that name is taken, so an existing report is never chosen."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", device_slug).strip("-.") or "device"
    stamp = utc_timestamp(now)[:19].replace("-", "").replace(":", "").replace("T", "-")
    candidate = reports_dir / f"{slug}-{stamp}.json"
    counter = 2
    while candidate.exists():
        candidate = reports_dir / f"{slug}-{stamp}-{counter}.json"
        counter += 1
    return candidate


def _dumps(obj: Any, what: str) -> str:
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"{what} cannot be written as JSON: {exc}") from exc


def atomic_write_text(path: Path, parts: list[str]) -> None:
    """Replace ``path`` with the concatenation of ``parts``, atomically and durably."""
    directory = path.parent
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(parts)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename is still atomic
    finally:
        os.close(dir_fd)


class ReportWriter:
    """Keeps one report file up to date while a session runs.

    The file is first written by the first :meth:`add_test` (or :meth:`update_header`,
    :meth:`finish`), so a session that records no test leaves no file; then after each
    test and by :meth:`finish`. An existing file at ``path`` is refused at construction
    (:class:`ReportExistsError`) unless ``overwrite`` is true or it holds the same
    ``run_id`` (then its tests are kept and the session resumes).
    """

    def __init__(self, path: Path, header: Mapping[str, Any], *, overwrite: bool = False) -> None:
        if "tests" in header:
            raise SchemaError("report header must not contain 'tests'; add them with add_test()")
        self._path = Path(path)
        self._header: dict[str, Any] = dict(header)
        self._header.setdefault("finished_at", None)
        validate({**self._header, "tests": []})
        self._chunks: list[str] = []
        self._resume_or_refuse(overwrite)
        self._path.parent.mkdir(parents=True, exist_ok=True)

    def _resume_or_refuse(self, overwrite: bool) -> None:
        if overwrite or not self._path.exists():
            return
        from pytest_edgeenergy.report.load import ReportError, load_report

        try:
            existing = load_report(self._path)
        except ReportError as exc:
            raise ReportExistsError(
                f"{self._path}: exists and is not a report this run can continue ({exc}); "
                "choose another path, or pass --edge-report-overwrite to replace it"
            ) from exc
        if existing["run_id"] != self._header["run_id"]:
            raise ReportExistsError(
                f"{self._path}: exists and holds another run ({existing['run_id']}); "
                "choose another path, or pass --edge-report-overwrite to replace it"
            )
        self._chunks = [_dumps(t, "test entry") for t in existing["tests"]]

    @property
    def path(self) -> Path:
        return self._path

    @property
    def header(self) -> dict[str, Any]:
        """A copy of the current header (everything but ``tests``)."""
        return dict(self._header)

    @property
    def test_count(self) -> int:
        return len(self._chunks)

    def add_test(self, entry: Mapping[str, Any]) -> None:
        """Validate one finished test's entry and rewrite the report with it appended."""
        test_id = entry.get("id", "?")
        try:
            validate(entry, "test")
        except SchemaError as exc:
            raise SchemaError(f"test {test_id}: {exc}") from exc
        self._chunks.append(_dumps(entry, f"test {test_id}"))
        try:
            self._write()
        except BaseException:
            self._chunks.pop()  # keep memory and disk in step
            raise

    def update_header(self, **fields: Any) -> None:
        """Change header fields (e.g. ``idle`` measured after the session started)."""
        if "tests" in fields:
            raise SchemaError("use add_test() to add tests")
        candidate = {**self._header, **fields}
        validate({**candidate, "tests": []})
        self._header = candidate
        self._write()

    def finish(self, finished_at: datetime | None = None) -> Path:
        """Set ``finished_at`` (now by default), write the final report and return its path."""
        self._header["finished_at"] = utc_timestamp(finished_at)
        self._write()
        return self._path

    def _write(self) -> None:
        head = _dumps(self._header, "report header")
        parts = [head[:-1], ',"tests":[\n']
        last = len(self._chunks) - 1
        for i, chunk in enumerate(self._chunks):
            parts.append(chunk)
            parts.append(",\n" if i < last else "\n")
        parts.append("]}\n")
        atomic_write_text(self._path, parts)
