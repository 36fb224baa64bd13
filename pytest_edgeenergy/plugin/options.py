"""The plugin's options (CLI flags, ini keys, environment variables) and the validated
settings built from them.

Cheap to import: pytest asks for the options of every run, ``--help`` included. Precedence
is CLI > environment > ini > default. Every error names where the bad value came from,
e.g. ``EDGEENERGY_INTERVAL_MS (environment): 'abc' is not a number; allowed: ...``. Every
numeric option has a finite allowed range (``Option.allowed``, read with :func:`checked`),
shown in its help.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ..board.generations import MODEL_NAMES
from ..errors import EdgeEnergyError, InvalidValue
from ..ranges import FloatRange, IntRange, NumberRange, shown

SIM_MODELS = MODEL_NAMES
SOURCES = ("auto", "ina", "tegrastats", "jtop", "nvml", "rapl")

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
POWER_BUDGET_W = FloatRange(0.0, 5000.0, "W", above_low=True)
"""Up to the power readers' plausibility limit (``meters.ina.MAX_PLAUSIBLE_W``)."""
LATENCY_BUDGET_S = FloatRange(0.0, 86400.0, "s", above_low=True)


class SettingsError(EdgeEnergyError, ValueError):
    """A bad option value; the message names the option, its source and what is allowed.

    The plugin turns it into ``pytest.UsageError`` so pytest prints it without a traceback.
    """


@dataclass(frozen=True)
class Option:
    """One option known by its CLI flag, ini key and environment variable."""

    flag: str
    ini: str
    env: str
    help: str
    default: str | None
    metavar: str = "VALUE"
    """The value's placeholder in ``--help`` (unused by yes/no flags)."""
    allowed: NumberRange[Any] | None = None
    """A number's allowed range (shown in ``--help``); None: not a number."""

    @property
    def full_help(self) -> str:
        """The help text, with the allowed range of a number."""
        if self.allowed is None:
            return self.help
        return f"{self.help}; allowed: {self.allowed.describe()}"


OPTIONS: dict[str, Option] = {
    "board": Option(
        "--edge-board",
        "edge_board",
        "EDGEENERGY_BOARD",
        "board to measure: 'auto' (the machine's own sysfs under --edge-root) or "
        f"'sim:MODEL' for a virtual board, MODEL one of {', '.join(SIM_MODELS)}",
        None,
        metavar="sim:MODEL",
    ),
    "sim_load": Option(
        "--edge-sim-load",
        "edge_sim_load",
        "EDGEENERGY_SIM_LOAD",
        "utilisation of a virtual board made by --edge-board=sim:MODEL: 'host' (follows this "
        "machine's CPU load) or a fraction 0..1 that pins it (reproducible power on a shared "
        "machine)",
        "host",
        metavar="host|FRACTION",
    ),
    "root": Option(
        "--edge-root",
        "edge_root",
        "EDGEENERGY_ROOT",
        "directory holding the board's tree (/ on a Jetson; a virtual board's directory)",
        None,
        metavar="DIR",
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
        f"power source: {', '.join(SOURCES)}",
        "auto",
        metavar="NAME",
    ),
    "report": Option(
        "--edge-report",
        "edge_report",
        "EDGEENERGY_REPORT",
        "JSON report path (default: reports/<device>-<time>.json when energy was measured)",
        None,
        metavar="PATH",
    ),
    "report_overwrite": Option(
        "--edge-report-overwrite",
        "edge_report_overwrite",
        "EDGEENERGY_REPORT_OVERWRITE",
        "allow --edge-report to replace an existing file (replaced at the first finished test)",
        None,
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
    ),
}


FLAG_OPTIONS = ("report_overwrite",)
"""Keys of :data:`OPTIONS` that are yes/no flags (``1``/``0`` etc. in env and ini)."""


def add_options(parser: pytest.Parser) -> None:
    """Register every option as a CLI flag and an ini key sharing one help text."""
    group = parser.getgroup("edgeenergy", "energy measurement on Jetson boards")
    for key, opt in OPTIONS.items():
        dest = f"edge_{opt.ini[5:]}"
        if key in FLAG_OPTIONS:
            group.addoption(opt.flag, dest=dest, action="store_true", default=None, help=opt.help)
        else:
            group.addoption(
                opt.flag, dest=dest, default=None, metavar=opt.metavar, help=opt.full_help
            )
        parser.addini(opt.ini, help=f"{opt.full_help} (env {opt.env})", default=None)


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
    sim_model: str | None = None
    board = _raw(config, "board")
    if board is not None and board.text != "auto":
        kind, _, model = board.text.partition(":")
        if kind != "sim" or model not in SIM_MODELS:
            raise SettingsError(
                f"{board.origin}: {board.text!r} is not a board; use 'auto' or 'sim:MODEL' "
                f"with MODEL one of {', '.join(SIM_MODELS)}"
            )
        sim_model = model
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
    sim_load = _sim_load(_raw(config, "sim_load"))
    source = _raw(config, "source")
    assert source is not None
    if source.text not in SOURCES:
        raise SettingsError(
            f"{source.origin}: {source.text!r} is not a source; use one of {', '.join(SOURCES)}"
        )
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


def _sim_load(v: Value | None) -> float | None:
    if v is None or v.text == "host":
        return None
    try:
        return SIM_LOAD.parse(v.text)
    except InvalidValue:
        problem = f"{shown(v.text)} is not 'host' nor a fraction 0..1"
        raise SettingsError(f"{v.origin}: {problem}") from None


def only_file(config: pytest.Config) -> Value | None:
    """The ``--edge-only`` file (CLI > env > ini) with where it was given; None: not given."""
    return _raw(config, "only")


# -- the grid: operating-point dimensions and batch sizes ---------------------------------

GRID_OPTIONS: dict[str, Option] = {
    "power_mode": Option(
        "--power-mode",
        "edge_power_mode",
        "EDGEENERGY_POWER_MODE",
        "nvpmodel power mode(s) by name (any case), ID or role (max = MAXN, min, default: "
        "the same on every board), comma-separated",
        None,
        metavar="MODES",
    ),
    "cpu_freq": Option(
        "--cpu-freq",
        "edge_cpu_freq",
        "EDGEENERGY_CPU_FREQ",
        "CPU frequencies: values with Hz/kHz/MHz/GHz, or min, max, all, dvfs",
        None,
        metavar="FREQS",
    ),
    "gpu_freq": Option(
        "--gpu-freq",
        "edge_gpu_freq",
        "EDGEENERGY_GPU_FREQ",
        "GPU frequencies: values with Hz/kHz/MHz/GHz, or min, max, all, dvfs",
        None,
        metavar="FREQS",
    ),
    "emc_freq": Option(
        "--emc-freq",
        "edge_emc_freq",
        "EDGEENERGY_EMC_FREQ",
        "memory (EMC) frequencies: values with units, or min, max, dvfs",
        None,
        metavar="FREQS",
    ),
    "cpu_cores": Option(
        "--cpu-cores",
        "edge_cpu_cores",
        "EDGEENERGY_CPU_CORES",
        "numbers of online CPU cores, or all",
        None,
        metavar="N",
    ),
    "governor": Option(
        "--governor",
        "edge_governor",
        "EDGEENERGY_GOVERNOR",
        "CPU frequency governor(s), e.g. schedutil, performance",
        None,
        metavar="NAMES",
    ),
    "batch_size": Option(
        "--batch-size",
        "edge_batch_size",
        "EDGEENERGY_BATCH_SIZE",
        "batch sizes for tests using the batch_size fixture, comma-separated (default 8)",
        None,
        metavar="SIZES",
        allowed=BATCH_SIZE,
    ),
}

CONTROL_OPTIONS: dict[str, Option] = {
    "dry_run": Option(
        "--edge-dry-run",
        "edge_dry_run",
        "EDGEENERGY_DRY_RUN",
        "print every write to the board's knob files that would be made, make none",
        None,
    ),
    "force_mode": Option(
        "--edge-force-mode",
        "edge_force_mode",
        "EDGEENERGY_FORCE_MODE",
        "allow power modes that change GPU power gating (the board REBOOTS to apply them)",
        None,
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

POINT_DIMENSIONS = ("power_mode", "cpu_freq", "gpu_freq", "emc_freq", "cpu_cores", "governor")
"""The grid options that name an operating point (all but ``batch_size``)."""

VALUED_CONTROL_OPTIONS = ("settle_s", "lock_timeout_s")
DEFAULT_LOCK_TIMEOUT_S = 300.0

DEFAULT_BATCH_SIZES = (8,)


def add_grid_options(parser: pytest.Parser) -> None:
    """Register the grid and control options (CLI flags, ini keys)."""
    group = parser.getgroup("edgeenergy")
    for key, opt in GRID_OPTIONS.items():
        group.addoption(
            opt.flag,
            dest=f"edge_grid_{key}",
            action="append",
            default=None,
            metavar=opt.metavar,
            help=f"{opt.full_help} (env {opt.env}, ini {opt.ini})",
        )
        parser.addini(opt.ini, help=f"{opt.full_help} (env {opt.env})", default=None)
    for key, opt in CONTROL_OPTIONS.items():
        if key in VALUED_CONTROL_OPTIONS:
            group.addoption(
                opt.flag,
                dest=f"edge_ctl_{key}",
                default=None,
                metavar=opt.metavar,
                help=opt.full_help,
            )
        else:
            group.addoption(
                opt.flag, dest=f"edge_ctl_{key}", action="store_true", default=None, help=opt.help
            )
        parser.addini(opt.ini, help=f"{opt.full_help} (env {opt.env})", default=None)


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

GATE_OPTIONS: dict[str, Option] = {
    "baseline": Option(
        "--edge-baseline",
        "edge_baseline",
        "EDGEENERGY_BASELINE",
        "baseline report file, or a directory of reports (the newest runs of this device "
        "are used, judged by their run-to-run spread; a missing or empty directory is 'no "
        "baseline yet')",
        None,
        metavar="PATH",
    ),
    "fail": Option(
        "--edge-fail",
        "edge_fail",
        "EDGEENERGY_FAIL",
        "fail when METRIC:STAT:THRESHOLD regresses significantly against the baseline, e.g. "
        "energy_per_item:mean:5%% or latency_p90:median:2ms (repeatable)",
        None,
        metavar="EXPR",
    ),
    "save_baseline": Option(
        "--edge-save-baseline",
        "edge_save_baseline",
        "EDGEENERGY_SAVE_BASELINE",
        "after the run, store its report as a baseline in this directory (created if missing)",
        None,
        metavar="DIR",
    ),
    "fail_insufficient": Option(
        "--edge-fail-insufficient",
        "edge_fail_insufficient",
        "EDGEENERGY_FAIL_INSUFFICIENT",
        "strict gate: a result too thinly measured to judge ('insufficient': too few repeats "
        "or runs, or a failed or invalid result on either side) fails it too",
        None,
    ),
}


@dataclass(frozen=True)
class GateSettings:
    """The regression gate's options."""

    baseline: Path | None
    fail: tuple[str, ...]
    save_baseline: Path | None
    fail_insufficient: bool = False


def add_gate_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("edgeenergy")
    for key, opt in GATE_OPTIONS.items():
        help_text = f"{opt.help} (env {opt.env}, ini {opt.ini})"
        if key == "fail_insufficient":
            group.addoption(
                opt.flag, dest=f"edge_gate_{key}", action="store_true", default=None, help=help_text
            )
            parser.addini(opt.ini, help=opt.help, default=None)
            continue
        action = "append" if key == "fail" else "store"
        group.addoption(
            opt.flag,
            dest=f"edge_gate_{key}",
            action=action,
            default=None,
            metavar=opt.metavar,
            help=help_text,
        )
        ini_help = opt.help.replace("%%", "%")  # argparse formats %% in --help, ini help not
        if key == "fail":
            parser.addini(opt.ini, help=ini_help, default=[], type="linelist")
        else:
            parser.addini(opt.ini, help=ini_help, default=None)


def build_gate(config: pytest.Config) -> GateSettings:
    """Read the gate options (CLI > env > ini); expressions are checked by the plugin."""

    def one(key: str) -> Path | None:
        v = lookup(config, GATE_OPTIONS[key], f"edge_gate_{key}")
        return Path(v.text) if v is not None else None

    # Expressions hold no commas, so repeated flags, env and ini lines all join and split.
    v = lookup(config, GATE_OPTIONS["fail"], "edge_gate_fail")
    fail = tuple(e.strip() for e in v.text.split(",") if e.strip()) if v is not None else ()
    strict = lookup(config, GATE_OPTIONS["fail_insufficient"], "edge_gate_fail_insufficient")
    return GateSettings(
        one("baseline"),
        fail,
        one("save_baseline"),
        fail_insufficient=yes_no(strict) if strict is not None else False,
    )


# -- the operating-point search ------------------------------------------------------------

SEARCH_OPTIONS: dict[str, Option] = {
    "strategy": Option(
        "--edge-search",
        "edge_search",
        "EDGEENERGY_SEARCH",
        "search the grid options' values (each may say all) for the best operating point "
        "with this strategy: grid, random, binary, optuna, auto; tests taking operating_point "
        "become a dvfs reference and trial0..trialN-1",
        None,
        metavar="STRATEGY",
    ),
    "objective": Option(
        "--edge-objective",
        "edge_objective",
        "EDGEENERGY_OBJECTIVE",
        "what --edge-search minimises: min-energy (J per item), min-time, min-edp, pareto "
        "(default min-energy)",
        "min-energy",
        metavar="OBJ",
    ),
    "trials": Option(
        "--edge-trials",
        "edge_trials",
        "EDGEENERGY_TRIALS",
        "points --edge-search profiles per test (the dvfs reference not counted)",
        None,
        metavar="N",
        allowed=TRIALS,
    ),
    "power_budget_w": Option(
        "--edge-power-budget-w",
        "edge_power_budget_w",
        "EDGEENERGY_POWER_BUDGET_W",
        "--edge-search: mean power a point may draw",
        None,
        metavar="W",
        allowed=POWER_BUDGET_W,
    ),
    "latency_budget_s": Option(
        "--edge-latency-budget-s",
        "edge_latency_budget_s",
        "EDGEENERGY_LATENCY_BUDGET_S",
        "--edge-search: time per item (per test window without items) a point may take",
        None,
        metavar="S",
        allowed=LATENCY_BUDGET_S,
    ),
    "seed": Option(
        "--edge-seed",
        "edge_seed",
        "EDGEENERGY_SEED",
        "--edge-search: seed of the random, optuna and auto strategies (default 0)",
        "0",
        metavar="K",
        allowed=SEED,
    ),
    "resume": Option(
        "--edge-search-resume",
        "edge_search_resume",
        "EDGEENERGY_SEARCH_RESUME",
        "--edge-search: continue the searches of this report (same strategy, objective, "
        "budgets and seed); its trials count towards --edge-trials",
        None,
        metavar="REPORT",
    ),
    "prior": Option(
        "--edge-prior",
        "edge_prior",
        "EDGEENERGY_PRIOR",
        "--edge-search=auto: seed its model with the profiles of this report (the same "
        "test's search or runs, else every search's) or CSV table (another workload or board)",
        None,
        metavar="REPORT_OR_CSV",
    ),
}


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


def add_search_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("edgeenergy")
    for key, opt in SEARCH_OPTIONS.items():
        group.addoption(
            opt.flag,
            dest=f"edge_search_{key}",
            default=None,
            metavar=opt.metavar,
            help=f"{opt.full_help} (env {opt.env}, ini {opt.ini})",
        )
        parser.addini(opt.ini, help=f"{opt.full_help} (env {opt.env})", default=None)


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
    from ..search.strategy import STRATEGIES

    if strategy.text not in STRATEGIES:
        raise SettingsError(
            f"{strategy.origin}: unknown strategy {strategy.text!r}; allowed: "
            f"{', '.join(STRATEGIES)}"
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
    )
