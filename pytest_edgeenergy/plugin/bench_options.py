"""Options of the energy benchmark fixture: work per repeat, repeats, warm-up, window length,
quick smoke runs and the workload filter.

Precedence is CLI > environment > ini > default, as for the session's options
(:mod:`.options`); every error names where the bad value came from.
``--edge-quick`` only replaces the *defaults* with tiny counts: a value given explicitly on
the command line, in the environment or in the ini file still wins.
"""

from __future__ import annotations

import os
import shlex
import shutil

import pytest

from ..bench.scenarios import SCENARIOS, Scenario
from ..bench.settings import (
    DEFAULT,
    ITEMS,
    LATENCY_BOUND_S,
    MIN_WINDOW_S,
    PRECISIONS,
    QUICK,
    RATE_PER_S,
    REPEATS,
    RUNTIMES,
    WARMUP,
    WORKLOAD_TIMEOUT_S,
    BenchSettings,
    WorkloadPlacement,
)
from .options import Option, SettingsError, Value, checked, lookup

__all__ = [
    "BENCH_OPTIONS",
    "DEFAULT",
    "QUICK",
    "BenchSettings",
    "BenchSettingsError",
    "add_options",
    "build",
    "parse_scenario",
    "selected",
]


class BenchSettingsError(SettingsError):
    """A bad benchmark option; the message names the option, its source and what is allowed."""


BENCH_OPTIONS: dict[str, Option] = {
    "items": Option(
        "--edge-items",
        "edge_items",
        "EDGEENERGY_ITEMS",
        "items (inferences, samples) of fixed work per measured repeat "
        f"(default {DEFAULT.items}, as in the inference study)",
        None,
        metavar="N",
        allowed=ITEMS,
    ),
    "repeats": Option(
        "--edge-repeats",
        "edge_repeats",
        "EDGEENERGY_REPEATS",
        f"measured energy windows per benchmark (default {DEFAULT.repeats})",
        None,
        metavar="N",
        allowed=REPEATS,
    ),
    "warmup": Option(
        "--edge-warmup",
        "edge_warmup",
        "EDGEENERGY_WARMUP",
        f"unmeasured warm-up calls before the first window (default {DEFAULT.warmup})",
        None,
        metavar="N",
        allowed=WARMUP,
    ),
    "min_window_s": Option(
        "--edge-min-window-s",
        "edge_min_window_s",
        "EDGEENERGY_MIN_WINDOW_S",
        "minimum duration of a measured repeat in s; shorter repeats get more calls "
        f"(default {DEFAULT.min_window_s:g})",
        None,
        metavar="SECONDS",
        allowed=MIN_WINDOW_S,
    ),
    "quick": Option(
        "--edge-quick",
        "edge_quick",
        "EDGEENERGY_QUICK",
        "smoke run: two calls' worth of items, 2 repeats, 1 warm-up call, 0.1 s windows "
        "(values given explicitly still win)",
        None,
    ),
    "workload": Option(
        "--workload",
        "edge_workload",
        "EDGEENERGY_WORKLOAD",
        "comma-separated workloads to run (names or glob patterns, e.g. resnet18,mobilenet*); "
        "default all",
        None,
        metavar="NAMES",
    ),
    # -- runtime and precision filters (like --workload, on a test's parameter) --
    "runtime": Option(
        "--runtime",
        "edge_runtime",
        "EDGEENERGY_RUNTIME",
        f"comma-separated runtimes to run ({', '.join(RUNTIMES)}); deselects tests whose "
        "runtime parameter is another; default all",
        None,
        metavar="NAMES",
    ),
    "precision": Option(
        "--precision",
        "edge_precision",
        "EDGEENERGY_PRECISION",
        f"comma-separated precisions to run ({', '.join(PRECISIONS)}); deselects tests whose "
        "precision parameter is another; default all",
        None,
        metavar="NAMES",
    ),
    # -- load scenarios (bench/scenarios.py) --
    "scenario": Option(
        "--edge-scenario",
        "edge_scenario",
        "EDGEENERGY_SCENARIO",
        f"how queries reach the workload: {', '.join(SCENARIOS)} (default offline: fixed "
        "work at full speed)",
        None,
        metavar="NAME",
    ),
    "rate": Option(
        "--edge-rate",
        "edge_rate",
        "EDGEENERGY_RATE",
        "queries per second of the fixed-rate and server scenarios (one query = one call)",
        None,
        metavar="PER_S",
        allowed=RATE_PER_S,
    ),
    "latency_bound_s": Option(
        "--edge-latency-bound-s",
        "edge_latency_bound_s",
        "EDGEENERGY_LATENCY_BOUND_S",
        "deadline of a query in s (arrival to completion): required by server; fixed-rate "
        "defaults to 1/rate",
        None,
        metavar="SECONDS",
        allowed=LATENCY_BOUND_S,
    ),
    # -- where the suites' workloads run (bench/worker.py) --
    "workload_python": Option(
        "--edge-workload-python",
        "edge_workload_python",
        "EDGEENERGY_WORKLOAD_PYTHON",
        "run the suites' workloads in this Python (3.6 or newer, e.g. JetPack 5's "
        "/usr/bin/python3.8 with NVIDIA's torch) through a worker; the harness stays in this "
        "one; behind --edge-workload-prefix, the interpreter inside it (default python3)",
        None,
        metavar="PATH",
    ),
    "workload_prefix": Option(
        "--edge-workload-prefix",
        "edge_workload_prefix",
        "EDGEENERGY_WORKLOAD_PREFIX",
        "run the workload worker behind this command, split as a shell would, e.g. "
        "'docker run --rm -i --runtime nvidia IMAGE' (-i: the worker speaks over stdin)",
        None,
        metavar="COMMAND",
    ),
    "workload_timeout": Option(
        "--edge-workload-timeout",
        "edge_workload_timeout",
        "EDGEENERGY_WORKLOAD_TIMEOUT",
        "seconds a workload worker may stay silent (no call finished, no answer) before it is "
        "taken as hung, its process group killed and its test failed (default 600)",
        None,
        metavar="SECONDS",
        allowed=WORKLOAD_TIMEOUT_S,
    ),
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def add_options(parser: pytest.Parser) -> None:
    """Register the benchmark options as CLI flags and ini keys sharing one help text."""
    group = parser.getgroup("edgeenergy", "energy measurement on Jetson boards")
    for key, opt in BENCH_OPTIONS.items():
        if key == "quick":
            group.addoption(
                opt.flag, dest=opt.ini, action="store_true", default=None, help=opt.help
            )
        else:
            group.addoption(
                opt.flag, dest=opt.ini, default=None, metavar=opt.metavar, help=opt.full_help
            )
        parser.addini(opt.ini, help=f"{opt.full_help} (env {opt.env})", default=None)


def _raw(config: pytest.Config, key: str) -> Value | None:
    """The value given for ``key`` and where it came from; None when not given anywhere."""
    opt = BENCH_OPTIONS[key]
    return lookup(config, opt, opt.ini)


def _flag(v: Value) -> bool:
    text = v.text.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise BenchSettingsError(
        f"{v.origin}: {v.text!r} is not a yes/no value; use one of {', '.join(_TRUE + _FALSE[:-1])}"
    )


def parse_workloads(v: Value) -> tuple[str, ...]:
    """``resnet18, MobileNet*`` -> ``("resnet18", "mobilenet*")``; an empty list is an error."""
    names = tuple(n.strip().lower() for n in v.text.split(",") if n.strip())
    if not names:
        raise BenchSettingsError(
            f"{v.origin}: {v.text!r} names no workload; give comma-separated names or patterns"
        )
    return names


def parse_names(v: Value | None, what: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """``onnxruntime, Torch`` -> ``("onnxruntime", "torch")``; () when not given. An empty
    list or a name not in ``allowed`` is an error listing the allowed names."""
    if v is None:
        return ()
    names = tuple(dict.fromkeys(n.strip().lower() for n in v.text.split(",") if n.strip()))
    unknown = [n for n in names if n not in allowed]
    if not names or unknown:
        bad = f"unknown {what} {', '.join(map(repr, unknown))}" if unknown else f"no {what}"
        raise BenchSettingsError(f"{v.origin}: {bad}; allowed: {', '.join(allowed)}")
    return names


def build(config: pytest.Config) -> BenchSettings:
    """Read and validate the benchmark options; raise :class:`BenchSettingsError` naming the
    source of a bad value."""
    quick_v = _raw(config, "quick")
    quick = _flag(quick_v) if quick_v is not None else False
    base = QUICK if quick else DEFAULT
    items_v = _raw(config, "items")
    repeats_v = _raw(config, "repeats")
    warmup_v = _raw(config, "warmup")
    window_v = _raw(config, "min_window_s")
    workload_v = _raw(config, "workload")
    error = BenchSettingsError
    return BenchSettings(
        items=checked(items_v, ITEMS, error) if items_v is not None else base.items,
        repeats=checked(repeats_v, REPEATS, error) if repeats_v is not None else base.repeats,
        warmup=checked(warmup_v, WARMUP, error) if warmup_v is not None else base.warmup,
        min_window_s=(
            checked(window_v, MIN_WINDOW_S, error) if window_v is not None else base.min_window_s
        ),
        quick=quick,
        workloads=parse_workloads(workload_v) if workload_v is not None else (),
        runtimes=parse_names(_raw(config, "runtime"), "runtime", RUNTIMES),
        precisions=parse_names(_raw(config, "precision"), "precision", PRECISIONS),
        scenario=_scenario(config),
        placement=_placement(config),
    )


def _placement(config: pytest.Config) -> WorkloadPlacement:
    python_v, prefix_v, timeout_v = (
        _raw(config, k) for k in ("workload_python", "workload_prefix", "workload_timeout")
    )
    return parse_placement(python_v, prefix_v, timeout_v)


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
    (each None when not given); :class:`BenchSettingsError` naming the option and what is
    allowed. Without a prefix the interpreter must be an executable here; behind one it is
    the prefix's (a container's) and only the prefix's command is looked for."""
    prefix: tuple[str, ...] = ()
    if prefix_v is not None:
        try:
            prefix = tuple(shlex.split(prefix_v.text))
        except ValueError as e:
            raise BenchSettingsError(
                f"{prefix_v.origin}: {prefix_v.text!r} cannot be split into words ({e})"
            ) from None
        if not prefix:
            raise BenchSettingsError(
                f"{prefix_v.origin}: names no command; give one, e.g. "
                "'docker run --rm -i --runtime nvidia IMAGE'"
            )
        if _executable(prefix[0]) is None:
            raise BenchSettingsError(
                f"{prefix_v.origin}: {prefix[0]!r} is not an executable file nor a command on PATH"
            )
    python = None
    if python_v is not None:
        python = python_v.text.strip()
        if not python:
            raise BenchSettingsError(f"{python_v.origin}: names no interpreter")
        if not prefix and _executable(python) is None:
            raise BenchSettingsError(
                f"{python_v.origin}: {python!r} is not an executable file nor a command on "
                "PATH; give the path of a Python 3.6 or newer (e.g. /usr/bin/python3.8)"
            )
    timeout = (
        checked(timeout_v, WORKLOAD_TIMEOUT_S, BenchSettingsError)
        if timeout_v is not None
        else WorkloadPlacement().timeout_s
    )
    return WorkloadPlacement(python, prefix, timeout)


def _scenario(config: pytest.Config) -> Scenario:
    name_v, rate_v, bound_v = (_raw(config, k) for k in ("scenario", "rate", "latency_bound_s"))
    return parse_scenario(name_v, rate_v, bound_v)


def parse_scenario(name_v: Value | None, rate_v: Value | None, bound_v: Value | None) -> Scenario:
    """``--edge-scenario`` with its rate and latency bound (each None when not given);
    :class:`BenchSettingsError` naming the option and what is allowed."""
    name = name_v.text.strip().lower() if name_v is not None else "offline"
    if name_v is not None and name not in SCENARIOS:
        raise BenchSettingsError(
            f"{name_v.origin}: unknown scenario {name_v.text!r}; allowed: {', '.join(SCENARIOS)}"
        )
    rate = checked(rate_v, RATE_PER_S, BenchSettingsError) if rate_v is not None else None
    bound = checked(bound_v, LATENCY_BOUND_S, BenchSettingsError) if bound_v is not None else None
    where = name_v.origin if name_v is not None else "--edge-scenario"
    if name in ("fixed-rate", "server") and rate is None:
        raise BenchSettingsError(
            f"{where}: {name} needs --edge-rate=QUERIES_PER_S (a number > 0, e.g. 30)"
        )
    if name == "server" and bound is None:
        raise BenchSettingsError(
            f"{where}: server needs --edge-latency-bound-s=SECONDS (a number > 0)"
        )
    if rate_v is not None and name not in ("fixed-rate", "server"):
        raise BenchSettingsError(
            f"{rate_v.origin}: a rate applies to the fixed-rate and server scenarios only "
            f"(scenario now {name}); give --edge-scenario=fixed-rate or server"
        )
    if bound_v is not None and name == "offline":
        raise BenchSettingsError(
            f"{bound_v.origin}: a latency bound applies to the single-stream, fixed-rate and "
            "server scenarios only (scenario now offline); give --edge-scenario"
        )
    return Scenario(name, rate, bound)


def selected(workload: str, config: pytest.Config) -> bool:
    """True when ``workload`` passes ``--workload`` (names or globs, case-insensitive)."""
    return build(config).selects(workload)
