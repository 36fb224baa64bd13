"""The two checkouts of an A/B run: a directory as is, or a git ref as a temporary worktree.

An existing directory is used as it is (uncommitted changes included). Anything else must
be a commit of the git repository around the current directory (a branch, tag, sha,
``HEAD~1``); it is checked out with ``git worktree add --detach`` into a temporary
directory, and removed (``git worktree remove --force``, else deleted and pruned) when the
run ends, on every path out: done, failed, Ctrl-C, SIGTERM. The sessions of a worktree run
in the same subdirectory as the current directory is of the repository, so the same pytest
arguments name the same tests on both sides. A worktree holds tracked files only: untracked
and ignored files (a local data set, downloaded weights) are not in it.

A run killed before it could clean up (SIGKILL, a power cut) leaves its worktrees: the next
run in the repository removes them (:func:`prune_stale`). Each run's worktrees live in a
scratch directory of their own (:func:`new_scratch`) that records its owner (pid, the
process's start time, host name); a worktree is stale when its owner is gone on this host,
and one of a live run is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ranges import shown
from . import AbError

GIT_TIMEOUT_S = 300.0
"""A worktree of a large repository takes a while to check out; a hung git does not."""
SCRATCH_PREFIX = "edgeenergy-ab-"
OWNER_FILE = "edgeenergy-ab-owner.json"
SIDES = ("base", "head")
"""The worktrees' names in a scratch directory (from ``--base``, ``--head``)."""


@dataclass(frozen=True)
class Checkout:
    """Where one side's sessions run."""

    spec: str
    """The git ref or directory as given."""
    path: Path
    """The directory pytest runs in."""
    worktree: Path | None = None
    """The temporary worktree (None: a directory used as is)."""
    commit: str | None = None
    """The commit a worktree holds."""

    def describe(self) -> str:
        """``main (commit 1a2b3c4d5e6f, worktree /tmp/...)`` or ``. (directory /repo)``."""
        if self.worktree is not None and self.commit is not None:
            return f"{self.spec} (commit {self.commit[:12]}, worktree {self.worktree})"
        return f"{self.spec} (directory {self.path})"


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise AbError("git is not installed: give --base and --head as directories") from None
    except subprocess.TimeoutExpired:
        raise AbError(f"git {' '.join(args)} took over {GIT_TIMEOUT_S:g} s") from None


def _repository(cwd: Path, option: str, spec: str) -> Path:
    done = _git(["rev-parse", "--show-toplevel"], cwd)
    if done.returncode != 0:
        raise AbError(
            f"{option} {shown(spec)}: not a directory, and {cwd} is not inside a git "
            "repository to find it as a ref in; give a directory or run inside the repository"
        )
    return Path(done.stdout.strip())


def _commit(top: Path, option: str, spec: str) -> str:
    done = _git(["rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"], top)
    if spec.startswith("-") or done.returncode != 0 or not done.stdout.strip():
        raise AbError(
            f"{option} {shown(spec)}: not a directory, nor a commit of the git repository "
            f"at {top} (a branch, tag, sha or HEAD~N; fetch it first if it is remote)"
        )
    return done.stdout.strip()


def new_scratch(stack: ExitStack) -> Path:
    """A new directory for this run's worktrees, recording this process as its owner;
    ``stack`` removes it."""
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    stack.callback(shutil.rmtree, scratch, True)
    pid = os.getpid()
    owner = {"pid": pid, "started": _started(pid), "host": socket.gethostname()}
    (scratch / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    return scratch


def prepare(
    spec: str,
    option: str,
    *,
    cwd: Path,
    scratch: Path,
    stack: ExitStack,
    say: Callable[[str], None] | None = None,
) -> Checkout:
    """The checkout of ``spec`` (given as ``option``, for messages): a directory as is, or
    a new worktree in ``scratch`` whose removal ``stack`` will run (stale worktrees of
    killed runs removed first, each said to ``say``)."""
    given = Path(spec)
    if given.is_dir():
        return Checkout(spec, given.resolve())
    top = _repository(cwd, option, spec)
    commit = _commit(top, option, spec)
    prune_stale(top, say or (lambda line: None))
    where = scratch / option.lstrip("-")
    stack.callback(remove_worktree, top, where)  # also after a half-made worktree
    done = _git(["worktree", "add", "--detach", str(where), commit], top)
    if done.returncode != 0:
        raise AbError(
            f"{option} {shown(spec)}: git worktree add failed: "
            + (done.stderr.strip() or done.stdout.strip() or f"status {done.returncode}")
        )
    inside = cwd.resolve().relative_to(top.resolve())
    path = where / inside
    if not path.is_dir():
        raise AbError(
            f"{option} {shown(spec)}: commit {commit[:12]} has no directory {inside}, where "
            "this run's pytest arguments are given"
        )
    return Checkout(spec, path, where, commit)


def remove_worktree(top: Path, where: Path) -> None:
    """Remove a worktree made by :func:`prepare` (a no-op when there is none)."""
    try:
        removed = _git(["worktree", "remove", "--force", str(where)], top).returncode == 0
    except AbError:
        removed = False
    if not removed and where.exists():
        shutil.rmtree(where, ignore_errors=True)
    with contextlib.suppress(AbError):
        _git(["worktree", "prune"], top)


def prune_stale(top: Path, say: Callable[[str], None]) -> list[Path]:
    """Remove the worktrees of the repository at ``top`` that a killed ``edgeenergy ab``
    left (their scratch directory's owner is gone), with their scratch directories; says
    each. Worktrees of live runs, of other hosts and without an owner record stay."""
    with contextlib.suppress(AbError):
        _git(["worktree", "prune"], top)  # those whose directory is gone
    try:
        listed = _git(["worktree", "list", "--porcelain"], top)
    except AbError:
        return []
    found: dict[Path, list[Path]] = {}
    for line in listed.stdout.splitlines():
        path = Path(line.removeprefix("worktree "))
        ours = path.name in SIDES and path.parent.name.startswith(SCRATCH_PREFIX)
        if line.startswith("worktree ") and ours:
            found.setdefault(path.parent, []).append(path)
    removed: list[Path] = []
    for scratch, paths in found.items():
        owner = _owner(scratch / OWNER_FILE)
        if owner is None or _alive(owner):
            continue
        for path in paths:
            remove_worktree(top, path)
        shutil.rmtree(scratch, ignore_errors=True)
        say(f"removed {scratch}, left by edgeenergy ab pid {owner['pid']}, which is gone")
        removed += paths
    return removed


def _owner(path: Path) -> Mapping[str, Any] | None:
    try:
        owner = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return None
    return owner


def _alive(owner: Mapping[str, Any]) -> bool:
    """Whether the process recorded in ``owner`` may still run (on another host: it may)."""
    if owner.get("host") != socket.gethostname():
        return True
    pid = int(owner["pid"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = owner.get("started")
    return started is None or _started(pid) in (None, started)  # else the pid was reused


def _started(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot, ``/proc/PID/stat``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None
