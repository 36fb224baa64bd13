"""The plugin's options: registered with pytest from their one description
(:mod:`pytest_edgeenergy.options_spec`) and read back, validated, into the settings of the
session, its control, gate and search, and its ``edge_bench`` fixture.

Cheap to import: pytest asks for the options of every run, ``--help`` included. Every option
is read one way (:func:`lookup`, :func:`value`): command line > environment > ini file (>
the ``edge_grid`` marker, for the grid) > default, parsed as its description says, and every
error names where the bad value came from, e.g.
``EDGEENERGY_INTERVAL_MS (environment): 'abc' is not a number; allowed: ...``.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from ..bench.scenarios import Scenario
from ..bench.settings import DEFAULT, QUICK, BenchSettings, WorkloadPlacement
from ..errors import EdgeEnergyError, InvalidValue
from ..options_spec import (
    ALL_OPTIONS,
    BATCH_SIZE,
    BENCH_OPTIONS,
    CONTROL_OPTIONS,
    GATE_OPTIONS,
    GRID_OPTIONS,
    OPTIONS,
    SEARCH_OPTIONS,
    BoardTarget,
    Option,
)
from ..ranges import shown
from ..registry import SOURCES_GROUP, builtin_names, names

__all__ = [
    "COMMAND_LINE_ONLY",
    "DESTS",
    "ControlSettings",
    "GateSettings",
    "SearchSettings",
    "Settings",
    "SettingsError",
    "Value",
    "add_options",
    "build",
    "build_bench",
    "build_control",
    "build_gate",
    "build_search",
    "lookup",
    "parsed",
    "value",
]

GROUP = "edgeenergy"

COMMAND_LINE_ONLY: pytest.StashKey[frozenset[str]] = pytest.StashKey()
"""Flags of options read from the command line alone, their environment variables and ini
keys left unread (a session of ``edgeenergy ab``: :mod:`.ab_session`)."""


class SettingsError(EdgeEnergyError, ValueError):
    """A bad option value; the message names the option, its source and what is allowed.

    The plugin turns it into ``pytest.UsageError`` so pytest prints it without a traceback.
    """


_DEST_FORMATS = (
    (OPTIONS, "edge_{}"),
    (GRID_OPTIONS, "edge_grid_{}"),
    (CONTROL_OPTIONS, "edge_ctl_{}"),
    (GATE_OPTIONS, "edge_gate_{}"),
    (SEARCH_OPTIONS, "edge_search_{}"),
    (BENCH_OPTIONS, "edge_{}"),
)
DESTS = {key: form.format(key) for table, form in _DEST_FORMATS for key in table}
"""Each option's destination in pytest's namespace, by key (the report's ``settings`` are
named by them)."""


def add_options(parser: pytest.Parser) -> None:
    """Register every described option as a flag and an ini key, with its one help text."""
    group = parser.getgroup(GROUP, "energy measurement on Jetson boards")
    for key, opt in ALL_OPTIONS.items():
        text = opt.help_text("pytest")
        kwargs: dict[str, Any] = {"dest": DESTS[key], "default": None}
        if opt.kind == "flag":
            kwargs["action"] = "store_true"
        else:
            kwargs.update(metavar=opt.metavar, action="append" if opt.kind == "list" else "store")
        group.addoption(opt.flag, help=f"{text} (env {opt.env}, ini {opt.ini})", **kwargs)
        ini_help = text.replace("%%", "%") + f" (env {opt.env})"  # ini help is not %-formatted
        if opt.ini_lines:
            parser.addini(opt.ini, help=ini_help, default=[], type="linelist")
        else:
            parser.addini(opt.ini, help=ini_help, default=None)


# -- reading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """A raw option value and where it came from."""

    text: str
    origin: str


def lookup(config: pytest.Config, key: str) -> Value | None:
    """The text given for option ``key`` by precedence command line > environment > ini
    file, with where it came from; None when given nowhere. List values (repeated flags,
    line-list ini keys) are joined with commas."""
    opt = ALL_OPTIONS[key]
    cli = config.getoption(DESTS[key], default=None)
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


def parsed(opt: Option, v: Value) -> Any:
    """``v`` read as ``opt`` describes; :class:`SettingsError` naming where it came from,
    the value and what is allowed when it cannot be read."""
    try:
        return opt.read(v.text)
    except InvalidValue as e:
        raise SettingsError(f"{v.origin}: {e}") from None


def value(config: pytest.Config, key: str) -> Any:
    """Option ``key``'s value (:func:`lookup`, else its described default), read; when
    neither is there, False for a yes/no flag and None otherwise."""
    opt = ALL_OPTIONS[key]
    v = lookup(config, key)
    if v is None and opt.default is not None:
        v = Value(opt.default, f"{opt.flag} (default)")
    if v is None:
        return False if opt.kind == "flag" else None
    return parsed(opt, v)


def _values(config: pytest.Config, keys: Iterable[str]) -> dict[str, Any]:
    return {key: value(config, key) for key in keys}


# -- the session: board, sampling, report ---------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The energy options of one pytest session, validated."""

    board: BoardTarget
    """The board: a virtual one (``--edge-board=sim:MODEL``) or the one under the root."""
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


def build(config: pytest.Config) -> Settings:
    """Read and validate the session's options; :class:`SettingsError` naming the source."""
    board, root = value(config, "board"), value(config, "root")
    if board is not None and board.sim_model is not None and root is not None:
        raise SettingsError(
            "--edge-board=sim:MODEL makes its own virtual board; to measure an existing "
            "tree (e.g. one made by `edgeenergy sim create`) pass only --edge-root"
        )
    v = _values(config, ("interval_ms", "sim_load", "report_overwrite", "idle_s"))
    source = lookup(config, "source") or Value("auto", "--edge-source (default)")
    _check_source(source)
    report = lookup(config, "report")
    if report is not None:
        from ..report.target import report_target_problem

        problem = report_target_problem(Path(report.text), overwrite=v["report_overwrite"])
        if problem is not None:
            raise SettingsError(f"{report.origin}: {report.text!r}: {problem}")
    virtual = board is not None and board.sim_model is not None
    return Settings(
        board=board if virtual else BoardTarget(root=root),
        interval_s=v["interval_ms"] / 1000.0,
        source=source.text,
        report=Path(report.text) if report is not None else None,
        idle_s=v["idle_s"],
        requested=board is not None or root is not None,
        report_overwrite=v["report_overwrite"],
        sim_load=v["sim_load"],
    )


def _check_source(v: Value) -> None:
    """A registered source (the built-ins are checked without scanning installed packages:
    this runs in every session)."""
    if v.text in builtin_names(SOURCES_GROUP) or v.text in names(SOURCES_GROUP):
        return
    raise SettingsError(
        f"{v.origin}: {v.text!r} is not a source; use one of {', '.join(names(SOURCES_GROUP))}"
    )


# -- the grid: operating-point dimensions and batch sizes ---------------------------------

POINT_DIMENSIONS = ("power_mode", "cpu_freq", "gpu_freq", "emc_freq", "cpu_cores", "governor")
"""The grid options that name an operating point (all but ``batch_size``)."""

DEFAULT_LOCK_TIMEOUT_S = 300.0

DEFAULT_BATCH_SIZES = (8,)


def grid_value(config: pytest.Config, key: str, marker_value: object | None = None) -> Value | None:
    """One grid dimension's raw value, by precedence CLI > env > ini > marker."""
    v = lookup(config, key)
    if v is not None or marker_value is None:
        return v
    text = (
        ",".join(map(str, marker_value))
        if isinstance(marker_value, (list, tuple))
        else str(marker_value)
    )
    return Value(text, f"edge_grid({key}=...) (marker)")


def parse_batch_sizes(v: Value | None) -> tuple[int, ...]:
    """Batch sizes from a comma list; whole numbers in :data:`BATCH_SIZE` only."""
    if v is None:
        return DEFAULT_BATCH_SIZES
    sizes: list[int] = []
    for part in (p.strip() for p in v.text.split(",")):
        try:
            size = BATCH_SIZE.parse(part) if part else None
        except InvalidValue:
            raise SettingsError(
                f"{v.origin}: batch size {shown(part)} is not a positive integer "
                f"<= {BATCH_SIZE.high:.0f}"
            ) from None
        if size is not None and size not in sizes:
            sizes.append(size)
    if not sizes:
        raise SettingsError(f"{v.origin}: no batch size given")
    return tuple(sizes)


def any_point_option(config: pytest.Config) -> bool:
    """True when an option, env or ini value (not a marker) asks for an operating point."""
    return any(lookup(config, d) is not None for d in POINT_DIMENSIONS)


# -- control, gate, search ------------------------------------------------------------------


@dataclass(frozen=True)
class ControlSettings:
    """How operating points are applied."""

    dry_run: bool
    force_mode: bool
    settle_s: float | None
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    """How long to wait for another session holding the board; 0: refuse at once."""


def build_control(config: pytest.Config) -> ControlSettings:
    """Read the control options; :class:`SettingsError` naming the source."""
    return ControlSettings(**_values(config, CONTROL_OPTIONS))


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


def build_gate(config: pytest.Config) -> GateSettings:
    """Read the gate options; expressions are checked by the plugin."""
    v = _values(config, GATE_OPTIONS)
    # Expressions hold no commas, so repeated flags, env and ini lines all join and split.
    v["fail"] = tuple(e.strip() for e in (v["fail"] or "").split(",") if e.strip())
    for key in ("history", "history_branch"):
        v[key] = (v[key] or "").strip() or None
    return GateSettings(**v)


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


def build_search(config: pytest.Config) -> SearchSettings | None:
    """The search options (None without ``--edge-search``); :class:`SettingsError` naming
    the option, its value and what is allowed. The search package is imported only when a
    search is asked for."""
    strategy = lookup(config, "strategy")
    if strategy is None:
        given = [k for k in SEARCH_OPTIONS if k != "strategy" and lookup(config, k)]
        if given:
            flag = SEARCH_OPTIONS[given[0]].flag
            raise SettingsError(f"{flag} is an option of --edge-search=STRATEGY: give both")
        return None
    from ..search.objective import OBJECTIVES
    from ..search.strategy import strategy_names

    objective = lookup(config, "objective")
    for named, what, allowed in (
        (strategy, "strategy", strategy_names()),
        (objective, "objective", OBJECTIVES),
    ):
        if named is not None and named.text not in allowed:
            raise SettingsError(
                f"{named.origin}: unknown {what} {named.text!r}; allowed: {', '.join(allowed)}"
            )
    if lookup(config, "trials") is None:
        raise SettingsError("--edge-search needs --edge-trials=N: how many points to profile")
    prior = lookup(config, "prior")
    if prior is not None and strategy.text != "auto":
        raise SettingsError(
            f"{prior.origin}: a prior seeds the auto strategy only, not {strategy.text!r}; "
            "use --edge-search=auto"
        )
    for key, what in (("resume", "report"), ("prior", "report or CSV")):
        f = lookup(config, key)
        if f is not None and not Path(f.text).is_file():
            raise SettingsError(f"{f.origin}: {f.text!r}: no such {what} file")
    v = _values(config, SEARCH_OPTIONS)
    if (v["storage"] is None) != (v["study"] is None):
        one, other = ("storage", "study") if v["study"] is None else ("study", "storage")
        raise SettingsError(
            f"{SEARCH_OPTIONS[one].flag} needs {SEARCH_OPTIONS[other].flag} too: a shared "
            "study is named by its storage URL and its name"
        )
    return SearchSettings(**v)


# -- the edge_bench fixture ----------------------------------------------------------------


def build_bench(config: pytest.Config) -> BenchSettings:
    """The ``edge_bench`` settings; ``--edge-quick`` replaces the defaults only (a value
    given explicitly still wins). :class:`SettingsError` naming the source."""
    v = _values(config, BENCH_OPTIONS)
    counts = ("items", "repeats", "warmup", "min_window_s")
    return replace(
        QUICK if v["quick"] else DEFAULT,
        **{k: v[k] for k in counts if v[k] is not None},
        workloads=v["workload"] or (),
        runtimes=v["runtime"] or (),
        precisions=v["precision"] or (),
        scenario=parse_scenario(
            *(lookup(config, k) for k in ("scenario", "rate", "latency_bound_s"))
        ),
        placement=parse_placement(
            *(lookup(config, k) for k in ("workload_python", "workload_prefix", "workload_timeout"))
        ),
    )


def placement_settings(placement: WorkloadPlacement) -> dict[str, object]:
    """Where the workloads run, as the report's ``settings`` record it (whichever of command
    line, environment or ini gave it): empty in process."""
    if not placement.out_of_process:
        return {}
    return {
        "edge_workload_python": placement.interpreter,
        "edge_workload_prefix": shlex.join(placement.prefix) if placement.prefix else None,
        "edge_workload_timeout": placement.timeout_s,
    }


def _executable(text: str) -> str | None:
    """``text`` as an executable: a path to one, or a command found on PATH."""
    if os.sep in text:
        return text if os.path.isfile(text) and os.access(text, os.X_OK) else None
    return shutil.which(text)


def parse_placement(
    python_v: Value | None, prefix_v: Value | None, timeout_v: Value | None
) -> WorkloadPlacement:
    """``--edge-workload-python``, ``--edge-workload-prefix`` and ``--edge-workload-timeout``
    (each None when not given); :class:`SettingsError` naming the option and what is
    allowed. Without a prefix the interpreter must be an executable here; behind one it is
    the prefix's (a container's) and only the prefix's command is looked for."""
    prefix: tuple[str, ...] = ()
    if prefix_v is not None:
        try:
            prefix = tuple(shlex.split(prefix_v.text))
        except ValueError as e:
            raise SettingsError(
                f"{prefix_v.origin}: {prefix_v.text!r} cannot be split into words ({e})"
            ) from None
        if not prefix:
            raise SettingsError(
                f"{prefix_v.origin}: names no command; give one, e.g. "
                "'docker run --rm -i --runtime nvidia IMAGE'"
            )
        if _executable(prefix[0]) is None:
            raise SettingsError(
                f"{prefix_v.origin}: {prefix[0]!r} is not an executable file nor a command on PATH"
            )
    python = None
    if python_v is not None:
        python = python_v.text.strip()
        if not python:
            raise SettingsError(f"{python_v.origin}: names no interpreter")
        if not prefix and _executable(python) is None:
            raise SettingsError(
                f"{python_v.origin}: {python!r} is not an executable file nor a command on "
                "PATH; give the path of a Python 3.6 or newer (e.g. /usr/bin/python3.8)"
            )
    if timeout_v is None:
        return WorkloadPlacement(python, prefix)
    return WorkloadPlacement(python, prefix, parsed(BENCH_OPTIONS["workload_timeout"], timeout_v))


def parse_scenario(name_v: Value | None, rate_v: Value | None, bound_v: Value | None) -> Scenario:
    """``--edge-scenario`` with its rate and latency bound (each None when not given);
    :class:`SettingsError` naming the option and what is allowed."""
    name = parsed(BENCH_OPTIONS["scenario"], name_v) if name_v is not None else "offline"
    rate = parsed(BENCH_OPTIONS["rate"], rate_v) if rate_v is not None else None
    bound = parsed(BENCH_OPTIONS["latency_bound_s"], bound_v) if bound_v is not None else None
    where = name_v.origin if name_v is not None else "--edge-scenario"
    if name in ("fixed-rate", "server") and rate is None:
        raise SettingsError(
            f"{where}: {name} needs --edge-rate=QUERIES_PER_S (a number > 0, e.g. 30)"
        )
    if name == "server" and bound is None:
        raise SettingsError(f"{where}: server needs --edge-latency-bound-s=SECONDS (a number > 0)")
    if rate_v is not None and name not in ("fixed-rate", "server"):
        raise SettingsError(
            f"{rate_v.origin}: a rate applies to the fixed-rate and server scenarios only "
            f"(scenario now {name}); give --edge-scenario=fixed-rate or server"
        )
    if bound_v is not None and name == "offline":
        raise SettingsError(
            f"{bound_v.origin}: a latency bound applies to the single-stream, fixed-rate and "
            "server scenarios only (scenario now offline); give --edge-scenario"
        )
    return Scenario(name, rate, bound)
