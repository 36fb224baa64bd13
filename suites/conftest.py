"""Fixtures shared by the benchmark suites: local weights, local training data and the cache
of synthetic JPEGs. Nothing is ever downloaded.

``--edge-weights DIR`` (env ``EDGEENERGY_WEIGHTS``): ``DIR/<workload>.pt`` state_dicts loaded
when present (the result's ``params.weights`` names the file, else says ``random``); for the
LLM suite ``DIR/<workload>/`` (a local model directory: config.json + safetensors) or
``DIR/<workload>.gguf`` (int4 through llama.cpp).
``--edge-prompt-tokens LIST`` / ``--edge-new-tokens LIST`` (env ``EDGEENERGY_PROMPT_TOKENS``,
``EDGEENERGY_NEW_TOKENS``): the LLM suite's token-count dimensions.
``--edge-data DIR`` (env ``EDGEENERGY_DATA``): an ImageFolder the training suite reads instead
of synthetic JPEGs. Synthetic JPEGs are cached under ``$EDGEENERGY_CACHE``, else pytest's
cache directory (``.pytest_cache``), else ``~/.cache/pytest-edgeenergy``.
A suite marked ``needs_here(module, reason)`` is skipped with the reason when this Python
lacks the module, unless its workloads run in a workload worker (``--edge-workload-python``,
``--edge-workload-prefix``: the harness's Python then needs no torch; the worker's
interpreter is checked per test).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from pytest_edgeenergy.workloads.errors import LocalFileError, WorkloadError
from pytest_edgeenergy.workloads.jpeg_cache import CACHE_ENV, default_cache_root
from pytest_edgeenergy.workloads.llm_grid import (
    MIN_NEW_TOKENS,
    NEW_TOKENS,
    PROMPT_TOKENS,
    QUICK_NEW_TOKENS,
    QUICK_PROMPT_TOKENS,
    parse_token_counts,
)
from pytest_edgeenergy.workloads.local_files import DATA_ENV, WEIGHTS_ENV, resolve_dir

_DIR_OPTIONS = (
    (
        "--edge-weights",
        "edge_weights",
        f"directory of local weights: DIR/<workload>.pt state_dicts; LLMs: DIR/<workload>/ "
        f"(config.json + safetensors) or DIR/<workload>.gguf (env {WEIGHTS_ENV}); "
        "without it models keep random weights",
    ),
    (
        "--edge-data",
        "edge_data",
        f"ImageFolder directory the training suite reads (env {DATA_ENV}); "
        "default: cached synthetic JPEGs",
    ),
)


_TOKEN_OPTIONS = (
    (
        "--edge-prompt-tokens",
        "edge_prompt_tokens",
        "EDGEENERGY_PROMPT_TOKENS",
        PROMPT_TOKENS,
        QUICK_PROMPT_TOKENS,
        1,
        "prompt tokens per sequence",
    ),
    (
        "--edge-new-tokens",
        "edge_new_tokens",
        "EDGEENERGY_NEW_TOKENS",
        NEW_TOKENS,
        QUICK_NEW_TOKENS,
        MIN_NEW_TOKENS,
        "generated tokens per sequence, the first from the prefill",
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("edgeenergy")
    for flag, dest, text in _DIR_OPTIONS:
        with contextlib.suppress(ValueError):  # already registered by the plugin itself
            group.addoption(flag, dest=dest, default=None, metavar="DIR", help=text)
    for flag, dest, env, default, quick, _, what in _TOKEN_OPTIONS:
        _list = ",".join(map(str, default))
        _quick = ",".join(map(str, quick))
        group.addoption(
            flag,
            dest=dest,
            default=None,
            metavar="LIST",
            help=f"LLM suite: {what}, comma-separated (env {env}; default {_list}, "
            f"--edge-quick {_quick})",
        )


def _token_counts(config: pytest.Config, dest: str) -> tuple[int, ...]:
    from pytest_edgeenergy.plugin.bench_options import build

    for flag, d, env, default, quick, minimum, what in _TOKEN_OPTIONS:
        if d != dest:
            continue
        given = _given_token_counts(config, flag, dest, env, minimum, what)
        if given is not None:
            return given
        return quick if build(config).quick else default
    raise KeyError(dest)


def _given_token_counts(
    config: pytest.Config, flag: str, dest: str, env: str, minimum: int, what: str
) -> tuple[int, ...] | None:
    """The counts given on the command line or in the environment (None: neither)."""
    cli = config.getoption(dest, None)
    if cli is not None:
        return parse_token_counts(str(cli), f"{flag} (command line)", minimum, what)
    if os.environ.get(env):
        return parse_token_counts(os.environ[env], f"{env} (environment)", minimum, what)
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``prompt_tokens`` and ``new_tokens`` (ids ``p32``, ``n8``) for the tests using them."""
    for name, dest, prefix in (
        ("prompt_tokens", "edge_prompt_tokens", "p"),
        ("new_tokens", "edge_new_tokens", "n"),
    ):
        if name in metafunc.fixturenames:
            try:
                counts = _token_counts(metafunc.config, dest)
            except WorkloadError as e:
                raise pytest.UsageError(str(e)) from None
            metafunc.parametrize(name, counts, ids=[f"{prefix}{n}" for n in counts])


def pytest_configure(config: pytest.Config) -> None:
    """A bad weights or data directory or token list stops the session at once, naming its
    source."""
    config.addinivalue_line(
        "markers",
        "needs_here(module, reason): skip with the reason when this Python lacks the module "
        "and the workloads run in process",
    )
    for flag, dest, env in (
        ("--edge-weights", "edge_weights", WEIGHTS_ENV),
        ("--edge-data", "edge_data", DATA_ENV),
    ):
        try:
            resolve_dir(config.getoption(dest, None), env, flag)
        except LocalFileError as e:
            raise pytest.UsageError(str(e)) from None
    for flag, dest, env, _, _, minimum, what in _TOKEN_OPTIONS:
        try:
            _given_token_counts(config, flag, dest, env, minimum, what)
        except WorkloadError as e:
            raise pytest.UsageError(str(e)) from None


@pytest.fixture(autouse=True)
def _modules_here(request: pytest.FixtureRequest) -> None:
    """Skip a test marked ``needs_here`` whose module this Python lacks, before any other
    fixture pins the board; not when the workloads run in a worker."""
    markers = list(request.node.iter_markers("needs_here"))
    if not markers:
        return
    from pytest_edgeenergy.plugin.bench_options import build
    from pytest_edgeenergy.workloads.modes import importable

    if build(request.config).placement.out_of_process:
        return
    for marker in markers:
        module, reason = marker.args
        if not importable(module):
            pytest.skip(reason)


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
