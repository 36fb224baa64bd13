"""A workload built in a worker (:mod:`.worker`), measured by ``edge_bench`` as a callable is.

``edge_bench.run(workload, ...)`` keeps its semantics: warm-up calls, then repeats of a
fixed number of calls, each repeat in its own energy window opened and closed here. What
changes is who makes the calls: each repeat asks the worker once for all of its calls,
and the worker times every call with its own clock (``time.perf_counter``, CUDA
synchronised after each call there), so per-call latencies hold no pipe time and the
window holds one request and one reply. Before each window the worker collects garbage
and resets its memory peaks (unmeasured); the repeat's memory figures are the worker's.

A paced scenario (single-stream, fixed-rate, server) issues its queries from here: each
query is one request of one call, and its latency (arrival to completion, queueing
included) is timed here, so it holds the pipe's round trip too (see
``docs/performance.md``).
"""

from __future__ import annotations

import base64
import binascii
import sys
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .worker import WorkerFailed, WorkerProcess

__all__ = ["CallBatch", "RemoteWorkload"]


@dataclass(frozen=True)
class CallBatch:
    """What one ``calls`` request returned."""

    latencies_s: array[float]
    """Seconds per call, as the worker's clock timed them."""
    memory_peak_bytes: int | None
    cuda_peak_bytes: int | None


class RemoteWorkload:
    """A workload built in ``worker``: calling it makes one call there (a round trip);
    ``edge_bench.run`` asks for a repeat's calls at once (:meth:`run_calls`)."""

    def __init__(
        self,
        worker: WorkerProcess,
        reply: Mapping[str, Any],
        *,
        params: Mapping[str, object] | None = None,
    ) -> None:
        """``reply``: the worker's answer to ``build``; ``params``: what the result's
        params say of this workload besides the worker's facts."""
        self.worker = worker
        self.device = str(reply.get("device") or "cpu")
        self.facts: dict[str, Any] = dict(reply.get("facts") or {})
        self.output: dict[str, Any] | None = reply.get("output")
        """What the first call returned (shapes, detections per image), as in process."""
        self.build_s = float(reply.get("build_s") or 0.0)
        self._params = dict(params or {})
        self.memory_reset: bool | None = None
        """Whether the worker could reset its memory peak (None before any window)."""
        self.memory_peak_bytes: int | None = None
        self.cuda_peak_bytes: int | None = None

    def params(self) -> dict[str, object]:
        """What the result's ``params`` should say about this workload."""
        return {**self._params, **self.facts}

    def __call__(self) -> None:
        """One call in the worker (a round trip)."""
        self.run_calls(1)

    def prepare_window(self) -> None:
        """Before a window opens: the worker collects garbage and resets its peaks."""
        reply = self.worker.request("reset", "preparing a window")
        self.memory_reset = bool(reply.get("memory_reset"))
        self.memory_peak_bytes = None
        self.cuda_peak_bytes = None

    def run_calls(self, n: int) -> CallBatch:
        """``n`` calls in the worker, each timed there."""
        reply = self.worker.request("calls", f"{n} calls", n=n)
        latencies = array("d")
        try:
            latencies.frombytes(
                base64.b64decode(str(reply.get("latencies_f64le_b64")), validate=True)
            )
        except (binascii.Error, ValueError):
            latencies = array("d")
        if sys.byteorder != "little":
            latencies.byteswap()
        if len(latencies) != n:
            self.worker.kill()
            raise WorkerFailed(
                f"workload worker {self.worker.where}: answered {n} calls with "
                f"{len(latencies)} latencies"
            )
        batch = CallBatch(
            latencies,
            _int_or_none(reply.get("memory_peak_bytes")),
            _int_or_none(reply.get("cuda_peak_bytes")),
        )
        self.memory_peak_bytes = batch.memory_peak_bytes
        self.cuda_peak_bytes = batch.cuda_peak_bytes
        return batch

    def timing(self) -> dict[str, Any] | None:
        """A training step's minibatch records as the worker keeps them (None for other
        workloads)."""
        value = self.worker.request("timing", "reading the training timing").get("timing")
        return value if isinstance(value, dict) else None

    def close(self) -> None:
        """Nothing to do here: the test's worker ends with the test."""


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
