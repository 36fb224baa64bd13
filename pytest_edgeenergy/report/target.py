"""Whether a report can be written at a path, checked before any test runs.

The check creates and removes a temporary file where the report will go: permission bits
do not tell (root, read-only mounts, ``/proc``), trying does.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def report_target_problem(path: Path, *, overwrite: bool = False) -> str | None:
    """Why no report file can be written at ``path``; None when one can.

    An existing file is a problem unless ``overwrite``. Folders that do not exist yet count
    as creatable when their nearest existing parent takes new entries (the writer creates
    them)."""
    if path.is_dir():
        return "is a directory; give a file path such as DIR/report.json"
    if path.exists() and not overwrite:
        return (
            "exists already (a report of another run, or another file); choose another "
            "path, or pass --edge-report-overwrite to replace it"
        )
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a directory, so no report can be written under it"
    try:
        fd, probe = tempfile.mkstemp(prefix=".edgeenergy-probe-", dir=parent)
    except OSError as exc:
        return f"no file can be created in {parent} ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(probe)
    return None
