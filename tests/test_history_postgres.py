"""The history store on a real PostgreSQL server (started for this module, see pg_server)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from pg_server import fresh_database, pg_server
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.history import open_store, schema
from pytest_edgeenergy.history.errors import HistoryError, SchemaTooNew
from pytest_edgeenergy.report.load import load_report

V1_REPORT = Path(__file__).parent / "data" / "report_v1_energy_and_bench.json"
START = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
PASSWORD = "secret-pw"  # in the URL pg_server gives (trust authentication ignores it)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with pg_server() as url:
        yield url


@pytest.fixture
def pg_url(server: str) -> str:
    """A fresh database on the module's server."""
    return fresh_database(server, "h")


def write_report(path: Path, **kwargs: object) -> Path:
    path.write_text(json.dumps(synthetic_report(**kwargs)))  # type: ignore[arg-type]
    return path


def counts(url: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        runs = conn.execute("SELECT count(*) FROM runs").fetchone()
        results = conn.execute("SELECT count(*) FROM results").fetchone()
    assert runs is not None and results is not None
    return runs[0], results[0]


def test_a_report_round_trips_and_twice_changes_nothing(pg_url: str, tmp_path: Path) -> None:
    path = write_report(tmp_path / "r.json", seed=1)
    report = load_report(path)
    with open_store(pg_url) as store:
        first = store.add_report(path, branch="main")
        again = store.add_report(path, branch="main")
        with store.engine.connect() as conn:
            rows = conn.execute(sa.select(schema.results)).mappings().all()
    expected = {(t["id"], n): m for t in report["tests"] for n, m in t["metrics"].items()}
    assert first.added and not again.added and first.results == len(expected)
    assert counts(pg_url) == (1, len(expected))
    for row in rows:
        metric = expected[(row["test_id"], row["metric"])]
        assert row["value"] == metric["value"] and row["unit"] == metric["unit"]
        assert row["stats"] == metric["stats"] and row["samples"] == metric["samples"]


def test_a_schema_1_report_loads(pg_url: str) -> None:
    with open_store(pg_url) as store:
        done = store.add_report(V1_REPORT)
        series = store.series()
    assert done.added and done.results > 0
    assert any(s.metric.endswith("duration_s") for s in series)


def test_series_come_back_in_time_order(pg_url: str, tmp_path: Path) -> None:
    with open_store(pg_url) as store:
        for i, day in enumerate([3, 1, 2]):
            path = write_report(
                tmp_path / f"r{i}.json",
                seed=i,
                started_at=START + timedelta(days=day),
                workloads=("resnet18",),
                batch_sizes=(8,),
                gpu_freqs_hz=(612e6,),
            )
            store.add_report(path, branch="main" if day != 2 else "dev")
        (series,) = store.series(metric="energy_per_item")
        on_main = store.series(metric="energy_per_item", branch="main")
    assert [p.started_at for p in series.points] == [START + timedelta(days=d) for d in (1, 2, 3)]
    assert [len(s.points) for s in on_main] == [2]


@pytest.mark.parametrize("attempt", range(3))  # a race: three fresh databases, three tries
def test_four_writers_at_once_lose_nothing_and_duplicate_nothing(
    pg_url: str, tmp_path: Path, attempt: int
) -> None:
    paths = [str(write_report(tmp_path / f"r{i}.json", seed=20 + i)) for i in range(8)]
    script = (
        "import json, sys\n"
        "from pytest_edgeenergy.history import open_store\n"
        "with open_store(sys.argv[1]) as store:\n"
        "    print(json.dumps([store.add_report(p).added for p in sys.argv[2:]]))\n"
    )
    # Every writer adds every report, each starting at another one: all of them race for
    # the same runs, on a database none of them has created yet.
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", script, pg_url, *paths[2 * k :], *paths[: 2 * k]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    outputs = [w.communicate(timeout=300) for w in writers]
    assert [w.returncode for w in writers] == [0, 0, 0, 0], [err for _, err in outputs]
    assert sum(sum(json.loads(out)) for out, _ in outputs) == len(paths)
    expected = sum(len(t["metrics"]) for p in paths for t in load_report(p)["tests"])
    assert counts(pg_url) == (len(paths), expected)


def test_a_database_of_a_newer_version_is_refused(pg_url: str) -> None:
    with open_store(pg_url):
        pass
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE schema_version SET version = %s", (schema.SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaTooNew) as info:
        open_store(pg_url)
    message = str(info.value)
    assert f"schema version {schema.SCHEMA_VERSION + 1}" in message
    assert f"up to version {schema.SCHEMA_VERSION}" in message and PASSWORD not in message


def test_the_command_never_prints_the_password(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_report(tmp_path / "r.json", seed=2)
    assert main(["history", "add", str(path), "--db", pg_url]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("added run ") and PASSWORD not in out + err
    assert main(["history", "add", str(path), "--db", pg_url]) == 0
    assert capsys.readouterr().out.startswith("already in the history: run ")


def test_a_server_that_is_not_there_exits_2_without_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_report(tmp_path / "r.json", seed=3)
    url = f"postgresql://me:{PASSWORD}@/energy?host={tmp_path}&connect_timeout=5"
    assert main(["history", "add", str(path), "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "edgeenergy: cannot open the history database postgresql+psycopg://me:***@"
    )
    assert PASSWORD not in err and err.count("\n") == 1
    with pytest.raises(HistoryError):
        open_store(url)


def test_a_reader_creates_no_schema_in_an_empty_database(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_report(tmp_path / "r.json", seed=4)
    readers = [
        ["history", "gate", str(path), "--fail", "energy_per_item:mean:5%"],
        ["history", "changes"],
        ["history", "export", "--format", "bencher"],
        ["history", "html", str(tmp_path / "page.html")],
    ]
    for argv in readers:
        assert main([*argv, "--db", pg_url]) == 2, argv
        err = capsys.readouterr().err
        assert "holds no energy history (no schema_version table)" in err, err
        assert "`edgeenergy history add --db URL REPORT`" in err and PASSWORD not in err
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert tables == (0,)
    assert main(["history", "add", str(path), "--db", pg_url]) == 0  # the writer creates it
    assert main(["history", "changes", "--db", pg_url]) == 0
