"""What ``edgeenergy ab`` reads from the pytest arguments it is given, and what it refuses.

The board options (``--edge-board``, ``--edge-root``, ``--edge-sim-load``) and the lock wait
(``--edge-lock-timeout``) are read from the arguments, else the environment, as the plugin
reads them: ab opens (or makes) that board once and hands every session ``--edge-root``.
The options that ab gives each session itself (its report, the test selection) or that
would make a session gate, record or search on its own
(:data:`~pytest_edgeenergy.options_spec.AB_REFUSED`, derived from the option tables) are
refused however they are typed: in the arguments (``--edge-fail=X``, ``--edge-fail X``,
``-o edge_fail=X`` and the other spellings of an ini override) and in ``PYTEST_ADDOPTS``;
their environment variables are left out of the sessions' environment. ini files are not
read here: a session run by ab refuses such an option in its ini file's ``addopts`` and
leaves its ini key unread (:mod:`pytest_edgeenergy.plugin.ab_session`); a board named only
in an ini file is not seen here (the sessions then refuse the ``--edge-root`` ab gives them,
naming the conflict).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..bench.settings import DEFAULT as DEFAULT_BENCH
from ..bench.settings import REPEATS
from ..board.generations import MODEL_NAMES
from ..errors import InvalidValue
from ..options_spec import AB_REFUSED, ALL_OPTIONS, ab_refused_argument
from ..ranges import FloatRange, shown
from . import AbError

SIM_LOAD = FloatRange(0.0, 1.0)
LOCK_TIMEOUT_S = FloatRange(0.0, 86400.0, "s")
DEFAULT_LOCK_TIMEOUT_S = 300.0
MIN_ROUND_REPEATS = 2

DROPPED_ENV = tuple(ALL_OPTIONS[key].env for key in AB_REFUSED)
"""The environment variables of the options ab gives its sessions itself
(:data:`~pytest_edgeenergy.options_spec.AB_REFUSED`): left out of the sessions'
environment."""
BOARD_ENV = ("EDGEENERGY_BOARD", "EDGEENERGY_ROOT", "EDGEENERGY_SIM_LOAD", "EDGEENERGY_REPEATS")
"""Read by ab, then left out: every session gets ``--edge-root`` of the one board and the
repeats of one round."""

_VALUED = (
    "--edge-board",
    "--edge-root",
    "--edge-sim-load",
    "--edge-lock-timeout",
    "--edge-repeats",
)
_ENV_OF = {
    "--edge-board": "EDGEENERGY_BOARD",
    "--edge-root": "EDGEENERGY_ROOT",
    "--edge-sim-load": "EDGEENERGY_SIM_LOAD",
    "--edge-lock-timeout": "EDGEENERGY_LOCK_TIMEOUT",
    "--edge-repeats": "EDGEENERGY_REPEATS",
}
_TAKEN = ("--edge-board", "--edge-root", "--edge-sim-load", "--edge-repeats")
"""Consumed by ab: not passed on (the sessions get ``--edge-root``, and the repeats of one
round)."""


@dataclass(frozen=True)
class PytestArgs:
    """The pytest arguments of an A/B run, read."""

    rest: list[str]
    """What every session gets (the board options taken out)."""
    sim_model: str | None = None
    """``--edge-board=sim:MODEL``: ab makes one virtual board of this model."""
    sim_load: float | None = None
    """That board's pinned utilisation; None: it follows the host's CPU load."""
    root: Path | None = None
    """``--edge-root``: the board tree (absolute); None with a virtual board or ``/``."""
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    repeats: int | None = None
    """``--edge-repeats`` as given (None: the plugin's default); ab spreads them over the
    rounds (:func:`round_repeats`)."""
    quick: bool = False
    """``--edge-quick`` was given: its tiny repeats are kept as they are."""
    dropped_env: list[str] = field(default_factory=list)
    """Environment variables of :data:`DROPPED_ENV` that were set (left out)."""


def _split(argv: Sequence[str]) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """The arguments without the board options, and each board option's last value with
    where it came from."""
    rest: list[str] = []
    found: dict[str, tuple[str, str]] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in _VALUED:
            if not eq:
                if i + 1 >= len(argv):
                    raise AbError(f"pytest arguments: {name} needs a value")
                value = argv[i + 1]
                i += 1
            found[name] = (value, f"{name} (pytest arguments)")
            if name not in _TAKEN:
                rest.append(f"{name}={value}")
        else:
            rest.append(arg)
        i += 1
    return rest, found


def read_pytest_args(argv: Sequence[str], environ: Mapping[str, str]) -> PytestArgs:
    """Read ``argv`` (the arguments after ``--``) and the environment; :class:`AbError`
    naming the option when one is refused or its value is bad."""
    _refuse(argv, "pytest arguments")
    addopts = environ.get("PYTEST_ADDOPTS", "")
    try:
        _refuse(shlex.split(addopts), "PYTEST_ADDOPTS (environment)")
    except ValueError as e:
        raise AbError(f"PYTEST_ADDOPTS (environment): {shown(addopts)}: {e}") from None
    rest, found = _split(argv)
    for name, env in _ENV_OF.items():
        if name not in found and environ.get(env):
            found[name] = (environ[env], f"{env} (environment)")
    sim_model = _sim_model(found.get("--edge-board"))
    root = None
    if "--edge-root" in found:
        text, origin = found["--edge-root"]
        root = Path(text).absolute()
        if not root.is_dir():
            raise AbError(f"{origin}: {shown(text)} is not a directory")
        if sim_model is not None:
            raise AbError(
                "--edge-board=sim:MODEL makes its own virtual board; to measure an existing "
                "tree (e.g. one made by `edgeenergy sim create`) pass only --edge-root"
            )
    return PytestArgs(
        rest=rest,
        sim_model=sim_model,
        sim_load=_sim_load(found.get("--edge-sim-load")),
        root=root,
        lock_timeout_s=_number(found.get("--edge-lock-timeout"), LOCK_TIMEOUT_S),
        repeats=_repeats(found.get("--edge-repeats")),
        quick="--edge-quick" in rest,
        dropped_env=[k for k in DROPPED_ENV if environ.get(k)],
    )


def _refuse(argv: Sequence[str], origin: str) -> None:
    """:class:`AbError` naming the first argument that gives an option ab sets itself."""
    refused = ab_refused_argument(argv)
    if refused is not None:
        arg, key = refused
        raise AbError(
            f"{origin}: {shown(arg)} ({ALL_OPTIONS[key].flag}) is not allowed here: "
            f"{AB_REFUSED[key]}"
        )


def _sim_model(given: tuple[str, str] | None) -> str | None:
    if given is None or given[0] == "auto":
        return None
    text, origin = given
    kind, _, model = text.partition(":")
    if kind != "sim" or model not in MODEL_NAMES:
        raise AbError(
            f"{origin}: {shown(text)} is not a board; use 'auto' or 'sim:MODEL' with MODEL "
            f"one of {', '.join(MODEL_NAMES)}"
        )
    return model


def _sim_load(given: tuple[str, str] | None) -> float | None:
    if given is None or given[0] == "host":
        return None
    text, origin = given
    try:
        return SIM_LOAD.parse(text)
    except InvalidValue:
        raise AbError(f"{origin}: {shown(text)} is not 'host' nor a fraction 0..1") from None


def _repeats(given: tuple[str, str] | None) -> int | None:
    if given is None:
        return None
    text, origin = given
    try:
        return REPEATS.parse(text)
    except InvalidValue as e:
        raise AbError(f"{origin}: {e}") from None


def round_repeats(args: PytestArgs, rounds: int, given: int | None = None) -> int | None:
    """``--edge-repeats`` of every session: ``given`` (ab's ``--round-repeats``), else the
    run's repeats spread over the first ``rounds`` rounds (at least 2 each, so a round has a
    spread), so that A/B measures about as much as running both versions once; None with
    ``--edge-quick`` (its own tiny counts)."""
    if given is not None:
        return given
    if args.quick:
        return None
    total = args.repeats if args.repeats is not None else DEFAULT_BENCH.repeats
    return max(MIN_ROUND_REPEATS, math.ceil(total / rounds))


def _number(given: tuple[str, str] | None, allowed: FloatRange) -> float:
    if given is None:
        return DEFAULT_LOCK_TIMEOUT_S
    text, origin = given
    try:
        return allowed.parse(text)
    except InvalidValue as e:
        raise AbError(f"{origin}: {e}") from None


def dropped_because(env: str) -> str:
    """Why the environment variable ``env`` of :data:`DROPPED_ENV` is left out."""
    return next(AB_REFUSED[k] for k in AB_REFUSED if ALL_OPTIONS[k].env == env)


def session_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of ab's sessions: ``environ`` without the options ab sets itself."""
    return {k: v for k, v in environ.items() if k not in DROPPED_ENV + BOARD_ENV}
