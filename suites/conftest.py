"""Fixtures shared by the benchmark suites: local weights, local training data and the cache
of synthetic JPEGs. Nothing is ever downloaded.

``--edge-weights DIR`` (env ``EDGEENERGY_WEIGHTS``): ``DIR/<workload>.pt`` state_dicts loaded
when present (the result's ``params.weights`` names the file, else says ``random``).
``--edge-data DIR`` (env ``EDGEENERGY_DATA``): an ImageFolder the training suite reads instead
of synthetic JPEGs. Synthetic JPEGs are cached under ``$EDGEENERGY_CACHE``, else pytest's
cache directory (``.pytest_cache``), else ``~/.cache/pytest-edgeenergy``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from pytest_edgeenergy.workloads.errors import LocalFileError
from pytest_edgeenergy.workloads.jpeg_cache import CACHE_ENV, default_cache_root
from pytest_edgeenergy.workloads.local_files import DATA_ENV, WEIGHTS_ENV, resolve_dir

_DIR_OPTIONS = (
    (
        "--edge-weights",
        "edge_weights",
        f"directory of local weights: DIR/<workload>.pt state_dicts (env {WEIGHTS_ENV}); "
        "without it models keep random weights",
    ),
    (
        "--edge-data",
        "edge_data",
        f"ImageFolder directory the training suite reads (env {DATA_ENV}); "
        "default: cached synthetic JPEGs",
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("edgeenergy")
    for flag, dest, text in _DIR_OPTIONS:
        with contextlib.suppress(ValueError):  # already registered by the plugin itself
            group.addoption(flag, dest=dest, default=None, metavar="DIR", help=text)


def pytest_configure(config: pytest.Config) -> None:
    """A bad weights or data directory stops the session at once, naming its source."""
    for flag, dest, env in (
        ("--edge-weights", "edge_weights", WEIGHTS_ENV),
        ("--edge-data", "edge_data", DATA_ENV),
    ):
        try:
            resolve_dir(config.getoption(dest, None), env, flag)
        except LocalFileError as e:
            raise pytest.UsageError(str(e)) from None


def _dir_option(config: pytest.Config, dest: str, env: str, flag: str) -> Path | None:
    try:
        return resolve_dir(config.getoption(dest, None), env, flag)
    except LocalFileError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def edge_weights_dir(pytestconfig: pytest.Config) -> Path | None:
    """``--edge-weights`` / ``EDGEENERGY_WEIGHTS``; None: random weights."""
    return _dir_option(pytestconfig, "edge_weights", WEIGHTS_ENV, "--edge-weights")


@pytest.fixture(scope="session")
def edge_data_dir(pytestconfig: pytest.Config) -> Path | None:
    """``--edge-data`` / ``EDGEENERGY_DATA``; None: synthetic JPEGs."""
    return _dir_option(pytestconfig, "edge_data", DATA_ENV, "--edge-data")


@pytest.fixture(scope="session")
def edge_cache_dir(pytestconfig: pytest.Config) -> Path:
    """Where synthetic JPEGs are cached (see the module docstring)."""
    if os.environ.get(CACHE_ENV):
        return default_cache_root()
    cache = getattr(pytestconfig, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("edgeenergy"))
    return default_cache_root()
