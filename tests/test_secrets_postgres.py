"""No password of a PostgreSQL URL is written anywhere: the report (command line, settings,
search section), the history's rows, the shared study's tables, the fleet page, the output
and the error messages, for a URL holding one in its user part and one in its query
(``?password=``, which libpq reads too). A real server (tests/pg_server.py): trust
authentication, so the passwords given are carried along and ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pg_server import fresh_database, pg_server
from psycopg import sql
from synthetic_reports import synthetic_report
from test_search_study import table  # noqa: F401  (the replay table fixture)

from pytest_edgeenergy.commands import main

USER_PASSWORD = "secret-pw"  # in the URL pg_server gives
QUERY_PASSWORD = "q-secret-9"
SECRETS = (USER_PASSWORD, QUERY_PASSWORD)
RUN_TIMEOUT_S = 240

INNER = """
import time

def test_work(energy):
    with energy.window("work"):
        time.sleep(0.2)
"""

SEARCHED = """
import time


def test_work(operating_point, edge_bench):
    gpu_hz = operating_point.gpu_freq_hz or 1_020_000_000
    edge_bench.run(lambda: time.sleep(0.01 * 1e9 / gpu_hz), items_per_call=4)
"""

QUIET = ["-p", "no:cacheprovider", "-p", "no:randomly", "--edge-board=sim:orin-nano"]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with pg_server() as url:
        yield url


@pytest.fixture
def url(server: str) -> str:
    """A fresh database whose URL holds both passwords."""
    return f"{fresh_database(server, 'x')}&password={QUERY_PASSWORD}"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("EDGEENERGY_"):
            monkeypatch.delenv(key)


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} written in {where}"


def database_text(url: str) -> str:
    """Every row of every table of the database, as text."""
    out = []
    with psycopg.connect(url) as conn:
        names = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
        assert names, "no tables"
        for (name,) in names:
            query = sql.SQL("SELECT * FROM {}").format(sql.Identifier(name))
            out += [repr(row) for row in conn.execute(query)]
    return "\n".join(out)


def pytest_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *QUIET, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def test_a_pytest_run_gated_and_added_writes_no_password(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "test_inner.py").write_text(INNER)
    history = [f"--edge-history={url}", "--edge-history-add", "--edge-fail=energy_j:mean:50%"]
    for i in range(2):
        done = pytest_run(
            tmp_path, "--edge-idle-s=0.2", *history, f"--edge-report=r{i}.json", "-o",
            f"edge_history={url}",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "added to the history postgresql+psycopg://postgres:***@" in done.stdout
        assert_no_secret(done.stdout + done.stderr, "the run's output")
        report = json.loads((tmp_path / f"r{i}.json").read_text())
        assert_no_secret(json.dumps(report), "the report")
        assert report["settings"]["edge_gate_history"].startswith("postgresql://postgres:***@")
        assert any(a.startswith("--edge-history=postgresql://") for a in report["command_line"])
    assert_no_secret(database_text(url), "the history database")

    page = tmp_path / "fleet.html"
    assert main(["history", "html", str(page), "--db", url, "--metric", "energy_j"]) == 0
    assert main(["history", "gate", str(tmp_path / "r1.json"), "--db", url, "--fail",
                 "energy_j:mean:50%"]) == 0  # fmt: skip
    assert main(["history", "changes", "--db", url]) == 0
    out = capsys.readouterr()
    assert "From postgresql+psycopg://postgres:***@" in page.read_text()
    assert_no_secret(page.read_text() + out.out + out.err, "the page and the commands' output")


def test_history_add_of_an_older_report_through_edgeenergy_db_stores_no_password(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a report of an older version (or another tool) that recorded the URL as given
    report = synthetic_report(seed=4)
    report["command_line"] = ["pytest", f"--edge-history={url}", "--token", "tok-secret-7"]
    report["settings"] = {"edge_gate_history": url, "edge_search_storage": url}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(report))
    monkeypatch.setenv("EDGEENERGY_DB", url)
    assert main(["history", "add", str(path)]) == 0
    out = capsys.readouterr()
    assert_no_secret(out.out + out.err, "the output")
    stored = database_text(url)
    assert_no_secret(stored, "the history database")
    assert "tok-secret-7" not in stored
    assert "postgresql://postgres:***@" in stored  # the URL is kept, without its password


def test_a_server_that_is_not_there_names_its_url_without_the_query_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(synthetic_report(seed=5)))
    down = f"postgresql://me@/energy?host={tmp_path}&password={QUERY_PASSWORD}&connect_timeout=5"
    assert main(["history", "add", str(path), "--db", down]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgeenergy: cannot open the history database postgresql+psycopg://me@")
    assert "password=***" in err and err.count("\n") == 1
    assert_no_secret(err, "the message")


def test_a_shared_study_records_and_prints_no_password(
    url: str, table: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811 (the fixture)
) -> None:
    argv = ["search", "--storage", url, "--study", "s", "--replay", str(table), "--trials", "3",
            "--strategy", "random", "--json"]  # fmt: skip
    assert main(argv) == 0
    assert main(["search", "--storage", url, "--study", "s", "--show"]) == 0
    out = capsys.readouterr()
    assert "study s in postgresql://postgres:***@" in out.out
    assert_no_secret(out.out + out.err, "the search's output")
    assert_no_secret(database_text(url), "the study's storage")


def test_a_pytest_search_on_a_shared_study_writes_no_password(url: str, tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(SEARCHED)
    done = pytest_run(
        tmp_path, "--edge-idle-s=0", "--edge-quick", "--edge-search=random", "--edge-trials=2",
        "--gpu-freq=all", f"--edge-search-storage={url}", "--edge-study=s",
        "--edge-report=r.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shared study 's' in postgresql://postgres:***@" in done.stdout
    assert_no_secret(done.stdout + done.stderr, "the run's output")
    report = json.loads((tmp_path / "r.json").read_text())
    assert_no_secret(json.dumps(report), "the report")
    (entry,) = report["search"]
    assert entry["study"]["storage"].startswith("postgresql://postgres:***@")
    assert_no_secret(database_text(url), "the study's storage")
