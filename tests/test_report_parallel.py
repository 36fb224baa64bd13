"""Reading reports in forked workers: the same digests, the same first error, the same output."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.present import compare
from pytest_edgeenergy.present.compare import (
    compare_table,
    digest,
    digest_stream,
    digest_table,
    load_digests,
)
from pytest_edgeenergy.present.tables import render_markdown
from pytest_edgeenergy.report.load import ReportError, load_report
from pytest_edgeenergy.report.parallel import (
    MAX_WORKERS,
    can_fork,
    cpu_count,
    shared_map,
    workers_for,
)
from pytest_edgeenergy.verdict.expr import parse_expr
from pytest_edgeenergy.verdict.view import expr_metrics

needs_fork = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers are forked on Linux only"
)



@pytest.fixture(autouse=True)
def _one_thread() -> None:
    """Workers fork only from a process of one thread (``can_fork``): a thread an earlier
    test left running in this process made these tests skip or read in-process unnoticed
    (a sampler stopped mid-sleep; tqdm's monitor, switched off in conftest.py)."""
    if sys.platform.startswith("linux"):
        others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
        assert not others, f"threads an earlier test left running here: {others}"
        assert can_fork()


GATES = ["energy_per_item:mean:5%", "latency_p90:median:10%"]
NEEDS = expr_metrics([parse_expr(g) for g in GATES])


@pytest.fixture
def paths(tmp_path: Path) -> list[Path]:
    out = []
    for i in range(6):
        report = synthetic_report(
            sim_model=("agx-orin", "nano")[i % 2],
            seed=i,
            n_tests=24,
            energy_scale=1.0 + 0.08 * (i // 2),
        )
        if i == 3:  # a skipped test and a fallback latency
            report["tests"][0]["status"] = "skipped"
            report["tests"][2]["metrics"].pop("latency_p90")
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(report))
        out.append(path)
    return out


def _plain(value: Any) -> Any:
    """Digests as plain data, for comparing digests made in different processes."""
    return pickle.loads(pickle.dumps(value))


# -- shared_map ------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_shared_map_gives_every_result_once_and_errors_as_values(workers: int) -> None:
    items = [4.0, 9.0, -1.0, 16.0, 25.0, -4.0, 36.0]
    got = dict(shared_map(math.sqrt, items, workers))
    assert sorted(got) == list(range(len(items)))
    for i, item in enumerate(items):
        if item < 0:
            assert isinstance(got[i], ValueError)
        else:
            assert got[i] == math.sqrt(item)


_PARENT = os.getpid()


def _double_here_only(x: int) -> int:
    if os.getpid() != _PARENT:
        os._exit(3)  # a worker dies as if killed
    return 2 * x


def test_items_of_a_dead_worker_are_done_here() -> None:
    got = dict(shared_map(_double_here_only, list(range(8)), 2))
    assert got == {i: 2 * i for i in range(8)}


DYING_POOLS = """
import functools, os, sys, tempfile, threading, time
from pytest_edgeenergy.report.parallel import shared_map

PARENT = os.getpid()


def die_once_one_is_taken_back(marker, x):
    if os.getpid() == PARENT:  # an item taken back from the workers' queue
        open(marker, "a").close()
        return 2 * x
    for _ in range(6000):  # a worker: dies (as if killed) once one was taken back
        if os.path.exists(marker):
            break
        time.sleep(0.01)
    os._exit(3)


folder = tempfile.mkdtemp()
for attempt in range(150):
    func = functools.partial(die_once_one_is_taken_back, os.path.join(folder, str(attempt)))
    assert dict(shared_map(func, list(range(8)), 2)) == {i: 2 * i for i in range(8)}
    left = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if left:
        sys.exit(f"attempt {attempt}: threads left running: {left}")
"""


# Before Python 3.12 the pool's own thread stopped half-way through its clean-up when its
# workers died after an item had been taken back by cancelling its future: it left a
# QueueFeederThread running (until a garbage collection; test_report_parallel's guard
# failed in CI). Here the workers die just after this process takes an item back: the old
# shared_map left the thread in 2 to 8 % of tries (the pool's thread may clear the items
# taken back first; it depends on the host's load), so 150 tries. In a small process of
# its own: forking this worker, grown by torch, is slow.
@needs_fork
def test_workers_dying_after_an_item_was_taken_back_leave_no_thread() -> None:
    done = subprocess.run(
        [sys.executable, "-c", DYING_POOLS], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Exception in thread" not in done.stderr, done.stderr[-2000:]


def test_no_workers_for_small_inputs_or_a_single_file(paths: list[Path]) -> None:
    assert workers_for(paths) == 0  # far below the size that pays for workers
    assert workers_for(paths[:1], min_bytes=0) == 0
    if sys.platform.startswith("linux"):
        expected = min(cpu_count() - 1, len(paths) - 1, MAX_WORKERS)
        assert workers_for(paths, min_bytes=0) == expected


# -- digests ---------------------------------------------------------------------------------


@needs_fork
@pytest.mark.parametrize("workers", [1, 3])
def test_digests_from_workers_equal_digests_read_here(paths: list[Path], workers: int) -> None:
    here = load_digests(paths, NEEDS, workers=0)
    there = load_digests(paths, NEEDS, workers=workers)
    assert _plain(there) == _plain(here)
    assert [d.header["run_id"] for d in there] == [load_report(p)["run_id"] for p in paths]
    assert here[3].fallback


@needs_fork
@pytest.mark.parametrize("workers", [0, 2])
def test_the_first_bad_file_in_order_is_the_error(paths: list[Path], workers: int) -> None:
    paths[4].write_text("{")
    paths[2].write_text('{"a": 1}')
    seen = []
    with pytest.raises(ReportError) as info:
        for name, _ in digest_stream(paths, NEEDS, workers=workers):
            seen.append(name)
    assert info.value.path == paths[2]
    assert str(info.value) == f"{paths[2]}: not a pytest-edgeenergy report (top-level keys: a)"
    assert seen == [str(p) for p in paths[:2]]


def test_report_error_survives_pickling_as_worded() -> None:
    error = ReportError("./some/../r.json", "truncated JSON: the text ends early")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is ReportError
    assert str(back) == str(error) == "./some/../r.json: truncated JSON: the text ends early"
    assert back.path == error.path and back.problem == error.problem


def test_digest_table_equals_compare_table(paths: list[Path]) -> None:
    sources = [compare.Source(str(p), load_report(p)) for p in paths]
    table = compare_table(sources)
    again = digest_table([(s.name, digest(s.report, NEEDS)) for s in sources])
    assert again == table
    assert len(table.rows) == sum(
        len({(t["id"]) for t in s.report["tests"] if t["status"] != "skipped"}) for s in sources
    )


def test_markdown_rendered_report_by_report_equals_the_whole_table(paths: list[Path]) -> None:
    digests = [(str(p), digest(load_report(p))) for p in paths]
    whole = compare.TableBuilder()
    ahead = compare.TableBuilder(markdown=True)
    for name, d in digests:
        whole.add(name, d)
        ahead.add(name, d)
    tables = whole.display()
    shown = ahead.display()
    assert len(shown) == len(tables)
    for (table, _), (section, lines) in zip(tables, shown, strict=True):
        assert lines is not None and len(lines.lines) == len(table.rows)
        assert render_markdown(section, rendered=lines) == render_markdown(table)
        assert section.notes == table.notes
    assert ahead.table().notes == whole.table().notes


# -- compare end to end ----------------------------------------------------------------------


def _compare(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = compare_main(argv)
    return code, out.getvalue(), err.getvalue()


@needs_fork
@pytest.mark.parametrize("fmt", ["markdown", "table", "csv"])
def test_compare_output_is_the_same_with_workers(
    paths: list[Path], fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = [str(p) for p in paths] + ["--format", fmt]
    for gate in GATES:
        argv += ["--fail", gate]
    alone = _compare(argv)
    monkeypatch.setattr(compare, "workers_for", lambda _paths: 2)
    shared = _compare(argv)
    assert shared == alone
    code, out, err = alone
    assert code == 1 and "REGRESSION" in (err if fmt == "csv" else out)


@needs_fork
def test_bad_file_with_workers_exits_2_naming_it(
    paths: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths[1].write_text(json.dumps(synthetic_report(n_tests=0)))
    monkeypatch.setattr(compare, "workers_for", lambda _paths: 2)
    code, out, err = _compare([str(p) for p in paths] + ["--fail", GATES[0]])
    assert code == 2 and out == ""
    problem = "has no test results (the session finished no test)"
    assert err == f"edgeenergy compare: error: {paths[1]}: {problem}\n"
