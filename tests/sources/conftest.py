"""Fixtures for the reference queues and sources: fake worker contexts
(``tests/support/fake_context.py``), test handlers, an open SQLite queue and where one goes,
and a real PostgreSQL server for the session (``pg_server``) with a fresh database per test.

Their directories are the shared ``short_root``: a waiter's notification socket lives next
to the database, and an AF_UNIX path longer than about 100 bytes cannot be bound (pytest's
tmp_path is long).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_context import FakeContext
from pg_server import PgServer, find_bindir
from pools import install_app

from coretsia.sources.sqlite_queue import SqliteQueue


@pytest.fixture
def make_context() -> Iterator[Callable[..., FakeContext]]:
    """Build FakeContexts; their pipes are closed at teardown."""
    made: list[FakeContext] = []

    def make(*args: Any, **kwargs: Any) -> FakeContext:
        context = FakeContext(*args, **kwargs)
        made.append(context)
        return context

    yield make
    for context in made:
        context.close()


@pytest.fixture
def handlers(short_root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test handlers (``apps/cq_handlers.py``) as an importable module ``cq_handlers``
    in ``app/`` of the root; its name is returned."""
    package = short_root / "app"
    package.mkdir()
    install_app(package, "cq_handlers.py")
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.delitem(sys.modules, "cq_handlers", raising=False)
    return "cq_handlers"


@pytest.fixture
def queue(short_root: Path) -> Iterator[SqliteQueue]:
    """An open SQLite queue in a fresh short root (``var/q.sqlite3``), closed at teardown."""
    with SqliteQueue(short_root / "var" / "q.sqlite3") as q:
        yield q


@pytest.fixture
def db(short_root: Path) -> Path:
    """Where a queue database goes in a fresh short root; nothing is created there."""
    return short_root / "var" / "q.sqlite3"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server for the session (UNIX socket only), removed at its end."""
    bindir = find_bindir()
    if bindir is None:
        pytest.skip(
            "no PostgreSQL binaries (initdb, pg_ctl) in /usr/lib/postgresql/*/bin or on PATH: "
            "install Debian's postgresql package to run the PostgreSQL tests"
        )
    yield from _running_server(bindir)


@pytest.fixture(scope="module")
def own_pg_module_server() -> Iterator[PgServer]:
    """A server of the module's own, for tests that stop and restart it."""
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL binaries (see the pg_server fixture)")
    yield from _running_server(bindir)


def _running_server(bindir: Path) -> Iterator[PgServer]:
    """A new server, started, and removed at the end."""
    server = PgServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.remove()


@pytest.fixture
def own_pg_server(own_pg_module_server: PgServer) -> PgServer:
    """The module's own server, running (a test before may have left it stopped)."""
    if not own_pg_module_server.running:
        own_pg_module_server.start()
    return own_pg_module_server


@pytest.fixture
def own_pg_dsn(own_pg_server: PgServer) -> str:
    """A fresh database on the module's own server."""
    name = f"own{next(_databases)}"
    own_pg_server.create_database(name)
    return own_pg_server.dsn(name)


_databases = itertools.count()


@pytest.fixture
def pg_db(pg_server: PgServer) -> str:
    """A fresh database on the session's server; its name is returned."""
    name = f"test{next(_databases)}"
    pg_server.create_database(name)
    return name


@pytest.fixture
def pg_dsn(pg_server: PgServer, pg_db: str) -> str:
    """The libpq string of a fresh database (``pg_db``)."""
    return pg_server.dsn(pg_db)
