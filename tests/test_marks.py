"""Marks of a measured command: the line format, pairing per run, the FIFO channel, and the
one-file helper under old Pythons (3.6, 3.8: the interpreters a container may hold)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from old_pythons import old_python

from pytest_edgeenergy.commands.mark_helper import mark_helper_main
from pytest_edgeenergy.run import mark_channel
from pytest_edgeenergy.run.mark_channel import MarkChannel
from pytest_edgeenergy.run.marks import (
    LABEL_PATTERN,
    MAX_LINE_BYTES,
    MAX_PROBLEMS_KEPT,
    BadMark,
    Mark,
    MarkBook,
    parse_mark,
)

_FIRST = "abcXYZ019_"
LABELS = st.builds(
    str.__add__,
    st.sampled_from(_FIRST),
    st.text(alphabet=_FIRST + "._:/+-", max_size=127),
)
"""Labels as LABEL_PATTERN allows them (drawn cheaply: a loaded host must not time out the
generation)."""
NS = st.integers(min_value=0, max_value=2**63)


# -- the line format -------------------------------------------------------------------------


@settings(deadline=None)
@given(label=LABELS, t_ns=NS, items=st.none() | st.integers(min_value=0, max_value=2**40))
def test_a_stamped_line_reads_back_as_written(label: str, t_ns: int, items: int | None) -> None:
    assert re.fullmatch(LABEL_PATTERN, label)
    assert parse_mark(f"begin {label} t_ns={t_ns}", 7) == Mark("begin", label, t_ns, True)
    line = f"end {label} t_ns={t_ns}" + (f" items={items}" if items is not None else "")
    assert parse_mark(line, 7) == Mark("end", label, t_ns, True, items)


@settings(deadline=None)
@given(label=LABELS, received=NS)
def test_a_line_without_a_stamp_takes_the_time_it_was_read(label: str, received: int) -> None:
    assert parse_mark(f"end {label} items=3", received) == Mark("end", label, received, False, 3)


@settings(deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_a_mark_or_a_bad_mark_never_a_crash(text: str) -> None:
    try:
        mark = parse_mark(text, 1)
    except BadMark as e:
        assert str(e)
    else:
        assert mark.verb in ("begin", "end")


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("", "an empty line"),
        ("start x", "allowed: begin, end"),
        ("begin", "no label"),
        ("begin .x", "label '.x' is not allowed"),
        ("begin a#2", "label 'a#2' is not allowed"),
        ("begin x items=3", "allowed: t_ns=N"),
        ("end x t=5", "allowed: t_ns=N, items=N"),
        ("end x items=-1", "is not an integer >= 0"),
        ("end x items=1.5", "is not an integer >= 0"),
        ("end x t_ns=1 t_ns=2", "t_ns given twice"),
    ],
)
def test_bad_lines_say_what_is_allowed(line: str, says: str) -> None:
    with pytest.raises(BadMark, match=says.replace(".", r"\.").replace("+", r"\+")):
        parse_mark(line, 1)


# -- pairing ---------------------------------------------------------------------------------


def book() -> MarkBook[str]:
    return MarkBook(start_ns=1000, end_ns=9000, reserved=("python3",))


def test_nested_and_overlapping_windows_of_different_labels_are_each_a_window() -> None:
    b = book()
    for line, at in [
        ("begin outer t_ns=1100", "o0"),
        ("begin inner t_ns=1200", "i0"),
        ("end outer t_ns=1300", "o1"),  # overlapping: outer ends while inner is open
        ("end inner t_ns=1400 items=5", "i1"),
    ]:
        b.feed(line, 5000, at)
    b.close()
    assert b.problems == []
    spans = {s.entry: s for s in b.spans}
    assert (spans["outer"].t0_ns, spans["outer"].t1_ns) == (1100, 1300)
    assert (spans["inner"].t0_ns, spans["inner"].t1_ns, spans["inner"].items) == (1200, 1400, 5)
    assert (spans["inner"].begin, spans["inner"].end) == ("i0", "i1")  # what was attached
    assert spans["outer"].stamped == "command"


def test_a_label_again_in_one_run_is_numbered_as_the_library_numbers_windows() -> None:
    b = book()
    for k in range(3):
        b.feed(f"begin step t_ns={2000 + 10 * k}", 5000, "")
        b.feed(f"end step t_ns={2005 + 10 * k}", 5000, "")
    assert [s.entry for s in b.spans] == ["step", "step#2", "step#3"]
    assert {s.label for s in b.spans} == {"step"}


def test_unmatched_marks_and_stamps_outside_the_run_are_problems_not_windows() -> None:
    b = book()
    lines = [
        "end never-begun t_ns=1500",
        "begin twice t_ns=1500",
        "begin twice t_ns=1600",
        "begin early t_ns=999",  # before the run: another clock, or another process
        "begin late t_ns=9001",
        "begin backwards t_ns=3000",
        "end backwards t_ns=2000",
        "begin python3 t_ns=1500",  # the whole run's entry
        "begin left-open t_ns=1500",
        "garbage",
    ]
    for line in lines:
        b.feed(line, 5000, "")
    b.close()
    assert b.spans == []
    text = "\n".join(b.problems)
    for says in [
        "end never-begun: no window never-begun is open",
        "begin twice: already open",
        "begin early: t_ns=999 is outside the run [1000, 9000]",
        "begin late: t_ns=9001 is outside the run",
        "end backwards: t_ns=2000 is before its begin's t_ns=3000",
        "begin python3: the whole run's entry has this name",
        "begin left-open: never ended",
        "begin twice: never ended",  # the first begin stays open, never ended
        "'garbage': begins with 'garbage'",
    ]:
        assert says in text
    assert b.problem_count == len(b.problems) == 9


def test_a_mark_without_a_stamp_read_after_the_exit_is_held_at_the_exit() -> None:
    b = book()
    b.feed("begin shell", 4000, "")
    b.feed("end shell", 9500, "")  # read while draining, after the command exited at 9000
    [span] = b.spans
    assert (span.t0_ns, span.t1_ns, span.stamped) == (4000, 9000, "harness")


def test_problems_are_counted_past_those_kept_word_for_word() -> None:
    b = book()
    for _ in range(MAX_PROBLEMS_KEPT + 5):
        b.feed("nonsense", 5000, "")
    assert len(b.problems) == MAX_PROBLEMS_KEPT and b.problem_count == MAX_PROBLEMS_KEPT + 5


# -- the channel -----------------------------------------------------------------------------


def write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def test_the_channel_gives_every_line_written_before_take_in_order(tmp_path: Path) -> None:
    attached = iter(range(10**6))
    with MarkChannel(lambda: next(attached), directory=tmp_path) as ch:
        assert ch.path is not None and ch.path.exists()
        assert ch.take() == ([], 0)
        threads = [
            threading.Thread(target=write, args=(ch.path, f"end w{k} items={k}\n".encode()))
            for k in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        write(ch.path, b"begin a\r\nbegin b\nend b")  # the last line ends at the writer's exit
        lines, dropped = ch.take()
        texts = [line.text for line in lines]
        assert sorted(texts[:8]) == sorted(f"end w{k} items={k}" for k in range(8))
        assert texts[8:] == ["begin a", "begin b", "end b"]
        assert dropped == 0
        stamps = [line.received_ns for line in lines]
        assert stamps == sorted(stamps)
        assert [line.attached for line in lines] == sorted(line.attached for line in lines)
        assert ch.take() == ([], 0)  # taken once
        path, folder = ch.path, ch.path.parent
    assert not path.exists() and not folder.exists()


def test_an_overlong_line_is_cut_and_lines_past_the_limit_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mark_channel, "MAX_LINES", 3)
    with MarkChannel(lambda: None, directory=tmp_path) as ch:
        assert ch.path is not None
        write(ch.path, b"begin " + b"x" * (MAX_LINE_BYTES * 2) + b"\nend ok\n")
        lines, dropped = ch.take()
        assert [line.text for line in lines][1:] == ["end ok"]
        assert lines[0].text.endswith(f"(a line longer than {MAX_LINE_BYTES} bytes)")
        assert parse_error(lines[0].text)
        write(ch.path, b"".join(b"end %d\n" % k for k in range(5)))
        lines, dropped = ch.take()
        assert [line.text for line in lines] == ["end 0", "end 1", "end 2"] and dropped == 2


def parse_error(text: str) -> bool:
    try:
        parse_mark(text, 1)
    except BadMark:
        return True
    return False


# -- the helper ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def helper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``edgeenergy mark-helper > edgeenergy_mark.py``, as a user copies it."""
    folder = tmp_path_factory.mktemp("helper")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from pytest_edgeenergy.commands import main; "
         "sys.exit(main(['mark-helper']))"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (folder / "edgeenergy_mark.py").write_text(done.stdout)
    return folder


def test_mark_helper_prints_the_file_the_package_ships(
    capsys: pytest.CaptureFixture[str], helper: Path
) -> None:
    assert mark_helper_main([]) == 0
    printed = capsys.readouterr().out
    shipped = Path(mark_channel.__file__).with_name("mark_helper.py").read_text()
    assert printed == shipped == (helper / "edgeenergy_mark.py").read_text()


HELPER_USE = """
import os, sys, zlib
import edgeenergy_mark as mark
assert not mark.enabled()
mark.begin("off")  # outside edgeenergy measure: nothing happens
os.environ["EDGEENERGY_MARK"] = sys.argv[1]
assert mark.enabled()
with mark.window("compress", items=4):
    for _ in range(4):
        zlib.compress(b"edge" * 50000)
t = mark.now_ns()
mark.begin("late", t_ns=t)
mark.end("late", t_ns=t + 5)
try:
    with mark.window("raises", items=2):
        raise KeyError("body")
except KeyError:
    pass
for bad in (lambda: mark.begin("a b"), lambda: mark.end("x", items=-1)):
    try:
        bad()
    except ValueError as e:
        print("refused:", e)
"""


@pytest.mark.parametrize("version", ["3.6", "3.8"])
def test_the_helper_writes_the_line_format_under_old_pythons(
    helper: Path, tmp_path: Path, version: str
) -> None:
    python = old_python(version)
    with MarkChannel(lambda: None, directory=tmp_path) as ch:
        assert ch.path is not None
        done = subprocess.run(
            [python, "-c", HELPER_USE, str(ch.path)],
            cwd=helper, capture_output=True, text=True, check=False, timeout=120,
            env={"PATH": os.environ.get("PATH", "")},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        lines, _ = ch.take()
    marks = [parse_mark(line.text, 0) for line in lines]
    assert [(m.verb, m.label, m.items) for m in marks] == [
        ("begin", "compress", None),
        ("end", "compress", 4),
        ("begin", "late", None),
        ("end", "late", None),
        ("begin", "raises", None),
        ("end", "raises", None),  # the body raised: no items claimed
    ]
    assert all(m.stamped for m in marks)
    assert marks[1].t_ns > marks[0].t_ns and marks[3].t_ns - marks[2].t_ns == 5
    assert done.stdout.count("refused:") == 2


def test_the_helper_says_once_when_its_channel_is_gone(helper: Path, tmp_path: Path) -> None:
    python = old_python("3.6")
    done = subprocess.run(
        [python, "-c", "import edgeenergy_mark as m\nfor _ in range(3): m.begin('x')"],
        cwd=helper, capture_output=True, text=True, check=False, timeout=120,
        env={"EDGEENERGY_MARK": str(tmp_path / "no-such-fifo")},
    )  # fmt: skip
    assert done.returncode == 0
    assert done.stderr.count("edgeenergy_mark: cannot open EDGEENERGY_MARK=") == 1
