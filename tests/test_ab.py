"""``edgeenergy ab``: two versions interleaved on one board, paired rounds, rounds until sure.

End to end on virtual boards (tiny sleep workloads at a pinned utilisation, so energy per
item follows the work and not this machine's load): two directories and two git refs of a
repository made here; the ABBA order from the reports' ``ab`` objects and start times; the
board lock held across rounds (a poller and a third pytest session never get in); extra
rounds holding only the undecided tests; exit codes 0, 1 and 2; Ctrl-C removing the
worktrees. The lock hand-off itself (token, ancestor) on its own; ``--edge-only``; the
offline ``--reports`` form on synthetic reports.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands.ab import ab_main
from pytest_edgeenergy.control.errors import SessionBusy
from pytest_edgeenergy.control.state import (
    HANDOFF_ENV,
    StateLock,
    choose_state_path,
    new_handoff_token,
)
from pytest_edgeenergy.handoff import give
from pytest_edgeenergy.report.model import build_ab
from pytest_edgeenergy.sim.runner import SimProcess
from pytest_edgeenergy.sim.tree import create

RUN_TIMEOUT_S = 300
GATE = "energy_per_item:mean:5%"

# Energy per item follows the sleep at the pinned utilisation: FACTOR scales the work.
# NOISY (when set) scales B's work by 1.3 in odd rounds and 1/1.3 in even ones: the ratio
# swings round to round around 1, so its change can be neither shown nor bounded.
WORKLOAD = """
import itertools
import json
import os
import time

import pytest

FACTOR = {factor}
NOISY = {noisy}
HOLD = {hold}


def _noisy_factor():
    ab = json.loads(os.environ.get("EDGEENERGY_AB", "{{}}"))
    if not NOISY or ab.get("side") != "B":
        return 1.0
    return 1.3 if ab["round"] % 2 == 1 else 1 / 1.3


def test_clear(edge_bench):
    while HOLD and not os.path.exists(HOLD):
        time.sleep(0.05)
    work = lambda: time.sleep(0.02 * FACTOR)  # noqa: E731
    edge_bench.run(work, items_per_call=1, params={{"workload": "clear"}})


def test_noisy(edge_bench):
    f = _noisy_factor()
    edge_bench.run(lambda: time.sleep(0.02 * f), items_per_call=1, params={{"workload": "noisy"}})
"""

SMALL = [
    "--edge-repeats=3",
    "--edge-items=6",
    "--edge-warmup=1",
    "--edge-min-window-s=0.1",
    "--edge-idle-s=0",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
    "-q",
]
SIM = ["--edge-board=sim:orin-nano", "--edge-sim-load=0.3"]


def workload(factor: float = 1.0, *, noisy: bool = False, hold: str = "") -> str:
    return WORKLOAD.format(factor=factor, noisy=noisy, hold=repr(hold))


def write_side(folder: Path, **kwargs: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_work.py").write_text(workload(**kwargs), encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(("EDGEENERGY_", "GITHUB_")):
            monkeypatch.delenv(key)


def ab_command(*argv: str | Path) -> list[str]:
    code = "import sys; from pytest_edgeenergy.commands import main; sys.exit(main())"
    return [sys.executable, "-c", code, "ab", *map(str, argv)]


def run_ab(
    cwd: Path, *argv: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ab_command(*argv),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


def output(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def ids_of(report: dict[str, Any]) -> list[str]:
    return [t["id"] for t in report["tests"]]


def made_board(done: subprocess.CompletedProcess[str]) -> Path:
    """The virtual board ab said it made."""
    match = re.search(r"made for this run at (\S+?)\)", done.stderr)
    assert match, done.stderr
    return Path(match[1])


# -- the lock hand-off ---------------------------------------------------------------------

SESSION = """
import os, sys
from pathlib import Path
from pytest_edgeenergy.control.errors import SessionBusy
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.state import HANDOFF_ENV, Session

s = Session(knobs_at(Path(sys.argv[1])), lock_timeout_s=0, handle_signals=False)
try:
    s.start()
except SessionBusy as e:
    print("BUSY", e)
    sys.exit(3)
print("STARTED", s._lock.borrowed is not None, os.environ.get(HANDOFF_ENV))
s.close()
"""

HOLDER = """
import sys
from pathlib import Path
from pytest_edgeenergy.control.state import StateLock, choose_state_path

root = Path(sys.argv[1])
lock = StateLock(choose_state_path(root), root=root, handoff=sys.argv[2])
lock.acquire()
print("HELD", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create("orin-nano", tmp_path_factory.mktemp("pristine") / "board", load=0.3)


@pytest.fixture
def board(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "board", symlinks=True))


def start_session(board: Path, token: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != HANDOFF_ENV}
    fds = () if token is None else (give(token, env),)
    try:
        return subprocess.run(
            [sys.executable, "-c", SESSION, str(board)],
            env=env,
            pass_fds=fds,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        for fd in fds:
            os.close(fd)


def test_a_child_given_the_token_runs_inside_the_holders_lock(board: Path) -> None:
    token = new_handoff_token()
    lock = StateLock(choose_state_path(board), root=board, handoff=token)
    lock.acquire()
    try:
        record = lock.path.read_text()
        assert token not in record  # only its digest: reading the lock file gives nothing
        inside = start_session(board, token)
        assert inside.returncode == 0, output(inside)
        # Inside the lock, and the token is gone from its environment (its children lack it).
        assert "STARTED True None" in inside.stdout, output(inside)
        assert "running inside the board lock of pid" in inside.stderr
        # Without the token, or with another one, it is refused as any other session.
        for other in (None, new_handoff_token()):
            busy = start_session(board, other)
            assert busy.returncode == 3, output(busy)
            assert "BUSY" in busy.stdout and "holds it for the sessions it runs" in busy.stdout
    finally:
        lock.release(remove=True)
    # The lock free again: a session takes it itself.
    free = start_session(board, token)
    assert "STARTED False None" in free.stdout, output(free)


def test_the_token_lets_in_only_the_holders_descendants(board: Path) -> None:
    token = new_handoff_token()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(board), token],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "HELD"
        # A sibling of the holder (not its child) with the right token still waits.
        sibling = start_session(board, token)
        assert sibling.returncode == 3, output(sibling)
        assert f"pid {holder.pid}" in sibling.stdout
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(30)


# -- --edge-only ---------------------------------------------------------------------------


def test_edge_only_runs_the_listed_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_sel="""
        import pytest

        @pytest.mark.parametrize("n", [1, 2, 3])
        def test_a(n):
            pass

        def test_b():
            pass
        """
    )
    ids = ["test_sel.py::test_a[2]", "test_sel.py::test_b", "test_sel.py::test_gone"]
    pytester.path.joinpath("only.txt").write_text("# undecided\n\n" + "\n".join(ids) + "\n")
    result = pytester.runpytest_subprocess("--edge-only=only.txt", "-p", "no:randomly", "-v")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(
        [
            "*--edge-only only.txt: kept 2 of 4 tests; 1 listed id not collected: "
            "test_sel.py::test_gone*",
            "*test_sel.py::test_a?2? PASSED*",
        ]
    )
    # Also from the environment, like the other options.
    os.environ["EDGEENERGY_ONLY"] = "only.txt"
    try:
        from_env = pytester.runpytest_subprocess("-p", "no:randomly")
    finally:
        del os.environ["EDGEENERGY_ONLY"]
    from_env.assert_outcomes(passed=2, deselected=2)


def test_edge_only_file_missing_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest_subprocess("--edge-only=nope.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--edge-only (command line): 'nope.txt' cannot be read*"])


# -- live runs -----------------------------------------------------------------------------


class LockPoller:
    """Tries to take the board's lock every 20 ms while ab runs; records when it could."""

    def __init__(self, board: Path) -> None:
        self.lock = StateLock(choose_state_path(board), root=board)
        self.got: list[float] = []
        self.refused: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.lock.acquire(timeout_s=0)
            except SessionBusy:
                self.refused.append(time.time())
            else:
                self.got.append(time.time())
                self.lock.release(remove=False)
            time.sleep(0.02)

    def __enter__(self) -> LockPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def animated(board: Path) -> Iterator[Path]:
    with SimProcess(board):
        yield board


def wait_for(path: Path, text: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never held {text!r}")


def test_two_directories_abba_order_and_the_lock_held_across_rounds(
    tmp_path: Path, animated: Path
) -> None:
    base = write_side(tmp_path / "base")
    head = write_side(tmp_path / "head", factor=2.0)  # twice the work per item
    out = tmp_path / "out"
    argv = ab_command(
        "--base", base, "--head", head, "--rounds", "2", "--max-rounds", "2",
        "--fail", GATE, "--out", out,
        "--", "test_work.py", f"--edge-root={animated}", *SMALL,
    )  # fmt: skip
    with LockPoller(animated) as poller:
        proc = subprocess.Popen(
            argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        # A third, unrelated session while round 1 runs: refused, naming ab.
        wait_for(out / "A-1.log", "running inside the board lock", proc)
        third = subprocess.run(
            [sys.executable, "-m", "pytest", "test_work.py", f"--edge-root={animated}",
             "--edge-lock-timeout=0", *SMALL],
            cwd=base, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 1, stdout + stderr  # twice the work: a regression
    assert third.returncode == pytest.ExitCode.USAGE_ERROR, output(third)
    assert "held by another pytest-edgeenergy session" in output(third)
    assert "ab --base" in output(third)  # the holder named by its command line
    assert "REGRESSION" in stdout and "gate FAILED" in stdout
    assert "rounds per test: 2 for all 2 tests" in stdout

    # ABBA: round 1 A then B, round 2 B then A, as the reports and their start times say.
    reports = {name: load(out / f"{name}.json") for name in ("A-1", "B-1", "A-2", "B-2")}
    for name, report in reports.items():
        side, round_no = name.split("-")
        assert report["ab"]["side"] == side and report["ab"]["round"] == int(round_no)
        assert report["ab"]["order"] == ("AB" if round_no == "1" else "BA")
        assert report["ab"]["ref"] == str(base if side == "A" else head)
    assert len({r["ab"]["session"] for r in reports.values()}) == 1
    order = sorted(reports, key=lambda n: epoch(reports[n]["started_at"]))
    assert order == ["A-1", "B-1", "B-2", "A-2"]

    # The lock: taken by no one else from the first session's start to the last one's end,
    # in the gaps between sessions included.
    first = min(epoch(r["started_at"]) for r in reports.values())
    last = max(epoch(r["finished_at"]) for r in reports.values())
    assert not [t for t in poller.got if first <= t <= last]
    spans = sorted((epoch(r["started_at"]), epoch(r["finished_at"])) for r in reports.values())
    gaps = [(a[1], b[0]) for a, b in itertools.pairwise(spans)]
    assert any(lo < t < hi for t in poller.refused for lo, hi in gaps)
    for name in reports:
        assert "running inside the board lock of pid" in (out / f"{name}.log").read_text()
    assert (out / "verdict.md").read_text().startswith("### Energy gate: head ")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with two commits of the same workload (only a comment differs)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    write_side(repo / "tests", hold=str(tmp_path / "go"))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    path = repo / "tests" / "test_work.py"
    path.write_text(path.read_text() + "# a comment only\n")
    git(repo, "commit", "-q", "-am", "two")
    (tmp_path / "go").touch()
    return repo


def worktrees(repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list", "--porcelain").splitlines() if
            line.startswith("worktree ")]  # fmt: skip


def test_two_git_refs_unchanged_pass_and_leave_no_worktree(tmp_path: Path, repo: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    done = run_ab(
        repo / "tests",
        "--base", "HEAD~1", "--head", "HEAD", "--rounds", "2", "--max-rounds", "3",
        "--fail", GATE, "--out", tmp_path / "out",
        "--", "test_work.py", *SIM, *SMALL,
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, output(done)
    assert "gate passed" in done.stdout and "REGRESSION" not in done.stdout
    head = git(repo, "rev-parse", "HEAD").strip()
    assert f"B = head HEAD (commit {head[:12]}, worktree " in done.stderr
    a1 = load(tmp_path / "out" / "A-1.json")
    assert a1["ab"]["ref"] == "HEAD~1"
    assert a1["git"]["commit"] == git(repo, "rev-parse", "HEAD~1").strip()
    # Worktrees, their scratch directory and the virtual board: all gone.
    assert len(worktrees(repo)) == 1
    assert not made_board(done).exists()
    assert list(scratch.iterdir()) == []


def test_extra_rounds_run_only_the_undecided_tests(tmp_path: Path) -> None:
    base = write_side(tmp_path / "base")
    head = write_side(tmp_path / "head", factor=2.0, noisy=True)
    out = tmp_path / "out"
    done = run_ab(
        tmp_path,
        "--base", base, "--head", head, "--rounds", "2", "--max-rounds", "4",
        "--fail", GATE, "--out", out,
        "--", "test_work.py", *SIM, *SMALL,
    )  # fmt: skip
    assert done.returncode == 1, output(done)
    clear, noisy = "test_work.py::test_clear", "test_work.py::test_noisy"
    for round_no in (1, 2):
        assert ids_of(load(out / f"A-{round_no}.json")) == [clear, noisy]
    for round_no in (3, 4):  # only the undecided test, on both sides
        assert (out / f"only-{round_no}.txt").read_text() == f"{noisy}\n"
        assert ids_of(load(out / f"A-{round_no}.json")) == [noisy]
        assert ids_of(load(out / f"B-{round_no}.json")) == [noisy]
        assert "--edge-only" in (out / f"A-{round_no}.log").read_text()
    assert not (out / "A-5.json").exists()
    assert "round 3: 1 undecided test measured again" in done.stderr
    assert f"rounds per test: 2 for {clear}; 4 for {noisy}" in done.stdout
    assert "4 rounds (2 extra for undecided tests), 8 pytest sessions" in done.stdout
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if "test_" in line}
    assert any("REGRESSION" in line for key, line in rows.items() if "clear" in key)
    assert any("insufficient" in line for key, line in rows.items() if "noisy" in key)


def test_ctrl_c_removes_the_worktrees(tmp_path: Path, repo: Path) -> None:
    (tmp_path / "go").unlink()  # the sessions hold until released
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    proc = subprocess.Popen(
        ab_command(
            "--base", "HEAD~1", "--head", "HEAD", "--fail", GATE, "--out", out,
            "--", "test_work.py", *SIM, *SMALL,
        ),
        cwd=repo / "tests",
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_for(out / "A-1.log", "running inside the board lock", proc)
        assert len(worktrees(repo)) == 3
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted; cleaned up" in stderr
    assert len(worktrees(repo)) == 1
    assert list(scratch.iterdir()) == []  # worktrees, the virtual board, temp files
    assert (
        "Interrupted" in (out / "A-1.log").read_text()
        or "KeyboardInterrupt" in (out / "A-1.log").read_text()
    )


# -- bad input: exit 2 ---------------------------------------------------------------------


def test_a_session_that_fails_is_bad_input_naming_round_and_side(tmp_path: Path) -> None:
    base = write_side(tmp_path / "base")
    done = run_ab(
        tmp_path,
        "--base", base, "--head", base, "--fail", GATE, "--out", tmp_path / "out",
        "--", "test_work.py", "--no-such-option", *SIM, *SMALL,
    )  # fmt: skip
    assert done.returncode == 2, output(done)
    assert "round 1, side A" in done.stderr and "status 4 (usage error)" in done.stderr
    assert "| " in done.stderr and "--no-such-option" in done.stderr  # its last lines
    assert not made_board(done).exists()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["--base", "no-such-ref-xyz", "--fail", GATE],
            "--base 'no-such-ref-xyz': not a directory",
        ),
        (["--base", "."], "give the gate with --fail EXPR"),
        (["--base", ".", "--fail", "energy_per_item:mean"], "expected three parts"),
        (["--base", ".", "--rounds", "3", "--max-rounds", "2", "--fail", GATE], "below"),
        (["--base", ".", "--rounds", "1", "--fail", GATE], "must be >= 2"),
        (["--base", ".", "--fail", GATE, "--", "--edge-fail=x:mean:5%"], "not allowed here"),
        (["--base", ".", "--fail", GATE, "--", "--edge-board=sim:mars"], "is not a board"),
        (["--reports", "x.json", "--fail", GATE], "an odd count"),
        (["--fail", GATE], "give --base"),
    ],
)
def test_bad_input_exits_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    fragment: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert ab_main(argv) == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "reports").exists()


# -- offline --reports ---------------------------------------------------------------------


def synthetic_pairs(tmp_path: Path, scale: float, rounds: int = 3, **kw: Any) -> list[Path]:
    paths = []
    for r in range(rounds):
        for side, energy_scale in (("A", 1.0), ("B", scale)):
            report = synthetic_report(seed=10 * r + (side == "B"), energy_scale=energy_scale, **kw)
            report["ab"] = build_ab("ab12", side, r + 1, side.lower())  # type: ignore[arg-type]
            path = tmp_path / f"{side}-{r + 1}.json"
            path.write_text(json.dumps(report))
            paths.append(path)
    return paths


@pytest.mark.parametrize(("scale", "status"), [(1.3, 1), (1.0, 0)])
def test_offline_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scale: float, status: int
) -> None:
    paths = synthetic_pairs(tmp_path, scale)
    assert ab_main(["--reports", *map(str, paths), "--fail", GATE]) == status
    out = capsys.readouterr().out
    assert "Energy gate: head b against base a" in out
    assert "paired by the reports' rounds and sides: 3 rounds" in out
    # In any order: paired by their ab objects.
    shuffled = [paths[i] for i in (5, 0, 3, 2, 1, 4)]
    assert ab_main(["--reports", *map(str, shuffled), "--fail", GATE]) == status


def test_offline_reports_without_ab_pair_in_the_order_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = synthetic_pairs(tmp_path, 1.3)
    for path in paths:
        report = load(path)
        del report["ab"]
        path.write_text(json.dumps(report))
    assert ab_main(["--reports", *map(str, paths), "--fail", GATE]) == 1
    assert "paired in the order given: 3 rounds" in capsys.readouterr().out
    # B given first in each pair: B is judged against A, an improvement now.
    swapped = [paths[i ^ 1] for i in range(len(paths))]
    assert ab_main(["--reports", *map(str, swapped), "--fail", GATE]) == 0


def test_offline_reports_of_different_devices_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = synthetic_pairs(tmp_path, 1.0, rounds=2)
    other = synthetic_report(sim_model="orin-nano")
    paths[3].write_text(json.dumps(other))
    assert ab_main(["--reports", *map(str, paths), "--fail", GATE]) == 2
    err = capsys.readouterr().err
    assert "A/B pairs must come from one device" in err and str(paths[3]) in err


@pytest.mark.parametrize(
    ("argv", "env", "rounds", "given", "expected"),
    [
        (["--edge-repeats=5"], {}, 3, None, 2),  # the run's 5 repeats over 3 rounds
        (["--edge-repeats", "12"], {}, 3, None, 4),
        ([], {}, 3, None, 4),  # the plugin's default 10 over 3 rounds
        ([], {"EDGEENERGY_REPEATS": "30"}, 5, None, 6),
        (["--edge-repeats=1"], {}, 3, None, 2),  # at least 2: a round needs a spread
        (["--edge-repeats=5"], {}, 3, 7, 7),  # --round-repeats wins
        (["--edge-quick"], {}, 3, None, None),  # quick keeps its own counts
    ],
)
def test_repeats_are_spread_over_the_rounds(
    argv: list[str], env: dict[str, str], rounds: int, given: int | None, expected: int | None
) -> None:
    from pytest_edgeenergy.ab.pytest_args import read_pytest_args, round_repeats

    args = read_pytest_args(argv, env)
    assert not any(a.startswith("--edge-repeats") for a in args.rest)  # ab passes its own
    assert round_repeats(args, rounds, given) == expected


def test_bad_repeats_in_the_pytest_arguments_are_bad_input() -> None:
    from pytest_edgeenergy.ab import AbError
    from pytest_edgeenergy.ab.pytest_args import read_pytest_args

    with pytest.raises(AbError, match=r"--edge-repeats \(pytest arguments\): 'many'"):
        read_pytest_args(["--edge-repeats=many"], {})
