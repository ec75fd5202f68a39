"""A real PostgreSQL server for the tests: initdb in a temporary directory, a UNIX socket
only (``listen_addresses = ''``: no TCP port), started and stopped with ``pg_ctl``.

PostgreSQL refuses to run as root, so when the tests run as root the server runs as an
unprivileged user (``nobody``), which owns the data and socket directories; the tests
connect through the socket as the database superuser ``coretsia`` (``trust``
authentication, which only the socket's directory permissions expose). Where no
PostgreSQL binaries are found (``/usr/lib/postgresql/*/bin``, then ``PATH``), the tests
that need a server are skipped, saying so.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

SUPERUSER = "coretsia"
"""The database superuser the tests connect as."""
START_TIMEOUT = 30
"""Seconds ``pg_ctl`` waits for the server to accept connections (``-t``)."""


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``: Debian's newest, else ``PATH``'s."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(os.path.join(candidate, "initdb"), os.X_OK):
            return Path(candidate)
    initdb = shutil.which("initdb")
    if initdb is not None and shutil.which("pg_ctl") is not None:
        return Path(os.path.realpath(initdb)).parent
    return None


class PgServer:
    """One server: its directories, its user, and the libpq strings that reach it."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self._user = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
        # Short, under /tmp: the socket's path must fit in sockaddr_un (about 100 bytes).
        self.base = Path(tempfile.mkdtemp(prefix="cw-pg-", dir="/tmp"))
        self.data = self.base / "data"
        self.socket_dir = self.base / "sock"
        self.socket_dir.mkdir(mode=0o700)
        os.chmod(self.base, 0o755)  # the socket directory's own mode keeps others out
        if self._user is not None:
            for path in (self.base, self.socket_dir):
                os.chown(path, self._user.pw_uid, self._user.pw_gid)
        try:
            self._initdb()
        except BaseException:
            shutil.rmtree(self.base, ignore_errors=True)
            raise

    def _initdb(self) -> None:
        """A new cluster in ``data``, configured for a socket only, and for speed."""
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        )
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                "max_connections = 200\n"
            )

    def dsn(self, dbname: str = "postgres") -> str:
        """A key=value libpq string for ``dbname`` through the socket."""
        return f"host={self.socket_dir} dbname={dbname} user={SUPERUSER}"

    def url(self, dbname: str = "postgres") -> str:
        """The same as a URI (the socket directory as ``host``), as ``coretsia-queue`` takes."""
        return f"postgresql:///{dbname}?host={self.socket_dir}&user={SUPERUSER}"

    def start(self) -> None:
        """Start the server and wait (bounded) until it accepts connections."""
        self._pg_ctl("start", "-w", "-t", str(START_TIMEOUT), "-l", str(self.base / "log"))

    def stop(self) -> None:
        """Stop the server: fast shutdown (sessions are ended), waited for."""
        self._pg_ctl("stop", "-w", "-t", str(START_TIMEOUT), "-m", "fast")

    def restart(self) -> None:
        """Stop, then start again: every session ends, the data stays."""
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        """Whether the server runs (its pid file exists: ``pg_ctl`` waits for both)."""
        return (self.data / "postmaster.pid").exists()

    def create_database(self, name: str) -> None:
        """A fresh empty database (each test takes its own)."""
        self._run("createdb", "-h", str(self.socket_dir), "-U", SUPERUSER, name)

    def remove(self) -> None:
        """Stop the server if it runs, and remove its directories."""
        if self.running:
            self.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def _pg_ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", str(self.data), *args)

    def _run(self, program: str, *args: str) -> None:
        """Run a PostgreSQL program as the server's user, bounded; fail loudly."""
        done = subprocess.run(
            [str(self.bindir / program), *args],
            capture_output=True,
            text=True,
            cwd=self.base,
            user=None if self._user is None else self._user.pw_uid,
            group=None if self._user is None else self._user.pw_gid,
            extra_groups=None if self._user is None else [],
            timeout=START_TIMEOUT + 30,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr.strip()}")
