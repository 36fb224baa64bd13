"""Shared by every test module: nothing here changes what a test measures."""

from __future__ import annotations

import pytest

XDIST_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")

# The pytest runs a test starts never use hypothesis, whose pytest plugin imports all of
# hypothesis at every session's end (its terminal summary): about half of a child
# pytest's start-up CPU, and this suite starts hundreds of them. A test that sets
# PYTEST_ADDOPTS itself replaces this.
CHILD_ADDOPTS = "-p no:hypothesispytest"


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
