"""The ``postgres`` task source: pools on any number of machines fed by one PostgreSQL queue.

Installed as the entry point ``postgres`` of the group ``coretsia.worker.task_sources``
(with the extra ``coretsia-sources[postgres]``, which brings psycopg 3); it serves the
task type ``queue``. Configure it in ``coretsia.toml``::

    [worker]
    task_type = "queue"
    task_source = "postgres"

    [worker.source_options]
    dsn = "postgresql://worker@db.internal/jobs"  # optional: else the PG* variables
    queue = "default"              # several queues may share one database
    handler = "myapp.jobs:handle"  # required: called with each payload (a str)
    max_attempts = 3               # failed attempts before a message is `failed`
    lease_timeout_ms = 30000       # a dead pool's leases come back after this
    reconnect_timeout_ms = 30000   # a lost connection is retried this long; 0: never
    keep_error_messages = false    # as the sqlite source's

and add work with ``coretsia-queue enqueue --db postgresql://... PAYLOAD...``. The queue
itself, and why leases expire and are renewed, is :mod:`coretsia.sources.postgres_queue`;
how a worker waits and settles is :mod:`coretsia.sources._pg_worker_source`.

This module is what the supervisor imports at ``start`` (to read ``task_type`` and to
check the options): it imports neither psycopg nor the worker's side, and connects to
nothing. ``make_source`` imports them, in the worker that uses this source only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from coretsia.sources._pg_options import parse_options
from coretsia.sources._source_common import TASK_TYPE, SourceOptionError, read_context

if TYPE_CHECKING:
    from coretsia.sources._pg_worker_source import PostgresSource
    from coretsia.worker_protocol.task_source import TaskSourceContext


def make_source(context: TaskSourceContext) -> PostgresSource:
    """The factory named by the entry point: check the options, import the handler, build."""
    options, handler, generation = read_context(context, "postgres", parse_options)
    # deferred: optional extra
    from coretsia.sources._pg_worker_source import PostgresSource

    return PostgresSource(context, options, handler, generation)


def check_options(options: Mapping[str, object]) -> None:
    """The SPI's ``check_options`` (run by the supervisor at ``start``): imports nothing."""
    parse_options(options)


make_source.task_type = TASK_TYPE  # type: ignore[attr-defined]
"""Read by the supervisor at ``start``: the task type this factory serves."""
make_source.check_options = check_options  # type: ignore[attr-defined]
"""Called by the supervisor at ``start`` with ``[worker.source_options]``."""

__all__ = ["SourceOptionError", "check_options", "make_source"]
