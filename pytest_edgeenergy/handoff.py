"""The board lock's hand-off: a token given to one child process, and taken by it once.

A holder of a board's lock that runs its own sessions one after the other (``edgeenergy
ab``) records the SHA-256 of a random token in the lock file
(:class:`~pytest_edgeenergy.control.state.StateLock`); a session given the token runs
inside that lock when the holder is its parent. The token is bound to that one child:

* it travels through a pipe, never the environment: ``/proc/PID/environ`` of a process
  keeps its initial environment (removing a variable later does not change it) and any
  process of the same user can read it, so a token there could be read by anything the
  session starts. The child's environment holds only ``HANDOFF_ENV=FD:HOLDER_PID``, the
  descriptor number of the pipe's read end (inherited by that child alone, ``pass_fds``)
  and the giver's pid;
* the child takes it once (:func:`take`): the variable is removed from its environment, the
  pipe read to its end and closed, so the processes it starts later get nothing; a process
  whose parent is not the giver (a grandchild that inherited the variable) leaves the
  descriptor alone and gets no token;
* the lock lends itself only to a process whose parent is the holder
  (:meth:`~pytest_edgeenergy.control.state.LockHolder.lends_to`), so even a token copied
  out of memory lets no grandchild in.

Standard library only, cheap to import: the pytest plugin takes the token in every session
that was given one, before anything else.
"""

from __future__ import annotations

import contextlib
import os
import stat

HANDOFF_ENV = "EDGEENERGY_LOCK_HANDOFF"
"""``FD:HOLDER_PID``: where a child of the lock's holder reads its hand-off token."""
_MAX_TOKEN_BYTES = 256


def new_token() -> str:
    """A random hand-off token."""
    import secrets

    return secrets.token_hex(16)


def token_digest(token: str) -> str:
    """What a lock file records of a token (SHA-256, hex)."""
    import hashlib

    return hashlib.sha256(token.encode()).hexdigest()


def give(token: str, env: dict[str, str]) -> int:
    """Put ``token`` for one child: returns the read end of a pipe holding it (pass it to
    that child alone, ``subprocess.Popen(..., pass_fds=(fd,))``, then close it here) and
    sets ``env[HANDOFF_ENV]`` (the child's environment) to name it."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, token.encode())
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    env[HANDOFF_ENV] = f"{read_fd}:{os.getpid()}"
    return read_fd


def take() -> str | None:
    """This process's hand-off token, taken once: :data:`HANDOFF_ENV` is removed from the
    environment and the pipe it names read and closed. None when none was given, when the
    variable was already taken, or when this process's parent is not the giver (the
    descriptor, then not ours, is left alone)."""
    value = os.environ.pop(HANDOFF_ENV, None)
    if value is None:
        return None
    fd_text, _, giver_text = value.partition(":")
    if not (fd_text.isdigit() and giver_text.isdigit()) or int(giver_text) != os.getppid():
        return None
    fd = int(fd_text)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
    except OSError:
        return None
    try:
        # Written whole before the child existed (at most PIPE_BUF bytes: one read).
        data = os.read(fd, _MAX_TOKEN_BYTES)
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return data.decode(errors="replace").strip() or None
