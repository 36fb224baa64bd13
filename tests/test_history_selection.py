"""Which series the history's commands show, and how they show their names: the fleet
page's bound (``--max-series``: the series with changes first, the most recent regression
first, the rest counted), progress of long work, ``--test`` patterns on parametrized ids
(brackets match themselves) and the note when none match, and test ids holding invisible
characters (a right-to-left override) shown visibly on the page and in the terminal."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.commands.history import ProgressLine
from pytest_edgeenergy.history import open_store
from pytest_edgeenergy.words import counted, visible

START = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
RUNS = 16
ID = "suites/test_infer.py::test_infer[{}-bs8-gpu612MHz]"
STEPS = {"w0": (12, 1.3), "w1": (5, 1.3), "w2": (12, 0.7)}
"""Per workload: the run its new level starts at and the factor: w0 a recent regression,
w1 an older one, w2 a recent improvement; resnet18 stays level."""
SPOOFED = "suites/test_infer.py::test_\u202eevil"
"""A test id with a right-to-left override: shown as is, it reads reversed after it."""


def write_run(path: Path, i: int, *, spoof: bool = False) -> Path:
    report = synthetic_report(
        workloads=("resnet18",), batch_sizes=(8,), gpu_freqs_hz=(612e6,), n_tests=4,
        noise=0.01, seed=i, started_at=START + timedelta(hours=i),
    )  # fmt: skip
    for test in report["tests"]:
        workload = test["params"]["workload"]
        at, factor = STEPS.get(workload, (RUNS, 1.0))
        if i >= at:
            test["metrics"]["energy_per_item"]["value"] *= factor
        if spoof and workload == "w0":
            test["id"] = SPOOFED
    report["git"] = {"commit": f"{i:02d}" + "cd" * 19, "dirty": False}
    path.write_text(json.dumps(report))
    return path


def make_history(tmp_path: Path, *, spoof: bool = False) -> Path:
    db = tmp_path / "h.db"
    with open_store(db) as store:
        for i in range(RUNS):
            store.add_report(write_run(tmp_path / f"r{i}.json", i, spoof=spoof))
    return db


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return make_history(tmp_path)


def drawn(page: Path) -> list[str]:
    """The workloads of the figures on the page, in the page's order."""
    tests = re.findall(r'<figure class="series"[^>]*data-test="([^"]+)"', page.read_text())
    return [re.sub(r".*\[(\w+)-bs8.*", r"\1", t) for t in tests]


@pytest.mark.parametrize(
    ("max_series", "expected"),
    [(1, ["w0"]), (2, ["w0", "w1"]), (3, ["w0", "w1", "w2"])],
)
def test_a_bounded_page_keeps_the_changes_the_most_recent_regression_first(
    history: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    max_series: int,
    expected: list[str],
) -> None:
    out = tmp_path / "page.html"
    argv = ["history", "html", str(out), "--db", str(history), "--max-series", str(max_series)]
    assert main(argv) == 0
    said = capsys.readouterr().out.splitlines()
    assert sorted(drawn(out)) == expected
    missing = 4 - max_series
    changes = counted(max_series, "change")
    assert said[0] == f"wrote {out}: {max_series} series, {changes}, 1 board"
    assert said[1].startswith(f"{missing} of 4 series left out (--max-series {max_series}: ")
    assert "--max-series N (0: every one)" in said[1]
    text = out.read_text()
    assert f'data-left-out="{missing}">{missing} of 4 series are not drawn' in text
    assert f"{3 - max_series} changes in them" in text


def test_an_unbounded_page_draws_every_series_and_says_nothing_left_out(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "page.html"
    assert main(["history", "html", str(out), "--db", str(history), "--max-series", "0"]) == 0
    assert capsys.readouterr().out == f"wrote {out}: 4 series, 3 changes, 1 board\n"
    assert sorted(drawn(out)) == ["resnet18", "w0", "w1", "w2"]
    assert "left-out" not in out.read_text()


def test_max_series_out_of_range_is_a_usage_error(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "html", str(tmp_path / "p.html"), "--db", str(history),
                 "--max-series", "-1"]) == 2  # fmt: skip
    assert "--max-series" in capsys.readouterr().err


def test_progress_says_each_phase_once_it_takes_long(capsys: pytest.CaptureFixture[str]) -> None:
    every = ProgressLine(delay_s=0.0, every_s=0.0)
    for i in range(3):
        every("drawing", i + 1, 3)
    assert capsys.readouterr().err.splitlines() == [
        "edgeenergy: drawing: 1 of 3 series",
        "edgeenergy: drawing: 2 of 3 series",
        "edgeenergy: drawing: 3 of 3 series",
    ]
    quick = ProgressLine(delay_s=3600.0)
    for i in range(3):
        quick("drawing", i + 1, 3)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("pattern", "workloads"),
    [
        ("*test_infer[*]", ["resnet18", "w0", "w1", "w2"]),
        ("suites/test_infer.py::test_infer[w?-bs8-gpu612MHz]", ["w0", "w1", "w2"]),
        ("*[w1-*", ["w1"]),
        (ID.format("w2"), ["w2"]),
        ("*test_infer[w[12]-*", []),  # brackets are no character class
    ],
)
def test_test_patterns_read_brackets_as_themselves(
    history: Path, pattern: str, workloads: list[str]
) -> None:
    with open_store(history) as store:
        found = store.series(test=pattern, metric="energy_per_item")
    assert sorted(s.test for s in found) == [ID.format(w) for w in workloads]


def test_changes_matching_no_series_say_so(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(history)]
    assert main(["history", "changes", "--test", "*test_infer[*]", "--json", *db]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["series"] == 4 * 7 and out.err == ""  # every metric
    assert main(["history", "changes", "--test", "test_infer[w1-bs8-gpu612MHz]", *db]) == 0
    err = capsys.readouterr().err
    assert err.startswith("edgeenergy: no series match --test 'test_infer[w1-bs8-gpu612MHz]': ")
    assert "unless it holds * or ?" in err
    assert main(["history", "changes", "--test", "*nope*", "--branch", "main", *db]) == 0
    err = capsys.readouterr().err
    assert "no series match --test '*nope*' with --branch: * (any text)" in err


def test_a_page_matching_no_series_says_so(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.html"
    assert main(["history", "html", str(out), "--test", "*nope*", "--db", str(history)]) == 0
    said = capsys.readouterr()
    assert said.out == f"wrote {out}: 0 series, 0 changes, 0 boards\n"
    assert "no series match --test '*nope*': " in said.err
    assert "No series in the history match." in out.read_text()


def test_a_right_to_left_override_in_a_test_id_is_shown_not_obeyed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_history(tmp_path, spoof=True)
    shown = "suites/test_infer.py::test_<U+202E>evil"
    page = tmp_path / "p.html"
    assert main(["history", "html", str(page), "--db", str(db)]) == 0
    text = page.read_text()
    assert "\u202e" not in text
    assert html_escaped(shown) in text
    assert main(["history", "changes", "--db", str(db), "--metric", "energy_per_item"]) == 0
    assert main(["history", "gate", str(tmp_path / "r15.json"), "--db", str(db),
                 "--fail", "energy_per_item:mean:50%"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "\u202e" not in out
    assert out.count(shown) >= 2  # the changes table and the gate's


def html_escaped(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;")


def test_visible_shows_what_prints_nothing_and_keeps_the_rest() -> None:
    assert visible("suites/test_x.py::test_y[bs8-ünï-µs]") == "suites/test_x.py::test_y[bs8-ünï-µs]"
    assert visible("a\u202eb\u2066c\u200bd\ne\x1b[31m") == (
        "a<U+202E>b<U+2066>c<U+200B>d<U+000A>e<U+001B>[31m"
    )
