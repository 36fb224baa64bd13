"""The shared study's journal file (``journal:PATH``): never written through a link, never a
FIFO or directory, a torn last line (a board that lost power mid-write) cut off before the
next write, damage inside the file refused naming the line. Through Optuna's own
``JournalStorage`` and through ``edgeenergy search``."""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from search_helpers import toy_rows, write_rows

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.search.journal import JournalDamaged, JournalFile

RUN_TIMEOUT_S = 240.0
EDGEENERGY = [
    sys.executable,
    "-c",
    "import sys; from pytest_edgeenergy.commands import main; sys.exit(main())",
]


@pytest.fixture
def table(tmp_path: Path) -> Path:
    return write_rows(tmp_path / "toy.csv", toy_rows())


def _search(storage: str, table: Path, trials: int) -> list[str]:
    return [
        "search", "--storage", storage, "--study", "s", "--replay", str(table),
        "--trials", str(trials), "--strategy", "random",
    ]  # fmt: skip


def _lines_parse(path: Path) -> bool:
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    for line in lines[:-1]:
        json.loads(line)
    return True


@pytest.mark.parametrize("target_exists", [True, False])
def test_a_linked_journal_is_refused_and_its_target_untouched(
    tmp_path: Path, table: Path, target_exists: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere.txt"
    if target_exists:
        target.write_text("not a journal\n")
    link = tmp_path / "study.log"
    link.symlink_to(target)
    show = ["search", "--storage", str(link), "--study", "s", "--show"]
    for args in (_search(f"journal:{link}", table, 2), show):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert f"study journal {link} is a symbolic link (to {target})" in err
    assert target.read_text() == "not a journal\n" if target_exists else not target.exists()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_journal_that_is_no_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "study.log"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    done = subprocess.run(
        [*EDGEENERGY, "search", "--storage", str(path), "--study", "s", "--show"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")},
    )
    assert done.returncode == 2, done.stderr
    shown = "a FIFO" if kind == "fifo" else "a directory"
    assert done.stderr == (
        f"edgeenergy: study journal {path} is {shown}, not a regular file; give a file "
        "(journal:PATH)\n"
    )


def test_a_torn_last_line_is_cut_before_the_next_write(
    tmp_path: Path, table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A board lost power writing the journal: the next worker cuts the partial line off
    (saying so) and the study goes on; nothing is ever written after a torn line."""
    path = tmp_path / "study.log"
    assert main(_search(f"journal:{path}", table, 3)) == 0
    whole = path.read_bytes()
    torn = b'{"op_code":8,"worker_id":"w","trial_id":1,"user_at'
    path.write_bytes(whole + torn)
    capsys.readouterr()
    assert main(["search", "--storage", str(path), "--study", "s", "--show"]) == 0
    assert "3 trials done" in capsys.readouterr().out
    assert main(_search(f"journal:{path}", table, 5)) == 0
    err = capsys.readouterr().err
    assert err == (
        f"edgeenergy: study journal {path}: its last line was cut short ({len(torn)} bytes of "
        "a write that never finished, e.g. a board that lost power); removed it\n"
    )
    assert path.read_bytes().startswith(whole) and _lines_parse(path)
    assert main(["search", "--storage", str(path), "--study", "s", "--show", "--json"]) == 0
    (search,) = json.loads(capsys.readouterr().out)["searches"]
    assert search["counted"] == 5


def test_damage_inside_the_journal_is_refused_naming_the_line(
    tmp_path: Path, table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "study.log"
    assert main(_search(f"journal:{path}", table, 2)) == 0
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3][:20]
    path.write_bytes(b"\n".join(lines))
    capsys.readouterr()
    assert main(["search", "--storage", str(path), "--study", "s", "--show"]) == 2
    assert capsys.readouterr().err == (
        f"edgeenergy: study journal {path}: line 4 is not a journal record and records "
        "follow it (the file was damaged or written by another program); keep a copy, then "
        "delete that line (sed -i '4d' FILE) or start a new journal\n"
    )


RECORDS = st.lists(
    st.dictionaries(st.sampled_from("abcdef"), st.integers() | st.text(max_size=8), min_size=1),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=RECORDS, last=RECORDS, cut=st.floats(0.0, 1.0, exclude_max=True))
def test_records_of_a_torn_write_are_not_read_and_the_next_write_follows_the_whole_ones(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[dict[str, object]],
    last: list[dict[str, object]],
    cut: float,
) -> None:
    """Whatever byte a write stops at, the records before it read back, the cut one does
    not (nor is it reported: it may be a write in progress), and a record appended
    afterwards, the torn line cut off first (reported), reads back after the whole ones."""
    path = tmp_path_factory.mktemp("j") / "study.log"
    notes: list[str] = []
    JournalFile(str(path)).append_logs(records)
    ends = [path.stat().st_size]
    for record in last:
        ends.append(ends[-1] + len(json.dumps(record, separators=(",", ":"))) + 1)
    JournalFile(str(path)).append_logs(last)
    keep = ends[0] + int(cut * (ends[-1] - ends[0]))
    with path.open("r+b") as f:
        f.truncate(keep)
    kept = records + last[: bisect.bisect_right(ends, keep) - 1]
    reader = JournalFile(str(path))
    assert list(reader.read_logs(0)) == kept
    JournalFile(str(path), notify=notes.append).append_logs([{"z": 1}])
    assert len(notes) == (0 if keep in ends else 1)
    assert list(reader.read_logs(len(kept))) == [{"z": 1}]
    assert list(JournalFile(str(path)).read_logs(0)) == [*kept, {"z": 1}]


def test_a_last_line_that_is_not_json_is_cut_as_torn(tmp_path: Path) -> None:
    path = tmp_path / "study.log"
    path.write_bytes(b'{"a":1}\n\x00\x00\x00\n')
    notes: list[str] = []
    journal = JournalFile(str(path), notify=notes.append)
    assert list(journal.read_logs(0)) == [{"a": 1}]
    journal.append_logs([{"b": 2}])
    assert path.read_bytes() == b'{"a":1}\n{"b":2}\n'
    assert len(notes) == 1 and "(4 bytes of a write that never finished" in notes[0]


def test_a_journal_damaged_inside_raises_for_optuna_too(tmp_path: Path) -> None:
    path = tmp_path / "study.log"
    path.write_bytes(b'{"a":1}\n{"a":\n{"b":2}\n')
    with pytest.raises(JournalDamaged, match="line 2 is not a journal record"):
        list(JournalFile(str(path)).read_logs(0))
