"""Running ``pytest suites/...`` on a virtual board in a child process, as the end-to-end
tests of the suites do: no EDGEENERGY_* variable leaks in from the caller, no cache
provider, no random order, a short idle baseline."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

SUITES = Path(__file__).resolve().parents[1] / "suites"
QUIET_FLAGS = ("--edge-idle-s=0.3", "-p", "no:cacheprovider", "-p", "no:randomly")
"""What every suite run in the tests adds."""
ONE_ITEM_BATCHES = "--batch-size=1"
"""For the e2e runs of the vision, NLP and training suites: the same code path as their
batch of 8 at well under half the CPU (the main job, ``make run``, keeps the batches)."""


def needs(*modules: str, reason: str) -> pytest.MarkDecorator:
    """Skip where one of ``modules`` is not installed, without importing it: the suites
    import torch in their own process, and every xdist worker collects every test module
    (importing torch, torchvision and transformers there cost each worker ~5 s of CPU)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"{reason} ({', '.join(missing)} missing)")


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without EDGEENERGY_* variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")}
    env.update(extra)
    return env


def run_suites(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` plus :data:`QUIET_FLAGS` in ``cwd``; asserts it passed
    (the message holds the end of its output)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, *QUIET_FLAGS],
        cwd=cwd,
        env=dict(env) if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc
