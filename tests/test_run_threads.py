"""An :class:`~pytest_edgeenergy.EnergySession` belongs to the thread that opened it, and a
session (or a window) left open is closed cleanly at interpreter exit.

Used from another thread, every call that pins, measures or closes raises ``WrongThread``
before anything is written (two threads pinning one session at once used to collide on the
state file's temp file with a raw ``FileExistsError``); temp files are named per thread.
A window left open when the interpreter exits is ended, recorded failed and the board
restored while imports still work, with no "Exception ignored" at exit.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy import EnergySession
from pytest_edgeenergy.control.knobset import KnobSet, knobs_at
from pytest_edgeenergy.run import WrongThread
from pytest_edgeenergy.run.session import LEFT_OPEN
from pytest_edgeenergy.safefs import remove_stale_temps, temp_name
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create

RUN_TIMEOUT_S = 120


def knob_bytes(knobs: KnobSet) -> dict[str, bytes]:
    """Every knob file's content except live values (the EMC rate) the simulator moves."""
    return {knobs.rel(p): p.read_bytes() for p in knobs.files if p not in knobs.volatile_files}


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = create("orin-nano", tmp_path_factory.mktemp("threads") / "board")
    (root / LOAD_OVERRIDE).write_text("0.5\n")
    with SimProcess(root):
        yield root


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
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    assert "PINNED" in done.stdout
    assert "Exception ignored" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert "still open at interpreter exit with 1 window open" in done.stderr
    assert knob_bytes(knobs) == before
    [entry] = json.loads(report.read_text())["tests"]
    assert entry["id"] == "left-open"
    assert entry["status"] == "failed" and entry["reason"] == LEFT_OPEN
