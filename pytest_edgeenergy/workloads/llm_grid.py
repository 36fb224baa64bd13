"""The LLM suite's grid: workload x precision x device as pytest parameters
(``tinyllama_1_1b-fp32-cpu``, marked ``workload``), and the token-count dimensions
``prompt_tokens`` and ``new_tokens`` from ``--edge-prompt-tokens`` / ``--edge-new-tokens``.
"""

from __future__ import annotations

from typing import Any

from .errors import WorkloadError
from .llm import LLM_COMBINATIONS
from .registry import workload_names

LLM_ARGS = "workload,precision,device"
PROMPT_TOKENS = (32,)
NEW_TOKENS = (8,)
QUICK_PROMPT_TOKENS = (16,)
QUICK_NEW_TOKENS = (4,)
QUICK_PRECISION = "fp32"
MIN_NEW_TOKENS = 2
"""One new token comes from the prefill, at least one from a decode step."""


def llm_params() -> list[Any]:
    """``pytest.param`` for every LLM workload x offered (precision, device)."""
    import pytest

    return [
        pytest.param(w, p, d, id=f"{w}-{p}-{d}", marks=pytest.mark.workload(w))
        for w in workload_names("llm")
        for p, d in LLM_COMBINATIONS
    ]


def parse_token_counts(
    text: str, origin: str, minimum: int, what: str = "tokens"
) -> tuple[int, ...]:
    """``"16,64"`` -> ``(16, 64)``; :class:`WorkloadError` names ``origin``, the rule and
    ``what`` the counts are."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            n = int(part)
        except ValueError:
            raise WorkloadError(f"{origin}: {part!r} is not a whole number of tokens") from None
        if n < minimum:
            raise WorkloadError(f"{origin}: {n} must be >= {minimum} ({what})")
        if n not in out:
            out.append(n)
    if not out:
        raise WorkloadError(f"{origin}: {text!r} gives no token count; use e.g. 16,64")
    return tuple(out)


QUICK_WORKLOAD = "llm_tiny"
CPU_DEFAULT_MAX_PARAMS = 100_000_000
"""Bigger models run on a cpu device only when ``--workload`` selects them: TinyLlama-1.1B
takes about 3 minutes per test on a 2-core CPU at batch 8, more than the main job affords."""


def quick_skip_reason(workload: str, precision: str, quick: bool) -> str | None:
    """``--edge-quick`` runs the tiny model in fp32 only."""
    if quick and precision != QUICK_PRECISION:
        return f"--edge-quick runs {QUICK_PRECISION} only; run without it for {precision}"
    if quick and workload != QUICK_WORKLOAD:
        return f"--edge-quick runs {QUICK_WORKLOAD} only; run without it for {workload}"
    return None


def cpu_size_skip_reason(params: int, device: str, *, filtered: bool) -> str | None:
    """A model above :data:`CPU_DEFAULT_MAX_PARAMS` on cpu runs only when ``--workload``
    was given (``filtered``) and selected it."""
    if device == "cpu" and params > CPU_DEFAULT_MAX_PARAMS and not filtered:
        return (
            f"{params / 1e9:.2f} B parameters on cpu: minutes per test; runs when --workload "
            f"names it (default cpu runs are for models up to {CPU_DEFAULT_MAX_PARAMS / 1e6:.0f} M)"
        )
    return None
