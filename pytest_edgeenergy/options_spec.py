"""Every option shared by pytest and ``edgeenergy``, described once.

One :class:`Option` holds an option's names (pytest flag, ini key, environment variable,
``edgeenergy`` argument), its type (an allowed range, a parser, registered names), its
default and its help text. Both front ends are generated from it: the plugin's options and
ini keys (``plugin/options.py``) and the argparse arguments of ``edgeenergy compare``,
``search``, ``measure`` and ``board`` (:func:`add_arguments`), so a help text, a range or a
default is written in one place. A help text names another option as ``{key}`` (its key in
:data:`ALL_OPTIONS`): each front end shows that option's own flag (``--edge-root`` in
pytest, ``--root`` in ``edgeenergy``). Where a front end needs a word more (what
``--edge-search`` does to the tests; ``compare``'s default baseline), it is a note added
after the shared text.

The environment variables and ini keys are pytest's: ``edgeenergy`` reads its arguments
only.

Cheap to import and free of pytest (the CLI imports it): standard library, the error root,
the ranges, the registry and the board models' names.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .board.generations import MODEL_NAMES
from .errors import InvalidValue
from .ranges import FloatRange, IntRange, NumberRange, shown
from .registry import SOURCES_GROUP, STRATEGIES_GROUP, builtin_names, names

__all__ = [
    "AB_IN_ITS_OWN_ARGUMENTS",
    "AB_REFUSED",
    "ALL_OPTIONS",
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
    "STUDY_HEARTBEAT_S",
    "TRIALS",
    "Front",
    "Option",
    "ab_refused_argument",
    "add_arguments",
    "check_board",
    "parse_board",
    "parse_shard",
    "parse_sim_load",
]

Front = Literal["pytest", "cli"]
"""The two front ends: the plugin's options, and the ``edgeenergy`` command's arguments."""

SIM_MODELS = MODEL_NAMES

# -- allowed ranges of the numeric options (why each bound: NOTES.md, "Bad numbers") -------

INTERVAL_MS = FloatRange(0.1, 1000.0, "ms")
"""Sampling interval. At most 1 s, the slowest sources' own period (tegrastats, jtop): a
window must hold 3 intervals to be valid. At least 0.1 ms: the sampler raises any interval
to the sensor's update period anyway, and a vanishing one overflows its buffer sizing."""
IDLE_S = FloatRange(0.0, 600.0, "s")
"""Idle baseline per operating point: 10 min (a grid multiplies it)."""
SIM_LOAD = FloatRange(0.0, 1.0)
SETTLE_S = FloatRange(0.0, 600.0, "s")
"""Wait after pinning: clocks settle in ms, temperatures in minutes; 10 min bounds a sleep."""
LOCK_TIMEOUT_S = FloatRange(0.0, 86400.0, "s")
"""Wait for another session on the board: up to a day (a CI queue)."""
BATCH_SIZE = IntRange(1, 65536)
TRIALS = IntRange(1, 10000)
SEED = IntRange(0, 2**32 - 1)
"""numpy's and optuna's seed range."""
HISTORY_WINDOW = IntRange(1, 1000, "runs")
MAX_SHARDS = 1000
"""``--edge-shard=K/N``: at most this many shards (a fleet, not a test per shard)."""
POWER_BUDGET_W = FloatRange(0.0, 5000.0, "W", above_low=True)
"""Up to the power readers' plausibility limit (``meters.ina.MAX_PLAUSIBLE_W``)."""
LATENCY_BUDGET_S = FloatRange(0.0, 86400.0, "s", above_low=True)
STUDY_HEARTBEAT_S = IntRange(1, 3600, "s")
"""A shared study's heartbeat: Optuna takes whole seconds; an hour bounds a lost trial's wait."""


# -- value parsers shared by both front ends ---------------------------------------------


def parse_board(text: str) -> str | None:
    """The virtual board's model of ``sim:MODEL``, None for ``auto`` (the board under the
    root); :class:`~.errors.InvalidValue` naming the value and what is allowed."""
    if text == "auto":
        return None
    kind, _, model = text.partition(":")
    if kind != "sim" or model not in SIM_MODELS:
        raise InvalidValue(
            f"{text!r} is not a board; use 'auto' or 'sim:MODEL' with MODEL one of "
            f"{', '.join(SIM_MODELS)}"
        )
    return model


def check_board(text: str) -> str:
    """``text`` when it names a board (:func:`parse_board`): ``edgeenergy --board``'s type."""
    parse_board(text)
    return text


def _ascii_digits(text: str) -> bool:
    # str.isdigit also takes other scripts' digits (Arabic-Indic '٣') and superscripts
    return text.isascii() and text.isdigit()


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` as ``(K, N)``; :class:`~.errors.InvalidValue` naming the value and the
    allowed form unless whole numbers with ``1 <= K <= N <=`` :data:`MAX_SHARDS`."""
    k, slash, n = text.strip().partition("/")
    if slash and _ascii_digits(k.strip()) and _ascii_digits(n.strip()):
        index, count = int(k), int(n)
        if 1 <= index <= count <= MAX_SHARDS:
            return index, count
    raise InvalidValue(
        f"{shown(text)} is not a shard; use K/N with whole numbers 1 <= K <= N <= "
        f"{MAX_SHARDS}, e.g. 2/3"
    )


def parse_sim_load(text: str) -> float | None:
    """A virtual board's pinned utilisation (0..1); None for ``host`` (it follows this
    machine's CPU load)."""
    if text == "host":
        return None
    try:
        return SIM_LOAD.parse(text)
    except InvalidValue:
        raise InvalidValue(f"{shown(text)} is not 'host' nor a fraction 0..1") from None


def _source_names() -> tuple[str, ...]:
    return names(SOURCES_GROUP)


def _strategy_names() -> tuple[str, ...]:
    return names(STRATEGIES_GROUP)


def _builtin_sources() -> tuple[str, ...]:
    return builtin_names(SOURCES_GROUP)


def _builtin_strategies() -> tuple[str, ...]:
    return builtin_names(STRATEGIES_GROUP)


# -- the description ------------------------------------------------------------------------

_REF_RE = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Option:
    """One option: its names on both front ends, type, default and help.

    ``help`` may name another option as ``{key}`` and the registered names as ``{names}``
    (from ``listed``); see :meth:`help_text`.
    """

    flag: str
    """pytest's flag (``--edge-interval-ms``)."""
    ini: str
    env: str
    help: str
    default: str | None
    """The default as the text a user would give (``"10"``); None: not given."""
    metavar: str = "VALUE"
    """The value's placeholder in ``--help`` (unused by yes/no flags)."""
    allowed: NumberRange[Any] | None = None
    """A number's allowed range (shown in ``--help``); None: not a number."""
    cli: str | None = None
    """The ``edgeenergy`` argument; None: the flag without ``edge-`` (``--interval-ms``)."""
    kind: Literal["value", "flag", "list"] = "value"
    """``flag``: yes/no (``1``/``0`` etc. in env and ini); ``list``: repeatable."""
    ini_lines: bool = False
    """The ini key takes one value per line (else one text, comma-separated for lists)."""
    parse: Callable[[str], object] | None = None
    """Reads a value (:class:`~.errors.InvalidValue` naming it and what is allowed); the
    ``edgeenergy`` argument's type. None: the range's parse, else the text itself."""
    path: bool = False
    """The value is a file or directory (``edgeenergy`` gives a ``Path``)."""
    choices: Callable[[], tuple[str, ...]] | None = None
    """Every allowed name (``edgeenergy``'s choices; may scan installed packages)."""
    listed: Callable[[], tuple[str, ...]] | None = None
    """The names ``{names}`` in the help lists (cheap: the built-ins)."""
    notes: Mapping[str, str] | None = None
    """A front end's words after the shared help, by front (``pytest``, ``cli``)."""

    @property
    def cli_flag(self) -> str:
        """The ``edgeenergy`` argument (``--interval-ms``)."""
        return self.cli or "--" + self.flag.removeprefix("--").removeprefix("edge-")

    def front_flag(self, front: Front) -> str:
        return self.flag if front == "pytest" else self.cli_flag

    def shared_help(self, front: Front) -> str:
        """The help both front ends show (references named as ``front`` names them), with
        a number's allowed range."""
        text = _REF_RE.sub(lambda m: _reference(m.group(1), front, self), self.help)
        if self.allowed is not None:
            text += f"; allowed: {self.allowed.describe()}"
        return text

    def help_text(self, front: Front) -> str:
        """The help ``front`` shows: the shared help, then that front end's note."""
        note = (self.notes or {}).get(front)
        return f"{self.shared_help(front)}; {note}" if note else self.shared_help(front)

    @property
    def full_help(self) -> str:
        """pytest's help text (the shared help with pytest's names, and its note)."""
        return self.help_text("pytest")

    def read(self, text: str) -> object:
        """The value of ``text``; :class:`~.errors.InvalidValue` when it cannot be one."""
        if self.parse is not None:
            return self.parse(text)
        if self.allowed is not None:
            return self.allowed.parse(text)
        return Path(text) if self.path else text


def _reference(key: str, front: Front, opt: Option) -> str:
    if key == "names":
        listed = opt.listed() if opt.listed is not None else ()
        return ", ".join(listed) if listed else "(none registered)"
    return ALL_OPTIONS[key].front_flag(front)


OPTIONS: dict[str, Option] = {
    "board": Option(
        "--edge-board",
        "edge_board",
        "EDGEENERGY_BOARD",
        "board to measure: 'auto' (the machine's own sysfs under {root}) or "
        f"'sim:MODEL' for a virtual board, MODEL one of {', '.join(SIM_MODELS)}",
        None,
        metavar="sim:MODEL",
        parse=check_board,
    ),
    "sim_load": Option(
        "--edge-sim-load",
        "edge_sim_load",
        "EDGEENERGY_SIM_LOAD",
        "utilisation of a virtual board made by {board}=sim:MODEL: 'host' (follows this "
        "machine's CPU load) or a fraction 0..1 that pins it (reproducible power on a shared "
        "machine)",
        "host",
        metavar="host|FRACTION",
        parse=parse_sim_load,
    ),
    "root": Option(
        "--edge-root",
        "edge_root",
        "EDGEENERGY_ROOT",
        "directory holding the board's tree (/ on a Jetson; a virtual board's directory)",
        None,
        metavar="DIR",
        path=True,
    ),
    "interval_ms": Option(
        "--edge-interval-ms",
        "edge_interval_ms",
        "EDGEENERGY_INTERVAL_MS",
        "sampling interval of the power sampler in ms (default 10; never faster than the "
        "sensor updates)",
        "10",
        metavar="MS",
        allowed=INTERVAL_MS,
    ),
    "source": Option(
        "--edge-source",
        "edge_source",
        "EDGEENERGY_SOURCE",
        "power source: {names}, or one a plugin registers",
        "auto",
        metavar="NAME",
        choices=_source_names,
        listed=_builtin_sources,
    ),
    "report": Option(
        "--edge-report",
        "edge_report",
        "EDGEENERGY_REPORT",
        "JSON report path (default: reports/<device>-<time>.json when energy was measured)",
        None,
        metavar="PATH",
        path=True,
    ),
    "report_overwrite": Option(
        "--edge-report-overwrite",
        "edge_report_overwrite",
        "EDGEENERGY_REPORT_OVERWRITE",
        "allow {report} to replace an existing file (replaced at the first finished test)",
        None,
        kind="flag",
    ),
    "idle_s": Option(
        "--edge-idle-s",
        "edge_idle_s",
        "EDGEENERGY_IDLE_S",
        "seconds of idle power measured at the session's operating point (default 2; 0 = none)",
        "2",
        metavar="SECONDS",
        allowed=IDLE_S,
    ),
    "only": Option(
        "--edge-only",
        "edge_only",
        "EDGEENERGY_ONLY",
        "run only the tests whose node ids FILE lists, one per line (blank lines and lines "
        "starting with # ignored); the others are deselected (edgeenergy ab selects the "
        "tests that need more rounds with it)",
        None,
        metavar="FILE",
        path=True,
    ),
    "shard": Option(
        "--edge-shard",
        "edge_shard",
        "EDGEENERGY_SHARD",
        "run only shard K of N: the collected tests split deterministically into N balanced "
        "parts (by the durations of {shard_durations} when given, else by count); the "
        "others are deselected",
        None,
        metavar="K/N",
        parse=parse_shard,
    ),
    "shard_durations": Option(
        "--edge-shard-durations",
        "edge_shard_durations",
        "EDGEENERGY_SHARD_DURATIONS",
        "balance {shard} by the tests' durations in this file or directory: energy reports, "
        "pytest-split's .test_durations, JUnit XML (pytest --junitxml); a test they lack "
        "counts the mean duration",
        None,
        metavar="FILE_OR_DIR",
        path=True,
    ),
}
"""The session's options: board, sampling, report, test selection."""

GRID_OPTIONS: dict[str, Option] = {
    "power_mode": Option(
        "--power-mode",
        "edge_power_mode",
        "EDGEENERGY_POWER_MODE",
        "nvpmodel power mode(s) by name (any case), ID or role (max = MAXN, min, default: "
        "the same on every board), comma-separated",
        None,
        metavar="MODES",
        kind="list",
    ),
    "cpu_freq": Option(
        "--cpu-freq",
        "edge_cpu_freq",
        "EDGEENERGY_CPU_FREQ",
        "CPU frequencies: values with Hz/kHz/MHz/GHz, or min, max, all, dvfs",
        None,
        metavar="FREQS",
        kind="list",
    ),
    "gpu_freq": Option(
        "--gpu-freq",
        "edge_gpu_freq",
        "EDGEENERGY_GPU_FREQ",
        "GPU frequencies: values with Hz/kHz/MHz/GHz, or min, max, all, dvfs",
        None,
        metavar="FREQS",
        kind="list",
    ),
    "emc_freq": Option(
        "--emc-freq",
        "edge_emc_freq",
        "EDGEENERGY_EMC_FREQ",
        "memory (EMC) frequencies: values with units, or min, max, dvfs",
        None,
        metavar="FREQS",
        kind="list",
    ),
    "cpu_cores": Option(
        "--cpu-cores",
        "edge_cpu_cores",
        "EDGEENERGY_CPU_CORES",
        "numbers of online CPU cores, or all",
        None,
        metavar="N",
        kind="list",
    ),
    "governor": Option(
        "--governor",
        "edge_governor",
        "EDGEENERGY_GOVERNOR",
        "CPU frequency governor(s), e.g. schedutil, performance",
        None,
        metavar="NAMES",
        kind="list",
    ),
    "batch_size": Option(
        "--batch-size",
        "edge_batch_size",
        "EDGEENERGY_BATCH_SIZE",
        "batch sizes for tests using the batch_size fixture, comma-separated (default 8)",
        None,
        metavar="SIZES",
        allowed=BATCH_SIZE,
        kind="list",
    ),
}
"""The operating-point grid (each value list may be given as a comma list or repeated)."""

CONTROL_OPTIONS: dict[str, Option] = {
    "dry_run": Option(
        "--edge-dry-run",
        "edge_dry_run",
        "EDGEENERGY_DRY_RUN",
        "print every write to the board's knob files that would be made, make none",
        None,
        kind="flag",
    ),
    "force_mode": Option(
        "--edge-force-mode",
        "edge_force_mode",
        "EDGEENERGY_FORCE_MODE",
        "allow power modes that change GPU power gating (the board REBOOTS to apply them)",
        None,
        kind="flag",
    ),
    "settle_s": Option(
        "--edge-settle-s",
        "edge_settle_s",
        "EDGEENERGY_SETTLE_S",
        "seconds to wait after pinning an operating point (default 0.5 on a board, 0 virtual)",
        None,
        metavar="SECONDS",
        allowed=SETTLE_S,
    ),
    "lock_timeout_s": Option(
        "--edge-lock-timeout",
        "edge_lock_timeout",
        "EDGEENERGY_LOCK_TIMEOUT",
        "seconds to wait for another session measuring or pinning the same board to end "
        "(default 300; 0 = refuse at once)",
        "300",
        metavar="SECONDS",
        allowed=LOCK_TIMEOUT_S,
    ),
}
"""How operating points are applied."""

GATE_OPTIONS: dict[str, Option] = {
    "baseline": Option(
        "--edge-baseline",
        "edge_baseline",
        "EDGEENERGY_BASELINE",
        "baseline report file, or a directory of reports (the newest runs of each device "
        "are used, judged by their run-to-run spread; a missing or empty directory is 'no "
        "baseline yet')",
        None,
        metavar="PATH",
        path=True,
        notes={"cli": "default: the previous report of the same device on the command line"},
    ),
    "fail": Option(
        "--edge-fail",
        "edge_fail",
        "EDGEENERGY_FAIL",
        "fail when METRIC:STAT:THRESHOLD regresses significantly against the baseline, e.g. "
        "energy_per_item:mean:5%% or latency_p90:median:2ms (repeatable)",
        None,
        metavar="EXPR",
        kind="list",
        ini_lines=True,
    ),
    "save_baseline": Option(
        "--edge-save-baseline",
        "edge_save_baseline",
        "EDGEENERGY_SAVE_BASELINE",
        "after the run, store its report as a baseline in this directory (created if missing)",
        None,
        metavar="DIR",
        path=True,
    ),
    "fail_insufficient": Option(
        "--edge-fail-insufficient",
        "edge_fail_insufficient",
        "EDGEENERGY_FAIL_INSUFFICIENT",
        "strict gate: a result too thinly measured to judge ('insufficient': too few repeats "
        "or runs, or a failed or invalid result on either side) fails it too",
        None,
        kind="flag",
    ),
    "history": Option(
        "--edge-history",
        "edge_history",
        "EDGEENERGY_HISTORY",
        "energy history database (a SQLite file, sqlite:///PATH or postgresql://...): "
        "--edge-fail gates against its newest runs of this device instead of a baseline",
        None,
        metavar="DB",
    ),
    "history_add": Option(
        "--edge-history-add",
        "edge_history_add",
        "EDGEENERGY_HISTORY_ADD",
        "after the run (and its gate), add its report to the history database",
        None,
        kind="flag",
    ),
    "history_branch": Option(
        "--edge-history-branch",
        "edge_history_branch",
        "EDGEENERGY_HISTORY_BRANCH",
        "git branch: the gate reads only the history's runs of this branch, and an added "
        "run is recorded with it (reports carry the commit only)",
        None,
        metavar="NAME",
    ),
    "history_window": Option(
        "--edge-history-window",
        "edge_history_window",
        "EDGEENERGY_HISTORY_WINDOW",
        "how many of the device's newest runs in the history the gate reads (default 10)",
        "10",
        metavar="N",
        allowed=HISTORY_WINDOW,
    ),
}
"""The regression gate (``--edge-fail`` in pytest, ``edgeenergy compare --fail``)."""

SEARCH_OPTIONS: dict[str, Option] = {
    "strategy": Option(
        "--edge-search",
        "edge_search",
        "EDGEENERGY_SEARCH",
        "search strategy: {names}, or one a plugin registers",
        None,
        metavar="STRATEGY",
        cli="--strategy",
        choices=_strategy_names,
        listed=_builtin_strategies,
        notes={
            "pytest": "searches the grid options' values (each may say all) for the best "
            "operating point; tests taking operating_point become a dvfs reference and "
            "trial0..trialN-1",
            "cli": "default auto",
        },
    ),
    "objective": Option(
        "--edge-objective",
        "edge_objective",
        "EDGEENERGY_OBJECTIVE",
        "what the search minimises: min-energy (J per item), min-time, min-edp, pareto, "
        "max-train-throughput (an interleaved test's training minibatches/s, maximised) "
        "(default min-energy)",
        "min-energy",
        metavar="OBJ",
    ),
    "trials": Option(
        "--edge-trials",
        "edge_trials",
        "EDGEENERGY_TRIALS",
        "points the search profiles",
        None,
        metavar="N",
        allowed=TRIALS,
        notes={"pytest": "per test, the dvfs reference not counted"},
    ),
    "power_budget_w": Option(
        "--edge-power-budget-w",
        "edge_power_budget_w",
        "EDGEENERGY_POWER_BUDGET_W",
        "the search's budget: mean power a point may draw",
        None,
        metavar="W",
        allowed=POWER_BUDGET_W,
    ),
    "latency_budget_s": Option(
        "--edge-latency-budget-s",
        "edge_latency_budget_s",
        "EDGEENERGY_LATENCY_BUDGET_S",
        "the search's budget: time per item (per window without items) a point may take; "
        "under max-train-throughput the inference latency p99",
        None,
        metavar="S",
        allowed=LATENCY_BUDGET_S,
    ),
    "seed": Option(
        "--edge-seed",
        "edge_seed",
        "EDGEENERGY_SEED",
        "seed of the random, optuna and auto strategies (default 0)",
        "0",
        metavar="K",
        allowed=SEED,
    ),
    "resume": Option(
        "--edge-search-resume",
        "edge_search_resume",
        "EDGEENERGY_SEARCH_RESUME",
        "continue the searches of this report (same strategy, objective, budgets and seed); "
        "its trials count towards {trials}",
        None,
        metavar="REPORT",
        path=True,
    ),
    "prior": Option(
        "--edge-prior",
        "edge_prior",
        "EDGEENERGY_PRIOR",
        "auto strategy only: seed its model with the profiles of this report or CSV table "
        "(another workload or board)",
        None,
        metavar="REPORT_OR_CSV",
        path=True,
        notes={"pytest": "of a report, the same test's search or runs, else every search's"},
    ),
    "storage": Option(
        "--edge-search-storage",
        "edge_search_storage",
        "EDGEENERGY_SEARCH_STORAGE",
        "share one search study between processes (boards) through this Optuna storage: "
        "postgresql://..., sqlite:///PATH, or journal:PATH (a file on a shared filesystem); "
        "{trials} then counts the trials of every process together",
        None,
        metavar="URL",
        cli="--storage",
    ),
    "study": Option(
        "--edge-study",
        "edge_study",
        "EDGEENERGY_STUDY",
        "name of the shared study in {storage}; every process giving the same joins it",
        None,
        metavar="NAME",
        cli="--study",
    ),
    "study_heartbeat_s": Option(
        "--edge-study-heartbeat-s",
        "edge_study_heartbeat_s",
        "EDGEENERGY_STUDY_HEARTBEAT_S",
        "seconds between the heartbeats of a running shared trial; one silent for 3 "
        "heartbeats is failed and its point profiled again; the process creating the study "
        "sets it, the others use the study's (default 10)",
        "10",
        metavar="S",
        allowed=STUDY_HEARTBEAT_S,
        cli="--study-heartbeat-s",
    ),
}
"""The operating-point search (``--edge-search`` in pytest, ``edgeenergy search``)."""

ALL_OPTIONS: dict[str, Option] = {
    **OPTIONS,
    **GRID_OPTIONS,
    **CONTROL_OPTIONS,
    **GATE_OPTIONS,
    **SEARCH_OPTIONS,
}
"""Every described option by key (keys are unique across the tables)."""


# -- edgeenergy ab: the options it gives its sessions itself ------------------------------

_AB_REPORT = "ab writes each session's report into its --out directory"
_AB_GATE = "ab gates B against A itself: give the gate as `edgeenergy ab --fail EXPR`"
_AB_SEARCH = (
    "a search picks its operating points from what it measures, so A and B would not be "
    "measured at the same points"
)
AB_REFUSED: dict[str, str] = {
    "report": _AB_REPORT,
    "report_overwrite": _AB_REPORT,
    "only": "ab selects the tests of its extra rounds itself",
    **dict.fromkeys(GATE_OPTIONS, _AB_GATE),
    **dict.fromkeys(SEARCH_OPTIONS, _AB_SEARCH),
    "fail_insufficient": "use `edgeenergy ab --fail-insufficient`",
    "save_baseline": "an A/B session is no baseline of one version; save baselines with a "
    "plain pytest run",
    "history_add": "an A/B session is no run of one version; add runs to the history from a "
    "plain pytest run",
}
"""The options ``edgeenergy ab`` gives its sessions itself (report, test selection) or that
would make its sessions gate, record or search on their own, by key, with why: refused
however they are given (flag, ``-o`` ini override, ``PYTEST_ADDOPTS``, an ini file's
``addopts``), their environment variables and ini keys left out. Every option of the gate's
and the search's tables is in it, so an option added there is refused too."""

AB_IN_ITS_OWN_ARGUMENTS = ("report", "only")
"""Of :data:`AB_REFUSED`, the flags ab itself gives a session (``--edge-report=``,
``--edge-only=``)."""

_SHORT_FLAGS = frozenset("xVhvqls")
"""pytest's one-letter options that take no value (``-qo key=v`` is ``-q -o key=v``)."""


def ab_refused_argument(argv: Sequence[str]) -> tuple[str, str] | None:
    """The first argument of ``argv`` (pytest's arguments) that gives an option of
    :data:`AB_REFUSED`, and that option's key; None when none does. Read as pytest reads
    them: ``--edge-fail=X`` and ``--edge-fail X`` (pytest takes no abbreviations), an ini
    override ``-o KEY=V``, ``-oKEY=V``, ``-qo KEY=V``, ``--override-ini[=]KEY=V``; nothing
    after ``--``."""
    by_flag = {ALL_OPTIONS[k].flag: k for k in AB_REFUSED}
    by_ini = {ALL_OPTIONS[k].ini: k for k in AB_REFUSED}
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            return None
        following = args[i + 1] if i + 1 < len(args) else ""
        name, eq, value = arg.partition("=")
        if name in by_flag:
            return arg, by_flag[name]
        override = None
        if name == "--override-ini":
            override = value if eq else following
        elif arg.startswith("-") and not arg.startswith("--"):
            override = _short_override(arg[1:], following)
        if override is not None and override.partition("=")[0] in by_ini:
            shown_arg = arg if override in arg else f"{arg} {override}"
            return shown_arg, by_ini[override.partition("=")[0]]
    return None


def _short_override(letters: str, following: str) -> str | None:
    """The ``-o`` value in a cluster of one-letter options (``qo`` + next, ``okey=v``)."""
    for j, letter in enumerate(letters):
        if letter == "o":
            return letters[j + 1 :] or following
        if letter not in _SHORT_FLAGS:
            return None
    return None


# -- the edgeenergy front end --------------------------------------------------------------


def _argparse_type(opt: Option) -> Callable[[str], object]:
    def read(text: str) -> object:
        try:
            return opt.read(text)
        except InvalidValue as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return read


def add_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    keys: Iterable[str],
    *,
    defaults: Mapping[str, object] | None = None,
    required: Collection[str] = (),
    choices: Mapping[str, Collection[str]] | None = None,
    helps: Mapping[str, str] | None = None,
) -> None:
    """Add the ``edgeenergy`` arguments of the options ``keys`` to ``parser``: the
    argument's flag, its type (range, parser, ``Path``), choices, default and the help text
    the plugin shows too. ``dest`` is the key (``args.interval_ms``). ``defaults`` replace
    the description's (a command's own, e.g. ``--root /``), ``required`` makes arguments
    required, ``choices`` gives the allowed names of options whose names a lower layer
    owns (``objective``), ``helps`` the help of an argument whose meaning differs in a
    command (``measure --report``: no report unless asked)."""
    defaults = defaults or {}
    helps = helps or {}
    choices = choices or {}
    for key in keys:
        opt = ALL_OPTIONS[key]
        kwargs: dict[str, Any] = {"dest": key, "help": helps.get(key) or opt.help_text("cli")}
        if opt.kind == "flag":
            kwargs.update(action="store_true")
        else:
            kwargs.update(metavar=opt.metavar)
            names = choices.get(key) or (opt.choices() if opt.choices is not None else None)
            if names is not None:
                kwargs["choices"] = tuple(names)
            elif opt.parse is not None or opt.allowed is not None or opt.path:
                kwargs["type"] = _argparse_type(opt)
            if opt.kind == "list":
                kwargs.update(action="append", default=[])
            elif key in defaults:
                kwargs["default"] = defaults[key]
            elif opt.default is not None:
                kwargs["default"] = opt.read(opt.default)
            if key in required:
                kwargs["required"] = True
                kwargs.pop("default", None)
        parser.add_argument(opt.cli_flag, **kwargs)
