"""A real, throwaway PostgreSQL server for the tests (Debian's binaries, no mock).

:func:`pg_server` runs ``initdb`` in a temporary directory and starts ``postgres``
listening on a unix socket in that directory only (no TCP port, so parallel test workers
cannot collide), trust authentication for the local user, and stops it at exit. initdb
and postgres refuse to run as root: as root the server runs as the ``postgres`` user
(the data directory is handed to it). The Makefile installs Debian's ``postgresql`` when
the binaries are missing; their absence is an error here, never a skip.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def bindir() -> Path:
    """The directory holding ``initdb``/``pg_ctl``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidate = Path(out.stdout.strip())
        if (candidate / "initdb").exists():
            return candidate
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise RuntimeError(
        "PostgreSQL server binaries (initdb) not found: install Debian's postgresql package "
        "(the Makefile's venv step does)"
    )


@contextmanager
def pg_server() -> Iterator[str]:
    """Start a server; yield its ``postgresql://`` URL (database ``postgres``)."""
    bins = bindir()
    as_root = os.geteuid() == 0
    # /tmp as root: the postgres user must reach the directory, which a TMPDIR under
    # /root would not let it.
    top = Path(tempfile.mkdtemp(prefix="edgeenergy-pg-", dir="/tmp" if as_root else None))
    data, sock = top / "data", top / "s"
    sock.mkdir()
    if as_root:
        shutil.chown(top, "postgres")
        shutil.chown(sock, "postgres")
        top.chmod(0o755)

    def run(*cmd: str) -> None:
        full = (["runuser", "-u", "postgres", "--"] if as_root else []) + list(cmd)
        done = subprocess.run(full, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stdout}{done.stderr}")

    try:
        run(str(bins / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        options = f"-c listen_addresses='' -c unix_socket_directories={sock} -c fsync=off"
        run(
            str(bins / "pg_ctl"), "-D", str(data), "-o", options,
            "-l", str(top / "log"), "-w", "-t", "60", "start",
        )  # fmt: skip
        try:
            yield f"postgresql://postgres:secret-pw@/postgres?host={sock}"
        finally:
            run(str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(top, ignore_errors=True)


def fresh_database(server_url: str, prefix: str) -> str:
    """A new, empty database on the server at ``server_url`` (a :func:`pg_server` URL);
    its URL. Each test gets its own: no test sees another's tables."""
    import uuid

    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.replace("/postgres?", f"/{name}?", 1)
