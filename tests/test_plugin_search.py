"""``--edge-search`` in pytest: trials on a virtual board, the report's search section,
failed trials, resume, and bad input refused before anything runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from paced import with_paced

from pytest_edgeenergy.run.search import trial_of_entry

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

# The virtual board's utilisation pinned: following the host's load, its power would swing
# 3.7x (4.7 W idle to 17 W) with whatever else this machine runs, between one trial and the
# next, and decide which point is best.
BASE = (
    "--edge-board=sim:orin-nano",
    "--edge-sim-load=0.3",
    "--edge-idle-s=0",
    "--edge-quick",
    "-p",
    "no:cacheprovider",
)


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
    # Every trial is written once, in the search section; a test entry points at it.
    assert [t["extra"]["search"] for t in entries] == [
        {"test": "test_inner.py::test_work", "trial": k} for k in [None, *range(8)]
    ]
    trials = [trial_of_entry(doc, t) for t in entries]
    assert trials[0] is not None and trials[0]["energy_j"] == search["reference"]["energy_j"]
    (profiled,) = [
        t
        for t, trial in zip(entries, trials, strict=True)
        if trial and trial["knobs"] == best["knobs"]
    ]
    assert profiled["status"] == "passed"
    assert trial_of_entry(doc, profiled)["value"] == pytest.approx(best["energy_j"])  # type: ignore[index]
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
            "*unknown strategy 'annealing'; allowed: auto, binary, grid, optuna, random*",
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
            "*--edge-trials (command line): '0' must be >= 1 and <= 10000*",
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


def test_all_spans_core_counts_and_the_emc_range_in_search_mode(
    pytester: pytest.Pytester,
) -> None:
    # The issue's own example: every dimension `all`. The orin-nano's EMC (bpmp) shows
    # only a min and max rate, and its 6 cores can be held online 1..6.
    pytester.makepyfile(test_inner=WORKLOAD)
    report = pytester.path / "r.json"
    result = _run(
        pytester,
        "--edge-search=auto",
        "--edge-objective=min-energy",
        "--edge-trials=3",
        "--gpu-freq=all",
        "--cpu-freq=all",
        "--emc-freq=all",
        "--cpu-cores=all",
        f"--edge-report={report}",
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*= energy search =*",
            "note: --cpu-cores (command line) all: searched as 6 core counts (1, 2, 3, 4, 5, "
            "6 online)",
            "note: --emc-freq (command line) all: the EMC exposes no table of rates, only its "
            "range; searched as min,max (*, *)",
        ]
    )
    (search,) = _report(report)["search"]
    space = search["space"]
    assert space["cpu_cores"] == [1, 2, 3, 4, 5, 6]
    assert len(space["emc_freq_hz"]) == 2 and space["emc_freq_hz"][0] < space["emc_freq_hz"][1]
    assert len(space["gpu_freq_hz"]) > 1 and len(space["cpu_freq_hz"]) > 1
    assert len(search["notes"]) == 2
    for trial in search["trials"]:
        assert trial["knobs"]["cpu_cores"] in space["cpu_cores"]
        assert trial["knobs"]["emc_freq_hz"] in space["emc_freq_hz"]


def test_cpu_cores_all_keeps_its_grid_meaning_without_search(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    result = _run(pytester, "--cpu-cores=all", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert len([ln for ln in result.stdout.lines if "test_work[" in ln]) == 1
    result = _run(pytester, "--emc-freq=all", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--emc-freq*all: the EMC exposes no table of rates*"])


def test_prior_report_seeds_the_auto_search(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    first, second = pytester.path / "a.json", pytester.path / "b.json"
    grid = ("--gpu-freq=all", "--cpu-freq=min,max")
    _run(
        pytester, "--edge-search=random", "--edge-trials=5", *grid, f"--edge-report={first}"
    ).assert_outcomes(passed=6)
    result = _run(
        pytester,
        "--edge-search=auto",
        "--edge-trials=2",
        *grid,
        f"--edge-prior={first}",
        f"--edge-report={second}",
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"  prior: 5 profiles of {first}"])
    (search,) = _report(second)["search"]
    # The same test's 5 pinned trials of the first run (the dvfs reference is no profile).
    assert search["prior"] == {"path": str(first), "profiles": 5}


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (
            "gpu_freq_hz,time_s\n306000000,0.1\n",
            ("--edge-search=auto",),
            "*--edge-prior *p.csv: needs columns time_s and power_w (or energy_j)*",
        ),
        (
            "cpu_freq_hz,time_s,power_w\n115200000,0.1,5\n1728000000,0.05,9\n",
            ("--edge-search=auto",),
            "*--edge-prior *p.csv: the prior's profiles must vary the same knobs as the "
            "search (gpu_freq_hz)*",
        ),
        (
            "gpu_freq_hz,time_s,power_w\n306000000,0.1,5\n",
            ("--edge-search=grid",),
            "*--edge-prior (command line): a prior seeds the auto strategy only, not 'grid'*",
        ),
    ],
    ids=["no-figures", "other-knobs", "not-auto"],
)
def test_bad_prior_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, content: str, args: tuple[str, ...], message: str
) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    prior = pytester.path / "p.csv"
    prior.write_text(content)
    result = _run(pytester, *args, "--edge-trials=2", "--gpu-freq=all", f"--edge-prior={prior}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "passed" not in result.stdout.str()


SLEEPS = WORKLOAD + "    time.sleep(0.5)  # a long trial: the run is killed between two\n"


def _trials_in(path: Path) -> int:
    try:
        searches = _report(path).get("search") or []
    except (OSError, ValueError):
        return 0  # not written yet, or being rewritten
    return len(searches[0]["trials"]) if searches else 0


def test_a_search_killed_mid_run_resumes_from_its_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=SLEEPS)
    killed, resumed = pytester.path / "a.json", pytester.path / "b.json"
    grid = ("--edge-search=random", "--edge-seed=3", "--gpu-freq=all", "--edge-trials=6")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *BASE, *grid, f"--edge-report={killed}"],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S  # a guard against a hang, not a timing
        while _trials_in(killed) < 2:
            assert proc.poll() is None, "the search ended before its 2nd trial was reported"
            assert time.monotonic() < deadline, "no 2nd trial in the report"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    (before,) = _report(killed)["search"]
    done = len(before["trials"])
    assert 2 <= done < 6
    result = _run(pytester, *grid, f"--edge-search-resume={killed}", f"--edge-report={resumed}")
    result.assert_outcomes(passed=6 - done, skipped=1 + done)
    (after,) = _report(resumed)["search"]
    assert after["resumed"] == done and len(after["trials"]) == 6
    assert after["trials"][:done] == before["trials"]  # the finished trials, kept as measured
    knobs = [tuple(sorted(t["knobs"].items())) for t in after["trials"]]
    assert len(set(knobs)) == 6  # the resumed search goes on to new points


BATCHED = with_paced("""
from pathlib import Path


def test_work(operating_point, edge_bench, batch_size):
    with Path("seen.txt").open("a") as f:
        f.write(f"{operating_point.gpu_freq_hz} {batch_size}\\n")
    gpu_hz = operating_point.gpu_freq_hz or 1_020_000_000
    # A fixed cost per call: bigger batches cost less per item (1.4x to 2x per item).
    work = Paced(0.004 + 0.002 * batch_size * 1e9 / gpu_hz)
    edge_bench.run(work, setup=work.restart, items_per_call=batch_size)
""")


def test_batch_size_is_a_dimension_of_the_search(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=BATCHED)
    report = pytester.path / "r.json"
    result = _run(
        pytester,
        "--edge-search=grid",
        "--edge-trials=4",
        "--gpu-freq=min,max",
        "--batch-size=4,1",
        f"--edge-report={report}",
    )
    result.assert_outcomes(passed=5)  # one search: dvfs and 4 trials, no search per batch
    doc = _report(report)
    (search,) = doc["search"]
    assert search["test"] == "test_inner.py::test_work"
    assert search["space"]["batch_size"] == [1, 4]
    knobs = [t["knobs"] for t in search["trials"]]
    assert sorted((k["gpu_freq_hz"], k["batch_size"]) for k in knobs) == sorted(
        (g, b) for g in search["space"]["gpu_freq_hz"] for b in (1, 4)
    )
    # Each trial's test ran at the proposed batch size; the reference at the first listed.
    seen = (pytester.path / "seen.txt").read_text().split("\n")[:-1]
    assert seen[0] == "None 4"
    assert seen[1:] == [f"{k['gpu_freq_hz']} {k['batch_size']}" for k in knobs]
    entries = [trial_of_entry(doc, t) for t in doc["tests"]]
    sizes = [e.get("batch_size") or e["knobs"]["batch_size"] for e in entries if e is not None]
    assert sizes == [4] + [k["batch_size"] for k in knobs]
    # Per item, so batches compare: the fixed cost per call favours the bigger batch.
    assert search["best"]["knobs"]["batch_size"] == 4


def test_prior_from_another_tests_search(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=WORKLOAD)
    first = pytester.path / "a.json"
    _run(
        pytester,
        "--edge-search=random",
        "--edge-trials=3",
        "--gpu-freq=all",
        "test_inner.py",
        f"--edge-report={first}",
    ).assert_outcomes(passed=4)
    pytester.makepyfile(test_other=WORKLOAD.replace("test_work", "test_other_work"))
    result = _run(
        pytester,
        "--edge-search=auto",
        "--edge-trials=2",
        "--gpu-freq=all",
        "test_other.py",
        f"--edge-prior={first}",
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"  prior: 3 profiles of {first}"])
