"""The older interpreters a measured command or a container may hold (pyenv's, where
installed): ``from old_pythons import old_python``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def old_python(version: str) -> str:
    """A pyenv interpreter of ``version`` (``3.6``); the calling test is skipped without one."""
    root = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv")))
    found = sorted(root.glob(f"versions/{version}.*/bin/python{version}"))
    if not found:
        pytest.skip(f"no Python {version} here (looked in {root}/versions)")
    return str(found[-1])
