"""The regression gate inside pytest: --edge-save-baseline, --edge-baseline, --edge-fail and
the edge_gate marker, on virtual boards with a real workload whose work we change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# A fixed time per item (a sleep, EDGE_TEST_WORK times longer for a "slower" change) on a
# virtual board whose utilisation is pinned (--edge-sim-load): energy per item then depends
# on neither this machine's speed nor its other load, so "unchanged passes" holds on a
# shared, noisy host. 20 ms: a loaded host wakes a sleeper a few ms late, which must stay
# well inside the gate's 50 % (the slower version is 4x the work).
WORKLOAD = """
import os, time
import pytest

def _work():
    time.sleep(0.02 * int(os.environ.get("EDGE_TEST_WORK", "1")))

def test_hash(edge_bench):
    edge_bench.run(_work, items_per_call=1, params={"workload": "sha256"})

@pytest.mark.edge_gate("energy_per_item:mean:1000%")
def test_hash_loose(edge_bench):
    edge_bench.run(_work, items_per_call=1, params={"workload": "sha256-loose"})
"""

BENCH = [
    "--edge-items=8",
    "--edge-repeats=6",
    "--edge-warmup=1",
    "--edge-min-window-s=0.3",
    "--edge-idle-s=0.2",
    "--edge-sim-load=0.3",
    "-p",
    "no:cacheprovider",
]


ENERGY_ONLY = """
import time

def test_e(energy):
    with energy.window():
        time.sleep(0.4)
"""

WINDOWS = "whose windows carry energy_j, energy_net_j, power_mean, power_peak, duration_s and"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("EDGEENERGY_"):
            monkeypatch.delenv(key)
    monkeypatch.delenv("EDGE_TEST_WORK", raising=False)


def _run(
    pytester: pytest.Pytester,
    board: str,
    report: Path,
    *extra: str,
    work: int = 1,
) -> pytest.RunResult:
    os.environ["EDGE_TEST_WORK"] = str(work)
    try:
        return pytester.runpytest_subprocess(
            f"--edge-board=sim:{board}", f"--edge-report={report}", *BENCH, *extra
        )
    finally:
        del os.environ["EDGE_TEST_WORK"]


def test_regression_fails_noise_passes_and_marker_overrides(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    baselines = tmp_path / "baselines"
    first = _run(pytester, "orin-nano", tmp_path / "a.json", f"--edge-save-baseline={baselines}")
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["*baseline saved to*"])
    saved = list(baselines.glob("*.json"))
    assert len(saved) == 1

    gate = [f"--edge-baseline={baselines}", "--edge-fail=energy_per_item:mean:50%"]
    same = _run(pytester, "orin-nano", tmp_path / "b.json", *gate)
    assert same.ret == 0, same.stdout.str()
    same.stdout.fnmatch_lines(["*energy gate*", "*edgeenergy gate: passed*"])

    slower = _run(pytester, "orin-nano", tmp_path / "c.json", *gate, work=4)
    assert slower.ret == 1, slower.stdout.str()
    out = slower.stdout.str()
    assert "edgeenergy gate: FAILED" in out
    lines = [line for line in out.splitlines() if "test_hash" in line and "REGRESSION" in line]
    assert any("test_hash" in line and "loose" not in line for line in lines), out
    # The marker's 1000 % threshold replaces --edge-fail for that test: not a regression.
    assert not any("test_hash_loose" in line for line in lines), out


def test_other_device_is_no_baseline_not_a_failure(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    baselines = tmp_path / "baselines"
    _run(pytester, "nano", tmp_path / "a.json", f"--edge-save-baseline={baselines}")
    other = _run(
        pytester,
        "orin-nano",
        tmp_path / "b.json",
        f"--edge-baseline={baselines}",
        "--edge-fail=energy_per_item:mean:5%",
        work=4,
    )
    assert other.ret == 0
    other.stdout.fnmatch_lines(["*no baseline for this device*"])


def test_bad_fail_expression_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    result = pytester.runpytest_subprocess("--edge-fail=energy_per_item:mean:fast")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--edge-fail*energy_per_item:mean:fast*"])


def test_metric_that_cannot_exist_is_a_usage_error_before_any_test_runs(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    pytester.makepyfile(test_w=f"def test_w():\n    open({str(ran)!r}, 'w').close()\n")
    result = pytester.runpytest_subprocess("--edge-fail=enrgy_per_item:mean:5%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--edge-fail 'enrgy_per_item:mean:5%'*no result can carry a metric named*"
         "(did you mean 'energy_per_item'?)*"]
    )  # fmt: skip
    assert not ran.exists()


@pytest.mark.parametrize("kind", ["fifo", "device", "loop"])
def test_a_baseline_that_is_no_file_nor_directory_is_a_usage_error_before_any_test_runs(
    pytester: pytest.Pytester, tmp_path: Path, kind: str
) -> None:
    """Read as a directory, `--edge-baseline <(cat r.json)` held no reports: 'no baseline
    yet', and the run passed ungated."""
    baseline = tmp_path / "base"
    if kind == "fifo":
        os.mkfifo(baseline)
        said = "is a pipe (FIFO); a baseline is a report file or a directory of reports"
    elif kind == "device":
        baseline = Path("/dev/zero")
        said = "is a character device; a baseline is a report file or a directory of reports"
    else:
        os.symlink(tmp_path / "other", baseline)
        os.symlink(baseline, tmp_path / "other")
        said = "is a loop of symbolic links"
    ran = tmp_path / "ran"
    pytester.makepyfile(test_w=f"def test_w():\n    open({str(ran)!r}, 'w').close()\n")
    result = pytester.runpytest_subprocess(
        f"--edge-baseline={baseline}", "--edge-fail=energy_per_item:mean:5%"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--edge-baseline {baseline}: {said}*"])
    assert not ran.exists()


@pytest.mark.parametrize(
    ("expr", "fixture", "message"),
    [
        ("load.enrgy_j:mean:3%", "", "*did you mean 'load.energy_j'*"),
        # a metric edge_bench could carry, on a test that measures with the energy fixture
        ("load.energy_per_item:mean:3%", "energy",
         "*this test cannot carry 'load.energy_per_item' (did you mean 'load.energy_j'?): it "
         f"uses the energy fixture, {WINDOWS}*"),
    ],
)  # fmt: skip
def test_edge_gate_marker_its_test_cannot_carry_is_a_usage_error_at_collection(
    pytester: pytest.Pytester, tmp_path: Path, expr: str, fixture: str, message: str
) -> None:
    pytester.makepyfile(
        test_m=f"""
import pytest

@pytest.mark.edge_gate({expr!r})
def test_m({fixture}):
    pass
"""
    )
    result = pytester.runpytest_subprocess(f"--edge-baseline={tmp_path / 'baselines'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_m.py::test_m: edge_gate({expr!r}): {message}"])


def test_first_run_starts_the_baseline_and_a_strict_gate_fails_on_insufficient(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    baselines = tmp_path / "ci" / "baselines"
    recipe = [
        f"--edge-baseline={baselines}",
        f"--edge-save-baseline={baselines}",
        "--edge-fail=energy_per_item:mean:0%",  # any change is over: judged by the repeats
        "--edge-repeats=2",
    ]
    first = _run(pytester, "orin-nano", tmp_path / "a.json", *recipe)
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(
        [f"*no baseline yet: {baselines} does not exist; this run is not gated*",
         "*edgeenergy gate: passed*", "*baseline saved to*"]
    )  # fmt: skip
    assert len(list(baselines.glob("*.json"))) == 1
    monkeypatch.setenv("EDGEENERGY_FAIL_INSUFFICIENT", "1")
    strict = _run(pytester, "orin-nano", tmp_path / "b.json", *recipe)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED, strict.stdout.str()
    strict.stdout.fnmatch_lines(
        ["*gate FAILED: 1 within, 1 insufficient (strict: insufficient fails)*",
         "*edgeenergy gate: FAILED (1 insufficient, strict gate)*"]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("1", "*--edge-fail-insufficient makes the gate strict, but no gate is given*"),
        ("maybe", "*edge_fail_insufficient (ini file): 'maybe': use 1/0, true/false, yes/no*"),
    ],
)
def test_strict_gate_from_the_ini_file_is_read_and_checked(
    pytester: pytest.Pytester, ini: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\nedge_fail_insufficient = {ini}\n")
    pytester.makepyfile(test_w="def test_w():\n    pass\n")
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


@pytest.mark.parametrize(
    ("fail", "hint"),
    [("energy_per_item:mean:5%", "energy_j"), ("latency_p90:mean:5%", "duration_s")],
)
def test_metric_the_collected_tests_cannot_carry_stops_the_run_before_any_test_saving_nothing(
    pytester: pytest.Pytester, tmp_path: Path, fail: str, hint: str
) -> None:
    ran = tmp_path / "ran"
    pytester.makepyfile(
        test_e=ENERGY_ONLY.replace("    with", f"    open({str(ran)!r}, 'w').close()\n    with")
    )
    baselines = tmp_path / "baselines"
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:orin-nano",
        f"--edge-report={tmp_path / 'e.json'}",
        "--edge-idle-s=0",
        f"--edge-baseline={baselines}",
        f"--edge-save-baseline={baselines}",
        f"--edge-fail={fail}",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    metric = fail.split(":")[0]
    result.stderr.fnmatch_lines(
        [f"*--edge-fail {fail!r}: no collected test can carry {metric!r} (did you mean "
         f"{hint!r}?): those that measure (1) use the energy fixture, {WINDOWS} energy_j.RAIL*"]
    )  # fmt: skip
    assert not ran.exists() and not baselines.exists()


def test_a_gate_ending_in_a_usage_error_saves_no_baseline(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_e=ENERGY_ONLY)
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    (baselines / "bad.json").write_text("{", encoding="utf-8")  # no usable baseline: exit 4
    report = tmp_path / "e.json"
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:orin-nano",
        f"--edge-report={report}",
        "--edge-idle-s=0",
        f"--edge-baseline={baselines}",
        f"--edge-save-baseline={baselines}",
        "--edge-fail=energy_j:mean:5%",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["edgeenergy gate: usage error: *no usable baseline for this run*",
         f"edgeenergy: no baseline saved to {baselines} after the usage error; the report is "
         f"{report}"]
    )  # fmt: skip
    assert [p.name for p in baselines.iterdir()] == ["bad.json"]


def test_report_holds_bench_metrics(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    report = tmp_path / "r.json"
    _run(pytester, "agx-orin", report).assert_outcomes(passed=2)
    data = json.loads(report.read_text())
    assert data["simulated"] is True and data["device"]["total"]["method"] == "sum"
    assert data["finished_at"] is not None
    entry = next(t for t in data["tests"] if t["id"].endswith("::test_hash"))
    assert entry["params"]["workload"] == "sha256"
    epi = entry["metrics"]["energy_per_item"]
    assert epi["unit"] == "J/item" and len(epi["samples"]) == 6 and epi["value"] > 0
    assert {"latency_p90", "throughput", "edp"} <= set(entry["metrics"])


def test_pytest_killed_mid_run_leaves_a_valid_report(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys
    import time

    from pytest_edgeenergy.report.load import load_report

    ready = tmp_path / "ready"
    pytester.makepyfile(
        test_k=f"""
import time, zlib
from pathlib import Path

def test_a(energy):
    with energy.window():
        time.sleep(0.2)

def test_b(energy):
    with energy.window():
        zlib.compress(b"x" * 10_000_000)
        time.sleep(0.1)

def test_c(energy):
    Path({str(ready)!r}).write_text("now")
    time.sleep(60)
"""
    )
    report = tmp_path / "killed.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--edge-board=sim:xavier-nx",
            f"--edge-report={report}",
            "--edge-idle-s=0.2",
            "-p",
            "no:cacheprovider",
            "test_k.py",
        ],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    # The virtual board's animator notices its parent is gone, stops, removes its tree.
    def orphans() -> list[str]:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                args = cmdline.read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--parent-pid" in args and str(proc.pid).encode() in args:
                found.append(args[args.index(b"run") + 1].decode())
        return found

    trees = orphans()
    deadline = time.monotonic() + 10
    while orphans() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert orphans() == []
    assert not any(Path(t).exists() for t in trees)
    data = load_report(report)  # validates against the schema
    assert [t["id"].rsplit("::", 1)[-1] for t in data["tests"]] == ["test_a", "test_b"]
    assert all(t["metrics"]["energy_j"]["value"] > 0 for t in data["tests"])
    assert data["finished_at"] is None and data["simulated"] is True
