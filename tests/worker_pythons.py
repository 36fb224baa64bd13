"""Other interpreters for the workload worker's tests: pyenv's Pythons (3.6, 3.8, 3.9 here,
the system Pythons of JetPack 4 and 5), and a module of user workloads a worker imports."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

OLD_VERSIONS = ("3.6", "3.8", "3.9")


def _pyenv_roots() -> list[Path]:
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    return [Path(r) for r in roots if r]


def find_python(version: str) -> Path | None:
    """pyenv's newest ``python<version>``, or None."""
    for root in _pyenv_roots():
        found = sorted((root / "versions").glob(f"{version}.*/bin/python{version}"))
        if found:
            return found[-1]
    return None


def old_python(version: str) -> Path:
    """pyenv's ``python<version>``; the test is skipped where pyenv has none."""
    path = find_python(version)
    if path is None:
        pytest.skip(f"no Python {version} here (pyenv provides them: pyenv install {version})")
    return path


USER_WORKLOADS = '''
"""Workloads a test builds in a worker: each factory returns the call."""
import os
import subprocess
import sys
import time


def dies(code=3):
    def call():
        sys.stderr.write("the workload gives up\\n")
        sys.stderr.flush()
        os._exit(code)
    return call


def hangs(pid_file):
    def call():
        child = subprocess.Popen(["sleep", "600"])
        with open(pid_file, "w") as f:
            f.write(str(child.pid))
        time.sleep(600)
    return call


def raises():
    def call():
        raise ValueError("bad input shape")
    return call


def chatty():
    def call():
        print("a workload printing to stdout")
    return {"call": call, "facts": {"prints": True}}
'''
"""Written as ``user_workloads.py`` into a directory the worker's spec puts on its path."""


def write_user_workloads(folder: Path) -> str:
    """Write :data:`USER_WORKLOADS` into ``folder``; returns the folder for a spec's path."""
    (folder / "user_workloads.py").write_text(USER_WORKLOADS, encoding="utf-8")
    return str(folder)


def alive(pid: int) -> bool:
    """True when process ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members
