"""One search study shared by several processes: ``edgeenergy search --storage --study``
workers on a real PostgreSQL server (tests/pg_server.py) and on a journal file, a worker
SIGKILLed mid-trial, resume, and two concurrent pytest runs on virtual boards."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
from hypothesis import given
from hypothesis import strategies as st
from optuna.distributions import CategoricalDistribution
from optuna.samplers._base import _CONSTRAINTS_KEY
from optuna.storages.journal import JournalFileBackend, JournalStorage
from pg_server import fresh_database, pg_server
from search_helpers import toy_rows, write_rows

from pytest_edgeenergy import __version__
from pytest_edgeenergy.commands import main
from pytest_edgeenergy.errors import InvalidValue
from pytest_edgeenergy.search.driver import Search
from pytest_edgeenergy.search.objective import Objective
from pytest_edgeenergy.search.replay import read_replay
from pytest_edgeenergy.search.strategies import make_strategy
from pytest_edgeenergy.search.study import CONSTRAINTS_KEY, SharedStudy, parse_storage, redact
from pytest_edgeenergy.search.study_replay import table_sha256

RUN_TIMEOUT_S = 240.0
EDGEENERGY = [
    sys.executable,
    "-c",
    "import sys; from pytest_edgeenergy.commands import main; sys.exit(main())",
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
    return write_rows(tmp_path / "toy.csv", toy_rows(cores=True))


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


def _show_output(storage: str, *text: str) -> str:
    """What ``--show --json`` (with ``"text"``: ``--show``) prints for study ``s``."""
    args = ["--study", "s", "--show", *([] if text else ["--json"])]
    done = subprocess.run(
        [*EDGEENERGY, "search", "--storage", storage, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _show(storage: str, *text: str) -> Any:
    """The study's one search as ``--show --json`` prints it (with the study's own
    heartbeat: it fails the trials silent for 3 of them); with ``"text"``, ``--show``'s text."""
    if text:
        return _show_output(storage, *text)
    searches = json.loads(_show_output(storage))["searches"]
    assert len(searches) == 1, searches
    return searches[0]


def _optuna(storage: str) -> optuna.Study:
    """The study as plain Optuna (and optuna-dashboard) loads it."""
    kind, target = parse_storage(storage)
    store = JournalStorage(JournalFileBackend(target)) if kind == "journal" else target
    return optuna.load_study(study_name="s", storage=store)


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
    # A worker that started when every trial was claimed ran none: it is not in the study
    # (nor is one whose every claim was withdrawn).
    assert {
        o["worker"] for o in outputs if any("not_counted" not in t for t in o["trials"])
    } <= set(search["workers"])
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


def _trials_now(storage: str) -> list[dict[str, Any]]:
    """The study's trials as ``--show --json`` gives them, read in this process (a waiting
    loop that started a ``--show`` process every 0.2 s spent 0.3 s of CPU on each); none
    while the study or its search is not there yet."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["search", "--storage", storage, "--study", "s", "--show", "--json"])
    searches = json.loads(out.getvalue())["searches"] if code == 0 else []
    assert len(searches) <= 1, searches
    return searches[0]["trials"] if searches else []  # no search yet: its worker starts


def _wait_running(storage: str, worker_pid: int) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        for t in _trials_now(storage):
            if t["status"] == "running" and t["worker"].endswith(f"/pid{worker_pid}"):
                return t  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError("the worker never claimed a trial")


def _killed_once_running(storage: str, victim: subprocess.Popen[str]) -> dict[str, Any]:
    """``victim``'s trial once it runs, the victim SIGKILLed (also when the wait fails: a
    worker left behind would sleep out its 600 s replay delay)."""
    try:
        return _wait_running(storage, victim.pid)
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=RUN_TIMEOUT_S)


def test_a_killed_workers_trial_fails_by_heartbeat_and_its_point_is_profiled_again(
    storage: str, table: Path
) -> None:
    beat = ("--study-heartbeat-s", "1", "--strategy", "auto")
    victim = _worker(storage, table, 8, *beat, "--replay-delay-s", "600")
    lost = _killed_once_running(storage, victim)
    # Started before the heartbeat failed it, the others could profile all 8 points while
    # the lost one still looked claimed (on a quiet host: their start-up outran the 3 s).
    _wait_lost(storage, lost["number"])
    others = [_worker(storage, table, 8, *beat, "--replay-delay-s", "0.1") for _ in range(2)]
    for w in others:
        _done(w)
    search = _show(storage)
    measured = _measured(search)
    assert len(measured) == 8
    assert max(Counter(map(_point, measured)).values()) == 1
    (gone,) = [t for t in search["trials"] if t["number"] == lost["number"]]
    assert gone["status"] == "lost" and "no heartbeat" in gone["reason"]
    # Where Optuna's own tools show it: the failed trial's user attrs.
    (failed,) = [t for t in _optuna(storage).trials if t.number == lost["number"]]
    assert failed.state == optuna.trial.TrialState.FAIL
    assert failed.user_attrs["lost"] == gone["reason"]
    assert gone["reason"].startswith("no heartbeat for 3 s (its process stopped)")
    again = [t for t in measured if _point(t) == _point(lost)]
    assert again and again[0]["number"] > lost["number"]
    assert not again[0]["worker"].endswith(f"/pid{victim.pid}")


def _wait_lost(storage: str, number: int) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        if any(t["number"] == number and t["status"] == "lost" for t in _trials_now(storage)):
            return
        time.sleep(0.3)
    raise AssertionError(f"trial {number} never failed by heartbeat")


def test_a_point_lost_twice_is_left_out(tmp_path: Path, table: Path) -> None:
    storage = f"journal:{tmp_path / 'study.log'}"
    beat = ("--study-heartbeat-s", "1", "--replay-delay-s")
    lost = []
    for _ in range(2):
        lost.append(_killed_once_running(storage, _worker(storage, table, 5, *beat, "600")))
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
    asks = ["--objective", "min-time", "--power-budget-w", "9"]
    assert main([*base, "--trials", "2", "--strategy", "random", *asks]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgeenergy: study 's' in journal:")
    assert "objective 'min-energy' there, 'min-time' here" in err
    assert "power_budget_w null there, 9.0 here" in err and "seed" not in err


def _two_workloads(path: Path) -> Path:
    """The toy table twice, as ``resnet`` and as a twice faster ``mobnet`` (a ``workload``
    column, as the project's tables of several workloads have)."""
    rows = [
        {**row, "workload": name, "time_s": row["time_s"] * scale}
        for name, scale in (("resnet", 1.0), ("mobnet", 0.5))
        for row in toy_rows(cores=True)
    ]
    return write_rows(path, rows)


def test_one_study_holds_one_table_and_filter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A worker replaying another workload of the table, or another table, is refused:
    the study's search is its table (digest) and filters, not only its space."""
    two = _two_workloads(tmp_path / "two.csv")
    storage = f"journal:{tmp_path / 's.log'}"
    base = ["search", "--storage", storage, "--study", "s", "--trials", "3", "--json"]
    assert main([*base, "--replay", str(two), "--where", "workload=resnet"]) == 0
    capsys.readouterr()
    assert main([*base, "--replay", str(two), "--where", "workload=mobnet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "made for another search" in err
    assert 'where {"workload": "resnet"} there, {"workload": "mobnet"} here' in err
    other = tmp_path / "other.csv"
    other.write_text(two.read_text().replace(",resnet", ",resnet-fp16"))
    assert main([*base, "--replay", str(other), "--where", "workload=resnet-fp16"]) == 2
    err = capsys.readouterr().err
    assert f"table_sha256 {_sha256(two)!r} there, {_sha256(other)!r} here" in err
    search = _show(storage)
    assert search["counted"] == 3 and search["where"] == {"workload": "resnet"}
    assert {t["worker"] for t in search["trials"]} == {f"{socket.gethostname()}/pid{os.getpid()}"}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_workers_with_their_own_seeds_and_strategies_join_one_study(
    tmp_path: Path, table: Path
) -> None:
    """Optuna's guidance for distributed runs: one seed per worker. The study's search
    is its space, objective, budgets and table; each worker's seed and strategy its own."""
    storage = f"journal:{tmp_path / 'study.log'}"
    runs = [("random", "1"), ("random", "3"), ("grid", "5")]
    outputs = [
        _done(_worker(storage, table, 2 * int(seed), "--strategy", strategy, "--seed", seed))
        for strategy, seed in runs
    ]
    for out, (strategy, seed) in zip(outputs, runs, strict=True):
        assert out["trials"] and (out["strategy"], out["seed"]) == (strategy, int(seed))
    search = _show(storage)
    measured = _measured(search)
    assert len(measured) == 10 and max(Counter(map(_point, measured)).values()) == 1
    assert {(t["strategy"], t["seed"]) for t in measured} == {(s, int(k)) for s, k in runs}
    assert search["strategy"] == "random/grid"


BUDGET_W = 8.0


def test_optuna_sees_the_budget_the_metric_and_readable_attributes(
    storage: str, table: Path
) -> None:
    """Opened with plain Optuna (as optuna-dashboard does), a shared min-time search under
    a power budget names the project's best point as Optuna's best trial: each measured
    trial stores its budget as an Optuna constraint (> 0: over budget)."""
    budget = ("--objective", "min-time", "--power-budget-w", f"{BUDGET_W:g}")
    worker = _done(_worker(storage, table, 48, "--strategy", "grid", *budget))
    search = _show(storage)
    measured = _measured(search)
    assert len(measured) == 48
    over = {t["number"] for t in measured if t["power_w"] > BUDGET_W}
    assert over and len(over) < 48
    fastest = min(measured, key=lambda t: t["time_s"])
    assert fastest["number"] in over, "the toy table's fastest point is over the budget"

    study = _optuna(storage)
    best = study.best_trial
    assert best.params == search["best"]["knobs"]
    assert best.user_attrs["power_w"] <= BUDGET_W and best.value == search["best"]["time_s"]
    assert {t["number"] for t in measured if not t["feasible"]} == over
    assert {t["number"] for t in worker["trials"] if not t["feasible"]} == over
    assert worker["objective"] == f"min-time, power <= {BUDGET_W:g} W"
    assert study.metric_names == ["time_s"]
    for trial in study.trials:
        violated = any(v > 0 for v in trial.constraints.values())
        assert violated == (trial.number in over), trial.number
    assert CONSTRAINTS_KEY == _CONSTRAINTS_KEY  # where Optuna's constrained samplers put them
    assert set(study.user_attrs) == {"search", "heartbeat_s", "edgeenergy study format"}
    assert study.user_attrs["search"]["constraints"][0] == "power_w - 8 (the power budget, W)"

    text = _show(storage, "text")
    assert f"strategy grid, objective min-time, power <= {BUDGET_W:g} W: 48 trials done" in text
    assert text.count("  over budget\n") == len(over)


def test_withdrawn_claims_are_not_a_workers_trials(
    tmp_path: Path, table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A claim withdrawn (another worker held its point) is a PRUNED trial in Optuna; the
    study's counts and trial list leave it out, and say how many there were."""
    storage = f"journal:{tmp_path / 'study.log'}"
    worker = _done(_worker(storage, table, 2))
    objective = Objective("min-energy")
    replay = read_replay(table)
    shared = SharedStudy(storage, "s")
    inputs = {"table_sha256": table_sha256(table), "where": {}}
    shared.join("", replay.space, objective, strategy="random", seed=9, inputs=inputs)
    strategy = make_strategy("random", replay.space, objective, seed=9)
    claim = shared.claim("", Search(replay.space, objective, strategy), 3)
    assert claim is not None
    shared.withdraw(claim, "trial 0 of another worker holds the point")
    search = _show(storage)
    assert search["withdrawn"] == 1 and search["counted"] == 2
    assert search["workers"] == {worker["worker"]: {"measured": 2}}
    text = _show(storage, "text")
    assert f"#{claim.number} " not in text
    assert "  1 withdrawn claim not listed: a point two workers claimed at once" in text
    assert f"{shared.worker}" not in text
    (pruned,) = [t for t in _optuna(storage).trials if t.number == claim.number]
    assert pruned.state == optuna.trial.TrialState.PRUNED and "withdrawn" in pruned.user_attrs


def test_a_study_of_the_earlier_format_is_shown_but_not_joined(
    tmp_path: Path, table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A study the previous version wrote (searches under ``config:``, the seed part of
    the search, no constraints): ``--show`` reads it, a worker is refused naming the
    format and this version."""
    path = tmp_path / "old.log"
    old = optuna.create_study(storage=JournalStorage(JournalFileBackend(str(path))), study_name="s")
    space = read_replay(table).space
    old.set_user_attr(
        "config:",
        {"space": {d.name: list(d.values) for d in space.dims}, "objective": "min-energy",
         "power_budget_w": None, "latency_budget_s": None, "strategy": "random", "seed": 0},
    )  # fmt: skip
    knobs = {d.name: d.values[0] for d in space.dims}
    old.add_trial(
        optuna.trial.create_trial(
            params=knobs,
            distributions={d.name: CategoricalDistribution(d.values) for d in space.dims},
            value=2.0,
            user_attrs={"test": "", "worker": "old/pid1", "time_s": 0.5, "power_w": 4.0},
        )
    )
    base = ["search", "--storage", str(path), "--study", "s"]
    assert main([*base, "--replay", str(table), "--trials", "2", "--strategy", "random"]) == 2
    assert capsys.readouterr().err == (
        f"edgeenergy: study 's' in {path} has study format 1; this pytest-edgeenergy "
        f"({__version__}) adds to format 2 only (--show reads both): give another study name\n"
    )
    assert main([*base, "--show"]) == 0
    text = capsys.readouterr().out
    assert "strategy random, objective min-energy: 1 trials done" in text
    assert "old/pid1: 1 measured" in text and "best: " in text


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
    assert f"/pid{os.getpid()} (grid, seed 0): 6 measured" in text
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


def test_reading_a_study_never_records_a_heartbeat_in_it(tmp_path: Path) -> None:
    """The creator records its heartbeat just after creating the study; a ``--show`` that
    read it in between once wrote its own default there (10 s), and the workers then
    waited 30 s instead of 3 to fail a killed worker's trial."""
    storage = f"journal:{tmp_path / 'study.log'}"
    optuna.create_study(
        storage=JournalStorage(JournalFileBackend(str(tmp_path / "study.log"))), study_name="s"
    )  # the creator, before it records its heartbeat
    assert json.loads(_show_output(storage))["searches"] == []
    assert "heartbeat_s" not in _optuna(storage).user_attrs
