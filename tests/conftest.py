"""Shared by every test module: nothing here changes what a test measures."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Iterator

import pytest

XDIST_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")

# The pytest runs a test starts never use hypothesis, whose pytest plugin imports all of
# hypothesis at every session's end (its terminal summary): about half of a child
# pytest's start-up CPU, and this suite starts hundreds of them. Nor anyio's and
# platformdirs' plugins (their own test fixtures, installed with those libraries): a
# quarter of what is left of a child's CPU on a virtual board. A test that sets
# PYTEST_ADDOPTS itself replaces this.
CHILD_ADDOPTS = "-p no:hypothesispytest -p no:anyio -p no:platformdirs"

# Torch's OpenMP threads (GNU libgomp) spin while they wait for work; with four xdist
# workers on two cores they spin on cores another process needs. Here they sleep instead,
# in this process and every process a test starts: a quick suite run beside two CPU-bound
# processes used 19.1 s of CPU spinning and 13.7 s sleeping (wall 23.9 -> 19.0 s). No figure
# a test checks depends on it (virtual boards); a value the caller set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:  # tqdm (transformers', ONNX export's progress bars) starts a monitor thread that lives
    # as long as the process: a worker with it can no longer fork (report.parallel.can_fork)
    import tqdm

    tqdm.tqdm.monitor_interval = 0
except ImportError:
    pass


# The files that take longest (wall time, 4 xdist workers on 2 cores, 2026-11-28), started
# first: one of them started near the end kept the run going with the other workers idle
# (the CI recipe's 2.5 minutes began at minute 4). `make test` keeps this order
# (--no-loadscope-reorder; xdist would otherwise start the files with most tests first).
FIRST_FILES = (
    "test_ci_recipe.py",
    "test_search_study.py",
    "test_interleave.py",
    "test_suites_e2e.py",
    "test_gate_plugin.py",
    "test_ab.py",
    "test_plugin_search.py",
    "test_worker_plugin.py",
    "test_worker_suites.py",
    "test_llm_e2e.py",
    "test_scenario_plugin.py",
    "test_runtimes_e2e.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """torch and torchvision (where installed) are loaded first in each process that runs
    tests, as when test modules imported them at collection. Loaded later, in a test, the
    first ``import torchvision`` of an xdist worker failed now and then: torch's operator
    libraries registered twice ("Only a single TORCH_LIBRARY ... _inductor_test"; once
    "SystemError: ... bad call flags" from ``import torch``; make test, 6 workers,
    2026-11-28; what dropped the modules in between was not pinned down). Not in xdist's
    controller, which runs no test."""
    controller = not hasattr(config, "workerinput") and bool(
        getattr(config.option, "numprocesses", None)
    )
    for name in () if controller else ("torch", "torchvision"):
        if importlib.util.find_spec(name) is None:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # a broken install (torchvision built for another torch): the
            break  # tests that need it say so themselves


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(FIRST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest as is


@pytest.fixture(autouse=True)
def _not_an_xdist_worker_below(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest runs a test starts (pytester, subprocesses) are not xdist workers.

    ``make test`` runs this suite under pytest-xdist, whose workers carry
    ``PYTEST_XDIST_WORKER``; a child pytest inheriting it would look parallel to
    pytest-benchmark, which then disables itself (and its ``--benchmark-json``)."""
    for name in XDIST_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _child_pytests_without_hypothesis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Child pytest runs skip the hypothesis plugin (see CHILD_ADDOPTS)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", CHILD_ADDOPTS)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own fixture, after which its child runs skip hypothesis too (pytester
    clears PYTEST_ADDOPTS when it starts)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", CHILD_ADDOPTS)
    return pytester


@pytest.fixture(scope="session", autouse=True)
def _ctrl_c_reaches_the_processes_a_test_starts() -> Iterator[None]:
    """The processes a test starts get SIGINT as from a terminal, where Ctrl-C works.

    Started as a background job of a non-interactive shell (``cmd &`` in a script, nohup),
    this run inherits SIGINT ignored, which Python keeps and passes on through exec: the
    tests that press Ctrl-C on a command, a session or a queued run would then wait on a
    process that never hears it. A Python handler here is reset to the default in each
    child at exec."""
    previous = signal.getsignal(signal.SIGINT)
    if previous != signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
