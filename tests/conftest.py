"""Shared by every test module: nothing here changes what a test measures."""

from __future__ import annotations

import pytest

XDIST_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _not_an_xdist_worker_below(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest runs a test starts (pytester, subprocesses) are not xdist workers.

    ``make test`` runs this suite under pytest-xdist, whose workers carry
    ``PYTEST_XDIST_WORKER``; a child pytest inheriting it would look parallel to
    pytest-benchmark, which then disables itself (and its ``--benchmark-json``)."""
    for name in XDIST_ENV:
        monkeypatch.delenv(name, raising=False)
