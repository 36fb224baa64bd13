"""How ``edge_bench`` runs a workload: work per repeat, repeats, warm-up, window length,
the workload filter, the load scenario. Built from the plugin's options by
:mod:`pytest_edgeenergy.plugin.bench_options`."""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field

from ..ranges import FloatRange, IntRange
from .scenarios import OFFLINE, Scenario

__all__ = [
    "DEFAULT",
    "ITEMS",
    "LATENCY_BOUND_S",
    "MIN_WINDOW_S",
    "PRECISIONS",
    "QUICK",
    "RATE_PER_S",
    "REPEATS",
    "RUNTIMES",
    "WARMUP",
    "WORKLOAD_TIMEOUT_S",
    "BenchSettings",
    "WorkloadPlacement",
]

RUNTIMES = ("torch", "onnxruntime", "tensorrt")
"""Runtimes the inference suites run a model with (``runtime`` parameter, ``--runtime``)."""
PRECISIONS = ("fp32", "fp16", "bf16", "int8", "int4")
"""Every precision a suite's ``precision`` parameter may take (``--precision``): the
inference grid's fp32/fp16/int8 and the LLM suite's bf16 and int4 (llama.cpp GGUF)."""


# Allowed ranges of the fixture's options (``--edge-items`` ...): each one finite, so that no
# count or duration given by mistake (an extra digit, ``inf``) makes a run without end.
ITEMS = IntRange(1, 10_000_000)
"""Items per repeat: 3,125 times the study's 3,200."""
REPEATS = IntRange(1, 1000)
"""Measured windows: 100 times the study's 10 (each one is kept in the report)."""
WARMUP = IntRange(0, 10_000)
MIN_WINDOW_S = FloatRange(0.0, 3600.0, "s")
"""Minimum repeat length: an hour, half of what the sampler keeps (2 h)."""
RATE_PER_S = FloatRange(0.01, 100_000.0, "queries per second")
"""Query rate of fixed-rate and server: one query per 100 s up to one per 10 us."""
LATENCY_BOUND_S = FloatRange(0.0, 3600.0, "s", above_low=True)
WORKLOAD_TIMEOUT_S = FloatRange(1.0, 86400.0, "s")
"""Silence allowed from a workload worker (no call finished, no reply): a day bounds it."""
DEFAULT_WORKLOAD_TIMEOUT_S = 600.0
"""Ten minutes: a Nano building a model on its CPU, or one call of a large one, stays below."""
PREFIXED_PYTHON = "python3"
"""The worker's interpreter behind a prefix (a container's) when none is named."""


@dataclass(frozen=True)
class WorkloadPlacement:
    """Where the suites' workloads run: in this process, or in a worker started as
    ``[*prefix, python, ...]`` (``--edge-workload-python``, ``--edge-workload-prefix``)."""

    python: str | None = None
    """The worker's interpreter as given (a path, or a command name); None: this one's, or
    ``python3`` behind a prefix."""
    prefix: tuple[str, ...] = ()
    """Words put before the interpreter (``docker run --rm -i IMAGE``)."""
    timeout_s: float = DEFAULT_WORKLOAD_TIMEOUT_S
    """A worker silent this long (no call finished, no reply) is hung and killed."""

    @property
    def out_of_process(self) -> bool:
        """True when an option asked for a worker."""
        return self.python is not None or bool(self.prefix)

    @property
    def interpreter(self) -> str:
        """The interpreter the worker runs."""
        if self.python is not None:
            return self.python
        return PREFIXED_PYTHON if self.prefix else sys.executable

    def argv(self) -> list[str]:
        """The worker's command line, before the interpreter's own arguments."""
        return [*self.prefix, self.interpreter]

    def where(self) -> str:
        """The interpreter, and the prefix's command by its first word (the rest may hold
        an image name or credentials; the report's settings hold it whole)."""
        if not self.prefix:
            return self.interpreter
        return f"{self.interpreter} behind --edge-workload-prefix ({self.prefix[0]})"


@dataclass(frozen=True)
class BenchSettings:
    """How ``edge_bench`` runs a workload: fixed work per repeat, in energy windows."""

    items: int | None
    """Items (inferences, samples...) per repeat; None = two calls' worth (``--edge-quick``)."""
    repeats: int
    """Measured windows per run."""
    warmup: int
    """Unmeasured calls before the first window (also used to calibrate the window length)."""
    min_window_s: float
    """A repeat shorter than this gets more calls (calibrated from the warm-up)."""
    quick: bool = False
    workloads: tuple[str, ...] = ()
    """Workload filter: names or glob patterns, lower case; empty = every workload."""
    scenario: Scenario = OFFLINE
    """How queries reach the workload (``--edge-scenario``); offline = fixed work at full speed."""
    runtimes: tuple[str, ...] = ()
    """Runtime filter (``--runtime``): names of :data:`RUNTIMES`; empty = every runtime."""
    precisions: tuple[str, ...] = ()
    """Precision filter (``--precision``): names of :data:`PRECISIONS`; empty = every one."""
    placement: WorkloadPlacement = field(default_factory=WorkloadPlacement)
    """Where the suites' workloads run (``--edge-workload-python``/``-prefix``/``-timeout``)."""

    def items_for(self, items_per_call: int) -> int:
        """Items per repeat for a workload doing ``items_per_call`` items per call."""
        if self.items is None:
            return 2 * items_per_call
        return self.items

    def selects(self, workload: str) -> bool:
        """True when ``workload`` passes the ``--workload`` filter: case-insensitive globs,
        with ``-`` and ``.`` read as ``_`` (``mistral-7b`` and ``tinyllama-1.1b`` name
        ``mistral_7b`` and ``tinyllama_1_1b``, as model cards spell them)."""
        if not self.workloads:
            return True
        name = _workload_key(workload)
        return any(fnmatch.fnmatchcase(name, _workload_key(p)) for p in self.workloads)

    @property
    def filters_items(self) -> bool:
        """True when ``--workload``, ``--runtime`` or ``--precision`` deselects tests."""
        return bool(self.workloads or self.runtimes or self.precisions)

    def selects_param(self, name: str, value: str) -> bool:
        """True when a test's ``runtime``/``precision`` parameter ``value`` passes its filter
        (other parameter names always pass)."""
        chosen = {"runtime": self.runtimes, "precision": self.precisions}.get(name, ())
        return not chosen or value.lower() in chosen


def _workload_key(text: str) -> str:
    return text.lower().replace("-", "_").replace(".", "_")


DEFAULT = BenchSettings(items=3200, repeats=10, warmup=2, min_window_s=0.5)
"""The study's protocol: 3,200 items per repeat, 10 repeats."""
QUICK = BenchSettings(items=None, repeats=2, warmup=1, min_window_s=0.1, quick=True)
"""Smoke runs: two calls' worth of items, 2 repeats, 1 warm-up call, 0.1 s windows."""
