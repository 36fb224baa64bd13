"""``edgeenergy measure -- CMD ARGS...`` end to end on virtual boards: runs and their
statistics, windows the command marks itself (from a Python 3.6 process, through a prefix
standing in for a container runtime), a failing command, Ctrl-C and SIGTERM mid-run (the
command's group stopped, the board restored, completed runs kept), and the report read by
compare, the gate and the history like any other."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from old_pythons import old_python
from test_cli_measure import run_cli
from test_run_session import knob_bytes

from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.report.load import load_report
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create

CONSOLE_SCRIPT = Path(sys.executable).parent / "edgeenergy"
PY = sys.executable
QUICK = ["--idle-s", "0.2"]
"""A short idle baseline: the net figures exist, the tests stay short."""


def entries(report: Path) -> dict[str, dict[str, Any]]:
    data = load_report(report)
    return {t["id"]: dict(t) for t in data["tests"]}


def samples(entry: dict[str, Any], metric: str) -> list[float]:
    return list(entry["metrics"][metric]["samples"])


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An animated virtual Orin Nano at a pinned load (power independent of this host)."""
    root = create("orin-nano", tmp_path_factory.mktemp("measure-cmd") / "board")
    (root / LOAD_OVERRIDE).write_text("0.5\n")
    with SimProcess(root):
        yield root


@pytest.fixture(scope="module")
def helper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``edgeenergy_mark.py`` as ``edgeenergy mark-helper`` prints it."""
    folder = tmp_path_factory.mktemp("helper")
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "mark-helper"], capture_output=True, text=True, check=True,
        timeout=120,
    )  # fmt: skip
    (folder / "edgeenergy_mark.py").write_text(done.stdout)
    return folder


def script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return path


# -- runs ------------------------------------------------------------------------------------


def test_n_runs_give_one_entry_with_a_sample_per_run(
    board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    code, out, err = run_cli(
        capsys, "measure", "--root", str(board), "--runs", "3", "--warmup", "1",
        "--items", "30", "--report", str(report), *QUICK,
        "--", PY, "-c", "import time; time.sleep(0.25); print('hello from the command')",
    )  # fmt: skip
    assert code == 0, err
    assert out == ""  # the command printed on the real stdout, passed through
    assert err.count("edgeenergy: run ") == 3 and "warm-up 1 of 1: exit 0" in err
    assert "SIMULATED" in err and f"report: {report}" in err
    [(name, entry)] = entries(report).items()
    assert name == Path(PY).name and entry["status"] == "passed"
    for metric in ("energy_j", "energy_net_j", "power_mean", "power_peak", "duration_s"):
        assert len(samples(entry, metric)) == 3, metric
        assert entry["metrics"][metric]["stats"]["n"] == 3
    energy, duration = samples(entry, "energy_j"), samples(entry, "duration_s")
    assert all(d >= 0.25 for d in duration)
    assert samples(entry, "energy_per_item") == pytest.approx([e / 30 for e in energy])
    assert samples(entry, "throughput") == pytest.approx([30 / d for d in duration])
    assert any(k.startswith("energy_j.") for k in entry["metrics"])  # per rail
    runs = entry["extra"]["command"]["runs"]
    assert [(r["run"], r["status"], r["exit_status"]) for r in runs] == [
        (1, "passed", 0), (2, "passed", 0), (3, "passed", 0),
    ]  # fmt: skip
    assert entry["extra"]["command"]["warmup"] == [
        {"run": 1, "status": "passed", "exit_status": 0, "signal": None, "stopped_by": None}
    ]
    assert entry["validity"]["valid"] is True and entry["validity"]["samples"] > 0
    header = json.loads(report.read_text())
    assert header["command_line"][-4:-2] == ["--", PY]  # recorded where command lines are


def test_the_report_is_compared_gated_and_kept_in_the_history(
    board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = []
    for name in ("a.json", "b.json"):
        reports.append(str(tmp_path / name))
        code, _, err = run_cli(
            capsys, "measure", "--root", str(board), "--runs", "3", "--label", "sleeper",
            "--report", reports[-1], *QUICK, "--", PY, "-c", "import time; time.sleep(0.2)",
        )  # fmt: skip
        assert code == 0, err
    code, out, err = run_cli(capsys, "compare", *reports)
    assert code == 0, err
    assert "sleeper" in out
    # A gate on mean power: the load is pinned, so the verdict does not depend on the host.
    code, out, err = run_cli(
        capsys, "compare", reports[1], "--baseline", reports[0], "--fail", "power_mean:mean:20%"
    )
    assert code == 0, out + err
    assert "gate passed" in out
    db = str(tmp_path / "h.db")
    code, out, err = run_cli(capsys, "history", "add", reports[0], "--db", db)
    assert code == 0 and "added run" in out, err
    code, out, err = run_cli(
        capsys, "history", "gate", reports[1], "--fail", "power_mean:mean:20%", "--db", db
    )
    assert code == 0 and "gate passed" in out, out + err


def test_a_failing_command_is_reported_failed_and_exits_1(
    board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    counter = tmp_path / "count"
    failing = script(
        tmp_path, "fails.py",
        f"""
        import os, signal, time
        from pathlib import Path
        n = len(Path({str(counter)!r}).read_text()) + 1 if Path({str(counter)!r}).exists() else 1
        Path({str(counter)!r}).write_text("x" * n)
        time.sleep(0.2)
        if n == 2:
            raise SystemExit(3)
        if n == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        """,
    )  # fmt: skip
    code, _, err = run_cli(
        capsys, "measure", "--root", str(board), "--runs", "3", "--label", "flaky",
        "--report", str(report), "--output", str(tmp_path / "out.txt"), *QUICK,
        "--", PY, str(failing),
    )  # fmt: skip
    assert code == 1
    assert "FAILED: run 2: exit 3" in err and "FAILED: run 3: killed by SIGKILL" in err
    entry = entries(report)["flaky"]
    assert entry["status"] == "failed"
    assert entry["reason"] == (
        "the command failed: run 2 of 3: exit 3; run 3 of 3: killed by SIGKILL"
    )
    runs = entry["extra"]["command"]["runs"]
    assert [(r["status"], r["exit_status"], r["signal"]) for r in runs] == [
        ("passed", 0, None), ("failed", 3, None), ("failed", None, "SIGKILL"),
    ]  # fmt: skip
    # Only the run that exited 0 is counted in the statistics; the others are listed.
    assert len(samples(entry, "energy_j")) == 1
    assert runs[1]["energy_j"] is not None


def test_each_pinned_point_has_its_runs_and_entries(
    board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    code, _, err = run_cli(
        capsys, "measure", "--root", str(board), "--gpu-freq", "min,max", "--runs", "2",
        "--report", str(report), *QUICK, "--", "sleep", "0.2",
    )  # fmt: skip
    assert code == 0, err
    assert err.count("edgeenergy: run ") == 4 and "at gpu" in err
    tests = load_report(report)["tests"]
    assert [t["id"] for t in tests] == ["sleep", "sleep"]
    assert [t["params"]["operating_point"]["requested"]["as"] for t in tests] == [
        {"gpu_freq_hz": "min"},
        {"gpu_freq_hz": "max"},
    ]
    assert [len(samples(dict(t), "duration_s")) for t in tests] == [2, 2]
    assert all(t["extra"]["operating_point"]["verified"] for t in tests)
    code, out, err = run_cli(capsys, "compare", str(report))
    assert code == 0, err
    assert "gpu min" in out and "gpu max" in out


def test_the_output_goes_into_a_file_when_asked(
    board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "out.txt"
    code, _, err = run_cli(
        capsys, "measure", "--root", str(board), "--runs", "2", "--output", str(out_file),
        "--report", str(tmp_path / "r.json"), *QUICK, "--", PY, "-c",
        "import sys, time; print('to stdout'); print('to stderr', file=sys.stderr); "
        "time.sleep(0.2)",
    )  # fmt: skip
    assert code == 0, err
    assert out_file.read_text().count("to stdout\n") == 2
    assert out_file.read_text().count("to stderr\n") == 2


# -- marked windows --------------------------------------------------------------------------


def test_windows_marked_by_a_python_3_6_process_are_entries_with_exact_edges(
    board: Path, helper: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python36 = old_python("3.6")
    stamps = tmp_path / "stamps.txt"
    work = script(
        helper, "work36.py",
        f"""
        import time, zlib
        import edgeenergy_mark as mark
        with mark.window("compress", items=20):
            data = b"edge" * 100000
            for _ in range(20):
                zlib.compress(data, 6)
            time.sleep(0.1)
        # Stamped now, written later: the edges are the stamps, not when the lines are read.
        t0 = mark.now_ns()
        time.sleep(0.3)
        t1 = mark.now_ns()
        time.sleep(0.3)
        mark.begin("late", t_ns=t0)
        mark.end("late", t_ns=t1, items=1)
        with open({str(stamps)!r}, "a") as f:
            f.write("{{}} {{}}\\n".format(t0, t1))
        """,
    )  # fmt: skip
    report = tmp_path / "r.json"
    code, _, err = run_cli(
        capsys, "measure", "--root", str(board), "--runs", "2", "--report", str(report),
        *QUICK, "--", python36, str(work),
    )  # fmt: skip
    assert code == 0, err
    assert "2 marked" in err
    found = entries(report)
    assert list(found) == ["python3.6", "compress", "late"]
    late = found["late"]
    expected = [
        (int(b) - int(a)) / 1e9 for a, b in map(str.split, stamps.read_text().split("\n")[:2])
    ]
    assert samples(late, "duration_s") == pytest.approx(expected, abs=1e-9)
    assert all(d >= 0.3 for d in expected)
    assert [r["stamped"] for r in late["extra"]["command"]["runs"]] == ["command", "command"]
    compress = found["compress"]
    assert compress["status"] == "passed" and len(samples(compress, "energy_per_item")) == 2
    whole = found["python3.6"]
    # Each marked window lies inside its run's window.
    for run_s, late_s in zip(
        samples(whole, "duration_s"), samples(late, "duration_s"), strict=True
    ):
        assert late_s < run_s


def test_a_marked_window_integrates_between_the_command_s_stamps(
    board: Path, helper: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against the virtual board's ground truth, with the power stepping down between the
    window's end and the moment its lines are written."""
    truth = tmp_path / "truth.json"
    work = script(
        helper, "busy.py",
        f"""
        import json, time
        from pathlib import Path
        import edgeenergy_mark as mark
        from pytest_edgeenergy.sim.truth import read_truth

        root, load = Path({str(board)!r}), Path({str(board / LOAD_OVERRIDE)!r})

        def stamp():
            before = read_truth(root)
            t = mark.now_ns()
            after = read_truth(root)
            rec = before if after.t_s > t / 1e9 else after
            return t, rec.total_energy_j_at(t / 1e9)

        load.write_text("1.0\\n")
        time.sleep(0.3)
        t0, e0 = stamp()
        time.sleep(0.6)
        t1, e1 = stamp()
        load.write_text("0.1\\n")
        time.sleep(0.6)
        mark.begin("busy", t_ns=t0)
        mark.end("busy", t_ns=t1)
        Path({str(truth)!r}).write_text(json.dumps({{"energy_j": e1 - e0, "s": (t1 - t0) / 1e9}}))
        """,
    )  # fmt: skip
    report = tmp_path / "r.json"
    try:
        code, _, err = run_cli(
            capsys, "measure", "--root", str(board), "--report", str(report), *QUICK,
            "--", PY, str(work),
        )  # fmt: skip
    finally:
        (board / LOAD_OVERRIDE).write_text("0.5\n")
    assert code == 0, err
    busy = entries(report)["busy"]
    expected = json.loads(truth.read_text())
    assert samples(busy, "duration_s") == pytest.approx([expected["s"]], abs=1e-9)
    # The power is steady at both edges (settled 0.3 s before t0, stepped down only after
    # t1), so the edges interpolated between 10 ms samples are exact up to the simulator's
    # ±1 % noise; lines read 0.6 s late at a tenth of the load would be far off.
    assert samples(busy, "energy_j") == pytest.approx([expected["energy_j"]], rel=0.05)


def test_marks_through_a_prefix_standing_in_for_a_container_runtime(
    board: Path, helper: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``env -i`` clears the environment as ``docker run`` does; the channel's path is passed
    on explicitly, as ``-e EDGEENERGY_MARK`` (and ``-v`` for the FIFO) would."""
    python38 = old_python("3.8")
    work = script(
        helper,
        "inner.py",
        """
        import time, edgeenergy_mark as mark
        with mark.window("inside", items=2):
            time.sleep(0.2)
        """,
    )
    report = tmp_path / "r.json"
    shell = f'exec env -i EDGEENERGY_MARK="$EDGEENERGY_MARK" {python38} {work}'
    code, _, err = run_cli(
        capsys, "measure", "--root", str(board), "--label", "container",
        "--report", str(report), *QUICK, "--", "sh", "-c", shell,
    )  # fmt: skip
    assert code == 0, err
    found = entries(report)
    assert list(found) == ["container", "inside"]
    assert samples(found["inside"], "energy_per_item") != []


def test_bad_and_unmatched_marks_are_counted_and_said_never_fatal(
    board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Raw lines to the FIFO, as a shell or a C program writes them (no helper)."""
    shell = (
        'exec 3>"$EDGEENERGY_MARK"; '
        'echo "begin outer" >&3; echo "hello world" >&3; echo "end nope" >&3; '
        'echo "begin inner" >&3; sleep 0.2; echo "end outer" >&3; sleep 0.2; '
        'echo "end inner items=4" >&3; echo "begin forgotten" >&3; '
        'echo "begin clock t_ns=12" >&3'
    )
    report = tmp_path / "r.json"
    code, _, err = run_cli(
        capsys, "measure", "--root", str(board), "--label", "shell",
        "--report", str(report), *QUICK, "--", "sh", "-c", shell,
    )  # fmt: skip
    assert code == 0, err
    assert "4 mark problems: 'hello world': begins with 'hello'" in err
    found = entries(report)
    assert list(found) == ["shell", "outer", "inner"]  # overlapping windows, each its own
    assert [r["stamped"] for r in found["inner"]["extra"]["command"]["runs"]] == ["harness"]
    [marks] = found["shell"]["extra"]["command"]["marks"]
    assert marks["problem_count"] == 4
    assert any("end nope: no window nope is open" in p for p in marks["problems"])
    assert any("begin forgotten: never ended" in p for p in marks["problems"])
    assert any("t_ns=12 is outside the run" in p for p in marks["problems"])


def test_a_command_that_marks_nothing_has_the_whole_run_entry_only(
    board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    code, _, err = run_cli(
        capsys, "measure", "--root", str(board), "--report", str(report), *QUICK,
        "--", "sleep", "0.2",
    )  # fmt: skip
    assert code == 0, err
    assert list(entries(report)) == ["sleep"]
    assert "mark problem" not in err


# -- stopping --------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_run_stops_the_group_restores_the_board_and_keeps_completed_runs(
    board: Path, tmp_path: Path, signum: int, code: int
) -> None:
    if not CONSOLE_SCRIPT.exists():
        pytest.skip(f"console script {CONSOLE_SCRIPT} not installed")
    knobs = knobs_at(board)
    before = knob_bytes(knobs)
    runs = tmp_path / "runs"
    runs.mkdir()
    work = script(
        tmp_path, "slow.py",
        f"""
        import os, subprocess, time
        n = len(os.listdir({str(runs)!r})) + 1
        child = subprocess.Popen(["sleep", "120"])  # in the command's group
        with open(os.path.join({str(runs)!r}, "run%d" % n), "w") as f:
            f.write(str(child.pid))
        if n == 1:
            time.sleep(0.3)
            child.kill()
        else:
            time.sleep(120)
        """,
    )  # fmt: skip
    report = tmp_path / "r.json"
    proc = subprocess.Popen(
        [str(CONSOLE_SCRIPT), "measure", "--root", str(board), "--gpu-freq", "max",
         "--cpu-cores", "2", "--runs", "3", "--label", "slow", "--report", str(report),
         "--output", str(tmp_path / "out.txt"), *QUICK, "--", PY, str(work)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        second = runs / "run2"
        deadline = time.monotonic() + 120
        while not second.exists() or not second.read_text():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "run 2 never started"
            time.sleep(0.05)
        child = int(second.read_text())
        assert knob_bytes(knobs) != before  # pinned while the command runs
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    assert knob_bytes(knobs) == before
    assert not alive(child)  # the command's whole group was stopped
    name = signal.Signals(signum).name
    assert f"interrupted ({name})" in err and "Traceback" not in err
    entry = entries(report)["slow"]
    assert entry["status"] == "passed"
    assert len(samples(entry, "energy_j")) == 1  # the completed run, counted
    runs_listed = entry["extra"]["command"]["runs"]
    assert [(r["run"], r["status"], r["stopped_by"]) for r in runs_listed] == [
        (1, "passed", None), (2, "interrupted", name),
    ]  # fmt: skip
    assert entry["extra"]["command"]["interrupted"] == (
        f"{name} during run 2 of 3; 1 completed run kept"
    )
    assert entry["extra"]["operating_point"]["drift"] == []  # restored by the signal: no drift
    assert json.loads(report.read_text())["finished_at"] is not None


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--"], "no command to measure"),
        (["--", "no-such-program-anywhere"], "no-such-program-anywhere: no such program on PATH"),
        (["--", "./not-here.sh"], "./not-here.sh: not an executable file"),
        (["--runs", "0", "--", "true"], "argument --runs"),
        (["--label", " ", "--", "true"], "--label"),
        (["--gpu-freq", "7Hz", "--", "true"], "--gpu-freq"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, _, err = run_cli(
        capsys, "measure", "--root", str(board), "--report", str(tmp_path / "r.json"),
        "--idle-s", "0", *argv,
    )  # fmt: skip
    assert code == 2, err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "r.json").exists()


def test_measure_without_a_command_keeps_its_seconds_form(
    board: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "measure", "--root", str(board), "--seconds", "0.2", "--json")
    assert code == 0, err
    assert json.loads(out)["valid"] is True
    code, out, _ = run_cli(capsys, "measure", "--help")
    assert code == 0 and "--seconds" in out and "-- CMD ARGS" in out
    code, out, _ = run_cli(capsys, "measure", "--help", "--")
    assert code == 0 and "--runs" in out and "--warmup" in out and "EDGEENERGY_MARK" in out
