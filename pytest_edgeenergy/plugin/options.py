"""The plugin's options (CLI flags, ini keys, environment variables) and the validated
settings built from them.

The options themselves (names, ranges, defaults, help texts) are described once in
:mod:`pytest_edgeenergy.options_spec`, which the ``edgeenergy`` command's parsers are built
from too; this module registers them with pytest and reads them. Cheap to import: pytest
asks for the options of every run, ``--help`` included. Precedence is CLI > environment >
ini > default. Every error names where the bad value came from, e.g.
``EDGEENERGY_INTERVAL_MS (environment): 'abc' is not a number; allowed: ...``. Every
numeric option has a finite allowed range (``Option.allowed``, read with :func:`checked`),
shown in its help.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ..errors import EdgeEnergyError, InvalidValue
from ..options_spec import (
    BATCH_SIZE,
    CONTROL_OPTIONS,
    GATE_OPTIONS,
    GRID_OPTIONS,
    HISTORY_WINDOW,
    IDLE_S,
    INTERVAL_MS,
    LATENCY_BUDGET_S,
    LOCK_TIMEOUT_S,
    OPTIONS,
    POWER_BUDGET_W,
    SEARCH_OPTIONS,
    SEED,
    SETTLE_S,
    SIM_LOAD,
    SIM_MODELS,
    STUDY_HEARTBEAT_S,
    TRIALS,
    Option,
    parse_board,
    parse_sim_load,
)
from ..ranges import NumberRange, shown
from ..registry import SOURCES_GROUP, builtin_names, names

__all__ = [
    "BATCH_SIZE",
    "CONTROL_OPTIONS",
    "GATE_OPTIONS",
    "GRID_OPTIONS",
    "IDLE_S",
    "INTERVAL_MS",
    "LATENCY_BUDGET_S",
    "LOCK_TIMEOUT_S",
    "OPTIONS",
    "POWER_BUDGET_W",
    "SEARCH_OPTIONS",
    "SEED",
    "SETTLE_S",
    "SIM_LOAD",
    "SIM_MODELS",
    "TRIALS",
    "ControlSettings",
    "GateSettings",
    "Option",
    "SearchSettings",
    "Settings",
    "SettingsError",
    "Value",
    "add_gate_options",
    "add_grid_options",
    "add_options",
    "add_search_options",
    "build",
    "build_control",
    "build_gate",
    "build_search",
    "checked",
    "dest_of",
    "lookup",
    "yes_no",
]

GROUP = "edgeenergy"

COMMAND_LINE_ONLY: pytest.StashKey[frozenset[str]] = pytest.StashKey()
"""Flags of options read from the command line alone, their environment variables and ini
keys left unread (a session of ``edgeenergy ab``: :mod:`.ab_session`)."""


class SettingsError(EdgeEnergyError, ValueError):
    """A bad option value; the message names the option, its source and what is allowed.

    The plugin turns it into ``pytest.UsageError`` so pytest prints it without a traceback.
    """


DESTS = {
    "session": "edge_{}",
    "grid": "edge_grid_{}",
    "control": "edge_ctl_{}",
    "gate": "edge_gate_{}",
    "search": "edge_search_{}",
}
"""How each table's options are named in pytest's namespace, from their keys."""
_TABLES = {
    "session": OPTIONS,
    "grid": GRID_OPTIONS,
    "control": CONTROL_OPTIONS,
    "gate": GATE_OPTIONS,
    "search": SEARCH_OPTIONS,
}


def dest_of(key: str) -> str:
    """The destination in pytest's namespace of the option ``key`` (of any table)."""
    return next(DESTS[name].format(key) for name, table in _TABLES.items() if key in table)


def _register(parser: pytest.Parser, table: dict[str, Option], dest: str) -> None:
    """Register ``table``'s options as flags and ini keys, from their one description:
    ``dest`` formats each option's destination from its key."""
    group = parser.getgroup(GROUP)
    for key, opt in table.items():
        text = opt.help_text("pytest")
        flag_help = f"{text} (env {opt.env}, ini {opt.ini})"
        if opt.kind == "flag":
            group.addoption(
                opt.flag, dest=dest.format(key), action="store_true", default=None, help=flag_help
            )
        else:
            group.addoption(
                opt.flag,
                dest=dest.format(key),
                action="append" if opt.kind == "list" else "store",
                default=None,
                metavar=opt.metavar,
                help=flag_help,
            )
        ini_help = text.replace("%%", "%") + f" (env {opt.env})"  # ini help is not %-formatted
        if opt.ini_lines:
            parser.addini(opt.ini, help=ini_help, default=[], type="linelist")
        else:
            parser.addini(opt.ini, help=ini_help, default=None)


def add_options(parser: pytest.Parser) -> None:
    """Register the session's options (board, sampling, report, selection)."""
    parser.getgroup(GROUP, "energy measurement on Jetson boards")
    _register(parser, OPTIONS, DESTS["session"])


@dataclass(frozen=True)
class Value:
    """A raw option value and where it came from."""

    text: str
    origin: str


def lookup(config: pytest.Config, opt: Option, dest: str) -> Value | None:
    """The value of one option by precedence command line > environment > ini file, with
    where it came from; None when given nowhere. List values (repeated flags, line-list ini
    keys) are joined with commas."""
    cli = config.getoption(dest, default=None)
    if cli not in (None, False, []):
        text = ",".join(map(str, cli)) if isinstance(cli, list) else str(cli)
        return Value(text, f"{opt.flag} (command line)")
    if opt.flag in config.stash.get(COMMAND_LINE_ONLY, frozenset()):
        return None
    env = os.environ.get(opt.env)
    if env:
        return Value(env, f"{opt.env} (environment)")
    try:
        ini = config.getini(opt.ini)
    except ValueError:  # ini key not registered
        ini = None
    if ini:
        text = ",".join(map(str, ini)) if isinstance(ini, list) else str(ini)
        return Value(text, f"{opt.ini} (ini file)")
    return None


def _raw(config: pytest.Config, key: str) -> Value | None:
    opt = OPTIONS[key]
    v = lookup(config, opt, f"edge_{opt.ini[5:]}")
    if v is None and opt.default is not None:
        return Value(opt.default, f"{opt.flag} (default)")
    return v


@dataclass(frozen=True)
class Settings:
    """The energy options of one pytest session, validated."""

    sim_model: str | None
    root: Path | None
    interval_s: float
    source: str
    report: Path | None
    idle_s: float
    requested: bool
    """True when any board option was given: then the board is set up at session start."""
    report_overwrite: bool = False
    """``report`` may replace an existing file."""
    sim_load: float | None = None
    """A virtual board's pinned utilisation (0..1); None: it follows the host's CPU load."""

    @property
    def wants_board(self) -> bool:
        return self.requested


N = TypeVar("N", int, float)


def checked(v: Value, allowed: NumberRange[N], error: type[SettingsError] = SettingsError) -> N:
    """The number in ``v``; ``error`` naming where it came from, the value and the allowed
    range when it is not one (``EDGEENERGY_SETTLE_S (environment): '1e10' must be >= 0 and
    <= 600 s``)."""
    try:
        return allowed.parse(v.text)
    except InvalidValue as e:
        raise error(f"{v.origin}: {e}") from None


def build(config: pytest.Config) -> Settings:
    """Read and validate the options; raise :class:`SettingsError` naming the source."""
    board = _raw(config, "board")
    sim_model = parsed(board, parse_board) if board is not None else None
    root_v = _raw(config, "root")
    root = Path(root_v.text) if root_v is not None else None
    if root is not None and not root.is_dir():
        assert root_v is not None
        raise SettingsError(f"{root_v.origin}: {root_v.text!r} is not a directory")
    if sim_model is not None and root is not None:
        raise SettingsError(
            "--edge-board=sim:MODEL makes its own virtual board; to measure an existing "
            "tree (e.g. one made by `edgeenergy sim create`) pass only --edge-root"
        )
    interval = _raw(config, "interval_ms")
    assert interval is not None
    load = _raw(config, "sim_load")
    sim_load = parsed(load, parse_sim_load) if load is not None else None
    source = _raw(config, "source")
    assert source is not None
    _check_source(source)
    report_v = _raw(config, "report")
    overwrite_v = _raw(config, "report_overwrite")
    overwrite = yes_no(overwrite_v) if overwrite_v is not None else False
    if report_v is not None:
        from ..report.target import report_target_problem

        problem = report_target_problem(Path(report_v.text), overwrite=overwrite)
        if problem is not None:
            raise SettingsError(f"{report_v.origin}: {report_v.text!r}: {problem}")
    idle = _raw(config, "idle_s")
    assert idle is not None
    return Settings(
        sim_model=sim_model,
        root=root,
        interval_s=checked(interval, INTERVAL_MS) / 1000.0,
        source=source.text,
        report=Path(report_v.text) if report_v is not None else None,
        idle_s=checked(idle, IDLE_S),
        requested=board is not None or root is not None,
        report_overwrite=overwrite,
        sim_load=sim_load,
    )


T = TypeVar("T")


def parsed(v: Value, parse: Callable[[str], T]) -> T:
    """``parse(v.text)``, its :class:`~..errors.InvalidValue` a :class:`SettingsError`
    naming where the value came from."""
    try:
        return parse(v.text)
    except InvalidValue as e:
        raise SettingsError(f"{v.origin}: {e}") from None


def _check_source(v: Value) -> None:
    """A registered source (the built-ins are checked without scanning installed packages:
    this runs in every session)."""
    if v.text in builtin_names(SOURCES_GROUP) or v.text in names(SOURCES_GROUP):
        return
    raise SettingsError(
        f"{v.origin}: {v.text!r} is not a source; use one of {', '.join(names(SOURCES_GROUP))}"
    )


def only_file(config: pytest.Config) -> Value | None:
    """The ``--edge-only`` file (CLI > env > ini) with where it was given; None: not given."""
    return _raw(config, "only")


# -- the grid: operating-point dimensions and batch sizes ---------------------------------

POINT_DIMENSIONS = ("power_mode", "cpu_freq", "gpu_freq", "emc_freq", "cpu_cores", "governor")
"""The grid options that name an operating point (all but ``batch_size``)."""

DEFAULT_LOCK_TIMEOUT_S = 300.0

DEFAULT_BATCH_SIZES = (8,)


def add_grid_options(parser: pytest.Parser) -> None:
    """Register the grid and control options (CLI flags, ini keys)."""
    _register(parser, GRID_OPTIONS, DESTS["grid"])
    _register(parser, CONTROL_OPTIONS, DESTS["control"])


def grid_value(config: pytest.Config, key: str, marker_value: object | None = None) -> Value | None:
    """One grid dimension's raw value, by precedence CLI > env > ini > marker."""
    opt = GRID_OPTIONS[key]
    v = lookup(config, opt, f"edge_grid_{key}")
    if v is not None:
        return v
    if marker_value is not None:
        text = (
            ",".join(str(v) for v in marker_value)
            if isinstance(marker_value, (list, tuple))
            else str(marker_value)
        )
        return Value(text, f"edge_grid({key}=...) (marker)")
    return None


def parse_batch_sizes(v: Value | None) -> tuple[int, ...]:
    """Batch sizes from a comma list; whole numbers in :data:`BATCH_SIZE` only."""
    if v is None:
        return DEFAULT_BATCH_SIZES
    sizes: list[int] = []
    for part in v.text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            size = BATCH_SIZE.parse(part)
        except InvalidValue:
            raise SettingsError(
                f"{v.origin}: batch size {shown(part)} is not a positive integer "
                f"<= {BATCH_SIZE.high:.0f}"
            ) from None
        if size not in sizes:
            sizes.append(size)
    if not sizes:
        raise SettingsError(f"{v.origin}: no batch size given")
    return tuple(sizes)


def any_point_option(config: pytest.Config) -> bool:
    """True when an option, env or ini value (not a marker) asks for an operating point."""
    return any(grid_value(config, d) is not None for d in POINT_DIMENSIONS)


@dataclass(frozen=True)
class ControlSettings:
    """How operating points are applied."""

    dry_run: bool
    force_mode: bool
    settle_s: float | None
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    """How long to wait for another session holding the board; 0: refuse at once."""


def _flag(config: pytest.Config, key: str) -> bool:
    v = lookup(config, CONTROL_OPTIONS[key], f"edge_ctl_{key}")
    return yes_no(v) if v is not None else False


def yes_no(v: Value) -> bool:
    """A flag's value from the environment or ini file (the command line gives True)."""
    word = v.text.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{v.origin}: {v.text!r}: use 1/0, true/false, yes/no")


def build_control(config: pytest.Config) -> ControlSettings:
    """Read the control options; raise :class:`SettingsError` naming the source."""
    v = lookup(config, CONTROL_OPTIONS["settle_s"], "edge_ctl_settle_s")
    settle = checked(v, SETTLE_S) if v is not None else None
    w = lookup(config, CONTROL_OPTIONS["lock_timeout_s"], "edge_ctl_lock_timeout_s")
    wait_s = checked(w, LOCK_TIMEOUT_S) if w is not None else DEFAULT_LOCK_TIMEOUT_S
    return ControlSettings(_flag(config, "dry_run"), _flag(config, "force_mode"), settle, wait_s)


# -- the regression gate -------------------------------------------------------------------


@dataclass(frozen=True)
class GateSettings:
    """The regression gate's options."""

    baseline: Path | None
    fail: tuple[str, ...]
    save_baseline: Path | None
    fail_insufficient: bool = False
    history: str | None = None
    """The history database (``--edge-history``): the gate's baseline instead of a file."""
    history_add: bool = False
    history_branch: str | None = None
    history_window: int = 10


def add_gate_options(parser: pytest.Parser) -> None:
    _register(parser, GATE_OPTIONS, DESTS["gate"])


def build_gate(config: pytest.Config) -> GateSettings:
    """Read the gate options (CLI > env > ini); expressions are checked by the plugin."""

    def one(key: str) -> Path | None:
        v = lookup(config, GATE_OPTIONS[key], f"edge_gate_{key}")
        return Path(v.text) if v is not None else None

    # Expressions hold no commas, so repeated flags, env and ini lines all join and split.
    v = lookup(config, GATE_OPTIONS["fail"], "edge_gate_fail")
    fail = tuple(e.strip() for e in v.text.split(",") if e.strip()) if v is not None else ()
    strict = lookup(config, GATE_OPTIONS["fail_insufficient"], "edge_gate_fail_insufficient")

    def text(key: str) -> str | None:
        v = lookup(config, GATE_OPTIONS[key], f"edge_gate_{key}")
        return v.text.strip() or None if v is not None else None

    add = lookup(config, GATE_OPTIONS["history_add"], "edge_gate_history_add")
    window = lookup(config, GATE_OPTIONS["history_window"], "edge_gate_history_window")
    return GateSettings(
        one("baseline"),
        fail,
        one("save_baseline"),
        fail_insufficient=yes_no(strict) if strict is not None else False,
        history=text("history"),
        history_add=yes_no(add) if add is not None else False,
        history_branch=text("history_branch"),
        history_window=int(checked(window, HISTORY_WINDOW)) if window is not None else 10,
    )


# -- the operating-point search ------------------------------------------------------------


@dataclass(frozen=True)
class SearchSettings:
    """The ``--edge-search`` options, validated (names checked against the search
    package's registries)."""

    strategy: str
    objective: str
    trials: int
    power_budget_w: float | None
    latency_budget_s: float | None
    seed: int
    resume: Path | None
    prior: Path | None = None
    storage: str | None = None
    """The shared study's storage URL (``--edge-search-storage``)."""
    study: str | None = None
    study_heartbeat_s: int = 10


def add_search_options(parser: pytest.Parser) -> None:
    _register(parser, SEARCH_OPTIONS, DESTS["search"])


def _search_value(config: pytest.Config, key: str) -> Value | None:
    return lookup(config, SEARCH_OPTIONS[key], f"edge_search_{key}")


def build_search(config: pytest.Config) -> SearchSettings | None:
    """The search options (None without ``--edge-search``); :class:`SettingsError` naming
    the option, its value and what is allowed. The search package is imported only when a
    search is asked for."""
    strategy = _search_value(config, "strategy")
    given = [k for k in SEARCH_OPTIONS if k != "strategy" and _search_value(config, k)]
    if strategy is None:
        if given:
            opt = SEARCH_OPTIONS[given[0]]
            raise SettingsError(f"{opt.flag} is an option of --edge-search=STRATEGY: give both")
        return None
    from ..search.objective import OBJECTIVES
    from ..search.strategy import strategy_names

    if strategy.text not in strategy_names():
        raise SettingsError(
            f"{strategy.origin}: unknown strategy {strategy.text!r}; allowed: "
            f"{', '.join(strategy_names())}"
        )
    objective = _search_value(config, "objective") or Value("min-energy", "default")
    if objective.text not in OBJECTIVES:
        raise SettingsError(
            f"{objective.origin}: unknown objective {objective.text!r}; allowed: "
            f"{', '.join(OBJECTIVES)}"
        )
    trials_v = _search_value(config, "trials")
    if trials_v is None:
        raise SettingsError("--edge-search needs --edge-trials=N: how many points to profile")
    trials = checked(trials_v, TRIALS)
    seed_v = _search_value(config, "seed")
    resume_v = _search_value(config, "resume")
    resume = Path(resume_v.text) if resume_v is not None else None
    if resume_v is not None and resume is not None and not resume.is_file():
        raise SettingsError(f"{resume_v.origin}: {resume_v.text!r}: no such report file")
    prior_v = _search_value(config, "prior")
    prior = Path(prior_v.text) if prior_v is not None else None
    if prior_v is not None and strategy.text != "auto":
        raise SettingsError(
            f"{prior_v.origin}: a prior seeds the auto strategy only, not {strategy.text!r}; "
            "use --edge-search=auto"
        )
    if prior_v is not None and prior is not None and not prior.is_file():
        raise SettingsError(f"{prior_v.origin}: {prior_v.text!r}: no such report or CSV file")
    budgets = [_search_value(config, k) for k in ("power_budget_w", "latency_budget_s")]
    return SearchSettings(
        strategy=strategy.text,
        objective=objective.text,
        trials=trials,
        power_budget_w=checked(budgets[0], POWER_BUDGET_W) if budgets[0] is not None else None,
        latency_budget_s=(
            checked(budgets[1], LATENCY_BUDGET_S) if budgets[1] is not None else None
        ),
        seed=checked(seed_v, SEED) if seed_v is not None else 0,
        resume=resume,
        prior=prior,
        **_study_settings(config),
    )


def _study_settings(config: pytest.Config) -> dict[str, Any]:
    """``--edge-search-storage``, ``--edge-study`` (both or neither) and the heartbeat."""
    storage, study = _search_value(config, "storage"), _search_value(config, "study")
    if (storage is None) != (study is None):
        given, other = ("storage", "study") if study is None else ("study", "storage")
        raise SettingsError(
            f"{SEARCH_OPTIONS[given].flag} needs {SEARCH_OPTIONS[other].flag} too: a shared "
            "study is named by its storage URL and its name"
        )
    heartbeat = _search_value(config, "study_heartbeat_s")
    return {
        "storage": storage.text if storage is not None else None,
        "study": study.text if study is not None else None,
        "study_heartbeat_s": (
            checked(heartbeat, STUDY_HEARTBEAT_S) if heartbeat is not None else 10
        ),
    }


def __getattr__(name: str) -> tuple[str, ...]:
    """``SOURCES``: the registered source names (for callers written before the registry;
    new code uses ``meters.factory.source_names`` or ``options_spec.add_arguments``)."""
    if name == "SOURCES":
        return names(SOURCES_GROUP)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
