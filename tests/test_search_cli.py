"""``edgeenergy search``: the replay command's output, and bad input refused before a trial."""

from __future__ import annotations

import csv
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from search_helpers import optimum, toy_rows, toy_table

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.search import Objective


@pytest.fixture
def table_csv(tmp_path: Path) -> Path:
    path = tmp_path / "profiles.csv"
    rows = toy_rows(cores=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*rows[0], "comment"])
        writer.writeheader()
        writer.writerows({**r, "comment": "ignored"} for r in rows)
    return path


def search(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["search", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output(table_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = search(
        capsys,
        "--replay",
        str(table_csv),
        "--objective",
        "min-time",
        "--power-budget-w",
        "7",
        "--trials",
        "16",
        "--strategy",
        "auto",
        "--seed",
        "2",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["strategy"] == "auto" and data["objective"] == "min-time"
    assert data["power_budget_w"] == 7.0
    assert data["profiles"] == len(data["trials"]) == 16
    assert set(data["trials"][0]) >= {"knobs", "time_s", "power_w", "feasible"}
    assert set(data["trials"][0]["knobs"]) == {"cpu_cores", "cpu_freq_hz", "gpu_freq_hz"}
    best = optimum(toy_table(cores=True), Objective("min-time", power_budget_w=7))
    assert data["best"]["knobs"] == best.knobs
    assert data["best"]["energy_j"] == pytest.approx(best.time_s * best.power_w)  # type: ignore[operator]
    assert data["best"]["power_w"] <= 7
    assert data["front"] is None


def test_text_output_and_pareto_front(table_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = search(
        capsys,
        "--replay",
        str(table_csv),
        "--objective",
        "pareto",
        "--trials",
        "8",
        "--strategy",
        "random",
    )
    assert code == 0
    assert out.startswith("strategy random, objective pareto: 8 of 48 points profiled")
    assert out.count("  trial") == 8 and "pareto front (time vs energy):" in out
    code, out, _ = search(
        capsys, "--replay", str(table_csv), "--objective", "pareto", "--trials", "8", "--json"
    )
    front = json.loads(out)["front"]
    assert front and all(a["time_s"] < b["time_s"] for a, b in itertools.pairwise(front))
    assert all(a["energy_j"] > b["energy_j"] for a, b in itertools.pairwise(front))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--objective", "min-time", "--power-budget-w", "3"],
            "no operating point meets 3 W; the lowest measured was 5.16 W",
        ),
        (
            ["--objective", "min-energy", "--latency-budget-s", "0.01"],
            "no operating point meets 0.01 s; the fastest measured was 0.2",
        ),
        (
            ["--objective", "min-energy", "--strategy", "grid", "--prior", "x.csv"],
            "--prior seeds the auto strategy only",
        ),
        (["--objective", "min-energy", "--where", "gpu"], "--where 'gpu': expected COLUMN=VALUE"),
    ],
)
def test_bad_input_is_refused_before_any_trial(
    table_csv: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    if "--trials" not in args:
        args = [*args, "--trials", "5"]
    code, out, err = search(capsys, "--replay", str(table_csv), *args)
    assert code == 2 and out == ""
    assert err.startswith("edgeenergy: ") and message in err
    if "lowest measured" in message:
        assert "at cpu_cores=2 cpu_freq=729.6MHz gpu_freq=306MHz" in err


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("--strategy", "bayes", "'auto', 'binary', 'grid', 'optuna', 'random'"),
        ("--objective", "fast", "'min-edp'"),
    ],
)
def test_unknown_strategy_or_objective(
    table_csv: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, allowed: str
) -> None:
    args = ["--replay", str(table_csv), "--objective", "min-energy", "--trials", "3", option, value]
    with pytest.raises(SystemExit) as exc:
        main(["search", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: invalid choice: '{value}' (choose from" in err and allowed in err


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("--trials", "0", ">= 1 and <= 10000"),
        ("--trials", "1e3", "is not a whole number; allowed: a whole number >= 1 and <= 10000"),
        ("--power-budget-w", "-1", "> 0 and <= 5000 W"),
        ("--latency-budget-s", "nan", "> 0 and <= 86400 s"),
    ],
)
def test_numbers_outside_the_options_ranges_are_usage_errors(
    table_csv: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, allowed: str
) -> None:
    """The ranges are --edge-trials', --edge-power-budget-w's...: one description."""
    args = ["--replay", str(table_csv), "--trials", "3", option, value]
    with pytest.raises(SystemExit) as exc:
        main(["search", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: {value!r}" in err and allowed in err


def test_a_replay_file_without_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("gpu_freq_hz,latency\n1,2\n")
    code, out, err = search(
        capsys, "--replay", str(path), "--objective", "min-energy", "--trials", "3"
    )
    assert code == 2 and out == ""
    assert "bad.csv: needs columns time_s and power_w (or energy_j)" in err


def test_a_prior_from_another_workload_seeds_auto(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, prior = tmp_path / "target.csv", tmp_path / "prior.csv"
    rows = toy_rows()
    for path, scale in ((target, 1.0), (prior, 1.7)):
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows({**r, "time_s": r["time_s"] * scale} for r in rows)
    code, out, err = search(
        capsys,
        "--replay",
        str(target),
        "--prior",
        str(prior),
        "--objective",
        "min-energy",
        "--trials",
        "6",
        "--json",
    )
    assert code == 0, err
    assert (
        json.loads(out)["best"]["knobs"]
        == optimum(table := __import__("search_helpers").toy_table(), Objective("min-energy")).knobs
        and table
    )


def test_the_search_package_imports_nothing_heavy() -> None:
    code = (
        "import sys, pytest_edgeenergy.search, pytest_edgeenergy.commands.search, "
        "pytest_edgeenergy.search.replay, pytest_edgeenergy.commands\n"
        "heavy = {'numpy', 'optuna', 'pandas'} & set(sys.modules)\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_search_answers_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["search", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: edgeenergy search") and "--power-budget-w W" in out
