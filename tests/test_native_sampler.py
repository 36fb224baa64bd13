"""The native reader (C thread, no GIL) against the Python sampler thread it replaces."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sampler_kinds import ScriptedSource

from pytest_edgeenergy.board.detect import detect
from pytest_edgeenergy.board.rails import discover_rails
from pytest_edgeenergy.meters.factory import open_source
from pytest_edgeenergy.meters.ina import InaSource
from pytest_edgeenergy.meters.meter import Meter
from pytest_edgeenergy.meters.native import (
    ENV_VAR,
    SamplerUnavailable,
    choose_kind,
    load_extension,
)
from pytest_edgeenergy.meters.sampler import Sampler
from pytest_edgeenergy.meters.source import PartialReading
from pytest_edgeenergy.meters.window import Window, WindowResult
from pytest_edgeenergy.report.windows import validity_of
from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE, SimProcess
from pytest_edgeenergy.sim.tree import create
from pytest_edgeenergy.sim.truth import Truth, read_truth

EXTENSION, MISSING = load_extension()
needs_native = pytest.mark.skipif(EXTENSION is None, reason=f"native reader not built: {MISSING}")
WAIT_S = 20.0  # generous bound for a loaded 2-core machine; never a speed claim
EDGE_S = 0.002
"""An edge reading (a few preads) that took longer was preempted: its window is retaken."""


@pytest.fixture
def board(tmp_path: Path) -> Path:
    return create("orin-nano", tmp_path / "board")


def tasks() -> set[int]:
    """Thread ids of this process, native ones included (the threading module sees only
    Python's)."""
    return {int(tid) for tid in os.listdir("/proc/self/task")}


def meter(root: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> Meter:
    monkeypatch.setenv(ENV_VAR, kind)
    m = Meter(open_source("ina", detect(root), interval_s=0.01), interval_s=0.01)
    assert m.sampler.kind == kind
    return m


def truth_at_edges(
    before: Truth, after_begin: Truth, end: Truth, later: Truth, t0: float, t1: float
) -> float:
    """Ground-truth energy between t0 and t1: from the last record written at or before
    each edge."""
    start_rec = before if after_begin.t_s > t0 else after_begin
    end_rec = end if later.t_s > t1 else later
    assert start_rec.t_s <= t0 and end_rec.t_s <= t1
    return end_rec.total_energy_j_at(t1) - start_rec.total_energy_j_at(t0)


@needs_native
def test_native_and_python_give_the_same_energy_as_the_ground_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both samplers over the same 1 s of an animated virtual board at 10 ms: each within
    0.1 % of the simulator's ground-truth counter, and of each other. The board changes its
    power every 100 ms (a fixed load, with the simulator's noise): what is compared is the
    samplers, not how a 2-core machine shared with other jobs schedules them against a
    5 ms step."""
    board = create("orin-nano", tmp_path / "slow", update_interval_ms=100.0)
    (board / LOAD_OVERRIDE).write_text("0.7\n")
    # Sampled at 10 ms, not clamped to the 100 ms update period.
    rails = dataclasses.replace(discover_rails(board), update_interval_s=None)

    def meter_of(kind: str) -> Meter:
        monkeypatch.setenv(ENV_VAR, kind)
        m = Meter(InaSource(rails, simulated=True), interval_s=0.01)
        assert m.sampler.kind == kind
        return m

    def timed(call: Callable[[], WindowResult | Window]) -> WindowResult | Window | None:
        """``call()``, or None when it took over EDGE_S: the scheduler preempted this
        thread around an edge reading, whose stamp is then late by that much."""
        t = time.monotonic()
        out = call()
        return out if time.monotonic() - t <= EDGE_S else None

    def attempt(mp: Meter, mn: Meter) -> tuple[WindowResult, WindowResult, float, float] | None:
        before = read_truth(board)
        wp, wn = timed(lambda: mp.begin("python")), timed(lambda: mn.begin("native"))
        after_begin = read_truth(board)
        time.sleep(1.0)
        end = read_truth(board)
        rp = timed(wp.end) if isinstance(wp, Window) else None
        rn = timed(wn.end) if isinstance(wn, Window) else None
        later = read_truth(board)
        if not (isinstance(rp, WindowResult) and isinstance(rn, WindowResult)):
            return None
        true_p, true_n = (
            truth_at_edges(before, after_begin, end, later, r.start_s, r.end_s) for r in (rp, rn)
        )
        return rp, rn, true_p, true_n

    with SimProcess(board), meter_of("python") as mp, meter_of("native") as mn:
        for _ in range(10):
            got = attempt(mp, mn)
            if got is not None:
                break
        else:
            pytest.fail("every attempt had an edge reading delayed by the scheduler")
    rp, rn, true_p, true_n = got
    for r, true_j in ((rp, true_p), (rn, true_n)):
        assert r.valid, r.invalid_reason
        assert r.samples >= 50  # the sampler ran, not only the two edge readings
        assert r.total.energy_j == pytest.approx(true_j, rel=1e-3), r.sampler
    assert (rp.sampler, rn.sampler) == ("python", "native")
    assert rn.total.energy_j == pytest.approx(rp.total.energy_j, rel=1e-3)
    for name, rail in rn.rails.items():
        assert rail.energy_j == pytest.approx(rp.rails[name].energy_j, rel=1e-3), name


@needs_native
@pytest.mark.parametrize("kind", ["python", "native"])
def test_a_rail_whose_file_fails_with_an_errno_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A rail file replaced by a directory: its rail is flagged ``vanished`` once, then its
    reopened descriptor fails with EISDIR on every read, from the OS, under either kind;
    the other rails keep every reading."""
    monkeypatch.setenv(ENV_VAR, kind)
    root = create("orin-nano", tmp_path / "board")
    rails = discover_rails(root)
    broken = rails.rails[1]
    path = broken.files[-1]
    with InaSource(rails, vanish_check_interval_s=0.0) as src:
        sampler = Sampler(src, interval_s=0.002)
        assert sampler.kind == kind
        with sampler:
            assert sampler.wait_for_samples(5, WAIT_S)
            path.unlink()
            path.mkdir()
            deadline = time.monotonic() + WAIT_S
            while sampler.channel_errors().get(broken.name, {}).get("EISDIR", 0) < 5:
                assert time.monotonic() < deadline, sampler.channel_errors()
                time.sleep(0.005)
        errors = sampler.channel_errors()
        counters = sampler.counters()
    assert set(errors) == {broken.name}
    assert set(errors[broken.name]) <= {"vanished", "EISDIR"}
    assert counters.failed == 0 and counters.samples == counters.attempts
    good = sampler.slice_index(0)
    position = rails.names.index(broken.name)
    for c, values in enumerate(good.values):
        nan = sum(1 for v in values if v != v)
        assert nan == (sum(errors[broken.name].values()) if c == position else 0)


@needs_native
def test_the_native_reader_thread_is_joined_by_stop(
    board: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # By thread id, not by count: threads of earlier tests may still be ending meanwhile.
    before = tasks()
    m = meter(board, "native", monkeypatch)
    with m:
        assert m.sampler.wait_for_samples(3, WAIT_S)
        new = tasks() - before
        python = {t.native_id: t.name for t in threading.enumerate()}
        # Other Python threads of this process (an xdist worker's) may start meanwhile: the
        # sampler's are its named drain thread and the native reader, unseen by threading.
        drain = {i for i in new if python.get(i, "").startswith("edgeenergy-sampler-")}
        native = new - set(python)
        assert len(drain) >= 1 and len(native) >= 1
    assert not m.sampler.running
    assert native.isdisjoint(tasks())  # pthread_join'ed by stop: gone at once
    # Thread.join returns when the drain thread's Python code is done; the OS thread ends
    # a moment later, so its id may still be listed briefly (not a leak): wait for it.
    deadline = time.monotonic() + WAIT_S
    while not drain.isdisjoint(tasks()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert drain.isdisjoint(tasks())
    counters = m.sampler.counters()
    assert counters.cpu_s > 0.0  # the native thread's CPU time is counted
    assert counters.samples == counters.attempts >= 3


@needs_native
def test_auto_picks_native_for_plain_ina_files_only(
    board: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    rails = discover_rails(board)
    with InaSource(rails) as plain:
        assert choose_kind(plain) == ("native", None)
    with InaSource(rails, pread=lambda fd, n, off: os.pread(fd, n, off)) as own:
        kind, why = choose_kind(own)
        assert kind == "python" and why is not None and "own pread" in why
    kind, why = choose_kind(ScriptedSource())
    assert kind == "python" and why is not None and "scripted" in why
    monkeypatch.setenv(ENV_VAR, "python")
    with InaSource(rails) as plain:
        assert Sampler(plain, interval_s=0.01).kind == "python"


def test_forcing_native_where_it_cannot_run_names_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "native")
    with pytest.raises(SamplerUnavailable, match=f"{ENV_VAR}=native, but .*scripted"):
        Sampler(ScriptedSource(), interval_s=0.01)


def test_an_unknown_sampler_kind_lists_the_allowed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "rust")
    with pytest.raises(SamplerUnavailable, match=r"'rust'.*auto, native, python"):
        Sampler(ScriptedSource(), interval_s=0.01)


def test_other_sources_keep_the_python_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    with Meter(ScriptedSource(), interval_s=0.004) as m:
        w = m.begin("w")
        assert m.sampler.wait_for_samples(w.begin_index + 6, WAIT_S)
        r = w.end()
    assert m.sampler.kind == "python" and r.sampler == "python"


@needs_native
def test_reader_drains_the_texts_pread_gives_and_errnos(tmp_path: Path) -> None:
    """The extension on its own: each reading holds every file's text, or the errno of a
    failed pread, stamped on time.monotonic()'s clock."""
    assert EXTENSION is not None
    good = tmp_path / "value"
    good.write_bytes(b"1234\n")
    fds = [os.open(good, os.O_RDONLY), os.open(tmp_path, os.O_RDONLY)]  # a directory
    try:
        reader = EXTENSION.Reader(fds, 64, 0.002, 64)
        t0 = time.monotonic()
        reader.start()
        readings: list[tuple[float, tuple[bytes | int, ...], int]] = []
        deadline = time.monotonic() + WAIT_S
        while len(readings) < 3:
            assert time.monotonic() < deadline
            readings += reader.drain()
            time.sleep(0.005)
        reader.stop()
        t1 = time.monotonic()
        assert not reader.running
        readings += reader.drain()
        assert reader.drain() == []
    finally:
        for fd in fds:
            os.close(fd)
    for t, texts, failed in readings:
        assert t0 <= t <= t1
        assert texts == (b"1234\n", errno.EISDIR) and failed == 1
    stamps = [t for t, _, _ in readings]
    assert stamps == sorted(stamps)
    assert reader.cpu_s() > 0.0


@needs_native
def test_reader_refuses_bad_arguments() -> None:
    assert EXTENSION is not None
    with pytest.raises(ValueError, match="fds"):
        EXTENSION.Reader([], 64, 0.01, 64)
    with pytest.raises(ValueError, match="interval_s"):
        EXTENSION.Reader([0], 64, 0.0, 64)
    reader = EXTENSION.Reader([0], 64, 0.01, 64)
    reader.start()
    with pytest.raises(RuntimeError, match="already started"):
        reader.start()
    reader.stop()
    reader.stop()  # idempotent


@pytest.mark.parametrize("kind", ["python", pytest.param("native", marks=needs_native)])
def test_the_sampler_kind_is_in_window_json_and_report_validity(
    board: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    with meter(board, kind, monkeypatch) as m:
        r = m.measure(0.1)
    assert r.to_json()["sampler"] == kind
    assert validity_of([r])["sampler"] == kind


@pytest.mark.parametrize("kind", ["python", pytest.param("native", marks=needs_native)])
def test_board_and_measure_commands_say_which_sampler_reads(
    board: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    from pytest_edgeenergy.commands import main

    monkeypatch.setenv(ENV_VAR, kind)
    assert main(["board", "--root", str(board)]) == 0
    text = capsys.readouterr().out
    assert f"\nsampler: {kind}" in text
    assert main(["board", "--root", str(board), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sampler"] == kind
    assert (data["sampler_note"] is None) == (kind == "native")
    args = ["measure", "--root", str(board), "--seconds", "0.1", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["sampler"] == kind


@pytest.fixture(scope="module")
def two_styles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[InaSource]]:
    """An AGX Orin tree (hwmon, mV x mA) and an Orin Nano tree (iio, mW), opened."""
    base = tmp_path_factory.mktemp("styles")
    sources = [InaSource(discover_rails(create(m, base / m))) for m in ("agx-orin", "orin-nano")]
    yield sources
    for src in sources:
        src.close()


TEXT = st.one_of(
    st.integers(0, 40_000).map(lambda n: f"{n}\n".encode()),
    st.integers(-5_000_000_000, 5_000_000_000).map(lambda n: f"{n}\n".encode()),
    st.sampled_from([b"", b"garbage\n", b"  120\n", b"120 mA\n"]),
)


@given(data=st.data())
def test_decode_columns_is_decode_or_declines(two_styles: list[InaSource], data: Any) -> None:
    """The batch path gives exactly decode's watts, or None (then decode runs per reading);
    it never declines a batch decode takes without a failure."""
    src = data.draw(st.sampled_from(two_styles))
    width = len(src.pread_plan().fds)
    raws = data.draw(st.lists(st.tuples(*[TEXT] * width), min_size=1, max_size=6))
    cols = src.decode_columns(raws)
    rows: list[list[float]] = []
    clean = True
    for raw in raws:
        try:
            rows.append(src.decode(raw))
        except PartialReading:
            clean = False
    if cols is not None:
        assert clean
        assert [list(r) for r in zip(*cols, strict=True)] == rows
    elif clean:  # declined although decode read every rail: only padded or suffixed texts
        assert any(not t.rstrip(b"\n").lstrip(b"-").isdigit() for raw in raws for t in raw)
