"""Small file helpers for virtual board trees.

Two kinds of file live in a tree:

* *knob* files (``scaling_max_freq``, ``governor``, ``online`` ...) hold ``value\\n`` like
  sysfs and are written by truncating in place (same inode), never by rename;
* *live* files (rail values, ``cur_freq``, temperatures) are rewritten by the animator
  many times a second. They hold a fixed-width, left-aligned, space-padded value
  (``"4654        \\n"``) written with one ``os.pwrite`` at offset 0, so a reader that
  keeps the file open and calls ``os.pread(fd, 64, 0)`` always sees a whole value.
  Left alignment keeps ``text.split(" ")[0]`` (jetson-stats) and ``int(text)`` working.
"""

from __future__ import annotations

import os
from pathlib import Path

LIVE_WIDTH = 12
"""Characters before the newline in a live file (fits 4266000000 Hz and -256000 m°C)."""

LIST_WIDTH = 32
"""Characters before the newline in a live CPU-list file (``0-13``, ``0,3-5``)."""


def live_bytes(value: int | str, width: int = LIVE_WIDTH) -> bytes:
    """The fixed-width text of a live file: value, space padding, newline."""
    text = str(value)
    if len(text) > width:
        raise ValueError(f"value {text!r} does not fit a live file of width {width}")
    return (text.ljust(width) + "\n").encode()


def write_live(path: Path, value: int | str, width: int = LIVE_WIDTH) -> None:
    """Create or overwrite a live file with a fixed-width value (creating parents)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, live_bytes(value, width), 0)
    finally:
        os.close(fd)


def write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """Write a static file (creating parent directories)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)


def write_knob(path: Path, value: str) -> None:
    """Write ``value`` to a knob or live file the way the tree expects.

    A live (space-padded) file keeps its width and inode: the value is written in place with
    one ``pwrite``. Any other file is truncated and gets ``value\\n``, like sysfs.
    """
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        old = b""
    body = old[:-1] if old.endswith(b"\n") else old
    if body and body != body.rstrip(b" ") and len(value) <= len(body):
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, (value.ljust(len(body)) + "\n").encode(), 0)
        finally:
            os.close(fd)
        return
    with open(path, "w") as f:
        f.write(value + "\n")


def read_value(path: Path) -> str:
    """The first whitespace-separated token of a file ('' when empty)."""
    parts = path.read_text().split()
    return parts[0] if parts else ""


def pread_token(fd: int) -> str:
    """First token of an open file, read at offset 0 ('' when empty or unreadable)."""
    try:
        data = os.pread(fd, 64, 0)
    except OSError:
        return ""
    parts = data.split()
    return parts[0].decode("ascii", "replace") if parts else ""


def relative_symlink(root: Path, link: str, target: str) -> None:
    """Make ``root/link`` a relative symlink to ``root/target`` (both relative to root)."""
    link_path = root / link
    link_path.parent.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(root / target, link_path.parent)
    if link_path.is_symlink():
        link_path.unlink()
    os.symlink(rel, link_path)
