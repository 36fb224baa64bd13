"""Every file a command reads, given what is no such file: one line naming it, exit 2.

A FIFO (``--baseline <(cat r.json)`` is one) used to hang a reader or pass as an empty
baseline directory, ``/dev/zero`` to fill memory, a loop of symbolic links or a directory
to end in a traceback, and a JSON key given twice to be read as its last value. Each
command runs in a child process of bounded memory that must finish: a reader that blocks
runs into the timeout, one that reads without bound into MemoryError, and both fail.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.inputfiles import InputFileError, _lines, bounded_lines, read_bounded

MEMORY_LIMIT_BYTES = 2 * 2**30
"""Address space of the child: room for the imports, far less than /dev/zero read whole."""
CHILD_TIMEOUT_S = 300
"""Generous: only a reader that blocks for ever reaches it."""

RUNNER = """
import contextlib, io, json, sys, traceback
from pytest_edgeenergy.commands import main
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            code = "raised"
            traceback.print_exc()
    results.append({"argv": argv, "code": code, "err": err.getvalue()})
with open(sys.argv[2], "w") as handle:
    json.dump(results, handle)
"""

GATE = ["--fail", "energy_per_item:mean:5%"]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def run_commands(cwd: Path, argvs: list[list[str]]) -> list[dict[str, object]]:
    """Each ``edgeenergy ARGV`` of ``argvs`` in one child process: exit code and stderr."""
    out = cwd / "results.json"
    env = {k: v for k, v in os.environ.items() if k != "EDGEENERGY_DB"}
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(argvs), str(out)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        preexec_fn=_limited,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, object]] = json.loads(out.read_text())
    return results


@pytest.fixture
def bad(tmp_path: Path) -> dict[str, str]:
    """Paths that are no readable file of any kind, by what they are."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.json"
    os.symlink(tmp_path / "loop2.json", loop)
    os.symlink(loop, tmp_path / "loop2.json")
    directory = tmp_path / "dir.json"
    directory.mkdir()
    return {"fifo": str(fifo), "/dev/zero": "/dev/zero", "loop": str(loop), "dir": str(directory)}


@pytest.fixture
def good(tmp_path: Path) -> str:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(synthetic_report(sim_model="orin-nano", seed=1)))
    return str(path)


def _json_files(tmp_path: Path, good: str) -> dict[str, str]:
    """Files whose text is no report: nested past any parser's stack, a key given twice."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"settings": ' + "[" * 100_000)
    twice = tmp_path / "twice.json"
    text = Path(good).read_text()
    twice.write_text(text.replace('"run_id":', '"run_id": "0", "run_id":', 1))
    return {"deep": str(deep), "twice": str(twice)}


def _assert_one_line_naming(result: dict[str, object], path: str) -> None:
    err = str(result["err"])
    assert result["code"] == 2, result
    assert "Traceback" not in err, err
    assert err.strip().count("\n") == 0, err
    assert path in err, err


COMMANDS = {
    "compare": lambda p, good, db: ["compare", p],
    "compare --baseline": lambda p, good, db: ["compare", good, "--baseline", p, *GATE],
    "merge": lambda p, good, db: ["merge", p, good, "-o", "merged.json"],
    "history add": lambda p, good, db: ["history", "add", p, "--db", db],
    "history export --report": lambda p, good, db: [
        "history", "export", "--format", "bencher", "--report", p
    ],
}  # fmt: skip
"""Commands that read reports (or a baseline): ``(bad path, a good report, a database)``."""


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_report_reader_refuses_what_is_no_report_file(
    command: str, tmp_path: Path, bad: dict[str, str], good: str
) -> None:
    inputs = {**bad, **_json_files(tmp_path, good)}
    if command == "compare --baseline":
        del inputs["dir"]  # a directory of reports is a baseline (an empty one: none yet)
    db = str(tmp_path / "h.db")
    results = run_commands(tmp_path, [COMMANDS[command](p, good, db) for p in inputs.values()])
    for (kind, path), result in zip(inputs.items(), results, strict=True):
        _assert_one_line_naming(result, path)
        if kind == "twice":
            assert "the key 'run_id' appears twice in one JSON object" in str(result["err"])
        if kind == "fifo":
            assert "is a pipe (FIFO)" in str(result["err"])


@pytest.mark.parametrize(
    "command",
    [
        ["tegrastats-energy"],
        ["search", "--objective", "min-energy", "--trials", "3", "--strategy", "random",
         "--replay"],
    ],
    ids=["tegrastats-energy", "search --replay"],
)  # fmt: skip
def test_a_log_or_table_reader_refuses_what_is_no_such_file(
    command: list[str], tmp_path: Path, bad: dict[str, str]
) -> None:
    no_lines = tmp_path / "zeros.csv"  # /dev/zero copied: no line end, no field end
    no_lines.write_bytes(b"\0" * (1 << 20))
    inputs = {**bad, "zeros": str(no_lines)}
    results = run_commands(tmp_path, [[*command, p] for p in inputs.values()])
    for path, result in zip(inputs.values(), results, strict=True):
        _assert_one_line_naming(result, path)


HISTORY_READERS = {
    "gate": lambda db, good: ["history", "gate", good, *GATE, "--db", db],
    "changes": lambda db, good: ["history", "changes", "--db", db],
    "html": lambda db, good: ["history", "html", "page.html", "--db", db],
    "export": lambda db, good: ["history", "export", "--format", "bencher", "--db", db],
}


@pytest.mark.parametrize("command", sorted(HISTORY_READERS))
def test_a_history_reader_refuses_what_is_no_database_and_creates_none(
    command: str, tmp_path: Path, bad: dict[str, str], good: str
) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    inputs = {
        **bad,
        "missing": str(tmp_path / "TYPO.db"),
        "missing below": str(tmp_path / "typo" / "x.db"),
        "empty": str(empty),
    }
    results = run_commands(tmp_path, [HISTORY_READERS[command](p, good) for p in inputs.values()])
    for (kind, path), result in zip(inputs.items(), results, strict=True):
        _assert_one_line_naming(result, path)
        if kind in ("missing", "missing below", "empty"):
            assert "`edgeenergy history add --db" in str(result["err"]), result
    assert not (tmp_path / "TYPO.db").exists()
    assert not (tmp_path / "typo").exists()
    assert empty.stat().st_size == 0  # no schema written into it
    assert not (tmp_path / "page.html").exists()


def test_a_history_reader_without_db_creates_no_default_database(
    tmp_path: Path, good: str
) -> None:
    results = run_commands(tmp_path, [["history", "changes"], ["history", "gate", good, *GATE]])
    for result in results:
        _assert_one_line_naming(result, "reports/energy.db")
        assert "the default database; name another with --db or $EDGEENERGY_DB" in str(
            result["err"]
        )
    assert not (tmp_path / "reports").exists()


def test_history_add_still_creates_the_database_and_its_directory(
    tmp_path: Path, good: str
) -> None:
    db = tmp_path / "new" / "h.db"
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    results = run_commands(
        tmp_path,
        [
            ["history", "add", good, "--db", str(db)],
            ["history", "add", good, "--db", str(empty)],  # a 0-byte file is a new database
            ["history", "changes", "--db", str(db)],
        ],
    )
    assert [r["code"] for r in results] == [0, 0, 0], results
    assert empty.stat().st_size > 0


# -- the bounded line reader ---------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"b", b"\n"]), max_size=60).map(b"".join),
    max_line=st.integers(1, 8),
    block=st.integers(1, 9),
)
def test_lines_are_split_as_bytes_split_and_a_long_one_is_named(
    data: bytes, max_line: int, block: int
) -> None:
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()  # the end of the last line, not a line
    too_long = next((i for i, line in enumerate(expected) if len(line) > max_line), None)
    got = list(_lines(io.BytesIO(data), max_line, block))
    if too_long is None:
        assert got == expected
    else:
        assert got == [*expected[:too_long], None]


def test_a_file_without_line_ends_is_refused_at_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"ok\n" + b"\0" * 300)
    lines = bounded_lines(path, 100, "a log")
    assert next(lines) == "ok"
    with pytest.raises(InputFileError) as info:
        next(lines)
    assert str(info.value) == f"{path}: line 2 is longer than 100 bytes; not a log"


def test_a_file_over_its_limit_is_refused_naming_both_sizes(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"x" * 11)
    assert read_bounded(path, 11, "a table") == b"x" * 11
    with pytest.raises(InputFileError) as info:
        read_bounded(path, 10, "a table")
    assert info.value.problem == "is 11 bytes, over the 10 bytes a table may have; not read"


# -- files named by pytest options ---------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--edge-only", "cannot be read: is {kind}, not a text file"),
        ("--edge-shard-durations", "is {kind}; give an energy report, pytest-split's"),
    ],
)
@pytest.mark.parametrize("kind", ["a pipe (FIFO)", "a character device"])
def test_a_file_option_that_names_no_file_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path: Path, option: str, said: str, kind: str
) -> None:
    if kind == "a pipe (FIFO)":
        os.mkfifo(pytester.path / "pipe")
        path = "pipe"  # short: a long value is shown cut
    else:
        path = "/dev/zero"
    ran = tmp_path / "ran"
    pytester.makepyfile(test_w=f"def test_w():\n    open({str(ran)!r}, 'w').close()\n")
    shard = ["--edge-shard=1/1"] if option == "--edge-shard-durations" else []
    result = pytester.runpytest_subprocess(
        f"{option}={path}", *shard, "-p", "no:cacheprovider", timeout=CHILD_TIMEOUT_S
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option} (command line): '{path}'*{said.format(kind=kind)}*"])
    assert not ran.exists()
