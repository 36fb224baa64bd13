"""One search study shared by several processes: ``edgeenergy search --storage --study``
workers on a real PostgreSQL server (tests/pg_server.py) and on a journal file, a worker
SIGKILLed mid-trial, resume, and two concurrent pytest runs on virtual boards."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pg_server import fresh_database, pg_server
from search_helpers import toy_rows

from pytest_edgeenergy.cli import main
from pytest_edgeenergy.errors import InvalidValue
from pytest_edgeenergy.search.study import parse_storage, redact

RUN_TIMEOUT_S = 240.0
EDGEENERGY = [
    sys.executable,
    "-c",
    "import sys; from pytest_edgeenergy.cli import main; sys.exit(main())",
]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with pg_server() as url:
        yield url


@pytest.fixture
def pg_url(server: str) -> str:
    """A fresh database on the module's server (Optuna creates its tables there)."""
    return fresh_database(server, "s")


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A 48-point replay table (GPU, CPU clocks and cores) with the project's columns."""
    rows = toy_rows(cores=True)
    path = tmp_path / "toy.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(params=["postgresql", "journal", "sqlite"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "journal":
        return f"journal:{tmp_path / 'study.log'}"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'study.db'}"
    return str(request.getfixturevalue("pg_url"))


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")}


def _worker(storage: str, table: Path, trials: int, *extra: str) -> subprocess.Popen[str]:
    args = ["search", "--storage", storage, "--study", "s", "--replay", str(table)]
    args += ["--trials", str(trials), "--strategy", "random", "--json", *extra]
    return subprocess.Popen(
        [*EDGEENERGY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )


def _done(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def _show(storage: str) -> dict[str, Any]:
    """The study as ``--show --json`` prints it (with the study's own heartbeat: it fails
    the trials silent for 3 of them)."""
    args = ["--study", "s", "--show", "--json"]
    done = subprocess.run(
        [*EDGEENERGY, "search", "--storage", storage, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    searches = json.loads(done.stdout)["searches"]
    assert len(searches) == 1, searches
    return searches[0]  # type: ignore[no-any-return]


def _point(trial: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted(trial["knobs"].items()))


def _measured(search: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in search["trials"] if t["status"] == "measured"]


def test_three_workers_profile_exactly_n_distinct_points_then_resume(
    storage: str, table: Path
) -> None:
    workers = [_worker(storage, table, 9, "--replay-delay-s", "0.2") for _ in range(3)]
    outputs = [_done(w) for w in workers]
    search = _show(storage)
    measured = _measured(search)
    assert len(measured) == 9 == search["counted"]
    assert max(Counter(map(_point, measured)).values()) == 1, "a point profiled twice"
    first_round = [t for t in search["trials"] if t["status"] != "withdrawn"][:3]
    assert len(set(map(_point, first_round))) == 3
    # Each worker's output is its own part of the study, and the parts make the whole.
    own = sorted(t["number"] for o in outputs for t in o["trials"] if "not_counted" not in t)
    assert own == sorted(t["number"] for t in measured)
    # A worker that started when every trial was claimed ran none: it is not in the study.
    assert {o["worker"] for o in outputs if o["trials"]} <= set(search["workers"])
    assert set(search["workers"]) <= {o["worker"] for o in outputs}

    # All stopped: the same command again has nothing left; a larger total continues.
    assert _done(_worker(storage, table, 9))["trials"] == []
    more = _done(_worker(storage, table, 12))
    assert len(more["trials"]) == 3
    measured = _measured(_show(storage))
    assert len(measured) == 12
    assert max(Counter(map(_point, measured)).values()) == 1


@pytest.mark.parametrize("strategy", ["auto", "optuna", "grid", "binary"])
def test_every_strategy_shares_a_journal_study(strategy: str, tmp_path: Path, table: Path) -> None:
    storage = f"journal:{tmp_path / 'study.log'}"
    workers = [
        _worker(storage, table, 6, "--strategy", strategy, "--replay-delay-s", "0.1")
        for _ in range(2)
    ]
    for w in workers:
        _done(w)
    search = _show(storage)
    assert search["strategy"] == strategy
    measured = _measured(search)
    assert len(measured) == 6
    assert max(Counter(map(_point, measured)).values()) == 1


def _wait_running(storage: str, worker_pid: int) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            search = _show(storage)
        except AssertionError:  # the study is not there yet
            search = {"trials": []}
        for t in search["trials"]:
            if t["status"] == "running" and t["worker"].endswith(f"/pid{worker_pid}"):
                return t  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError("the worker never claimed a trial")


def test_a_killed_workers_trial_fails_by_heartbeat_and_its_point_is_profiled_again(
    storage: str, table: Path
) -> None:
    beat = ("--study-heartbeat-s", "1", "--strategy", "auto")
    victim = _worker(storage, table, 8, *beat, "--replay-delay-s", "600")
    lost = _wait_running(storage, victim.pid)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=RUN_TIMEOUT_S)
    others = [_worker(storage, table, 8, *beat, "--replay-delay-s", "0.1") for _ in range(2)]
    for w in others:
        _done(w)
    search = _show(storage)
    measured = _measured(search)
    assert len(measured) == 8
    assert max(Counter(map(_point, measured)).values()) == 1
    (gone,) = [t for t in search["trials"] if t["number"] == lost["number"]]
    assert gone["status"] == "lost" and "no heartbeat" in gone["reason"]
    again = [t for t in measured if _point(t) == _point(lost)]
    assert again and again[0]["number"] > lost["number"]
    assert not again[0]["worker"].endswith(f"/pid{victim.pid}")


def _wait_lost(storage: str, number: int) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        if any(t["number"] == number and t["status"] == "lost" for t in _show(storage)["trials"]):
            return
        time.sleep(0.3)
    raise AssertionError(f"trial {number} never failed by heartbeat")


def test_a_point_lost_twice_is_left_out(tmp_path: Path, table: Path) -> None:
    storage = f"journal:{tmp_path / 'study.log'}"
    beat = ("--study-heartbeat-s", "1", "--replay-delay-s")
    lost = []
    for _ in range(2):
        victim = _worker(storage, table, 5, *beat, "600")
        lost.append(_wait_running(storage, victim.pid))
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=RUN_TIMEOUT_S)
        # The next worker claims the lost point first once the heartbeat has failed it.
        _wait_lost(storage, lost[-1]["number"])
    assert _point(lost[0]) == _point(lost[1])
    _done(_worker(storage, table, 5, *beat, "0"))
    measured = _measured(_show(storage))
    assert len(measured) == 5
    assert _point(lost[0]) not in set(map(_point, measured))


def test_a_process_asking_another_search_is_refused(
    tmp_path: Path, table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = f"journal:{tmp_path / 's.log'}"
    base = ["search", "--storage", storage, "--study", "s", "--replay", str(table)]
    assert main([*base, "--trials", "2", "--strategy", "random"]) == 0
    capsys.readouterr()
    assert main([*base, "--trials", "2", "--strategy", "grid", "--seed", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgeenergy: study 's' in journal:")
    assert "strategy 'random' there, 'grid' here" in err and "seed 0 there, 3 here" in err


def test_show_prints_best_and_each_worker(
    tmp_path: Path, table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = str(tmp_path / "study.log")
    base = ["search", "--storage", storage, "--study", "s"]
    objective = ("--objective", "pareto")
    assert (
        main([*base, "--replay", str(table), "--trials", "6", "--strategy", "grid", *objective])
        == 0
    )
    capsys.readouterr()
    assert main([*base, "--show"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"study s in {storage}\nstrategy grid, objective pareto: 6 trials done")
    assert f"/pid{os.getpid()}: 6 measured" in text
    assert "best: " in text and "pareto front (time vs energy):" in text
    assert main([*base, "--show", "--json"]) == 0
    (search,) = json.loads(capsys.readouterr().out)["searches"]
    assert search["front"] and len(_measured(search)) == 6


def test_bad_study_input_is_named(
    tmp_path: Path, table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        (["--storage", "mysql://u:pw@h/db", "--study", "s"], "is not supported; give"),
        (["--study", "s"], "--storage URL and --study NAME go together"),
        (["--storage", str(tmp_path / "x.log"), "--study", "nope", "--show"], "no such study"),
        (["--storage", f"sqlite:///{tmp_path}/a.db", "--study", "s", "--replay-delay-s", "-1"],
         "--replay-delay-s -1"),
    ]  # fmt: skip
    for args, message in cases:
        rest = ["--replay", str(table), "--trials", "2"] if "--show" not in args else []
        assert main(["search", *args, *rest]) == 2, args
        err = capsys.readouterr().err
        assert message in err and "pw" not in err, err


@pytest.mark.parametrize(
    ("url", "kind", "target"),
    [
        ("postgresql://u:pw@host/db", "rdb", "postgresql+psycopg://u:pw@host/db"),
        ("postgres://u@/db?host=/s", "rdb", "postgresql+psycopg://u@/db?host=/s"),
        ("sqlite:////tmp/a.db", "rdb", "sqlite:////tmp/a.db"),
        ("journal:/nfs/s.log", "journal", "/nfs/s.log"),
        ("shared/s.log", "journal", "shared/s.log"),
    ],
)
def test_parse_storage_reads_each_form(url: str, kind: str, target: str) -> None:
    assert parse_storage(url) == (kind, target)


@pytest.mark.parametrize("url", ["", "journal:", "sqlite:///", "sqlite://", "s.db", "redis://h"])
def test_parse_storage_refuses_what_it_cannot_open(url: str) -> None:
    with pytest.raises(InvalidValue, match="give"):
        parse_storage(url)


@given(
    user=st.text("abcdefgh", min_size=1, max_size=8),
    password=st.text("ABCDEFGH0123456789!#$%", min_size=1, max_size=12),
)
def test_redact_hides_the_password(user: str, password: str) -> None:
    url = f"postgresql://{user}:{password}@db.example/energy"
    assert redact(url) == f"postgresql://{user}:***@db.example/energy"


WORKLOAD = """
import time


def test_work(operating_point, edge_bench):
    gpu_hz = operating_point.gpu_freq_hz or 1_020_000_000
    edge_bench.run(lambda: time.sleep(0.01 * 1e9 / gpu_hz), items_per_call=4)
"""


def test_three_pytest_runs_on_virtual_boards_share_one_study(
    pytester: pytest.Pytester, pg_url: str
) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    reports = [pytester.path / f"r{i}.json" for i in range(3)]
    args = [
        "-p", "no:cacheprovider", "-p", "no:randomly", "--edge-board=sim:orin-nano",
        "--edge-idle-s=0", "--edge-quick", "--edge-search=random", "--edge-trials=9",
        "--gpu-freq=all", "--cpu-freq=min,max", f"--edge-search-storage={pg_url}",
        "--edge-study=s", "test_inner.py",
    ]  # fmt: skip
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest", *args, f"--edge-report={r}"],
            cwd=pytester.path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_env(),
        )
        for r in reports
    ]
    outputs = [r.communicate(timeout=RUN_TIMEOUT_S)[0] for r in runs]
    assert [r.returncode for r in runs] == [0, 0, 0], outputs
    search = _show(pg_url)
    assert search["test"] == "test_inner.py::test_work"
    measured = _measured(search)
    assert len(measured) == 9
    assert max(Counter(map(_point, measured)).values()) == 1
    first_round = [t for t in search["trials"] if t["status"] != "withdrawn"][:3]
    assert len(set(map(_point, first_round))) == 3
    own: list[int] = []
    for path, output in zip(reports, outputs, strict=True):
        (entry,) = json.loads(path.read_text())["search"]
        assert entry["study"]["name"] == "s" and "secret-pw" not in entry["study"]["storage"]
        assert entry["study"]["worker"].endswith("/sim:orin-nano")
        assert {t["worker"] for t in entry["trials"]} <= {entry["study"]["worker"]}
        own += [t["study_trial"] for t in entry["trials"]]
        assert "shared study 's' in postgresql://postgres:***@" in output
    assert sorted(own) == sorted(t["number"] for t in measured)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--edge-search-storage=journal:s.log",), "--edge-search-storage needs --edge-study too*"),
        (
            ("--edge-search-storage=mysql://u:pw@h/db", "--edge-study=s"),
            "*study storage 'mysql://u:***@h/db' is not supported; give postgresql://*",
        ),
    ],
)
def test_bad_study_options_are_usage_errors(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:orin-nano", "--edge-search=random", "--edge-trials=2",
        "--gpu-freq=all", *args, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_a_board_joining_a_full_study_says_where_the_best_is(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Running the same command again when the study holds its trials profiles nothing on
    this board: the summary points at the study, not at budgets no point met."""
    pytester.makepyfile(test_inner=WORKLOAD)
    storage = f"journal:{tmp_path / 'study.log'}"
    args = (
        "-p", "no:randomly", "--edge-board=sim:orin-nano", "--edge-idle-s=0",
        "--edge-quick", "--edge-search=random", "--edge-trials=2", "--gpu-freq=all",
        f"--edge-search-storage={storage}", "--edge-study=s", "test_inner.py",
    )  # fmt: skip
    first = pytester.runpytest_subprocess(*args, timeout=RUN_TIMEOUT_S)
    first.assert_outcomes(passed=3)
    again = pytester.runpytest_subprocess(*args, timeout=RUN_TIMEOUT_S)
    again.assert_outcomes(passed=1, skipped=2)
    again.stdout.fnmatch_lines(["*best: this board profiled no point (the study's: --show above)"])
    assert "no profiled point met" not in again.stdout.str()
