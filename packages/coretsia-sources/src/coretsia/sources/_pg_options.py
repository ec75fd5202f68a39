"""The ``postgres`` source's options, checked without importing the driver.

The supervisor imports the source's entry point at ``start`` to check
``[worker.source_options]`` and never connects to the database, so nothing here imports
psycopg or opens anything. ``dsn`` is a secret (it may hold a password): an error names
the key ``dsn`` and a rule, never the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from coretsia.sources._pg_names import DEFAULT_QUEUE, valid_queue_name
from coretsia.sources._source_common import (
    COMMON_OPTIONS,
    SourceOptionError,
    check_unknown,
    common_options,
    int_option,
)
from coretsia.worker_protocol.catalogue import ConfigRule

DEFAULT_LEASE_TIMEOUT_MS: Final = 30_000
MIN_LEASE_TIMEOUT_MS: Final = 100
MAX_LEASE_TIMEOUT_MS: Final = 86_400_000
DEFAULT_RECONNECT_TIMEOUT_MS: Final = 30_000
MAX_RECONNECT_TIMEOUT_MS: Final = 86_400_000
OPTIONS: Final = COMMON_OPTIONS | {"dsn", "queue", "lease_timeout_ms", "reconnect_timeout_ms"}


class PostgresOptions(NamedTuple):
    """``[worker.source_options]`` of the ``postgres`` source, checked."""

    dsn: str | None
    """None: libpq's defaults (the ``PG*`` environment variables)."""
    queue: str
    handler: str
    max_attempts: int
    lease_timeout_ms: int
    keep_error_messages: bool
    reconnect_timeout_ms: int
    """How long a worker that lost its connection tries to reconnect; 0: not at all."""


def parse_options(options: Mapping[str, object]) -> PostgresOptions:
    """Every option checked, in a fixed order (unknown keys first); imports nothing."""
    check_unknown(options, OPTIONS)
    dsn = options.get("dsn")
    if dsn is not None and not isinstance(dsn, str):
        raise SourceOptionError("dsn", ConfigRule.WRONG_TYPE)
    if dsn is not None and "\0" in dsn:
        raise SourceOptionError("dsn", ConfigRule.NOT_ONE_OF)
    queue = options.get("queue", DEFAULT_QUEUE)
    if not isinstance(queue, str):
        raise SourceOptionError("queue", ConfigRule.WRONG_TYPE)
    if not valid_queue_name(queue):
        raise SourceOptionError("queue", ConfigRule.NOT_ONE_OF)
    handler, max_attempts, keep_error_messages = common_options(options)
    lease_timeout_ms = int_option(
        options,
        "lease_timeout_ms",
        DEFAULT_LEASE_TIMEOUT_MS,
        MIN_LEASE_TIMEOUT_MS,
        MAX_LEASE_TIMEOUT_MS,
    )
    reconnect_timeout_ms = int_option(
        options,
        "reconnect_timeout_ms",
        DEFAULT_RECONNECT_TIMEOUT_MS,
        0,
        MAX_RECONNECT_TIMEOUT_MS,
    )
    return PostgresOptions(
        dsn or None,
        queue,
        handler,
        max_attempts,
        lease_timeout_ms,
        keep_error_messages,
        reconnect_timeout_ms,
    )
