"""Write a report to disk after every finished test, atomically, and lose nothing.

Each write replaces the whole file (temp file in the same directory, flush, fsync,
``os.replace``, fsync of the directory), so a process killed at any moment leaves either the
previous or the new complete report, never a torn one. SIGINT/SIGTERM are held while a write
is in flight: a Ctrl-C lands after the write, never in its middle, so the test it carried is
kept. Temp files are named ``.<report>.<pid>.*.tmp``; those a killed process left are removed
when the next writer opens the same directory.

A write that fails (disk full, a read-only remount) loses nothing: every result stays in
memory and the next write tries to put them all on disk again; meanwhile a rescue copy with
every result goes to another directory (:func:`rescue_dirs`). When the final write fails the
file on disk is left unfinished (``finished_at`` null), marked ``incomplete`` when that can
still be written, and :meth:`ReportWriter.finish` raises :class:`ReportIncomplete` naming how
many results are missing and where the rescue copy is.

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
from ..safefs import remove_stale_temps, signals_held, temp_name

RESCUE_DIR_ENV = "EDGEENERGY_RESCUE_DIR"


class ReportExistsError(EdgeEnergyError, FileExistsError):
    """The report path already holds a different report and overwriting was not asked for."""


class ReportWriteError(EdgeEnergyError, OSError):
    """The report could not be written now; every result is still held (and rescued)."""


class ReportIncomplete(EdgeEnergyError, OSError):
    """The finished report could not be written: the file on disk lacks ``missing`` of the
    run's ``total`` results; ``rescue`` is the copy holding all of them (None when no
    directory could take it)."""

    def __init__(
        self, path: Path, missing: list[str], total: int, reason: str, rescue: Path | None
    ) -> None:
        self.path = path
        self.missing = missing
        self.total = total
        self.reason = reason
        self.rescue = rescue
        kept = (
            f"every result was saved to {rescue}"
            if rescue is not None
            else "no rescue copy could be written anywhere"
        )
        super().__init__(
            f"{len(missing)} of {total} results are not in the report {path} ({reason}); {kept}"
        )


def rescue_dirs() -> list[Path]:
    """Where a rescue copy may go, in order: ``$EDGEENERGY_RESCUE_DIR``, the temp directory,
    the working directory, the home directory."""
    dirs = [os.environ.get(RESCUE_DIR_ENV), tempfile.gettempdir(), os.getcwd(), Path.home()]
    return list(dict.fromkeys(Path(d) for d in dirs if d))


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
    """Replace ``path`` with the concatenation of ``parts``, atomically and durably; SIGINT
    and SIGTERM wait until the file is in place (or the write has failed and its temp file
    is gone)."""
    directory = path.parent
    with signals_held():
        fd, tmp_name = tempfile.mkstemp(prefix=temp_name(path), suffix=".tmp", dir=directory)
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
        _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
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


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


class ReportWriter:
    """Keeps one report file up to date while a session runs, losing no result.

    The file is first written by the first :meth:`add_test` (or :meth:`update_header`,
    :meth:`finish`), so a session that records no test leaves no file; then after each
    test and by :meth:`finish`. An existing file at ``path`` is refused at construction
    (:class:`ReportExistsError`) unless ``overwrite`` is true or it holds the same
    ``run_id`` (then its tests are kept and the session resumes). A failed write keeps
    every result in memory (see the module docstring): :attr:`missing` lists what the file
    on disk lacks, :attr:`rescue` the copy that holds everything.
    """

    def __init__(
        self,
        path: Path,
        header: Mapping[str, Any],
        *,
        overwrite: bool = False,
        overwrite_hint: str = "pass --edge-report-overwrite",
    ) -> None:
        if "tests" in header:
            raise SchemaError("report header must not contain 'tests'; add them with add_test()")
        self._path = Path(path)
        self._header: dict[str, Any] = dict(header)
        self._header.setdefault("finished_at", None)
        validate({**self._header, "tests": []})
        self._chunks: list[str] = []
        self._ids: list[str] = []
        self._on_disk = 0
        """How many of the tests the file on disk holds (after the last good write)."""
        self.failure: str | None = None
        """Why the last write failed; None after a good one."""
        self.failed_writes = 0
        self.rescue: Path | None = None
        self._overwrite_hint = overwrite_hint
        """How the front end asks for ``overwrite`` (named when a file is refused)."""
        self._resume_or_refuse(overwrite)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(self._path.parent, suffix=".json")

    def _resume_or_refuse(self, overwrite: bool) -> None:
        if overwrite or not self._path.exists():
            return
        from pytest_edgeenergy.report.load import ReportError, load_report

        try:
            existing = load_report(self._path)
        except ReportError as exc:
            raise ReportExistsError(
                f"{self._path}: exists and is not a report this run can continue ({exc}); "
                f"choose another path, or {self._overwrite_hint} to replace it"
            ) from exc
        if existing["run_id"] != self._header["run_id"]:
            raise ReportExistsError(
                f"{self._path}: exists and holds another run ({existing['run_id']}); "
                f"choose another path, or {self._overwrite_hint} to replace it"
            )
        self._chunks = [_dumps(t, "test entry") for t in existing["tests"]]
        self._ids = [str(t.get("id", "?")) for t in existing["tests"]]
        self._on_disk = len(self._chunks)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def header(self) -> dict[str, Any]:
        """A copy of the current header (everything but ``tests``)."""
        return dict(self._header)

    @property
    def test_count(self) -> int:
        """Every test added (written to disk or not)."""
        return len(self._chunks)

    @property
    def missing(self) -> list[str]:
        """Ids of the tests the file on disk lacks (empty when it is up to date)."""
        return self._ids[self._on_disk :] if self.failure is not None else []

    def add_test(self, entry: Mapping[str, Any]) -> None:
        """Validate one finished test's entry and rewrite the report with it appended;
        :class:`ReportWriteError` when the file could not be written (the entry is kept and
        goes to disk with the next good write)."""
        test_id = entry.get("id", "?")
        try:
            validate(entry, "test")
        except SchemaError as exc:
            raise SchemaError(f"test {test_id}: {exc}") from exc
        self._chunks.append(_dumps(entry, f"test {test_id}"))
        self._ids.append(str(test_id))
        self._write_or_rescue()

    def update_header(self, **fields: Any) -> None:
        """Change header fields (e.g. ``idle`` measured after the session started)."""
        if "tests" in fields:
            raise SchemaError("use add_test() to add tests")
        candidate = {**self._header, **fields}
        validate({**candidate, "tests": []})
        self._header = candidate
        self._write_or_rescue()

    def finish(self, finished_at: datetime | None = None) -> Path:
        """Set ``finished_at`` (now by default), write the final report and return its path;
        :class:`ReportIncomplete` when that write failed (the file on disk then stays
        unfinished and, where it can still be written, says what it lacks)."""
        self._header["finished_at"] = utc_timestamp(finished_at)
        try:
            self._write_or_rescue()
        except ReportWriteError:
            missing = self._ids[self._on_disk :]
            assert self.failure is not None
            self._mark_incomplete(missing)
            raise ReportIncomplete(
                self._path, missing, len(self._ids), self.failure, self.rescue
            ) from None
        return self._path

    def document(self) -> str:
        """The whole report as it stands in memory (every result), as JSON text."""
        return "".join(self._parts(self._header, self._chunks))

    def _write_or_rescue(self) -> None:
        try:
            atomic_write_text(self._path, self._parts(self._header, self._chunks))
        except OSError as exc:
            self.failure = _reason(exc)
            self.failed_writes += 1
            self.rescue = self._write_rescue()
            where = f"; every result so far is in {self.rescue}" if self.rescue else ""
            raise ReportWriteError(
                f"{self._path}: not written ({self.failure}); {self.test_count - self._on_disk} "
                f"result(s) held in memory{where}"
            ) from exc
        self._on_disk = len(self._chunks)
        self.failure = None
        if self.rescue is not None:  # the report caught up: the copy is no longer needed
            with contextlib.suppress(OSError):
                self.rescue.unlink()
            self.rescue = None

    def _write_rescue(self) -> Path | None:
        """The full report into the first rescue directory that takes it (never the
        report's own directory, which just failed)."""
        name = f"edgeenergy-rescue-{self._header.get('run_id', 'run')}.json"
        for directory in rescue_dirs():
            if directory.resolve() == self._path.parent.resolve():
                continue
            target = directory / name
            try:
                atomic_write_text(target, self._parts(self._header, self._chunks))
            except OSError:
                continue
            return target
        return None

    def _mark_incomplete(self, missing: list[str]) -> None:
        """Best effort: rewrite the file on disk (the tests it holds) saying what it lacks
        and where the rescue copy is, unfinished. Nothing happens if that fails too."""
        assert self.failure is not None
        marked = {
            **self._header,
            "finished_at": None,
            "incomplete": {
                "missing": len(missing),
                "tests": missing,
                "reason": f"the report could not be written ({self.failure})",
                "rescue": str(self.rescue) if self.rescue is not None else None,
            },
        }
        with contextlib.suppress(OSError, SchemaError):
            atomic_write_text(self._path, self._parts(marked, self._chunks[: self._on_disk]))

    @staticmethod
    def _parts(header: Mapping[str, Any], chunks: list[str]) -> list[str]:
        head = _dumps(dict(header), "report header")
        parts = [head[:-1], ',"tests":[\n']
        last = len(chunks) - 1
        for i, chunk in enumerate(chunks):
            parts.append(chunk)
            parts.append(",\n" if i < last else "\n")
        parts.append("]}\n")
        return parts
