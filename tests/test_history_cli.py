"""`edgeenergy history gate` and `history changes` over a real SQLite history.

The histories are built from the project's synthetic reports (the same generator the
benchmarks use): seeded noise, an energy scale for a regression or a step, and a git
commit per run, added with `edgeenergy history add` as CI would.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands import main

START = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
STEP_AT = 8
"""The run of the step history where the new level starts."""


def write_run(
    path: Path, i: int, *, scale: float = 1.0, model: str = "agx-orin", seed: int | None = None
) -> Path:
    report = synthetic_report(
        sim_model=model,
        workloads=("resnet18",),
        batch_sizes=(8, 16),
        gpu_freqs_hz=(612e6,),
        noise=0.02,
        energy_scale=scale,
        seed=i if seed is None else seed,
        started_at=START + timedelta(hours=i),
    )
    report["git"] = {"commit": f"{i:02d}" + "ab" * 19, "dirty": False}
    path.write_text(json.dumps(report))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def baseline_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Five runs of one virtual AGX Orin on main."""
    db = tmp_path / "h.db"
    paths = [str(write_run(tmp_path / f"r{i}.json", i)) for i in range(5)]
    code, out, err = run_cli(capsys, "history", "add", *paths, "--db", str(db), "--branch", "main")
    assert code == 0, err
    assert out.count("added run") == 5
    return db


def test_gate_passes_the_same_energy_and_fails_a_regression(
    baseline_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(baseline_db)
    same = write_run(tmp_path / "same.json", 10)
    code, out, err = run_cli(
        capsys, "history", "gate", str(same), "--fail", "energy_per_item:mean:10%", "--db", db
    )
    assert code == 0, out + err
    assert "the last 5 runs of" in out and "gate passed" in out and "REGRESSION" not in out

    slower = write_run(tmp_path / "slower.json", 11, scale=1.3)
    code, out, _ = run_cli(
        capsys, "history", "gate", str(slower), "--fail", "energy_per_item:mean:10%",
        "--db", db, "--window", "3", "--branch", "main",
    )  # fmt: skip
    assert code == 1
    assert "the last 3 runs of" in out and "on branch main" in out
    assert "REGRESSION" in out and "gate FAILED" in out


def test_gate_without_earlier_runs_passes_saying_so(
    baseline_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(baseline_db)
    new = write_run(tmp_path / "new.json", 10, scale=1.3)
    # another branch, then another device: nothing to gate against, said, not failed
    for argv, device in (
        (["--branch", "dev"], "on branch dev"),
        ([], "orin-nano"),
    ):
        path = new if device != "orin-nano" else write_run(tmp_path / "o.json", 1, model=device)
        code, out, _ = run_cli(
            capsys, "history", "gate", str(path), "--fail", "energy_per_item:mean:5%",
            "--db", db, *argv,
        )  # fmt: skip
        assert code == 0
        assert "no earlier run of" in out and device in out
        assert "nothing to gate against yet" in out


def test_gate_against_one_earlier_run_says_the_last_run(
    baseline_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = write_run(tmp_path / "same.json", 10)
    _, out, _ = run_cli(
        capsys, "history", "gate", str(same), "--fail", "energy_per_item:mean:10%",
        "--db", str(baseline_db), "--window", "1",
    )  # fmt: skip
    assert "the last run of sim:agx-orin" in out and "1 runs" not in out


def test_the_page_counts_one_board_and_its_changes_in_words(
    step_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "page.html"
    code, said, err = run_cli(capsys, "history", "html", str(out), "--db", str(step_db))
    assert code == 0, err
    assert said.endswith(", 1 board\n") and "1 boards" not in out.read_text()
    assert ", 1 board</span>" in out.read_text()


def test_gate_bad_input_is_exit_2(
    baseline_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(baseline_db)
    new = write_run(tmp_path / "new.json", 10)
    code, _, err = run_cli(
        capsys, "history", "gate", str(new), "--fail", "mean:energy:5%", "--db", db
    )
    assert code == 2 and "gate expression 'mean:energy:5%'" in err
    code, _, err = run_cli(
        capsys, "history", "gate", str(new), "--fail", "memory_peak:max:5%", "--db", db
    )
    assert code == 2 and "memory_peak" in err  # a metric the run does not carry
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    code, _, err = run_cli(
        capsys, "history", "gate", str(broken), "--fail", "energy_per_item:mean:5%", "--db", db
    )
    assert code == 2 and str(broken) in err
    code, _, err = run_cli(
        capsys, "history", "gate", str(new), "--fail", "energy_per_item:mean:5%", "--window", "0"
    )
    assert code == 2 and "--window" in err


@pytest.fixture
def step_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """16 runs; from run STEP_AT on every energy is 15 % higher."""
    db = tmp_path / "h.db"
    paths = [
        str(write_run(tmp_path / f"r{i}.json", i, scale=1.15 if i >= STEP_AT else 1.0))
        for i in range(16)
    ]
    code, _, err = run_cli(capsys, "history", "add", *paths, "--db", str(db))
    assert code == 0, err
    return db


def test_changes_finds_the_step_with_its_commits(
    step_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        capsys, "history", "changes", "--metric", "energy_per_item", "--json", "--db", str(step_db)
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["series"] == 2  # two batch sizes at one operating point
    assert len(data["changes"]) == 2
    for change in data["changes"]:
        assert change["runs_before"] == STEP_AT and change["runs_after"] == 16 - STEP_AT
        assert change["commits"] == [f"{STEP_AT - 1:02d}" + "ab" * 19, f"{STEP_AT:02d}" + "ab" * 19]
        assert change["change_pct"] == pytest.approx(15.0, abs=3.0)
        assert change["p_value"] <= 0.05
    code, out, _ = run_cli(
        capsys, "history", "changes", "--metric", "energy_per_item", "--db", str(step_db)
    )
    assert code == 0
    assert f"{STEP_AT - 1:02d}abababab..{STEP_AT:02d}abababab" in out
    assert "2 changes in 2 series" in out


@pytest.fixture
def drift_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """48 runs whose energy drifts slowly (a sine of 24 runs, 6 %) under 2 % noise."""
    db = tmp_path / "drift.db"
    paths = [
        str(write_run(tmp_path / f"d{i}.json", i, scale=1 + 0.06 * math.sin(2 * math.pi * i / 24)))
        for i in range(48)
    ]
    code, _, err = run_cli(capsys, "history", "add", *paths, "--db", str(db))
    assert code == 0, err
    return db


def test_changes_of_runs_that_drift_say_the_runs_look_autocorrelated(
    drift_db: Path, step_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("history", "changes", "--metric", "energy_per_item", "--db")
    code, out, err = run_cli(capsys, *argv, str(drift_db), "--json")
    assert code == 0, err
    found = json.loads(out)["changes"]
    assert found and all(c["autocorrelated"] and c["autocorrelation"] > 0 for c in found)
    code, out, _ = run_cli(capsys, *argv, str(drift_db))
    rows = [line for line in out.splitlines() if line.startswith("suites/")]
    assert len(rows) == len(found) and all(row.endswith("~") for row in rows)
    assert out.rstrip().splitlines()[-1].startswith("~ the series' runs look autocorrelated")
    assert "may be a slow drift rather than a step" in out
    # a step between independent runs: no mark, no note
    code, out, _ = run_cli(capsys, *argv, str(step_db), "--json")
    assert [c["autocorrelated"] for c in json.loads(out)["changes"]] == [False, False]
    code, out, _ = run_cli(capsys, *argv, str(step_db))
    assert "~" not in out and "autocorrelated" not in out


def test_changes_filters_by_time_and_test(
    step_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(step_db)
    later = (START + timedelta(days=30)).date().isoformat()
    code, out, _ = run_cli(capsys, "history", "changes", "--since", later, "--db", db)
    assert code == 0 and out == "no change in 0 series\n"  # no commits legend for none
    code, out, _ = run_cli(
        capsys, "history", "changes", "--test", "nothing-like-this*", "--json", "--db", db
    )
    assert code == 0 and json.loads(out) == {"series": 0, "changes": []}
    code, _, err = run_cli(capsys, "history", "changes", "--since", "yesterday", "--db", db)
    assert code == 2 and "'yesterday' is not a date" in err


def test_a_metric_the_history_does_not_hold_is_named_with_those_it_does(
    step_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(step_db)
    for argv in (
        ["changes", "--metric", "energy_per_itm"],
        ["html", str(tmp_path / "p.html"), "--metric", "energy_per_itm"],
    ):
        code, out, err = run_cli(capsys, "history", *argv, "--db", db)
        assert code == 2 and out == ""
        assert "--metric 'energy_per_itm'" in err
        assert "its metrics: edp, energy_j, energy_per_item" in err
    assert not (tmp_path / "p.html").exists()


def test_init_creates_an_empty_history_once_and_a_gate_then_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new" / "h.db"
    new = write_run(tmp_path / "new.json", 1)
    gate = ["history", "gate", str(new), "--fail", "energy_per_item:mean:5%", "--db", str(db)]
    code, _, err = run_cli(capsys, *gate)
    assert code == 2 and f"`edgeenergy history init --db {db}` creates it empty" in err
    assert not db.parent.exists()
    code, out, _ = run_cli(capsys, "history", "init", "--db", str(db))
    assert code == 0 and out == f"created the history database {db} (empty)\n"
    code, out, _ = run_cli(capsys, *gate)
    assert code == 0 and "nothing to gate against yet" in out
    assert run_cli(capsys, "history", "add", str(new), "--db", str(db))[0] == 0
    code, out, _ = run_cli(capsys, "history", "init", "--db", str(db))
    assert code == 0 and out == f"the history database {db} is there already: 1 run\n"
