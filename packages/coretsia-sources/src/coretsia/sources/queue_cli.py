"""``coretsia-queue``: the queue commands of ``coretsia-sqlite-queue`` for either backend.

::

    coretsia-queue enqueue --db URL [--queue NAME] PAYLOAD...
    coretsia-queue stats --db URL [--queue NAME] [--json]
    coretsia-queue failed --db URL [--queue NAME] [--json]
    coretsia-queue retry --db URL [--queue NAME] (ID... | --all)
    coretsia-queue purge --db URL [--queue NAME] (--done | --failed)

``URL`` names the backend: ``sqlite:///relative/path`` or ``sqlite:////absolute/path``
(SQLAlchemy's convention: the path is what follows the third slash), or a libpq URI,
``postgresql://...`` (``postgres://`` too), including the socket form
``postgresql:///dbname?host=/socket/dir&user=name``. A password is better left to the
``PGPASSWORD`` or ``PGPASSFILE`` environment variables than written on a command line that
``ps`` shows; the URL is never echoed, in an error or elsewhere. The commands, their
output (``stats --json`` has the keys ``pending``, ``in_flight``, ``done`` and ``failed``
for both) and their exit statuses are those of :mod:`coretsia.sources.cli`, whose code
this shares. ``enqueue`` creates the queue's schema (PostgreSQL: tables and migration
table) on first use; the other commands never do. An SQLite file holds one queue:
``--queue`` other than ``default`` is for PostgreSQL only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NamedTuple

from coretsia.sources import cli
from coretsia.sources._pg_options import DEFAULT_QUEUE, MAX_QUEUE_NAME, valid_queue_name
from coretsia.sources.sqlite_queue import SqliteQueue

PROG = "coretsia-queue"
DESCRIPTION = (
    "Add work to a Coretsia queue (SQLite or PostgreSQL), show it, and handle failed messages."
)
_SQLITE = "sqlite:///"
_POSTGRES = ("postgresql://", "postgres://")


class Database(NamedTuple):
    """A parsed ``--db``: the backend and where (a path, or a libpq URI: a secret)."""

    backend: str
    target: str

    def __repr__(self) -> str:  # argparse or a traceback must never show a URI
        return f"Database({self.backend!r})"


def database_url(text: str) -> Database:
    """An argparse type: ``sqlite:///PATH`` or a ``postgresql://`` URI; never echoed."""
    if text.startswith(_SQLITE) and len(text) > len(_SQLITE):
        return Database("sqlite", text[len(_SQLITE) :])
    if text.startswith(_POSTGRES):
        return Database("postgres", text)
    raise argparse.ArgumentTypeError(
        "not a queue URL: give sqlite:///PATH, sqlite:////ABSOLUTE/PATH or postgresql://..."
    )


def queue_name(text: str) -> str:
    """An argparse type: a queue name (1 to 40 of ``A-Z a-z 0-9 _ . -``)."""
    if not valid_queue_name(text):
        raise argparse.ArgumentTypeError(
            f"a queue name is 1 to {MAX_QUEUE_NAME} characters of A-Z a-z 0-9 _ . -"
        )
    return text


def _db_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--db",
        required=True,
        type=database_url,
        metavar="URL",
        help="the queue database: sqlite:///PATH or postgresql://...",
    )
    command.add_argument(
        "--queue",
        type=queue_name,
        default=DEFAULT_QUEUE,
        metavar="NAME",
        help=f"the queue (PostgreSQL: several share a database; default {DEFAULT_QUEUE})",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also what the man page generator reads)."""
    return cli.build_parser(PROG, DESCRIPTION, db=_db_options)


def open_queue(args: argparse.Namespace, create: bool) -> cli.OperatorQueue:
    """The queue ``--db`` and ``--queue`` name; psycopg is imported for PostgreSQL only."""
    db: Database = args.db
    if db.backend == "sqlite":
        if args.queue != DEFAULT_QUEUE:
            raise cli.UsageError("an SQLite file holds one queue: --queue is for PostgreSQL")
        return SqliteQueue(db.target, create=create)
    try:
        from coretsia.sources.postgres_queue import PostgresQueue
    except ImportError:
        raise cli.UsageError(
            "PostgreSQL needs the extra: pip install 'coretsia-sources[postgres]'"
        ) from None
    return PostgresQueue(db.target, args.queue, create=create)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return (and, as a console script, exit with) its status."""
    return cli.run(build_parser(), open_queue, argv)


if __name__ == "__main__":
    sys.exit(main())
