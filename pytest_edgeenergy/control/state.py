"""Snapshot, journal and restore of the board's knobs: the safety net of the control layer.

Before the first change a :class:`Session` copies the bytes of every knob file that will or
may be written (cpufreq, CPU online, GPU devfreq, EMC override, every nvpmodel PARAM path
and nvpmodel's status file) and the current power mode into a state file, fsynced. Each
later write is appended to the state file *before* it is made. ``restore`` selects the
saved power mode with ``nvpmodel`` first (it resets clocks), then writes every file that
differs back byte-identically, in reverse order of our writes, and deletes the state file
only when everything matches again.

Where the state file lives: ``<root>/var/lib/edgeenergy/state.json``, always, with its lock
beside it: one lock and one journal per board, whoever runs the session, so a root session
and a user session (or two users) always see each other. When that directory cannot be
written (:func:`state_dir_problem`), a session may still measure, unprotected against a
concurrent pinning session (it says so), but refuses to pin (:class:`StateDirError`, naming
the directory and how to make it writable). Older versions fell back to
``$XDG_STATE_HOME/edgeenergy/state-<sha256(root)[:16]>.json``: :func:`restore_leftover` and a
new session still look there, to restore what a killed old session left.

Nothing here is written outside the board: the state directory must resolve inside the root,
the lock file is opened without following a symbolic link, the state file's temp file is
created exclusively (never through a link), and the rename replaces a link, never its target.
A lock file records who holds it (``flock``): a live session (lock held) is told from a killed
one (lock free: the kernel drops it); a new :class:`Session` waits for a live holder up to a
timeout.

Hand-off (``edgeenergy ab``): a holder that runs its own sessions on the board one after the
other, and wants nothing else to measure in between, takes the lock with a random token
(:func:`new_handoff_token`), records only its SHA-256 in the lock file and gives the token
to each child through a pipe (:mod:`pytest_edgeenergy.handoff`). A :class:`Session` given
that token runs inside the holder's lock, without taking it, when the live holder's record
carries the token's digest AND the holder is its parent (not a grandparent: what the
session starts never gets in). Anything else (no token, another token, a holder that is
not the parent) waits or is refused as for any other holder.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import datetime as _dt
import fcntl
import hashlib
import hmac
import json
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from ..handoff import HANDOFF_ENV as HANDOFF_ENV  # where sessions look for the token
from ..handoff import new_token, take, token_digest
from ..redact import redact_argv
from ..safefs import (
    check_inside,
    open_nofollow,
    remove_stale_temps,
    signals_held,
    temp_name,
)
from .errors import (
    PrivilegeError,
    RestoreError,
    SessionBusy,
    StateDirError,
    StateFileError,
    UnknownKnobFile,
)
from .knobset import KnobSet, knobs_at
from .nvpmodel import NvpmodelKnob, nvpmodel_error
from .operating_point import ApplyResult, OperatingPoint, files_for
from .operating_point import apply as apply_point
from .point import CurrentMode
from .privileges import GRANT_HELP, check_privileges
from .steps import (
    DryRunner,
    StepRunner,
    ToolCall,
    ToolResult,
    Write,
    run_tool,
    value_bytes,
    write_bytes,
)

STATE_VERSION = 1
STATE_IN_ROOT = "var/lib/edgeenergy/state.json"
_TOOL = "pytest-edgeenergy"
_HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


# ---------------------------------------------------------------- locations and locking


def _root_key(root: Path) -> str:
    return hashlib.sha256(os.path.realpath(root).encode()).hexdigest()[:16]


def state_locations(root: Path) -> tuple[Path, Path]:
    """The two places a state file for ``root`` may be: in the root (where every session
    keeps it), then per user (where older versions kept it; read only to restore)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return root / STATE_IN_ROOT, Path(base) / "edgeenergy" / f"state-{_root_key(root)}.json"


def choose_state_path(root: Path) -> Path:
    """Where every session on ``root`` keeps its state file and lock (see the module
    docstring)."""
    return root / STATE_IN_ROOT


STATE_DIR_HELP = (
    "Every session of a board keeps its lock and journal in that one directory, so two "
    "sessions never pin the board at once. Make it writable for the users who run sessions, "
    "e.g. with a tmpfiles.d rule (/etc/tmpfiles.d/edgeenergy.conf):\n"
    "  d /var/lib/edgeenergy 2775 root edgeenergy -\n"
    "then `sudo systemd-tmpfiles --create` (members of group edgeenergy may then pin); or "
    "run as root. A session that only measures (no --power-mode, --*-freq, --cpu-cores, "
    "--governor) may run without it, unprotected."
)


def state_dir_problem(root: Path) -> str | None:
    """Why the board's state directory cannot hold the lock and journal (it cannot be
    created or written, or it resolves outside the board); None when it can."""
    directory = (root / STATE_IN_ROOT).parent
    if not os.path.realpath(directory).startswith(os.path.realpath(root).rstrip("/") + "/"):
        return f"resolves to {os.path.realpath(directory)}, outside the board under {root}"
    if directory.exists() and not directory.is_dir():
        return "is not a directory"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot be created ({exc.strerror or exc})"
    if not os.access(directory, os.W_OK | os.X_OK):
        why = "read-only file system" if _read_only(directory) else "no write permission"
        return f"cannot be written by uid {os.geteuid()} ({why})"
    return None


def _read_only(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _lock_path(state_path: Path) -> Path:
    return state_path.with_name(state_path.name + ".lock")


@dataclass(frozen=True)
class LockHolder:
    """Who holds a board's lock, as its lock file records it."""

    pid: int | None
    command: str
    pins: bool | None
    """True: it has changed a knob; False: it only measures; None: not recorded."""
    handoff: str | None = None
    """SHA-256 (hex) of the token that lets the holder's own children run inside its lock;
    None: it lends the lock to no one."""

    def describe(self) -> str:
        """``pid 123 (pytest suites/), which pins it``."""
        pid = str(self.pid) if self.pid is not None else "?"
        command = self.command
        if len(command) > _COMMAND_SHOWN:
            command = command[: _COMMAND_SHOWN - 3] + "..."
        uses = {True: "pins it", False: "only measures it", None: "holds it"}[self.pins]
        if self.handoff is not None and not self.pins:
            uses = "holds it for the sessions it runs"
        return f"pid {pid}" + (f" ({command})" if command else "") + f", which {uses}"

    def lends_to(self, token: str) -> bool:
        """Whether a process given ``token`` may run inside this holder's lock: the record
        carries the token's digest and the holder is this process's parent."""
        return (
            self.handoff is not None
            and self.pid is not None
            and hmac.compare_digest(self.handoff, token_digest(token))
            and self.pid == os.getppid()
        )


_COMMAND_SHOWN = 400
_FIRST_POLL_S = 0.05
_MAX_POLL_S = 0.5


def _command_line() -> str:
    """This process's command line as a user would type it (``pytest suites/ -x``), its
    secrets hidden: the lock file is read by other users' sessions."""
    argv = redact_argv(sys.argv) or ["?"]
    first = Path(argv[0])
    # `python -m pytest` leaves the package's __main__.py in argv[0].
    name = f"python -m {first.parent.name}" if first.name == "__main__.py" else first.name
    return " ".join([name, *(shlex.quote(a) for a in argv[1:])])


def new_handoff_token() -> str:
    """A random token for :class:`StateLock` ``handoff`` (see the module docstring)."""
    return new_token()


def _parse_holder(raw: bytes) -> LockHolder | None:
    """The record in a lock file; None when it is empty or half written."""
    text = raw.decode(errors="replace").strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        first = text.split()[0]
        # Older versions wrote the bare pid.
        return LockHolder(int(first), "", None) if first.isdigit() else None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    pins = data.get("pins")
    handoff = data.get("handoff")
    return LockHolder(
        pid if isinstance(pid, int) else None,
        str(data.get("command") or ""),
        pins if isinstance(pins, bool) else None,
        handoff if isinstance(handoff, str) and handoff else None,
    )


class StateLock:
    """An exclusive ``flock`` on ``<state>.lock``; released by the kernel if we die.

    The file records the holder (pid, command line, whether it pins the board or only
    measures), so a session that finds the board taken can say by whom. A lock of a dead
    process is free: the kernel dropped its flock, and the next session takes it over.

    ``handoff``: a token (:func:`new_handoff_token`) whose digest the record carries, so the
    holder's children given the token can run inside the lock (``acquire(inherit=...)``).
    """

    def __init__(
        self, state_path: Path, *, root: Path | None = None, handoff: str | None = None
    ) -> None:
        self.path = _lock_path(state_path)
        self.root = root
        self._fd: int | None = None
        self._pins = False
        self._handoff = token_digest(handoff) if handoff else None
        self.borrowed: LockHolder | None = None
        """The holder whose lock this process runs inside (``acquire(inherit=...)``); None
        when it holds the lock itself or not at all."""

    def acquire(
        self,
        *,
        who: str = "a session",
        timeout_s: float = 0.0,
        on_wait: Callable[[str], None] | None = None,
        inherit: str | None = None,
    ) -> None:
        """Take the lock, waiting up to ``timeout_s`` for a live holder to let go (polled
        with back-off; ``on_wait`` hears once that we wait). :class:`SessionBusy` names the
        holder when it does not.

        ``inherit``: a hand-off token; when the live holder lends its lock for it
        (:meth:`LockHolder.lends_to`), return at once without taking the lock
        (:attr:`borrowed` names the holder)."""
        deadline = time.monotonic() + timeout_s
        delay_s = _FIRST_POLL_S
        told = False
        while True:
            fd, holder = self._try_lock()
            if fd is not None:
                break
            if holder is None:  # it let go between our tries: try again at once
                continue
            if inherit and holder.lends_to(inherit):
                self.borrowed = holder
                return
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise SessionBusy(self._busy_message(holder, who, timeout_s)) from None
            if not told and on_wait is not None:
                on_wait(
                    f"{self._board()} is held by {holder.describe()}; waiting up to {timeout_s:g} s"
                )
                told = True
            time.sleep(min(delay_s, left_s))
            delay_s = min(delay_s * 2, _MAX_POLL_S)
        self._fd = fd
        self._pins = False
        self._write_record()

    def _try_lock(self) -> tuple[int | None, LockHolder | None]:
        """Our locked descriptor, or the holder's record when the lock is taken; (None,
        None): the holder let go meanwhile, try again."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.root is not None and self.path.parent == (self.root / STATE_IN_ROOT).parent:
            check_inside(self.path.parent, self.root, "the lock file in")
        try:
            fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT, 0o644, what="the lock file")
        except FileNotFoundError:  # a holder leaving removed the empty directory
            return None, None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = None
            for _ in range(3):  # a record being rewritten reads empty or cut: read again
                holder = _parse_holder(os.pread(fd, 4096, 0))
                if holder is not None:
                    break
            os.close(fd)
            return None, holder or LockHolder(None, "", None)
        # A holder unlinks the file before letting go: a lock on an unlinked file is no lock.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(self.path))
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            return None, None
        return fd, None

    def _board(self) -> str:
        return f"board {self.root}" if self.root is not None else f"the board of {self.path}"

    def _busy_message(self, holder: LockHolder, who: str, timeout_s: float) -> str:
        then = (
            f"gave up after waiting {timeout_s:g} s for it to end; run again when it has"
            if timeout_s > 0
            else f"wait for it to end before starting {who}"
        )
        return (
            f"{self._board()} is held by another pytest-edgeenergy session, "
            f"{holder.describe()} (lock {self.path}); {then}"
        )

    def _write_record(self) -> None:
        assert self._fd is not None
        record: dict[str, Any] = {
            "pid": os.getpid(),
            "command": _command_line(),
            "pins": self._pins,
        }
        if self._handoff is not None:
            record["handoff"] = self._handoff
        data = (json.dumps(record) + "\n").encode()
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))

    def mark(self, *, pins: bool) -> None:
        """Record whether this session pins the board now (it changed a knob) or only
        measures; a no-op when the lock is not held or nothing changes."""
        if self._fd is not None and pins != self._pins:
            self._pins = pins
            self._write_record()

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self, *, remove: bool) -> None:
        self.borrowed = None
        if self._fd is None:
            return
        if remove:
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self._fd)
        self._fd = None


# ---------------------------------------------------------------- the state document


@dataclass(frozen=True)
class FileSnapshot:
    """One knob file as it was before the first change (``content`` None: unreadable)."""

    rel: str
    content: bytes | None
    volatile: bool = False
    """A live value (EMC rate): restored only when we wrote it."""
    error: str | None = None


@dataclass
class Snapshot:
    """Everything needed to put the board back."""

    root: str
    created_at: str
    pid: int
    power_mode: CurrentMode | None
    files: list[FileSnapshot]
    writes: list[str] = field(default_factory=list)
    """Relative paths in the order we wrote them (repeats kept)."""
    calls: list[list[str]] = field(default_factory=list)
    forced: bool = False
    """A reboot-needing nvpmodel switch was forced: restoring needs force too."""

    def file(self, rel: str) -> FileSnapshot | None:
        return next((f for f in self.files if f.rel == rel), None)

    def to_json(self) -> dict[str, Any]:
        files: list[dict[str, Any]] = []
        for f in self.files:
            entry: dict[str, Any] = {"path": f.rel, "volatile": f.volatile}
            if f.content is None:
                entry["error"] = f.error or "unreadable"
            else:
                try:
                    entry["text"] = f.content.decode("utf-8")
                except UnicodeDecodeError:
                    entry["b64"] = base64.b64encode(f.content).decode()
            files.append(entry)
        return {
            "tool": _TOOL,
            "version": STATE_VERSION,
            "root": self.root,
            "created_at": self.created_at,
            "pid": self.pid,
            "power_mode": self.power_mode.to_json() if self.power_mode else None,
            "forced": self.forced,
            "files": files,
            "writes": self.writes,
            "calls": self.calls,
        }

    @classmethod
    def from_json(cls, data: Any, *, source: Path) -> Snapshot:
        if not isinstance(data, dict) or data.get("tool") != _TOOL:
            raise StateFileError(f"{source}: not a pytest-edgeenergy state file")
        if data.get("version") != STATE_VERSION:
            raise StateFileError(
                f"{source}: state file version {data.get('version')!r}; this version reads "
                f"{STATE_VERSION}"
            )
        try:
            files = []
            for entry in data["files"]:
                content: bytes | None
                if "text" in entry:
                    content = str(entry["text"]).encode("utf-8")
                elif "b64" in entry:
                    content = base64.b64decode(entry["b64"])
                else:
                    content = None
                files.append(
                    FileSnapshot(
                        str(entry["path"]), content, bool(entry.get("volatile")), entry.get("error")
                    )
                )
            mode = data.get("power_mode")
            return cls(
                root=str(data["root"]),
                created_at=str(data["created_at"]),
                pid=int(data["pid"]),
                power_mode=(
                    CurrentMode(int(mode["id"]), mode.get("name"), str(mode.get("via", "")))
                    if mode
                    else None
                ),
                files=files,
                writes=[str(w) for w in data.get("writes", [])],
                calls=[[str(a) for a in c] for c in data.get("calls", [])],
                forced=bool(data.get("forced", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StateFileError(f"{source}: malformed state file ({exc!r})") from None


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_state(path: Path, snapshot: Snapshot) -> None:
    """Write the state file atomically (temp file, fsync, rename, fsync the directory).

    The temp file is created exclusively and never through a link (a leftover of the same
    name is removed first); the rename replaces whatever is at ``path``, a link included,
    never the file a link points to."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(temp_name(path) + "tmp")
    data = json.dumps(snapshot.to_json(), separators=(",", ":")).encode()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, what="the state file")
    try:
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def load_state(path: Path) -> Snapshot | None:
    """The snapshot in ``path``, None when there is none; :class:`StateFileError` if bad."""
    if path.is_symlink():
        raise StateFileError(
            f"{path}: the state file is a symbolic link (to {os.readlink(path)}); "
            "refusing to read or restore from it: remove it and run again"
        )
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateFileError(f"{path}: cannot read the state file ({exc.strerror})") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise StateFileError(f"{path}: corrupt state file ({exc})") from None
    return Snapshot.from_json(data, source=path)


def remove_state(path: Path) -> None:
    """Delete the state file (and its directory under the root when left empty)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    with contextlib.suppress(OSError):
        _fsync_dir(path.parent)


def _tidy_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.parent.rmdir()


# ---------------------------------------------------------------- snapshot and restore


def current_mode(knobs: KnobSet) -> CurrentMode | None:
    """The power mode now (None when the board has no nvpmodel)."""
    if knobs.nvpmodel_conf is None and knobs.nvpmodel_bin is None:
        return None
    return NvpmodelKnob(knobs).current()


def capture(knobs: KnobSet) -> Snapshot:
    """Read every knob file and the power mode."""
    files: list[FileSnapshot] = []
    volatile = knobs.volatile_files
    for path in knobs.files:
        try:
            content: bytes | None = path.read_bytes()
            error = None
        except OSError as exc:
            content, error = None, exc.strerror or str(exc)
        files.append(FileSnapshot(knobs.rel(path), content, path in volatile, error))
    return Snapshot(
        root=os.path.realpath(knobs.root),
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        pid=os.getpid(),
        power_mode=current_mode(knobs),
        files=files,
    )


@dataclass
class RestoreReport:
    """What a restore did; ``message`` is one human-readable paragraph."""

    root: Path
    state_path: Path | None
    found: bool
    mode: str | None = None
    restored: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    created_at: str | None = None
    pid: int | None = None

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def message(self) -> str:
        if not self.found:
            return f"nothing to restore under {self.root}"
        origin = f"state file {self.state_path}"
        if self.pid is not None:
            origin += f" (session pid {self.pid}, started {self.created_at})"
        parts = [f"restored the board under {self.root} from {origin}:"]
        if self.mode:
            parts.append(self.mode + ";")
        parts.append(
            f"{len(self.restored)} knob file(s) written back"
            + (": " + ", ".join(self.restored) if self.restored else "")
        )
        if self.skipped:
            parts.append("; skipped: " + "; ".join(self.skipped))
        if self.failures:
            parts.append(
                "; FAILED (state file kept, run `edgeenergy board restore --root "
                f"{self.root}` again as root): " + "; ".join(self.failures)
            )
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "state_path": str(self.state_path) if self.state_path else None,
            "found": self.found,
            "ok": self.ok,
            "mode": self.mode,
            "restored": self.restored,
            "failures": self.failures,
            "skipped": self.skipped,
        }


def _restore_order(snapshot: Snapshot) -> list[str]:
    """Cores coming back online first, then our writes in reverse, then the rest."""
    order: list[str] = []
    for f in snapshot.files:
        if f.rel.endswith("/online") and f.content is not None and f.content.strip() == b"1":
            order.append(f.rel)
    for rel in reversed(snapshot.writes):
        if rel not in order:
            order.append(rel)
    for f in snapshot.files:
        if f.rel not in order:
            order.append(f.rel)
    return order


def _restore_mode(
    snapshot: Snapshot, knobs: KnobSet, report: RestoreReport, runner: StepRunner | None
) -> None:
    wanted = snapshot.power_mode
    if wanted is None or knobs.nvpmodel_bin is None:
        return
    knob = NvpmodelKnob(knobs)
    now = knob.current()
    if now is not None and now.id == wanted.id:
        return
    call = ToolCall(
        (str(knobs.nvpmodel_bin), "-m", str(wanted.id)),
        input="YES\n" if snapshot.forced else "NO\n",
        knob="nvpmodel",
        description=f"power mode {wanted.id} {wanted.name or ''}".strip(),
    )
    result: ToolResult | None = runner.call(call) if runner is not None else run_tool(call)
    if result is None:
        report.mode = f"would select power mode {wanted.id} {wanted.name or ''}".strip()
        return
    error = nvpmodel_error(call.argv, result)
    if error is not None:
        report.failures.append(str(error))
        return
    report.mode = f"power mode {wanted.id} {wanted.name or ''} selected".strip()


def restore_snapshot(
    snapshot: Snapshot,
    knobs: KnobSet,
    *,
    state_path: Path | None = None,
    dry_run: bool = False,
    out: TextIO | None = None,
) -> RestoreReport:
    """Put the board back to ``snapshot``: power mode first, then every differing file
    byte-identically. Files that fail (e.g. a min above the current max) are retried in
    later passes until nothing changes; what still differs is listed in ``failures``."""
    root = knobs.root
    report = RestoreReport(root, state_path, True, created_at=snapshot.created_at, pid=snapshot.pid)
    dry = DryRunner(knobs.check_writable, root, out) if dry_run else None
    _restore_mode(snapshot, knobs, report, dry)
    written = set(snapshot.writes)
    wanted: dict[str, bytes] = {}
    for f in snapshot.files:
        if f.content is None:
            if f.rel in written:
                report.failures.append(f"{f.rel}: was written but could not be saved ({f.error})")
            continue
        if f.volatile and f.rel not in written:
            continue
        path = root / f.rel
        if ".." in Path(f.rel).parts or not knobs.allows(path):
            if f.rel in written:  # we changed it and may not put it back: never silent
                report.failures.append(
                    f"/{f.rel}: changed by this session but not a knob file inside the board "
                    "now (a link or outside its sysfs): not written back"
                )
            else:
                report.skipped.append(f"{f.rel} (not a discovered knob file: left alone)")
            continue
        wanted[f.rel] = f.content

    def differs(rel: str) -> bool:
        try:
            return (root / rel).read_bytes() != wanted[rel]
        except OSError:
            return True

    pending = [rel for rel in _restore_order(snapshot) if rel in wanted and differs(rel)]
    errors: dict[str, str] = {}
    for _ in range(len(pending) + 1):
        progress = False
        still: list[str] = []
        for rel in pending:
            if dry is not None:
                text = wanted[rel].decode(errors="replace").strip()
                dry.write(Write(root / rel, text, None, "restore"))
                continue
            try:
                _write_exact(root / rel, wanted[rel])
            except OSError as exc:
                errors[rel] = exc.strerror or str(exc)
                still.append(rel)
                continue
            if differs(rel):
                errors[rel] = "read back differs"
                still.append(rel)
            else:
                progress = True
                errors.pop(rel, None)
                if rel not in report.restored:
                    report.restored.append(rel)
        pending = still
        if not pending or not progress or dry is not None:
            break
    if dry is None:
        for rel in pending:
            current = _read_or_none(root / rel)
            report.failures.append(
                f"/{rel}: {errors.get(rel, 'differs')} (want {_show(wanted[rel])}, "
                f"is {_show(current)})"
            )
    return report


def _write_exact(path: Path, content: bytes) -> None:
    write_bytes(path, content)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _show(content: bytes | None) -> str:
    return "(unreadable)" if content is None else repr(content.decode(errors="replace").strip())


def restore_leftover(
    root: Path,
    *,
    state_path: Path | None = None,
    knobs: KnobSet | None = None,
    dry_run: bool = False,
    out: TextIO | None = None,
) -> RestoreReport:
    """Restore what a killed session left (``edgeenergy board restore --root DIR``).

    Looks for a state file in both :func:`state_locations` (or only ``state_path``).
    Returns a report with ``found`` False when there is nothing to restore. Raises
    :class:`SessionBusy` when a live session holds the state file, :class:`RestoreError`
    when some file could not be put back (the state file is then kept).
    """
    candidates = [state_path] if state_path is not None else list(state_locations(root))
    for path in candidates:
        if not path.exists():
            continue
        lock = StateLock(path, root=root)
        lock.acquire(who="a restore")
        try:
            snapshot = load_state(path)
            if snapshot is None:
                continue
            if knobs is None:  # a state file to restore: only now is the board read
                knobs = knobs_at(root)
            with signals_held():
                report = restore_snapshot(
                    snapshot, knobs, state_path=path, dry_run=dry_run, out=out
                )
            if dry_run:
                return report
            if not report.ok:
                raise RestoreError(report.message)
            remove_state(path)
        finally:
            lock.release(remove=not path.exists())
        if path == root / STATE_IN_ROOT:
            _tidy_dir(path)
        return report
    return RestoreReport(root, None, False)


# ---------------------------------------------------------------- session


SignalHandler = Callable[[int, FrameType | None], Any] | int | None


class _JournalRunner:
    """Records every step in the state file before making it.

    SIGINT/SIGTERM are held during record-and-do, so a Ctrl-C lands between steps: never
    between the record and the change, nor in the middle of an ``nvpmodel`` run (the tool
    inherits the mask, so the terminal's Ctrl-C cannot kill it mid-switch either).
    """

    def __init__(self, session: Session) -> None:
        self._session = session

    def write(self, step: Write) -> None:
        s = self._session
        s._refuse_unprotected()
        s.knobs.check_writable(step.path)
        with signals_held():
            snapshot = s.ensure_snapshot()
            rel = s.knobs.rel(step.path)
            saved = snapshot.file(rel)
            if saved is None or saved.content is None:
                raise UnknownKnobFile(
                    f"refusing to write {step.path}: its content could not be saved first "
                    f"({saved.error if saved else 'not in the snapshot'})"
                )
            snapshot.writes.append(rel)
            s.save()
            s.mark_pinning()
            try:
                _write_exact(step.path, value_bytes(step.value))
            except PermissionError as exc:
                raise PrivilegeError(
                    f"cannot write {step.path} ({exc.strerror}): this process lacks the "
                    f"privilege to change the board's knobs.\n{GRANT_HELP}"
                ) from None

    def call(self, step: ToolCall) -> ToolResult | None:
        s = self._session
        s._refuse_unprotected()
        with signals_held():
            snapshot = s.ensure_snapshot()
            snapshot.calls.append(list(step.argv))
            if step.input is not None and step.input.strip().upper() == "YES":
                snapshot.forced = True
            s.save()
            s.mark_pinning()
            return run_tool(step)


class Session:
    """Pins operating points on one board and always puts it back (the
    :class:`~pytest_edgeenergy.control.journal.Journal` of :func:`apply_point`).

    ``with Session(knobs) as s: s.apply(point)`` — on entry it restores a leftover state
    file of a killed session first (``s.leftover``), then installs restore on normal exit,
    exceptions, SIGINT (Ctrl-C) and SIGTERM (previous handlers are chained; with the
    default SIGTERM action the process then dies of SIGTERM as usual) and at interpreter
    exit. ``dry_run`` prints every write (path, old -> new) and makes none.

    Another live session on the same board is waited for up to ``lock_timeout_s`` (0:
    refused at once); ``on_lock_wait`` hears one line when the wait begins. A session
    started by a holder that hands its lock to its children (``handoff``, by default the
    token this process was given, taken at :meth:`start`) runs inside that holder's lock
    instead (see the module docstring).
    """

    def __init__(
        self,
        knobs: KnobSet,
        *,
        state_path: Path | None = None,
        dry_run: bool = False,
        force: bool = False,
        settle_s: float | None = None,
        handle_signals: bool = True,
        out: TextIO | None = None,
        lock_timeout_s: float = 0.0,
        on_lock_wait: Callable[[str], None] | None = None,
        handoff: str | None = None,
    ) -> None:
        self.knobs = knobs
        self.state_path = (
            state_path if state_path is not None else choose_state_path(self.knobs.root)
        )
        self.dry_run = dry_run
        self.force = force
        self.settle_s = settle_s if settle_s is not None else (0.5 if self.knobs.real else 0.0)
        self.handle_signals = handle_signals
        self.out = out
        self.leftover: RestoreReport | None = None
        self.last_restore: RestoreReport | None = None
        self._snapshot: Snapshot | None = None
        self.lock_timeout_s = lock_timeout_s
        self._on_lock_wait = on_lock_wait or self._say
        self._lock = StateLock(self.state_path, root=self.knobs.root)
        self._handoff = handoff
        self._previous: dict[int, SignalHandler] = {}
        self._active = False
        self._atexit_registered = False
        self.unprotected: str | None = None
        """Why this session holds no lock (its state directory cannot be written): it may
        measure but not pin. None when it holds the board's lock."""

    # -- lifecycle

    def __enter__(self) -> Session:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Lock, restore a leftover from a killed session, install the handlers.

        When the board's state directory cannot be written the session starts unprotected
        (:attr:`unprotected` says why, and a line says so): it may measure, but every change
        is refused with :class:`StateDirError`."""
        if self._active:
            return
        if not self.dry_run:
            problem = (
                state_dir_problem(self.knobs.root)
                if self.state_path == (self.knobs.root / STATE_IN_ROOT)
                else None
            )
            if problem is not None:
                self.unprotected = self._state_dir_message(problem)
                self._say(
                    f"WARNING: {self.unprotected}; this session only measures and is NOT "
                    "protected against a concurrent session that pins the board"
                )
            else:
                self._lock.acquire(
                    timeout_s=self.lock_timeout_s,
                    on_wait=self._on_lock_wait,
                    inherit=self._take_handoff(),
                )
                if self._lock.borrowed is not None:
                    self._say(f"running inside the board lock of {self._lock.borrowed.describe()}")
                remove_stale_temps(self.state_path.parent, suffix=self.state_path.name)
        try:
            if self.unprotected is None:
                self._restore_leftovers()
        except BaseException:
            self._lock.release(remove=False)
            raise
        self._active = True
        if self.dry_run:
            return
        if self.handle_signals:
            self._install()
        atexit.register(self._at_exit)
        self._atexit_registered = True

    def _take_handoff(self) -> str | None:
        """The hand-off token given to this session: ``handoff``, else the one this process
        was given and nothing took yet (:func:`pytest_edgeenergy.handoff.take`)."""
        return self._handoff if self._handoff is not None else take()

    def _restore_leftovers(self) -> None:
        for path in dict.fromkeys([self.state_path, *state_locations(self.knobs.root)]):
            snapshot = load_state(path)
            if snapshot is None:
                continue
            other = StateLock(path, root=self.knobs.root) if path != self.state_path else None
            if other is not None:
                other.acquire()
            try:
                with signals_held():
                    report = restore_snapshot(
                        snapshot, self.knobs, state_path=path, dry_run=self.dry_run, out=self.out
                    )
                self.leftover = report
                self._say(("would have " if self.dry_run else "") + report.message)
                if self.dry_run:
                    continue
                if not report.ok:
                    raise RestoreError(report.message)
                remove_state(path)
            finally:
                if other is not None:
                    other.release(remove=True)

    def close(self) -> RestoreReport | None:
        """Restore the board, remove handlers, release the lock."""
        if not self._active:
            return None
        try:
            report = self.restore()
        finally:
            self._uninstall()
            if self._atexit_registered:
                atexit.unregister(self._at_exit)
                self._atexit_registered = False
            self._active = False
            self._release()
        if report is not None and not report.ok:
            raise RestoreError(report.message)
        return report

    def _state_dir_message(self, problem: str) -> str:
        directory = self.state_path.parent
        return f"the board's lock and journal directory {directory} {problem}"

    def _refuse_unprotected(self) -> None:
        if self.unprotected is not None and not self.dry_run:
            raise StateDirError(
                f"refusing to pin the board under {self.knobs.root}: {self.unprotected}.\n"
                f"{STATE_DIR_HELP}"
            )

    def _release(self) -> None:
        self._lock.borrowed = None
        if self._lock.held:
            self._lock.release(remove=not self.state_path.exists())
            if self.state_path == self.knobs.root / STATE_IN_ROOT:
                _tidy_dir(self.state_path)

    def _say(self, text: str) -> None:
        print(f"edgeenergy: {text}", file=self.out or sys.stderr)

    # -- snapshot and journal

    @property
    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    def ensure_snapshot(self) -> Snapshot:
        """Take and save the snapshot if this is the first change."""
        if self._snapshot is None:
            self._snapshot = capture(self.knobs)
            if self.unprotected is not None:
                return self._snapshot  # nothing may be changed: nothing to journal
            if not self.dry_run:
                self.save()
        return self._snapshot

    def save(self) -> None:
        if self._snapshot is not None and not self.dry_run:
            save_state(self.state_path, self._snapshot)

    def mark_pinning(self) -> None:
        """Record in the lock file that this session has changed the board (a waiting
        session says so)."""
        self._lock.mark(pins=True)

    @property
    def runner(self) -> StepRunner:
        """The runner knobs use inside this session (journals, or prints in a dry run)."""
        if self.dry_run:
            return DryRunner(self.knobs.check_writable, self.knobs.root, self.out)
        return _JournalRunner(self)

    def baseline(self) -> dict[Path, str]:
        """Snapshot values (stripped text) by absolute path: what unpinned knobs go back to."""
        snapshot = self.ensure_snapshot()
        return {
            self.knobs.root / f.rel: f.content.decode(errors="replace").strip()
            for f in snapshot.files
            if f.content is not None
        }

    @property
    def baseline_mode(self) -> CurrentMode | None:
        return self.ensure_snapshot().power_mode

    @property
    def restore_forced(self) -> bool:
        """A reboot-needing power-mode switch was forced since the snapshot."""
        return bool(self._snapshot is not None and self._snapshot.forced)

    def apply(self, point: OperatingPoint, *, raise_on_mismatch: bool = False) -> ApplyResult:
        """Apply ``point`` (see :func:`pytest_edgeenergy.control.operating_point.apply`)."""
        return apply_point(point, self.knobs, self, raise_on_mismatch=raise_on_mismatch)

    def check_privileges(self, points: Sequence[OperatingPoint]) -> None:
        """Before any test runs: :class:`StateDirError` when this session may not pin (no
        lock), :class:`UnknownKnobFile` for a knob file the points need that is a link or
        resolves outside the board, and on a real board one :class:`PrivilegeError` listing
        every file ``points`` need that this process cannot write."""
        files: list[Path] = []
        for point in points:
            files += files_for(point, self.knobs)
        needs_nvpmodel = any(p.power_mode is not None for p in points)
        if files or needs_nvpmodel:
            self._refuse_unprotected()
        for path in dict.fromkeys(files):
            self.knobs.check_writable(path)  # a link or outside the board: refused now
        if needs_nvpmodel and self.knobs.nvpmodel_conf is not None:
            knob = NvpmodelKnob(self.knobs)
            for point in points:
                if point.power_mode is not None:
                    knob.check_inside(knob.resolve(point.power_mode))
        check_privileges(self.knobs, list(dict.fromkeys(files)), needs_nvpmodel=needs_nvpmodel)

    def restore(self) -> RestoreReport | None:
        """Put everything back now (the session stays usable; a later change snapshots
        again). None when nothing was changed."""
        snapshot = self._snapshot
        if snapshot is None:
            return None
        if self.unprotected is not None:  # it changed nothing; the board may be another's
            self._snapshot = None
            return None
        with signals_held():
            report = restore_snapshot(
                snapshot,
                self.knobs,
                state_path=self.state_path,
                dry_run=self.dry_run,
                out=self.out,
            )
            if report.ok and not self.dry_run:
                remove_state(self.state_path)
                self._snapshot = None
                self._lock.mark(pins=False)
        self.last_restore = report
        return report

    # -- signals and exit

    def _install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in _HANDLED_SIGNALS:
            self._previous[signum] = signal.getsignal(signum)
            signal.signal(signum, self._on_signal)

    def _uninstall(self) -> None:
        for signum, previous in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()

    def _restore_reporting(self) -> None:
        try:
            report = self.restore()
        except Exception as exc:  # the process is going down; say why, keep the state file
            self._say(f"restore failed: {exc}")
            return
        if report is not None and not report.ok:
            self._say(report.message)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous.get(signum, signal.SIG_DFL)
        if previous == signal.SIG_IGN:
            return
        self._restore_reporting()
        if callable(previous):
            previous(signum, frame)
            return
        # Default action: leave as the signal would have made us leave.
        self._uninstall()
        self._active = False
        self._release()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def _at_exit(self) -> None:
        if self._active:
            self._restore_reporting()
            self._active = False
            self._release()
