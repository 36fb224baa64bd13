"""The main job (``make run``, tox's ``suites`` env): one set of arguments, and each suite
at its own documented batch size (docs/how-to/suites.md)."""

from __future__ import annotations

import configparser
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from suite_runs import QUIET_FLAGS, clean_env

ROOT = Path(__file__).resolve().parents[1]
BOARD = "--edge-board=sim:orin-nano"


def _without_make_variables(env: dict[str, str]) -> dict[str, str]:
    """``env`` without what a ``make`` around this run (``make test ARGS=-x``) passes down to
    the ``make -n run`` below (MAKEFLAGS carries its command-line variables) or the
    Makefile's own variables: the test reads the Makefile as written."""
    own = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "ARGS", "SUITE_ARGS"}
    own |= {"POWER_MODE", "BOARD", "TEST_WORKERS"}
    return {k: v for k, v in env.items() if k not in own}


def make_run_args(target: str = "run", folder: str = "suites/") -> list[str]:
    """What ``make TARGET`` passes to pytest from ``folder`` on (``make -n``: printed, not
    run), on a virtual board."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    proc = subprocess.run(
        ["make", "-n", target, f"BOARD={BOARD}"],
        cwd=ROOT,
        env=_without_make_variables(clean_env()),
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = [x for x in proc.stdout.splitlines() if f"pytest {folder}" in x]
    words = shlex.split(line)
    return words[words.index(folder) :]


def tox_suites_args(env: str = "suites") -> list[str]:
    """The ``[testenv:ENV]`` command of tox.ini, without ``pytest`` and ``{posargs}``."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    words = shlex.split(tox[f"testenv:{env}"]["commands"].replace("{posargs}", ""))
    assert words[0] == "pytest"
    return words[1:]


def test_make_and_tox_run_the_same_main_job() -> None:
    assert tox_suites_args() == make_run_args()


def test_make_and_tox_run_the_tests_alike_the_longest_files_first() -> None:
    from conftest import FIRST_FILES

    args = make_run_args("test", "tests/")
    assert tox_suites_args("tests") == args
    assert "--no-loadscope-reorder" in args  # xdist keeps FIRST_FILES first
    assert [n for n in FIRST_FILES if not (ROOT / "tests" / n).is_file()] == []


def test_the_main_job_runs_each_suite_at_its_own_batch_size() -> None:
    """No global ``--batch-size``: the interleaved suite keeps its inference batch of 4 (its
    ``edge_grid`` marker), the other suites the plugin's default of 8."""
    pytest.importorskip("torch", reason="the suites need torch")
    pytest.importorskip("torchvision", reason="the suites need torchvision")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *make_run_args(), *QUIET_FLAGS],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    sizes: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"suites/(test_\w+)\.py::\w+\[bs(\d+)-", line)
        if m:
            sizes.setdefault(m[1], set()).add(m[2])
    assert sizes.pop("test_interleave") == {"4"}
    assert sizes and all(v == {"8"} for v in sizes.values()), sizes
