"""Worktrees of an ``edgeenergy ab`` killed with SIGKILL are removed by the next run.

A run's worktrees live in a scratch directory recording its owner; the next run in the
repository removes those whose owner is gone, and never those of a live run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_ab import GATE, RUN_TIMEOUT_S, ab_command, git

HELD = """
import os
import time


def test_held(edge_bench):
    while not os.path.exists({go!r}):
        time.sleep(0.05)
    edge_bench.run(lambda: time.sleep(0.01), items_per_call=1)
"""

ARGS = [
    "test_work.py",
    "--edge-board=sim:orin-nano",
    "--edge-sim-load=0.3",
    "--edge-repeats=2",
    "--edge-items=4",
    "--edge-warmup=0",
    "--edge-idle-s=0",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
]


def worktrees(repo: Path) -> list[Path]:
    lines = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [Path(line.removeprefix("worktree ")) for line in lines if line.startswith("worktree ")]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_work.py").write_text(HELD.format(go=str(tmp_path / "go")), encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    return repo


def short_run(repo: Path, env: dict[str, str], used_out: Path) -> subprocess.CompletedProcess[str]:
    """A run that makes its worktrees (pruning stale ones first), then stops: its --out is
    taken."""
    return subprocess.run(
        ab_command("--base", "HEAD~1", "--head", "HEAD", "--fail", GATE, "--out", used_out,
                   "--", *ARGS),
        cwd=repo, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip


def test_the_next_run_removes_the_worktrees_of_a_killed_run_not_of_a_live_one(
    tmp_path: Path, repo: Path
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")}
    env["TMPDIR"] = str(scratch)
    used = tmp_path / "used"
    used.mkdir()
    (used / "A-1.json").write_text("{}")
    out = tmp_path / "out"
    killed = subprocess.Popen(
        ab_command("--base", "HEAD~1", "--head", "HEAD", "--fail", GATE, "--out", out,
                   "--", *ARGS),
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        log = out / "A-1.log"
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (log.exists() and "running inside the board lock" in log.read_text()):
            assert killed.poll() is None and time.monotonic() < deadline, killed.communicate()
            time.sleep(0.05)
        theirs = [p for p in worktrees(repo) if p != repo]
        assert len(theirs) == 2

        # Another run while it lives: its worktrees stay.
        beside = short_run(repo, env, used)
        assert beside.returncode == 2, beside.stdout + beside.stderr
        assert "exists and is not an empty directory" in beside.stderr
        assert worktrees(repo)[1:] == theirs
        assert "removed" not in beside.stderr

        killed.send_signal(signal.SIGKILL)
        killed.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait()
    assert worktrees(repo)[1:] == theirs  # nothing cleaned up after a SIGKILL

    after = short_run(repo, env, used)
    assert after.returncode == 2, after.stdout + after.stderr
    assert f"left by edgeenergy ab pid {killed.pid}, which is gone" in after.stderr
    assert worktrees(repo) == [repo]
    assert not theirs[0].parent.exists()
    (tmp_path / "go").touch()  # a session the kill left behind may end now
