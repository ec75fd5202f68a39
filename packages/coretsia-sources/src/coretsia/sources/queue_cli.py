"""``coretsia-queue``: the queue commands of ``coretsia-sqlite-queue`` for either backend.

::

    coretsia-queue enqueue --db URL [--queue NAME] PAYLOAD...
    coretsia-queue stats --db URL [--queue NAME] [--json]
    coretsia-queue failed --db URL [--queue NAME] [--json]
    coretsia-queue retry --db URL [--queue NAME] (ID... | --all)
    coretsia-queue purge --db URL [--queue NAME] (--done | --failed)
    coretsia-queue check --db URL [--queue NAME]
    coretsia-queue recover --db sqlite:///PATH --to NEW_PATH

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

from coretsia.sources import cli
from coretsia.sources._pg_names import DEFAULT_QUEUE
from coretsia.sources._queue_parser import Database, queue_parser
from coretsia.sources.sqlite_queue import SqliteQueue

build_parser = queue_parser
"""The argument parser (also what the man page generator reads)."""


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
    return cli.run(queue_parser(), open_queue, argv)


if __name__ == "__main__":
    sys.exit(main())
