"""The history store on SQLite, and `edgeenergy history add`: real reports, a real database."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy import EnergySession
from pytest_edgeenergy.commands import main
from pytest_edgeenergy.history import open_store, schema
from pytest_edgeenergy.history.errors import HistoryError, SchemaTooNew
from pytest_edgeenergy.history.store import database_url, display_name
from pytest_edgeenergy.report.load import ReportError, load_report

V1_REPORT = Path(__file__).parent / "data" / "report_v1_energy_and_bench.json"
START = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def session_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report written by the project: two windows on a virtual Orin Nano."""
    path = tmp_path_factory.mktemp("session") / "r.json"
    with EnergySession("sim:orin-nano", report=path, idle_s=0.2, sim_load=0.5) as s:
        with s.pinned(gpu_freq="max"), s.window("inference"):
            time.sleep(0.2)
        with s.window("idle-ish"):
            time.sleep(0.1)
    return path


def write_report(path: Path, **kwargs: Any) -> Path:
    report = synthetic_report(**kwargs)
    path.write_text(json.dumps(report))
    return path


def table_rows(db: Path, table: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)


def test_every_metric_comes_back_as_the_report_wrote_it(
    session_report: Path, tmp_path: Path
) -> None:
    db = tmp_path / "h.db"
    report = load_report(session_report)
    with open_store(db) as store:
        done = store.add_report(session_report, branch="main")
        with store.engine.connect() as conn:
            results = conn.execute(sa.select(schema.results)).mappings().all()
            run = conn.execute(sa.select(schema.runs)).mappings().one()
    expected = {(t["id"], name): m for t in report["tests"] for name, m in t["metrics"].items()}
    assert done.added and done.run_id == report["run_id"] and done.results == len(expected)
    got = {(r["test_id"], r["metric"]): r for r in results}
    assert set(got) == set(expected)
    for key, metric in expected.items():
        row = got[key]
        assert (row["value"], row["unit"]) == (metric["value"], metric["unit"]), key
        assert row["stats"] == metric["stats"] and row["samples"] == metric["samples"], key
    assert {r["test_id"] for r in results} == {"inference", "idle-ish"}
    assert {r["point"] for r in results if r["test_id"] == "inference"} == {"gpu_freq_hz=max"}
    assert run["device"] == report["device"]["fingerprint"] and run["simulated"]
    assert run["git_commit"] == (report["git"] or {}).get("commit")
    assert run["branch"] == "main" and run["report_schema"] == 2
    assert run["settings"] == report["settings"]


def test_adding_a_report_twice_changes_nothing(session_report: Path, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with open_store(db) as store:
        first = store.add_report(session_report)
    before = (table_rows(db, "runs"), table_rows(db, "results"))
    with open_store(db) as store:
        again = store.add_report(session_report)
    assert first.added and not again.added
    assert (again.run_id, again.results) == (first.run_id, 0)
    assert (table_rows(db, "runs"), table_rows(db, "results")) == before


def test_a_schema_1_report_is_stored_with_its_metrics_migrated(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with open_store(db) as store:
        done = store.add_report(V1_REPORT)
    with sqlite3.connect(db) as conn:
        (written,) = conn.execute("SELECT report_schema FROM runs").fetchone()
        metrics = {m for (m,) in conn.execute("SELECT metric FROM results")}
    assert done.added and done.results > 0 and written == 1
    assert any(m.endswith("duration_s") for m in metrics)
    assert not any(m.endswith("duration") or "rail." in m for m in metrics)


def test_an_empty_database_is_created_at_the_current_version(tmp_path: Path) -> None:
    db = tmp_path / "deeper" / "h.db"
    with open_store(db):
        pass
    with open_store(db):  # opening again migrates nothing and keeps one version row
        pass
    assert table_rows(db, "schema_version") == [(schema.SCHEMA_VERSION,)]
    with sqlite3.connect(db) as conn:
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        indexes = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"schema_version", "runs", "results"} <= tables
    assert "ix_results_series" in indexes


def test_a_database_of_a_newer_version_is_refused_naming_both(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with open_store(db):
        pass
    newer = schema.SCHEMA_VERSION + 1
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (newer,))
    with pytest.raises(SchemaTooNew) as info:
        open_store(db)
    message = str(info.value)
    assert f"schema version {newer}" in message
    assert f"up to version {schema.SCHEMA_VERSION}" in message and str(db) in message


def test_tables_of_something_else_are_not_taken_over(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE runs (x INTEGER)")
    with pytest.raises(HistoryError, match="not an energy history"):
        open_store(db)


def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("these are notes, not a database " * 100)
    with pytest.raises(HistoryError, match=r"notes\.txt"):
        open_store(db)


def test_series_are_in_time_order_and_filtered(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    days = [2, 0, 1, 3]  # added out of order
    paths = []
    for i, day in enumerate(days):
        paths.append(
            write_report(
                tmp_path / f"r{i}.json",
                seed=i,
                started_at=START + timedelta(days=day),
                workloads=("resnet18",),
                batch_sizes=(8,),
                gpu_freqs_hz=(612e6, 918e6),
            )
        )
    with open_store(db) as store:
        for i, path in enumerate(paths):
            store.add_report(path, branch="main" if i != 3 else "feature")
        every = store.series(metric="energy_per_item")
        assert len(every) == 2  # two operating points of one test
        assert {s.point for s in every} == {"gpu_freq_hz=612000000", "gpu_freq_hz=918000000"}
        for series in every:
            times = [p.started_at for p in series.points]
            assert times == sorted(times) and len(times) == 4
            assert times[0] == START and times[0].tzinfo is not None
            assert series.unit == "J/item" and series.metric == "energy_per_item"
            assert series.device_label == "sim:agx-orin (simulated)"
        assert {p.branch for p in every[0].points} == {"main", "feature"}
        on_main = store.series(metric="energy_per_item", branch="main")
        assert [len(s.points) for s in on_main] == [3, 3]
        recent = store.series(metric="energy_per_item", since=START + timedelta(days=2))
        assert [len(s.points) for s in recent] == [2, 2]
        naive_since = store.series(metric="energy_per_item", since=datetime(2026, 11, 3, 12))
        assert [len(s.points) for s in naive_since] == [2, 2]  # naive means UTC
        fast = store.series(metric="energy_per_item", test="*918MHz]")
        assert [s.point for s in fast] == ["gpu_freq_hz=918000000"]
        exact = store.series(test=fast[0].test, metric="energy_per_item")
        assert [s.test for s in exact] == [fast[0].test]
        assert store.series(test="nothing*") == []
        headed = store.series(metric="energy_per_item", test="suites/*[resnet18-bs8-gpu9*")
        assert [s.test for s in headed] == [fast[0].test]
        prefixed = store.series(metric="energy_per_item", test="suites/test_infer.py::test_i*")
        assert len(prefixed) == 2
        everything = store.series()
        assert len({s.metric for s in everything}) > 5
        values = [p.value for p in fast[0].points]
        reports = [json.loads(p.read_text()) for p in paths]
        by_run = {r["run_id"]: r for r in reports}
        for point in fast[0].points:
            test = next(t for t in by_run[point.run_id]["tests"] if t["id"] == fast[0].test)
            assert point.value == test["metrics"]["energy_per_item"]["value"]
        assert len(values) == 4


def test_a_null_value_is_no_point_of_a_series(tmp_path: Path) -> None:
    report = synthetic_report(seed=3, workloads=("resnet18",), batch_sizes=(8,))
    broken = report["tests"][0]
    broken["metrics"]["energy_per_item"]["value"] = None
    broken["validity"]["valid"] = False
    broken["status"] = "invalid"
    broken["validity"]["reason"] = "a window broke the rules"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    with open_store(tmp_path / "h.db") as store:
        done = store.add_report(path)
        series = store.series(metric="energy_per_item")
    assert done.results == sum(len(t["metrics"]) for t in report["tests"])
    assert broken["id"] not in {s.test for s in series} and len(series) == 1


def test_an_unfinished_run_is_refused_unless_asked(tmp_path: Path) -> None:
    report = synthetic_report(seed=4)
    report["finished_at"] = None
    path = tmp_path / "running.json"
    path.write_text(json.dumps(report))
    with open_store(tmp_path / "h.db") as store:
        with pytest.raises(ReportError, match=r"running\.json.*did not finish"):
            store.add_report(path)
        assert store.run_ids() == []
        assert store.add_report(path, unfinished=True).added


_LOCK_HOLDER = """
import sqlite3, sys, time
from pathlib import Path
db, flag = sys.argv[1], Path(sys.argv[2])
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE schema_version SET version = version")
flag.with_suffix(".locked").touch()
time.sleep(1.5)
flag.with_suffix(".releasing").touch()
conn.execute("COMMIT")
"""


def test_a_sqlite_writer_waits_for_the_one_holding_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    path = write_report(tmp_path / "r.json", seed=5)
    with open_store(db):
        pass
    flag = tmp_path / "flag"
    holder = subprocess.Popen([sys.executable, "-c", _LOCK_HOLDER, str(db), str(flag)])
    try:
        deadline = time.monotonic() + 60
        while not flag.with_suffix(".locked").exists():
            assert holder.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        with open_store(db) as store:
            done = store.add_report(path)
        # The add could only commit once the other writer let go of the lock.
        assert flag.with_suffix(".releasing").exists()
        assert done.added
    finally:
        assert holder.wait(timeout=60) == 0


_WRITER = """
import json, sys
from pytest_edgeenergy.history import open_store
with open_store(sys.argv[1]) as store:
    print(json.dumps([store.add_report(p).added for p in sys.argv[2:]]))
"""


def test_four_sqlite_writers_at_once_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    paths = [str(write_report(tmp_path / f"r{i}.json", seed=10 + i)) for i in range(6)]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db), *paths[k:], *paths[:k]],
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    outputs = [w.communicate(timeout=240)[0] for w in writers]
    assert [w.returncode for w in writers] == [0, 0, 0, 0]
    added = sum(sum(json.loads(out)) for out in outputs)
    assert added == len(paths)
    expected = sum(
        len(t["metrics"]) for p in paths for t in json.loads(Path(p).read_text())["tests"]
    )
    assert len(table_rows(db, "runs")) == len(paths)
    assert len(table_rows(db, "results")) == expected


# -- where the database is ---------------------------------------------------------


def test_the_database_defaults_to_the_environment_then_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EDGEENERGY_DB", raising=False)
    with open_store(None) as store:
        assert store.name == str(Path("reports") / "energy.db")
    assert (tmp_path / "reports" / "energy.db").is_file()
    monkeypatch.setenv("EDGEENERGY_DB", str(tmp_path / "env.db"))
    with open_store(None):
        pass
    assert (tmp_path / "env.db").is_file()
    with open_store(f"sqlite:///{tmp_path / 'url.db'}"):
        pass
    assert (tmp_path / "url.db").is_file()


def test_postgresql_urls_use_psycopg_3() -> None:
    assert database_url("postgresql://u:p@h/db").drivername == "postgresql+psycopg"
    assert database_url("postgres://u:p@h/db").drivername == "postgresql+psycopg"
    assert database_url("postgresql+psycopg://u@h/db").drivername == "postgresql+psycopg"
    assert database_url("energy.db").get_backend_name() == "sqlite"


@pytest.mark.parametrize(
    ("db", "says"),
    [
        ("mysql://u:hunter2@h/db", "not supported"),
        ("postgresql+asyncpg://u:hunter2@h/db", "only the psycopg driver"),
        ("sqlite://", "names no file"),
        ("  ", "empty"),
    ],
)
def test_unsupported_databases_are_refused_saying_what_is_allowed(db: str, says: str) -> None:
    with pytest.raises(HistoryError, match=says) as info:
        database_url(db)
    assert "hunter2" not in str(info.value)


_URL_SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!$&'()*+,;=-._~"


@given(st.text(alphabet=_URL_SAFE, min_size=1, max_size=30).map(lambda s: "Pw" + s))
def test_a_password_is_never_in_the_name_shown(password: str) -> None:
    url = database_url(f"postgresql://user:{password}@db.example:5432/energy")
    assert url.password == password
    shown = display_name(url)
    assert password not in shown and shown.startswith("postgresql+psycopg://user:***@")


# -- the command -------------------------------------------------------------------


def test_history_add_says_what_it_did(
    session_report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.db"
    run_id = load_report(session_report)["run_id"]
    n = len(table_rows_of_report(session_report))
    assert main(["history", "add", str(session_report), "--db", str(db)]) == 0
    # two windows: tests counted apart from their metric values
    assert capsys.readouterr().out == f"added run {run_id}: 2 tests, {n} metric values\n"
    assert main(["history", "add", str(session_report), "--db", str(db)]) == 0
    assert capsys.readouterr().out == f"already in the history: run {run_id}\n"


def table_rows_of_report(path: Path) -> list[tuple[str, str]]:
    return [(t["id"], m) for t in load_report(path)["tests"] for m in t["metrics"]]


def test_a_corrupt_report_exits_2_naming_it_and_the_others_are_added(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_report(tmp_path / "good.json", seed=6)
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 2, "tests": [')
    code = main(["history", "add", str(bad), str(good), "--db", str(tmp_path / "h.db")])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("edgeenergy: ") and "bad.json" in err and err.count("\n") == 1
    assert out.startswith("added run ")


def test_a_missing_report_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["history", "add", str(tmp_path / "gone.json"), "--db", str(tmp_path / "h.db")])
    assert code == 2 and "gone.json" in capsys.readouterr().err


def test_a_bad_database_exits_2_without_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_report(tmp_path / "good.json", seed=7)
    code = main(["history", "add", str(good), "--db", "mysql://me:hunter2@h/db"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("edgeenergy: ") and "hunter2" not in err


def test_history_needs_a_report_and_is_listed_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "add"]) == 2
    assert "REPORT" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "history" in capsys.readouterr().out


def test_the_console_script_adds_reports(tmp_path: Path) -> None:
    good = write_report(tmp_path / "good.json", seed=8)
    edgeenergy = Path(sys.executable).parent / "edgeenergy"
    out = subprocess.run(
        [str(edgeenergy), "history", "add", str(good)],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("added run ") and (tmp_path / "reports" / "energy.db").is_file()
