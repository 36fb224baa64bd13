"""``--edge-workload-python`` / ``--edge-workload-prefix`` / ``--edge-workload-timeout`` in real
pytest runs: a standard-library workload measured in Python 3.6 and 3.8 (pyenv's, standing
in for JetPack 4 and 5's system Pythons), where the report says it ran, and what a worker
that dies, hangs or cannot import torch does to its test, to the others and to the board."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from test_pinning_plugin import changed, tree_digest
from worker_pythons import old_python, write_user_workloads

from pytest_edgeenergy.plugin.options import SettingsError, build_bench
from pytest_edgeenergy.sim.tree import create

BOARD = ("--edge-board=sim:orin-nano", "--edge-idle-s=0", "--edge-sim-load=0.3")
SMALL = ("--edge-warmup=1", "--edge-repeats=2", "--edge-min-window-s=0.2", "-p", "no:cacheprovider")

# 64 KiB of zlib per item: 256 items make a window past --edge-min-window-s (the default
# 3,200 cost each old-Python run ~8 s of CPU for nothing the tests check).
ZLIB_ITEMS = "--edge-items=256"
ZLIB_TEST = """
def test_zlib(edge_bench):
    work = edge_bench.load_in_worker(
        {"kind": "zlib", "bytes": 65536, "level": 6}, params={"workload": "zlib"}
    )
    result = edge_bench.run(work, items_per_call=1, params=work.params())
    assert result.valid and len(result.repeats) == 2
    assert result.params["bytes"] == 65536
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / "r.json").read_text())  # type: ignore[no-any-return]


# -- the options -------------------------------------------------------------------------


def test_options_are_read_and_checked(pytester: pytest.Pytester) -> None:
    python = str(old_python("3.8"))
    s = build_bench(pytester.parseconfig(f"--edge-workload-python={python}")).placement
    assert s.out_of_process and s.argv() == [python] and s.timeout_s == 600
    s = build_bench(
        pytester.parseconfig(
            "--edge-workload-prefix=env -i 'A=my image'", "--edge-workload-timeout=30"
        )
    ).placement
    assert s.prefix == ("env", "-i", "A=my image") and s.timeout_s == 30
    assert build_bench(pytester.parseconfig()).placement.out_of_process is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--edge-workload-python=/nonexistent/python3.8"],
            "--edge-workload-python (command line): '/nonexistent/python3.8' is not an "
            "executable file nor a command on PATH",
        ),
        (
            ["--edge-workload-prefix=no-such-runtime run -i"],
            "--edge-workload-prefix (command line): 'no-such-runtime' is not an executable",
        ),
        (["--edge-workload-prefix=env 'x"], "cannot be split into words"),
        (["--edge-workload-prefix= "], "names no command"),
        (["--edge-workload-timeout=0"], "--edge-workload-timeout (command line): '0' must be"),
    ],
)
def test_bad_options_are_one_line(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    with pytest.raises(SettingsError) as info:
        build_bench(pytester.parseconfig(*args))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_bad_option_stops_the_run_before_any_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=ZLIB_TEST)
    result = pytester.runpytest_subprocess(
        *BOARD, "--edge-workload-python=/nonexistent/python3.8", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--edge-workload-python (command line): '/nonexistent*"])


def test_behind_a_prefix_the_interpreter_is_the_prefixs(pytester: pytest.Pytester) -> None:
    """Behind a prefix (a container) the interpreter is not looked for here."""
    s = build_bench(
        pytester.parseconfig("--edge-workload-prefix=env -i", "--edge-workload-python=python3.8")
    ).placement
    assert s.argv() == ["env", "-i", "python3.8"]
    s = build_bench(pytester.parseconfig("--edge-workload-prefix=env -i")).placement
    assert s.argv() == ["env", "-i", "python3"]


# -- measured in an old Python -----------------------------------------------------------


@pytest.mark.parametrize("version", ["3.6", "3.8"])
def test_zlib_measured_in_an_old_python(pytester: pytest.Pytester, version: str) -> None:
    python = old_python(version)
    pytester.makepyfile(test_inner=ZLIB_TEST)
    result = pytester.runpytest_subprocess(
        *BOARD,
        *SMALL,
        ZLIB_ITEMS,
        f"--edge-workload-python={python}",
        f"--edge-report={pytester.path / 'r.json'}",
    )
    result.assert_outcomes(passed=1)
    data = _report(pytester)
    (entry,) = data["tests"]
    where = entry["extra"]["workload_process"]
    assert where["python"] == str(python) and where["python_version"].startswith(version)
    assert where["prefixed"] is False
    assert data["settings"]["edge_workload_python"] == str(python)
    assert data["settings"]["edge_workload_prefix"] is None
    run = entry["extra"]["runs"][0]
    assert run["memory_method"] == "worker-vmhwm"
    assert entry["metrics"]["energy_per_item"]["value"] > 0
    assert "load.energy_j" in entry["metrics"]  # the build is its own window
    assert entry["extra"]["phases"][0]["memory_peak_bytes"] > 1 << 20  # the worker's
    assert entry["metrics"]["memory_peak"]["value"] > 1 << 20  # the worker's, not ours


def test_a_prefix_from_the_environment_is_in_the_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``env -i`` stands in for ``docker run --rm -i IMAGE``: the worker's interpreter
    runs behind it with none of this environment; the report's settings hold the prefix
    whichever way it was given."""
    python = old_python("3.8")
    monkeypatch.setenv("EDGEENERGY_WORKLOAD_PREFIX", "env -i LANG=C.UTF-8")
    monkeypatch.setenv("EDGEENERGY_WORKLOAD_PYTHON", str(python))
    pytester.makepyfile(test_inner=ZLIB_TEST)
    result = pytester.runpytest_subprocess(
        *BOARD, *SMALL, ZLIB_ITEMS, f"--edge-report={pytester.path / 'r.json'}"
    )
    result.assert_outcomes(passed=1)
    data = _report(pytester)
    assert shlex.split(data["settings"]["edge_workload_prefix"]) == ["env", "-i", "LANG=C.UTF-8"]
    where = data["tests"][0]["extra"]["workload_process"]
    assert where["prefixed"] is True and where["python_given"] == str(python)


# -- failures: one line each, the others kept, nothing left running, the board restored ------

FAILURES = """
import os
from pathlib import Path

HERE = {here!r}


def _spec(name, **kwargs):
    return {{"kind": "callable", "module": "user_workloads", "name": name, "kwargs": kwargs,
            "path": [HERE]}}


def test_a_dies(edge_bench, operating_point):
    work = edge_bench.load_in_worker(_spec("dies", code=3))
    edge_bench.run(work, items_per_call=1, warmup=0)


def test_b_hangs(edge_bench, operating_point):
    work = edge_bench.load_in_worker(_spec("hangs", pid_file=os.path.join(HERE, "child.pid")))
    edge_bench.run(work, items_per_call=1, warmup=0)


def test_c_needs_torch(edge_bench, operating_point):
    edge_bench.worker(["torchvision"])
    raise AssertionError("not reached: the worker has no torch")


def test_d_zlib(edge_bench, operating_point):
    work = edge_bench.load_in_worker({{"kind": "zlib", "bytes": 16384}})
    assert edge_bench.run(work, items_per_call=1).repeats


def test_e_nothing_left_running(operating_point):
    child = int(Path(HERE, "child.pid").read_text())
    try:
        state = Path(f"/proc/{{child}}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        state = "gone"
    assert state in ("gone", "Z"), "the hung workload's child process is still running"
"""


def test_failures_fail_or_skip_their_test_alone_and_the_board_is_restored(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    python = old_python("3.6")
    here = write_user_workloads(tmp_path)
    board = create("orin-nano", tmp_path / "board")
    before = tree_digest(board)
    pytester.makepyfile(test_inner=FAILURES.format(here=here))
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        f"--edge-root={board}",
        "--edge-idle-s=0",
        "--gpu-freq=min",
        *SMALL,
        f"--edge-workload-python={python}",
        "--edge-workload-timeout=3",
        f"--edge-report={report}",
        "-rfs",
        timeout=300,
    )
    result.assert_outcomes(passed=2, failed=2, skipped=1)
    where = f"workload worker {python} (Python 3.6."
    result.stdout.fnmatch_lines(
        [
            "*_ test_a_dies?gpu306MHz? _*",
            f"{where}*: exited with status 3 during * calls; last stderr: the workload gives up",
            "*_ test_b_hangs?gpu306MHz? _*",
            f"{where}*: no answer for 3 s during * calls (--edge-workload-timeout); its "
            "process group was killed",
            f"SKIPPED*{where}*: cannot import torch: ModuleNotFoundError: No module named 'torch'",
        ]
    )
    out = result.stdout.str()
    assert "Traceback" not in out and "During handling" not in out
    assert changed(before, tree_digest(board)) == []
    tests = {t["name"].split("[")[0]: t for t in json.loads(report.read_text())["tests"]}
    assert tests["test_a_dies"]["status"] == "failed"
    assert "exited with status 3" in tests["test_a_dies"]["reason"]
    assert tests["test_b_hangs"]["status"] == "failed"
    assert tests["test_c_needs_torch"]["status"] == "skipped"
    assert tests["test_d_zlib"]["status"] == "passed" and tests["test_d_zlib"]["metrics"]
    for name in ("test_a_dies", "test_b_hangs", "test_d_zlib"):
        assert tests[name]["extra"]["workload_process"]["python_version"].startswith("3.6")


# -- the same work in process and in a worker ---------------------------------------------

PERIOD_S = 0.01
CALLS = 100
PAIRS = 6
T_999 = {5: 6.869}
"""Student's t, two-sided 99.9 %, by degrees of freedom (PAIRS - 1)."""
PIPE_ALLOWANCE_S = 1e-4
"""What the pipe may add per call (the issue's bound; benchmarks/bench_worker_pipe.py)."""

SAME_WORK = f"""
import time

PERIOD_S = {PERIOD_S}


def sleep_to_deadline():
    deadline = (int(time.monotonic() / PERIOD_S) + 1) * PERIOD_S
    left = deadline - time.monotonic()
    while left > 0:
        time.sleep(left)
        left = deadline - time.monotonic()


def test_same_work(edge_bench):
    remote = edge_bench.load_in_worker({{"kind": "sleep", "seconds": PERIOD_S, "aligned": True}})
    kw = dict(items_per_call=1, repeats=1, items={CALLS}, warmup=1, calibrate=False)
    for k in range({PAIRS}):
        order = [("in", sleep_to_deadline), ("out", remote)]
        for where, work in order if k % 2 == 0 else order[::-1]:
            edge_bench.run(work, label=f"{{where}}{{k}}", **kw)
"""


def test_the_same_work_in_process_and_in_a_worker_gives_the_same_energy(
    pytester: pytest.Pytester,
) -> None:
    """Calls that sleep to the next 10 ms tick of the monotonic clock (100 of them last
    1 s, give or take one period, whatever each wake-up's delay) on a virtual board whose
    power is pinned: energy per item in process and in a worker (this interpreter's, the
    default), measured in alternating pairs, differ by no more than the pairs' spread (t at
    99.9 %) plus what the pipe may add per call at the board's power."""
    pytester.makepyfile(test_inner=SAME_WORK)
    result = pytester.runpytest_subprocess(
        *BOARD, "-p", "no:cacheprovider", f"--edge-report={pytester.path / 'r.json'}", timeout=300
    )
    result.assert_outcomes(passed=1)
    metrics = _report(pytester)["tests"][0]["metrics"]

    def value(name: str) -> float:
        v = metrics[name]["value"]
        assert v is not None, name
        return float(v)

    diffs = [
        value(f"out{k}.energy_per_item") - value(f"in{k}.energy_per_item") for k in range(PAIRS)
    ]
    mean = sum(diffs) / PAIRS
    sd = (sum((d - mean) ** 2 for d in diffs) / (PAIRS - 1)) ** 0.5
    power_w = max(value(f"{w}{k}.power_mean") for w in ("in", "out") for k in range(PAIRS))
    allowed = T_999[PAIRS - 1] * sd / PAIRS**0.5 + power_w * PIPE_ALLOWANCE_S
    assert abs(mean) <= allowed, (diffs, allowed)
    energy = value("in0.energy_per_item")
    assert energy >= power_w * PERIOD_S * (CALLS - 1) / CALLS * 0.98  # 100 periods held


def test_with_pytest_benchmark_a_worker_is_timed_as_one_round(pytester: pytest.Pytester) -> None:
    """pytest-benchmark's rounds would be one round trip per call: its timer gets the whole
    measured loop once, and its extra_info the energy figures, as under a scenario."""
    pytest.importorskip("pytest_benchmark")
    source = """
def test_b(benchmark, edge_bench):
    work = edge_bench.load_in_worker({"kind": "zlib", "bytes": 16384})
    result = edge_bench.run(work, items_per_call=1)
    assert len(result.repeats) == 2
    assert benchmark.extra_info["energy_per_item_j"] > 0
"""
    pytester.makepyfile(test_inner=source)
    saved = pytester.path / "bench.json"
    result = pytester.runpytest_subprocess(
        *BOARD, *SMALL, "--edge-items=50", f"--benchmark-json={saved}", timeout=240
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    (bench,) = json.loads(saved.read_text())["benchmarks"]
    assert bench["stats"]["rounds"] == 1
    assert bench["extra_info"]["energy_per_item_j"] > 0


def test_what_a_worker_runs_and_what_it_leaves_to_the_harness() -> None:
    from pytest_edgeenergy.workloads.remote import remote_skip_reason

    assert remote_skip_reason("resnet18", "eager", "fp32", "cpu") is None
    assert remote_skip_reason("bert_tiny", "eager", "int8", "cpu") is None
    assert remote_skip_reason("ssdlite320", "eager", "fp16", "cuda") is None
    harness = "runs in the harness's process only; in a workload worker"
    for mode in ("torchscript", "compile"):
        assert f"{mode} {harness}" in str(remote_skip_reason("resnet18", mode, "fp32", "cpu"))
    reason = remote_skip_reason("resnet18", "onnx", "fp32", "cpu", runtime="onnxruntime")
    assert f"onnxruntime {harness}" in str(reason)
    assert "fp16 runs on cuda only" in str(remote_skip_reason("resnet18", "eager", "fp16", "cpu"))
    assert "training runs in fp32 only" in str(
        remote_skip_reason("lstm_lm_train", "eager", "int8", "cpu")
    )
    quick = remote_skip_reason("bert_tiny", "eager", "int8", "cpu", quick=True)
    assert str(quick).startswith("--edge-quick runs torch eager fp32 only in a workload worker")


def test_a_too_short_repeat_is_measured_again_in_the_worker(pytester: pytest.Pytester) -> None:
    """No warm-up to calibrate from and one call per repeat: the repeat is too short for the
    meter, so every repeat is measured again with more calls, as in process."""
    source = """
def test_short(edge_bench):
    work = edge_bench.load_in_worker({"kind": "zlib", "bytes": 16384})
    result = edge_bench.run(work, items_per_call=1, items=1, warmup=0)
    assert result.extensions and result.calls_per_repeat > 1
    assert result.valid and all(r.calls == result.calls_per_repeat for r in result.repeats)
"""
    pytester.makepyfile(test_inner=source)
    result = pytester.runpytest_subprocess(*BOARD, *SMALL, timeout=240)
    result.assert_outcomes(passed=1)
