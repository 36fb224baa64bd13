"""The pytest-free layer: :class:`pytest_edgeenergy.EnergySession` from a plain script.

The issue's example runs as a subprocess (pytest never imported); the other tests use the
class in-process on virtual boards: pins restored byte for byte on every exit path, the
report ``edgeenergy compare`` reads, and typed errors for bad input.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy import EnergySession
from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.control.errors import SessionBusy
from pytest_edgeenergy.control.knobset import KnobSet, knobs_at
from pytest_edgeenergy.errors import EdgeEnergyError, InvalidValue
from pytest_edgeenergy.run import PointError, SessionClosed, Unlocked, WrongThread
from pytest_edgeenergy.run.session import LEFT_OPEN
from pytest_edgeenergy.safefs import remove_stale_temps, temp_name
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create

MANUAL = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "library.md"
CHECKS = textwrap.dedent(
    """
    import json as _json, sys as _sys
    print(_json.dumps({
        "pytest_imported": sorted(
            m for m in _sys.modules if m.split(".")[0] in ("pytest", "_pytest")
        ),
        "root": str(s.root),
        "energy_j": w.result.total.energy_j,
    }))
    """
)


def manual_example() -> str:
    """The first Python block of the manual's page on the library, as a user copies it."""
    [block, *_] = re.findall(r"```python\n(.*?)```", MANUAL.read_text(), flags=re.S)
    return str(block)


def knob_bytes(knobs: KnobSet) -> dict[str, bytes]:
    """Every knob file's content except live values (the EMC rate) the simulator moves."""
    return {knobs.rel(p): p.read_bytes() for p in knobs.files if p not in knobs.volatile_files}


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An animated virtual Orin Nano at a pinned load (tests restore what they change)."""
    root = create("orin-nano", tmp_path_factory.mktemp("run") / "board")
    (root / LOAD_OVERRIDE).write_text("0.5\n")
    with SimProcess(root):
        yield root


def test_the_manual_example_runs_as_a_plain_script(tmp_path: Path) -> None:
    script = tmp_path / "measure.py"
    script.write_text(manual_example() + CHECKS)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed, facts_line = done.stdout.strip().splitlines()
    facts = json.loads(facts_line)
    assert facts["pytest_imported"] == []
    assert "sim:orin-nano: a virtual board, every figure of this session is SIMULATED" in (
        done.stderr
    )
    energy_j = facts["energy_j"]
    assert energy_j > 0 and printed.startswith(f"{energy_j:.3f} J in ")
    assert not Path(facts["root"]).exists()  # the virtual board is removed at exit

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["device"]["simulated"] is True
    [entry] = report["tests"]
    assert entry["id"] == "inference" and entry["status"] == "passed"
    assert entry["metrics"]["energy_j"]["value"] == pytest.approx(energy_j)
    assert entry["metrics"]["energy_net_j"]["value"] is not None  # against the idle baseline
    point = entry["params"]["operating_point"]["requested"]
    assert point["gpu_freq_hz"] == 1020000000 and point["as"] == {"gpu_freq_hz": "max"}
    assert entry["extra"]["operating_point"]["verified"] is True
    assert entry["extra"]["operating_point"]["drift"] == []
    # edgeenergy compare reads it (exit 0, the row named by the window's label)
    out = subprocess.run(
        [str(Path(sys.executable).parent / "edgeenergy"), "compare", "r.json", "r.json"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "inference" in out.stdout and "simulated" in out.stdout


def test_the_manual_example_runs_again_as_written(tmp_path: Path) -> None:
    script = tmp_path / "measure.py"
    script.write_text(manual_example())
    run_ids = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        run_ids.append(json.loads((tmp_path / "r.json").read_text())["run_id"])
    assert run_ids[0] != run_ids[1]  # the second run's report, not the first one kept


def test_pins_are_restored_byte_for_byte_on_every_exit(board: Path, tmp_path: Path) -> None:
    knobs = knobs_at(board)
    before = knob_bytes(knobs)
    with EnergySession(board, report=tmp_path / "r.json", idle_s=0.2) as s:
        with s.pinned(gpu_freq="max", cpu_cores=1) as point:
            assert point.id  # pinned now: the board differs from what it was
            assert knob_bytes(knobs) != before
            with s.window("a") as w:
                pass
        assert knob_bytes(knobs) == before  # put back when the pin's block ends
        with pytest.raises(RuntimeError, match="body failed"), s.pinned(gpu_freq="min"):
            assert knob_bytes(knobs) != before
            raise RuntimeError("body failed")
        assert knob_bytes(knobs) == before
        with s.pinned(gpu_freq="min"), s.window("b"):
            pass
    assert knob_bytes(knobs) == before
    assert w.result is not None and w.result.samples > 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert [t["id"] for t in report["tests"]] == ["a", "b"]
    assert report["finished_at"] is not None and not report.get("incomplete")


def test_a_session_left_by_an_exception_restores_and_says_the_failed_window(
    board: Path, tmp_path: Path
) -> None:
    knobs = knobs_at(board)
    before = knob_bytes(knobs)
    with (
        pytest.raises(ZeroDivisionError),
        EnergySession(board, report=tmp_path / "r.json", idle_s=0) as s,
        s.pinned(gpu_freq="max"),
        s.window("crash"),
    ):
        _ = 1 / 0
    assert knob_bytes(knobs) == before
    [entry] = json.loads((tmp_path / "r.json").read_text())["tests"]
    assert entry["status"] == "failed" and "ZeroDivisionError" in entry["reason"]


def test_same_label_twice_gets_numbered_entries(board: Path, tmp_path: Path) -> None:
    with EnergySession(board, report=tmp_path / "r.json", idle_s=0) as s:
        for _ in range(2):
            with s.window("step"):
                pass
        assert len(s.results) == 2
    assert [t["id"] for t in json.loads((tmp_path / "r.json").read_text())["tests"]] == [
        "step",
        "step#2",
    ]
    assert compare_main([str(tmp_path / "r.json"), str(tmp_path / "r.json")]) == 0


def test_one_label_at_two_operating_points_is_two_entries_of_one_window_each(
    board: Path, tmp_path: Path
) -> None:
    with EnergySession(board, report=tmp_path / "r.json", idle_s=0) as s:
        for freq in ("min", "max"):
            with s.pinned(gpu_freq=freq), s.window("step"):
                pass
    tests = json.loads((tmp_path / "r.json").read_text())["tests"]
    assert [t["id"] for t in tests] == ["step", "step"]
    assert [t["params"]["operating_point"]["requested"]["as"] for t in tests] == [
        {"gpu_freq_hz": "min"},
        {"gpu_freq_hz": "max"},
    ]
    assert [len(t["metrics"]["duration_s"]["samples"]) for t in tests] == [1, 1]


def test_errors_are_typed_and_name_what_is_allowed(board: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidValue, match=r"sim:nope.*allowed: sim:nano"):
        EnergySession("sim:nope")
    with pytest.raises(InvalidValue, match="not a directory"):
        EnergySession(tmp_path / "missing")
    with pytest.raises(InvalidValue, match="idle_s=nan"):
        EnergySession(board, idle_s=float("nan"))
    knobs = knobs_at(board)
    before = knob_bytes(knobs)
    s = EnergySession(board, report=False, idle_s=0)
    with pytest.raises(SessionClosed, match="with EnergySession"), s.window("early"):
        pass
    with s:
        with pytest.raises(PointError, match="gpu_freq") as bad, s.pinned(gpu_freq="7GHz"):
            pass
        assert isinstance(bad.value, EdgeEnergyError)
        assert knob_bytes(knobs) == before  # nothing written for a refused value
        with pytest.raises(InvalidValue, match="window label"), s.window(""):
            pass
    assert not list(tmp_path.glob("**/*.json"))  # report=False: no report at all


def test_a_measure_only_session_takes_no_lock_and_pins_nothing(
    board: Path, tmp_path: Path
) -> None:
    knobs = knobs_at(board)
    before = knob_bytes(knobs)
    with EnergySession(board, report=False, idle_s=0) as owner:
        # a second locking session is refused at once (the board is the owner's) ...
        with pytest.raises(SessionBusy):
            EnergySession(board, report=False, idle_s=0, lock_timeout_s=0).open()
        # ... but a measure-only one may watch it
        with owner.pinned(gpu_freq="max"), EnergySession(
            board, report=False, lock=False, idle_s=0
        ) as watcher:
            with watcher.window("watch") as w:
                time.sleep(0.3)
            assert w.result is not None and w.result.total.energy_j > 0
            with pytest.raises(Unlocked, match="lock=False"), watcher.pinned(gpu_freq="min"):
                pass
    assert knob_bytes(knobs) == before


def test_nothing_is_left_in_the_temporary_directory() -> None:
    with EnergySession("sim:nano", report=False, idle_s=0) as s, s.window("w"):
        root = s.root
        assert root is not None and root.is_dir()
        assert root.parent == Path(tempfile.gettempdir())
    assert not root.exists()


# -- threads, and what is left open at interpreter exit -------------------------------------
# A session belongs to the thread that opened it: used from another thread, every call that
# pins, measures or closes raises WrongThread before anything is written (two threads
# pinning one session at once used to collide on the state file's temp file with a raw
# FileExistsError); temp files are named per thread. A window left open when the
# interpreter exits is ended, recorded failed and the board restored while imports still
# work, with no "Exception ignored" at exit.


def in_thread(call: Callable[[], Any]) -> BaseException | None:
    """What ``call`` raised in another thread (None: nothing)."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as e:
            raised.append(e)

    thread = threading.Thread(target=run, name="worker")
    thread.start()
    thread.join()
    return raised[0] if raised else None


def pin(s: EnergySession) -> None:
    with s.pinned(gpu_freq="max"):
        pass


def measure(s: EnergySession) -> None:
    with s.window("w"):
        pass


MISUSES: dict[str, Callable[[EnergySession], object]] = {
    "pinned": pin,
    "window": measure,
    "begin": lambda s: s.begin("x", "x"),
    "points": lambda s: s.points({"gpu_freq": ["min,max"]}),
    "apply_point": lambda s: s.apply_point(s.point(gpu_freq="min")),
    "open": lambda s: s.open(),
    "restore_board": lambda s: s.restore_board(),
    "close": lambda s: s.close(),
    "exit": lambda s: s.__exit__(None, None, None),
}


def test_a_session_used_from_another_thread_is_refused_before_any_write(
    board: Path, tmp_path: Path
) -> None:
    knobs = knobs_at(board)
    before = knob_bytes(knobs)
    with EnergySession(board, report=tmp_path / "r.json", idle_s=0) as s:
        for name, misuse in MISUSES.items():
            error = in_thread(functools.partial(misuse, s))
            assert isinstance(error, WrongThread), f"{name}: {error!r}"
            assert "opened in thread 'MainThread' and is used from thread 'worker'" in str(error)
            assert knob_bytes(knobs) == before, name
        with s.pinned(gpu_freq="max"):  # still whole in its own thread
            assert knob_bytes(knobs) != before
            measure(s)
    assert knob_bytes(knobs) == before
    report = json.loads((tmp_path / "r.json").read_text())
    assert [t["id"] for t in report["tests"]] == ["w"]


def test_two_threads_pinning_one_session_get_a_typed_error(board: Path, tmp_path: Path) -> None:
    knobs = knobs_at(board)
    before = knob_bytes(knobs)
    errors: list[BaseException] = []
    with EnergySession(board, report=False, idle_s=0) as s:

        def work(freq: str) -> None:
            try:
                for _ in range(5):
                    with s.pinned(gpu_freq=freq):
                        pass
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=work, args=(f,)) for f in ("max", "min")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [type(e) for e in errors] == [WrongThread, WrongThread]
    assert knob_bytes(knobs) == before


def test_temp_files_are_named_per_thread_and_a_dead_writers_are_removed(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    names = {temp_name(target)}
    thread = threading.Thread(target=lambda: names.add(temp_name(target)))
    thread.start()
    thread.join()
    assert len(names) == 2
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # A digits-only random suffix does not pass for the pid.
    stale = tmp_path / f".state.json.{dead.pid}-7.{os.getpid()}.tmp"
    live = tmp_path / f"{temp_name(target)}{dead.pid}.tmp"
    for path in (stale, live):
        path.write_text("x")
    assert remove_stale_temps(tmp_path) == [stale]
    assert live.exists()


LEFT_OPEN_SCRIPT = """
import sys
from pytest_edgeenergy import EnergySession

s = EnergySession(sys.argv[1], report=sys.argv[2], idle_s=0)
s.open()
pin = s.pinned(gpu_freq="max")
pin.__enter__()
window = s.window("left-open")
window.__enter__()
cycle = [s, pin, window]
cycle.append(cycle)  # collected only at the interpreter's very end
print("PINNED", flush=True)
"""


def test_a_window_left_open_at_exit_is_ended_recorded_and_the_board_restored(
    board: Path, tmp_path: Path
) -> None:
    knobs = knobs_at(board)
    before = knob_bytes(knobs)
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-c", LEFT_OPEN_SCRIPT, str(board), str(report)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "PINNED" in done.stdout
    assert "Exception ignored" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert "still open at interpreter exit with 1 window open" in done.stderr
    assert knob_bytes(knobs) == before
    [entry] = json.loads(report.read_text())["tests"]
    assert entry["id"] == "left-open"
    assert entry["status"] == "failed" and entry["reason"] == LEFT_OPEN
