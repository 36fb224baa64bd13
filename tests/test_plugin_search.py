"""``--edge-search`` in pytest: trials on a virtual board, the report's search section,
failed trials, resume, and bad input refused before anything runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

RUN_TIMEOUT_S = 240.0

WORKLOAD = """
import time


def test_work(operating_point, edge_bench):
    # Slower at lower GPU clocks, as a GPU-bound workload is.
    gpu_hz = operating_point.gpu_freq_hz or 1_020_000_000
    edge_bench.run(lambda: time.sleep(0.01 * 1e9 / gpu_hz), items_per_call=4)
"""

FAILS_AT_918MHZ = """
import time


def test_work(operating_point, edge_bench):
    if operating_point.gpu_freq_hz == 918_000_000:
        raise MemoryError("out of memory at this point")
    gpu_hz = operating_point.gpu_freq_hz or 1_020_000_000
    edge_bench.run(lambda: time.sleep(0.01 * 1e9 / gpu_hz), items_per_call=4)
"""

BASE = ("--edge-board=sim:orin-nano", "--edge-idle-s=0", "--edge-quick", "-p", "no:cacheprovider")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*BASE, *args, timeout=RUN_TIMEOUT_S)


def _report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_auto_search_profiles_and_pins_the_recommended_point(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    report = pytester.path / "r.json"
    result = _run(
        pytester,
        "--edge-search=auto",
        "--edge-trials=8",
        "--gpu-freq=all",
        "--cpu-freq=min,max",
        f"--edge-report={report}",
    )
    result.assert_outcomes(passed=9)  # the dvfs reference and 8 trials
    result.stdout.fnmatch_lines(
        [
            "*= energy search =*",
            "test_inner.py::test_work: strategy auto, objective min-energy, 8 points profiled",
            "*dvfs*(reference)*",
            "*trial7*",
            "*best: *",
            "*against dvfs: energy *%, time *%*",
        ]
    )
    doc = _report(report)
    (search,) = doc["search"]
    assert search["test"] == "test_inner.py::test_work"
    assert (search["strategy"], search["objective"], search["seed"]) == ("auto", "min-energy", 0)
    assert len(search["trials"]) == 8 and search["profiles"] == 8
    assert search["reference"]["energy_j"] > 0
    best = search["best"]
    energies = [t["energy_j"] for t in search["trials"] if not t["failed"]]
    assert best["energy_j"] == min(energies)
    assert search["saving"]["energy_pct"] == pytest.approx(
        100 * (best["energy_j"] / search["reference"]["energy_j"] - 1)
    )
    # The recommended point was profiled by a test of this run, pinned and read back.
    entries = [t for t in doc["tests"] if (t.get("extra") or {}).get("search")]
    assert [t["id"].rpartition("[")[2] for t in entries] == ["dvfs]"] + [
        f"trial{k}]" for k in range(8)
    ]
    (profiled,) = [t for t in entries if t["extra"]["search"]["knobs"] == best["knobs"]]
    assert profiled["status"] == "passed"
    assert profiled["extra"]["search"]["value"] == pytest.approx(best["energy_j"])
    assert profiled["extra"]["operating_point"]["verified"] is True
    gpu = profiled["params"]["operating_point"]["read_back"]["gpu"]
    assert gpu["min_freq_hz"] == gpu["max_freq_hz"] == best["knobs"]["gpu_freq_hz"]
    policy = profiled["params"]["operating_point"]["read_back"]["cpufreq"]["policy0"]
    assert policy["max_freq_hz"] == best["knobs"]["cpu_freq_hz"]
    # Each proposal is new: no point profiled twice.
    knobs = [tuple(sorted(t["knobs"].items())) for t in search["trials"]]
    assert len(set(knobs)) == 8


def test_failed_trial_is_recorded_and_the_search_goes_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=FAILS_AT_918MHZ)
    report = pytester.path / "r.json"
    result = _run(
        pytester,
        "--edge-search=grid",
        "--edge-trials=8",
        "--gpu-freq=all",
        f"--edge-report={report}",
    )
    result.assert_outcomes(passed=8, failed=1)
    (search,) = _report(report)["search"]
    trials = search["trials"]
    assert len(trials) == 8  # every GPU clock tried, the failed one included
    failed = [t for t in trials if t["failed"]]
    assert [t["knobs"] for t in failed] == [{"gpu_freq_hz": 918_000_000}]
    assert "MemoryError" in failed[0]["failed"] and failed[0]["energy_j"] is None
    assert search["best"]["knobs"] != {"gpu_freq_hz": 918_000_000}
    result.stdout.fnmatch_lines(["*gpu_freq=918MHz*failed: test failed: MemoryError*"])


def test_resume_continues_a_search_as_the_uninterrupted_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    first, resumed, whole = (pytester.path / n for n in ("a.json", "b.json", "c.json"))
    grid = ("--edge-search=random", "--edge-seed=7", "--gpu-freq=all", "--cpu-freq=min,max")
    _run(pytester, *grid, "--edge-trials=3", f"--edge-report={first}").assert_outcomes(passed=4)
    result = _run(
        pytester,
        *grid,
        "--edge-trials=5",
        f"--edge-search-resume={first}",
        f"--edge-report={resumed}",
    )
    result.assert_outcomes(passed=2, skipped=4)  # dvfs and trial0..2 taken over
    _run(pytester, *grid, "--edge-trials=5", f"--edge-report={whole}").assert_outcomes(passed=6)
    (a,) = _report(first)["search"]
    (b,) = _report(resumed)["search"]
    (c,) = _report(whole)["search"]
    assert b["resumed"] == 3 and len(b["trials"]) == 5
    assert b["trials"][:3] == a["trials"]  # the history, as measured then
    assert b["reference"] == a["reference"]
    assert [t["knobs"] for t in b["trials"]] == [t["knobs"] for t in c["trials"]]
    # Only the new trials ran as tests of the resumed run.
    ran = [t["id"] for t in _report(resumed)["tests"]]
    assert [i.rpartition("[")[2] for i in ran] == ["trial3]", "trial4]"]


def test_resume_refuses_another_search_config(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    first = pytester.path / "a.json"
    grid = ("--gpu-freq=all", "--edge-trials=2")
    _run(pytester, "--edge-search=random", *grid, f"--edge-report={first}").assert_outcomes(
        passed=3
    )
    result = _run(pytester, "--edge-search=grid", *grid, f"--edge-search-resume={first}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--edge-search-resume*test_inner.py::test_work was searched with strategy random*"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--edge-search=annealing", "--edge-trials=4", "--gpu-freq=all"),
            "*unknown strategy 'annealing'; allowed: grid, random, binary, optuna, auto*",
        ),
        (
            (
                "--edge-search=auto",
                "--edge-objective=cheapest",
                "--edge-trials=4",
                "--gpu-freq=all",
            ),
            "*unknown objective 'cheapest'; allowed: min-energy, min-time, min-edp, pareto*",
        ),
        (
            ("--edge-search=auto", "--edge-trials=0", "--gpu-freq=all"),
            "*--edge-trials (command line): '0': at least 1 trial is needed*",
        ),
        (
            ("--edge-search=auto", "--gpu-freq=all"),
            "*--edge-search needs --edge-trials=N*",
        ),
        (
            ("--edge-objective=min-edp", "--gpu-freq=all"),
            "*--edge-objective is an option of --edge-search=STRATEGY*",
        ),
        (
            ("--edge-search=auto", "--edge-trials=4", "--gpu-freq=612MHz", "--cpu-freq=max"),
            "*--edge-search: *--gpu-freq (command line) 612MHz* make a single point, nothing "
            "to search; give a dimension several values or all*",
        ),
        (
            (
                "--edge-search=binary",
                "--edge-objective=pareto",
                "--edge-trials=4",
                "--gpu-freq=all",
            ),
            "*strategy 'binary' finds one point and cannot build a pareto front*",
        ),
        (
            (
                "--edge-search=auto",
                "--edge-trials=4",
                "--gpu-freq=all",
                "--edge-idle-s=0.5",
                "--edge-power-budget-w=0.5",
            ),
            "*--edge-power-budget-w 0.5: the board draws * W idle, so no operating point can "
            "meet it*",
        ),
    ],
    ids=[
        "strategy",
        "objective",
        "zero-trials",
        "no-trials",
        "no-search",
        "one-point",
        "binary-pareto",
        "budget",
    ],
)
def test_bad_search_input_is_a_usage_error(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    result = _run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "passed" not in result.stdout.str()
