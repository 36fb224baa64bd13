"""The history store: every result of every report, in SQLite or PostgreSQL.

One code path for both through SQLAlchemy 2 Core: SQLite (the standard library's driver)
for one board or one laptop, PostgreSQL (psycopg 3) when several runners write at once.
A run's ``run_id`` is its key: adding a report twice changes nothing. Each report is added
in one transaction; the run row is inserted with ``ON CONFLICT DO NOTHING``, so concurrent
writers of the same report neither fail nor duplicate (PostgreSQL makes the second wait
on the first's row). SQLite writers take the write lock at ``BEGIN IMMEDIATE`` and wait
up to :data:`SQLITE_BUSY_TIMEOUT_S` for each other instead of failing.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from pytest_edgeenergy.extras import require
from pytest_edgeenergy.history import schema
from pytest_edgeenergy.history.errors import HistoryError, NoHistory, SchemaTooNew
from pytest_edgeenergy.inputfiles import InputFileError, kind_of, stat_input
from pytest_edgeenergy.redact import (
    hide_values,
    redact_argv,
    redact_text,
    redact_value,
    secret_name,
)
from pytest_edgeenergy.report.keys import op_key, test_name
from pytest_edgeenergy.report.load import ReportError, check_report, read_json
from pytest_edgeenergy.report.model import device_label

DB_ENV = "EDGEENERGY_DB"
DEFAULT_DB = Path("reports") / "energy.db"
SQLITE_BUSY_TIMEOUT_S = 30.0
_ALLOWED = "a file path, sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DB"


@dataclass(frozen=True)
class AddResult:
    """What :meth:`HistoryStore.add_report` did: ``added`` is False when the run was there;
    ``results`` counts the rows stored (one per test x metric), ``tests`` the tests."""

    run_id: str
    added: bool
    results: int
    tests: int = 0


@dataclass(frozen=True)
class SeriesPoint:
    run_id: str
    started_at: datetime
    commit: str | None
    branch: str | None
    value: float


@dataclass(frozen=True)
class Series:
    """One metric of one test at one operating point on one device, oldest run first.

    ``device`` is the device fingerprint (the key); ``device_label`` its readable name.
    """

    device: str
    point: str
    test: str
    metric: str
    unit: str | None
    points: tuple[SeriesPoint, ...]
    device_label: str = ""


def database_url(db: str | Path | None) -> sa.URL:
    """The SQLAlchemy URL of ``db``: None means ``$EDGEENERGY_DB``, else ``reports/energy.db``;
    a path or ``sqlite:///PATH`` is SQLite, ``postgresql://`` PostgreSQL through psycopg 3."""
    if db is None:
        db = os.environ.get(DB_ENV) or DEFAULT_DB
    if isinstance(db, Path):
        return sa.URL.create("sqlite", database=str(db))
    text = db.strip()
    if not text:
        raise HistoryError(f"empty history database name: give {_ALLOWED}")
    sep = text.partition("://")[1]
    if not sep:
        return sa.URL.create("sqlite", database=text)
    try:
        url = sa.make_url(text)
    except (sa.exc.ArgumentError, ValueError) as e:  # ValueError: a port that is no number
        raise HistoryError(
            f"history database URL {redact_text(text)!r} is not a URL: {redact_text(str(e))}"
        ) from None
    backend = url.get_backend_name()
    if backend == "sqlite" and url.get_driver_name() == "pysqlite":
        if not url.database or url.database == ":memory:":
            raise HistoryError(
                f"history database {redact_text(text)!r} names no file: give sqlite:///PATH"
            )
        return url
    if backend in ("postgresql", "postgres"):
        if url.drivername not in ("postgresql", "postgres", "postgresql+psycopg"):
            raise HistoryError(
                f"history database URL {redact_text(text)!r}: only the psycopg driver is supported "
                "(postgresql:// or postgresql+psycopg://)"
            )
        return url.set(drivername="postgresql+psycopg")
    raise HistoryError(f"history database {redact_text(text)!r} is not supported: give {_ALLOWED}")


def display_name(url: sa.URL) -> str:
    """How messages and the page name the database: the file, or the URL without its
    password (in the user part or the query: ``?password=``)."""
    if url.get_backend_name() == "sqlite":
        return str(url.database)
    return redact_text(url.render_as_string(hide_password=True))


def _secrets(url: sa.URL) -> list[str]:
    """The passwords ``url`` gives the driver (its own and a query's ``password=``)."""
    found = [url.password] if url.password else []
    for name, value in url.query.items():
        if secret_name(name):
            found += [value] if isinstance(value, str) else list(value)
    return [str(v) for v in found if v]


def open_store(db: str | Path | None = None, *, create: bool = True) -> HistoryStore:
    """Open the history database ``db``, migrating it forward as needed.

    ``create`` (what adds runs: ``history add``, ``--edge-history-add``) also makes a
    database that is not there yet. Without it (what only reads the history) no file,
    directory or schema is ever made: a database that is missing or holds no history is
    a :class:`~.errors.NoHistory` naming it and how to create it."""
    try:
        return HistoryStore(database_url(db), create=create)
    except NoHistory as e:
        if db is None and not os.environ.get(DB_ENV):
            raise NoHistory(
                f"{e} (the default database; name another with --db or ${DB_ENV})"
            ) from None
        raise


class HistoryStore:
    """A connection to the history database; a context manager that closes it."""

    def __init__(self, url: sa.URL, *, create: bool = True) -> None:
        self.url = url
        self.name = display_name(url)
        self._secrets = _secrets(url)
        self.dialect = url.get_backend_name()
        self._create = create
        self.created = False
        """Whether opening made the history (its tables): a new database, or an empty one."""
        if self.dialect == "sqlite":
            path = Path(str(url.database))
            if _sqlite_file(path, self.name, create=create):
                path.parent.mkdir(parents=True, exist_ok=True)
            else:  # only an existing file: sqlite makes a missing one on connect
                url = url.set(
                    database=f"file:{urllib.parse.quote(os.path.abspath(path))}",
                    query={**url.query, "mode": "rw", "uri": "true"},
                )
            self.engine = sa.create_engine(
                url,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S},
                poolclass=sa.pool.NullPool,
            )
            sa.event.listen(self.engine, "connect", _sqlite_connect)
            sa.event.listen(self.engine, "begin", _sqlite_begin)
        else:
            require("psycopg", "history", f"the PostgreSQL history database {self.name}")
            self.engine = sa.create_engine(url, pool_pre_ping=True)
        try:
            self._migrate()
        except BaseException:
            self.engine.dispose()
            raise

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _begin(self, *, write: bool) -> Any:
        """A transaction; a SQLite writer takes the write lock at its start (and waits)."""
        try:
            conn = self.engine.connect()
        except sa.exc.DBAPIError as e:
            raise self._error("cannot open", e) from None
        if write and self.dialect == "sqlite":
            conn = conn.execution_options(sqlite_immediate=True)
        return _Transaction(conn, self)

    def _error(self, doing: str, e: sa.exc.DBAPIError) -> HistoryError:
        text = str(e.orig).strip().splitlines()[0] if str(e.orig).strip() else type(e).__name__
        text = hide_values(text, self._secrets)
        return HistoryError(f"{doing} the history database {self.name}: {text}")

    def _migrate(self) -> None:
        """Bring the database to :data:`schema.SCHEMA_VERSION`; a read when it is there."""
        with self._begin(write=False) as conn:
            version = self._version(conn)
        if version is None and not self._create:
            raise NoHistory(
                f"the database {self.name} holds no energy history (no schema_version "
                f"table): {_CREATE_HINT.format(db=_quoted(self))}"
            )
        if version != schema.SCHEMA_VERSION:
            with self._begin(write=True) as conn:
                if self.dialect == "postgresql":
                    # One migrator at a time: four runners opening an empty database at once.
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(7268016)"))
                version = self._version(conn)  # again: another process may have migrated
                if version is None:
                    self.created = True
                    schema.version_table.create(conn)
                    conn.execute(schema.version_table.insert().values(version=0))
                    version = 0
                for step in schema.MIGRATIONS[version:]:
                    step(conn)
                if version < schema.SCHEMA_VERSION:
                    conn.execute(
                        schema.version_table.update().values(version=schema.SCHEMA_VERSION)
                    )
        self.version = schema.SCHEMA_VERSION

    def _version(self, conn: sa.Connection) -> int | None:
        """The database's schema version (None: no history yet); a newer one is refused."""
        # One look at the catalogue: under PostgreSQL's READ COMMITTED, separate looks could
        # miss schema_version and then see the tables another process's migration just made.
        tables = set(sa.inspect(conn).get_table_names())
        if "schema_version" not in tables:
            if tables & {"runs", "results"}:
                raise HistoryError(
                    f"the database {self.name} holds tables 'runs' or 'results' that are "
                    "not an energy history (no schema_version table): give another database"
                )
            return None
        found = conn.execute(sa.select(sa.func.max(schema.version_table.c.version)))
        version = found.scalar_one_or_none() or 0
        if version > schema.SCHEMA_VERSION:
            from pytest_edgeenergy._version import __version__

            raise SchemaTooNew(
                f"the history database {self.name} has schema version {version}; this "
                f"pytest-edgeenergy ({__version__}) reads up to version "
                f"{schema.SCHEMA_VERSION}: upgrade pytest-edgeenergy"
            )
        return int(version)

    # -- writing ---------------------------------------------------------------------

    def add_report(
        self, path: Path | str, *, branch: str | None = None, unfinished: bool = False
    ) -> AddResult:
        """Store every result of the report at ``path`` (validated and migrated on load).

        ``branch`` is recorded with the run (reports carry the commit, not the branch).
        A report whose run did not finish is refused unless ``unfinished``: added now, its
        later results would never be (the run id is already there).
        """
        doc = read_json(Path(path))
        written = doc.get("schema_version") if isinstance(doc, dict) else None
        report = check_report(doc, path)
        if report.get("finished_at") is None and not unfinished:
            raise ReportError(
                path,
                "is of a run that did not finish (finished_at is null): add it once the run "
                "has finished, or with --unfinished for an interrupted run",
            )
        run, rows = report_rows(report, branch=branch)
        if isinstance(written, int):
            run["report_schema"] = written
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        with self._begin(write=True) as conn:
            stmt = insert(schema.runs).values(run).on_conflict_do_nothing(index_elements=["run_id"])
            if self.dialect == "sqlite":  # RETURNING needs SQLite 3.35 (JetPack 5 has 3.31)
                there = conn.execute(stmt).rowcount == 0
            else:
                there = conn.execute(stmt.returning(schema.runs.c.run_id)).first() is None
            if there:
                return AddResult(run["run_id"], False, 0)
            if rows:
                conn.execute(schema.results.insert(), rows)
        return AddResult(run["run_id"], True, len(rows), len(report["tests"]))

    # -- reading ---------------------------------------------------------------------

    def run_ids(self) -> list[str]:
        """Every run id in the history, oldest run first."""
        runs = schema.runs.c
        with self._begin(write=False) as conn:
            found = conn.execute(sa.select(runs.run_id).order_by(runs.started_at, runs.run_id))
            return [row[0] for row in found]

    def metric_names(self) -> list[str]:
        """Every metric the history holds a result of, sorted."""
        metric = schema.results.c.metric
        with self._begin(write=False) as conn:
            found = conn.execute(sa.select(metric).distinct().order_by(metric))
            return [row[0] for row in found]

    def series(
        self,
        *,
        test: str | None = None,
        metric: str | None = None,
        since: datetime | None = None,
        branch: str | None = None,
        device: str | None = None,
    ) -> list[Series]:
        """Every series (device x operating point x test x metric) with its points in time
        order. ``test`` is a test id, or a pattern when it holds ``*`` or ``?``
        (:func:`id_matcher`: brackets match themselves, as in every parametrized id);
        ``device`` a device fingerprint. A point is a result with a value whose test was
        not invalid."""
        r, runs = schema.results.c, schema.runs.c
        query = (
            sa.select(
                r.device,
                r.point,
                r.test_id,
                r.metric,
                r.unit,
                r.run_id,
                r.started_at,
                runs.git_commit,
                runs.branch,
                r.value,
                runs.device_label,
            )
            .join(schema.runs, runs.run_id == r.run_id)
            .where(r.value.is_not(None), sa.or_(r.valid.is_(None), r.valid.is_(True)))
            .order_by(r.device, r.point, r.test_id, r.metric, r.unit, r.started_at, r.run_id)
        )
        if metric is not None:
            query = query.where(r.metric == metric)
        if device is not None:
            query = query.where(r.device == device)
        if since is not None:
            query = query.where(r.started_at >= _utc(since))
        if branch is not None:
            query = query.where(runs.branch == branch)
        matcher = None
        if test is not None:
            wild = [i for i, ch in enumerate(test) if ch in "*?"]
            if not wild:  # a test id, brackets and all
                query = query.where(r.test_id == test)
            else:
                head = test[: wild[0]]
                if head:  # the literal head narrows the rows read, through the index
                    query = query.where(self._starts_with(r.test_id, head))
                matcher = id_matcher(test)
        out: list[Series] = []
        with self._begin(write=False) as conn:
            current: _Key | None = None
            points: list[SeriesPoint] = []
            label = ""
            for row in conn.execute(query):
                if matcher is not None and not matcher(row[2]):
                    continue
                key = (row[0], row[1], row[2], row[3], row[4])
                if key != current:
                    if current is not None:
                        out.append(_series(current, points, label))
                    current, points, label = key, [], row[10]
                points.append(SeriesPoint(row[5], _from_db(row[6]), row[7], row[8], row[9]))
            if current is not None:
                out.append(_series(current, points, label))
        return out

    def baseline_reports(
        self, new_report: Mapping[str, Any], *, runs: int, branch: str | None = None
    ) -> list[dict[str, Any]]:
        """The newest ``runs`` runs of ``new_report``'s device (fingerprint) before it, on
        ``branch`` when given, newest first, as report documents the gate reads (header:
        device, settings, times, git; every stored result of each test). The new run itself
        is left out, so a run already added is not its own baseline."""
        runs_c = schema.runs.c
        query = (
            sa.select(schema.runs)
            .where(
                runs_c.device == new_report["device"]["fingerprint"],
                runs_c.run_id != new_report["run_id"],
                runs_c.started_at <= _parse_time(new_report["started_at"]),
            )
            .order_by(runs_c.started_at.desc(), runs_c.run_id.desc())
            .limit(runs)
        )
        if branch is not None:
            query = query.where(runs_c.branch == branch)
        with self._begin(write=False) as conn:
            headers = [dict(row._mapping) for row in conn.execute(query)]
            return self._documents(conn, headers)

    def run_reports(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Run ``run_id`` (none when it is not there), or else the newest run of each
        device, newest first, as report documents (see :meth:`baseline_reports`)."""
        runs_c = schema.runs.c
        query = sa.select(schema.runs).order_by(runs_c.started_at.desc(), runs_c.run_id.desc())
        if run_id is not None:
            query = query.where(runs_c.run_id == run_id)
        with self._begin(write=False) as conn:
            headers: list[dict[str, Any]] = []
            seen: set[str] = set()
            for row in conn.execute(query):
                header = dict(row._mapping)
                if header["device"] not in seen:
                    seen.add(header["device"])
                    headers.append(header)
            return self._documents(conn, headers)

    @staticmethod
    def _documents(
        conn: sa.Connection, headers: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The report documents of the runs ``headers`` (rows of ``runs``), in their order."""
        if not headers:
            return []
        r = schema.results.c
        tests: dict[str, dict[str, dict[str, Any]]] = {h["run_id"]: {} for h in headers}
        rows = conn.execute(
            sa.select(r.run_id, r.test_id, r.name, r.params, r.status, r.valid, r.metric,
                      r.unit, r.value, r.stats, r.samples)
            .where(r.run_id.in_(list(tests)))
            .order_by(r.id)
        )  # fmt: skip
        for run_id, test_id, name, params, status, valid, metric, unit, value, stats, samples in rows:  # noqa: E501
            test = tests[run_id].setdefault(
                test_id,
                {
                    "id": test_id,
                    "name": name,
                    "params": params or {},
                    "status": status,
                    "validity": {"valid": valid} if valid is not None else None,
                    "metrics": {},
                },
            )
            test["metrics"][metric] = {
                "unit": unit, "value": value, "stats": stats, "samples": samples or [],
            }  # fmt: skip
        return [_report_document(h, list(tests[h["run_id"]].values())) for h in headers]

    def _starts_with(self, column: sa.ColumnElement[str], head: str) -> sa.ColumnElement[bool]:
        if self.dialect == "sqlite" and ord(head[-1]) < 0x10FFFF:
            # A range, which SQLite's index serves (its LIKE is case-blind and does not);
            # right under its binary collation, where text sorts by code point.
            after = head[:-1] + chr(ord(head[-1]) + 1)
            return sa.and_(column >= head, column < after)
        return column.startswith(head, autoescape=True)


_Key = tuple[str, str, str, str, "str | None"]


def id_matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a test id matches ``pattern``: ``*`` is any text, ``?`` one character, and
    everything else itself. Not fnmatch: its ``[...]`` is a character class, and every
    parametrized id holds brackets (``*test_x[*]`` would match no ``test_x[bs8]``)."""
    parts = (".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    regex = re.compile("".join(parts), re.DOTALL)
    return lambda test_id: regex.fullmatch(test_id) is not None


def _report_document(run: Mapping[str, Any], tests: list[dict[str, Any]]) -> dict[str, Any]:
    """A stored run as the report fields the gate reads."""
    finished = run["finished_at"]
    return {
        "run_id": run["run_id"],
        "device": run["device_info"],
        "settings": run["settings"] or {},
        "simulated": run["simulated"],
        "started_at": _from_db(run["started_at"]).isoformat(),
        "finished_at": _from_db(finished).isoformat() if finished is not None else None,
        "git": {"commit": run["git_commit"], "branch": run["branch"], "dirty": run["dirty"]},
        "tests": tests,
    }


def _series(key: _Key, points: list[SeriesPoint], label: str) -> Series:
    device, point, test, metric, unit = key
    return Series(device, point, test, metric, unit, tuple(points), label)


_CREATE_HINT = (
    "a command that reads the history never creates one; `edgeenergy history init --db {db}` "
    "creates it empty, `edgeenergy history add --db {db} REPORT` (or pytest's "
    "--edge-history-add) with a run"
)


def _quoted(store: HistoryStore) -> str:
    return shlex.quote(store.name) if store.dialect == "sqlite" else "URL"


def _sqlite_file(path: Path, name: str, *, create: bool) -> bool:
    """Whether the SQLite database at ``path`` is still to be made (only when ``create``):
    an existing one must be a regular file; a missing one, for a reader, is a
    :class:`NoHistory` and a loop of links or a path through a file a :class:`HistoryError`."""
    try:
        found = stat_input(path)
    except InputFileError as e:
        raise HistoryError(f"history database {e}") from None
    if found is None:
        if create:
            return True
        hint = _CREATE_HINT.format(db=shlex.quote(name))
        raise NoHistory(f"no history database {name}: no such file; {hint}")
    if not stat.S_ISREG(found.st_mode):
        raise HistoryError(
            f"history database {name}: is {kind_of(found.st_mode)}, not a database file"
        )
    if found.st_size == 0 and not create:
        hint = _CREATE_HINT.format(db=shlex.quote(name))
        raise NoHistory(f"history database {name}: is empty (0 bytes), no history yet; {hint}")
    return False


class _Transaction:
    """A connection with one transaction: committed on success, rolled back on error;
    database errors become :class:`HistoryError` naming the database."""

    def __init__(self, conn: sa.Connection, store: HistoryStore) -> None:
        self.conn = conn
        self.store = store

    def __enter__(self) -> sa.Connection:
        try:
            self.conn.begin()
        except sa.exc.DBAPIError as e:
            self.conn.close()
            raise self.store._error("cannot use", e) from None
        return self.conn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                self.conn.commit()
            else:
                self.conn.rollback()
        except sa.exc.DBAPIError as e:
            if exc_type is None:
                raise self.store._error("cannot write to", e) from None
        finally:
            self.conn.close()
        if isinstance(exc, sa.exc.DBAPIError):
            raise self.store._error("cannot use", exc) from None


def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    # Transactions are begun by _sqlite_begin, not by the driver (SQLAlchemy's recipe).
    dbapi_conn.isolation_level = None
    dbapi_conn.execute("PRAGMA foreign_keys = ON")


def _sqlite_begin(conn: sa.Connection) -> None:
    immediate = conn.get_execution_options().get("sqlite_immediate", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _parse_time(text: str) -> datetime:
    # Python 3.10's fromisoformat does not read the "Z" the reports write.
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return _utc(datetime.fromisoformat(text))


def _utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive one is taken as UTC."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _from_db(moment: datetime) -> datetime:
    return _utc(moment)  # SQLite gives naive UTC back, PostgreSQL the session's zone


def report_rows(
    report: Mapping[str, Any], *, branch: str | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``runs`` row and the ``results`` rows (one per test x metric) of a loaded report."""
    device = report["device"]
    git = report.get("git") or {}
    started = _parse_time(report["started_at"])
    finished = report.get("finished_at")
    command_line = report.get("command_line")
    run = {
        "run_id": report["run_id"],
        "device": device["fingerprint"],
        "device_label": device_label(device),
        "model": device.get("model"),
        "sim_model": device.get("sim_model"),
        "simulated": bool(report["simulated"]),
        "report_schema": int(report["schema_version"]),
        "tool_version": (report.get("tool") or {}).get("version"),
        "started_at": started,
        "finished_at": _parse_time(finished) if finished else None,
        "git_commit": git.get("commit"),
        "branch": branch if branch is not None else git.get("branch"),
        "dirty": git.get("dirty"),
        # hidden again: a report of another tool or an older version may hold a password
        "command_line": redact_argv(command_line) if command_line is not None else None,
        "settings": redact_value(report.get("settings")),
        "device_info": dict(device),
        "added_at": datetime.now(timezone.utc),
    }
    rows = list(_result_rows(report, run))
    return run, rows


def _result_rows(report: Mapping[str, Any], run: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for test in report["tests"]:
        params = test.get("params") or {}
        validity = test.get("validity")
        base = {
            "run_id": run["run_id"],
            "device": run["device"],
            "started_at": run["started_at"],
            "test_id": test["id"],
            "name": test_name(test),
            "params": params,
            "point": op_key(params),
            "status": test["status"],
            "valid": validity.get("valid") if validity else None,
        }
        for name, metric in test["metrics"].items():
            yield {
                **base,
                "metric": name,
                "unit": metric.get("unit"),
                "value": metric.get("value"),
                "stats": metric.get("stats"),
                "samples": metric.get("samples"),
            }
