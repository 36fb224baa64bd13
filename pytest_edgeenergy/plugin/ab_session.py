"""A pytest session run by ``edgeenergy ab``: its hand-off token taken, and the options ab
gives its sessions itself kept to ab.

A session is one of ab's when it was given the board lock's hand-off token
(:mod:`pytest_edgeenergy.handoff`: only ab's direct children get one, through a pipe). The
token is taken first thing in ``pytest_configure``, before any test can start a process.
There, the options of :data:`~pytest_edgeenergy.options_spec.AB_REFUSED` (the report, the
test selection, the gate, the history, the search) come from ab alone:

* given as a flag by anything but ab (``PYTEST_ADDOPTS``, the ini file's ``addopts``, an
  ``@file``): a usage error naming where it came from. ab refuses its own PYTEST_ARGS and
  ``PYTEST_ADDOPTS`` itself; pytest's reading of them all is checked here, whatever the
  spelling;
* their environment variables and ini keys (``-o`` overrides included) are not read: a
  project's gate settings are for its plain runs. One line of the session's output says
  which were set.

A session that nested inside an ab session (a test running pytest) gets no token and is a
plain session.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Sequence

import pytest

from ..options_spec import AB_IN_ITS_OWN_ARGUMENTS, AB_REFUSED, ALL_OPTIONS
from .options import COMMAND_LINE_ONLY, dest_of


def take(config: pytest.Config, say: Callable[[str], None]) -> str | None:
    """The hand-off token of this session (None: not a session of ab). In a session of ab,
    a :class:`pytest.UsageError` names an option of ``AB_REFUSED`` given by anything but
    ab, and their environment variables and ini keys are left unread from now on."""
    from ..handoff import take as take_token

    token = take_token()
    if token is None:
        return None
    for key, reason in AB_REFUSED.items():
        if _given_not_by_ab(config, key):
            flag = ALL_OPTIONS[key].flag
            raise pytest.UsageError(
                f"{flag} ({_origin(config, flag)}) is not allowed in a session of "
                f"edgeenergy ab: {reason}"
            )
    unread = _set_elsewhere(config)
    config.stash[COMMAND_LINE_ONLY] = frozenset(ALL_OPTIONS[k].flag for k in AB_REFUSED)
    if unread:
        say(
            f"edgeenergy: a session of edgeenergy ab does not read {', '.join(unread)}: ab "
            "gives its sessions the report, the test selection and the gate itself"
        )
    return token


def _given_not_by_ab(config: pytest.Config, key: str) -> bool:
    value = config.getoption(dest_of(key), default=None)
    if value in (None, False, []):
        return False
    # ab's own flags come last in its command line, so a value it gives is the one read.
    return key not in AB_IN_ITS_OWN_ARGUMENTS or not _gives(
        config.invocation_params.args, ALL_OPTIONS[key].flag
    )


def _gives(args: Sequence[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in args)


def _origin(config: pytest.Config, flag: str) -> str:
    """Where pytest read ``flag`` from, for the message."""
    with contextlib.suppress(ValueError):
        if _gives(shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), flag):
            return "PYTEST_ADDOPTS (environment)"
    if _gives([str(a) for a in config.getini("addopts")], flag):
        return f"addopts of the ini file {config.inipath}"
    return "pytest's arguments"


def _set_elsewhere(config: pytest.Config) -> list[str]:
    """The environment variables and ini keys of ``AB_REFUSED`` that are set."""
    found = []
    for key in AB_REFUSED:
        opt = ALL_OPTIONS[key]
        if os.environ.get(opt.env):
            found.append(f"{opt.env} (environment)")
        with contextlib.suppress(ValueError):
            if config.getini(opt.ini):
                where = f"ini file {config.inipath}" if config.inipath else "-o"
                found.append(f"{opt.ini} ({where})")
    return found
