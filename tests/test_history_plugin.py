"""`--edge-history` in pytest: the gate against the history, and runs added to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

INNER = """
import os, time

def test_work(energy):
    with energy.window("work"):
        time.sleep(float(os.environ["WORK_S"]))
"""

BOARD = [
    "--edge-board=sim:orin-nano",
    "--edge-sim-load=0.5",
    "--edge-idle-s=0.2",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
]


def run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, work_s: float, *args: str
) -> pytest.RunResult:
    monkeypatch.setenv("WORK_S", str(work_s))
    return pytester.runpytest_subprocess(*BOARD, *args, timeout=240)


def runs_in(db: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT run_id, branch FROM runs ORDER BY started_at"))


def test_runs_are_added_then_a_slower_one_fails_the_gate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_inner=INNER)
    db = pytester.path / "energy.db"
    history = [f"--edge-history={db}", "--edge-history-add", "--edge-history-branch=main"]
    gate = ["--edge-fail=energy_j:mean:10%"]

    first = run(pytester, monkeypatch, 0.3, *history, *gate)
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(
        ["*no earlier run of sim:orin-nano*nothing to gate against yet*", "*added to the history*"]
    )
    for _ in range(2):
        assert run(pytester, monkeypatch, 0.3, *history, *gate).ret == 0
    assert [branch for _, branch in runs_in(db)] == ["main"] * 3

    slower = run(pytester, monkeypatch, 0.4, *history, *gate)
    assert slower.ret == 1
    slower.stdout.fnmatch_lines(
        [
            "*the last 3 runs of sim:orin-nano (simulated) on branch main*",
            "*REGRESSION*",
            "edgeenergy gate: FAILED*",
            "*added to the history*",  # measured, so kept: the history holds every run
        ]
    )
    assert len(runs_in(db)) == 4
    # another branch has no history yet: nothing to gate against
    other = run(
        pytester, monkeypatch, 0.4, f"--edge-history={db}", "--edge-history-branch=dev", *gate
    )
    assert other.ret == 0
    other.stdout.fnmatch_lines(["*no earlier run of*on branch dev*"])
    assert len(runs_in(db)) == 4  # not added without --edge-history-add


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--edge-history-add"], "*--edge-history-add needs the history database*"),
        (
            ["--edge-history=h.db", "--edge-baseline=base/"],
            "*the gate judges against one of them; give one*",
        ),
        (["--edge-history=h.db", "--edge-history-window=0"], "*--edge-history-window*"),
    ],
)
def test_history_options_that_cannot_work_are_usage_errors(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = run(pytester, monkeypatch, 0.1, *args, "--edge-fail=energy_j:mean:5%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert not (pytester.path / "h.db").exists()


def test_an_unreachable_database_stops_the_run_before_any_test_without_its_password(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = run(
        pytester,
        monkeypatch,
        0.1,
        f"--edge-history=postgresql://ci:s3cret@127.0.0.1:1/energy?host={pytester.path}",
        "--edge-fail=energy_j:mean:5%",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "--edge-history: " in text and "s3cret" not in text
    assert "test_work" not in result.stdout.str()  # nothing ran


def test_a_gate_against_a_missing_history_is_a_usage_error_and_creates_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gate alone reads the history: a typo must not make an empty database that passes
    every run ("nothing to gate against yet"); only --edge-history-add creates one."""
    pytester.makepyfile(test_inner=INNER)
    empty = pytester.path / "empty.db"
    empty.write_bytes(b"")
    for db in ("typo/TYPO.db", "empty.db"):
        result = run(
            pytester, monkeypatch, 0.1, f"--edge-history={db}", "--edge-fail=energy_j:mean:5%"
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [f"*--edge-history: *{db}*`edgeenergy history init --db {db}` creates it empty*"]
        )
        assert "test_work" not in result.stdout.str()  # nothing ran
    assert not (pytester.path / "typo").exists()
    assert empty.stat().st_size == 0
