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
from coretsia.sources._source_options import COMMON_OPTIONS, Option, Text, parse
from coretsia.worker_protocol._strict import Int
from coretsia.worker_protocol.catalogue import ConfigRule

DEFAULT_LEASE_TIMEOUT_MS: Final = 30_000
MIN_LEASE_TIMEOUT_MS: Final = 100
MAX_LEASE_TIMEOUT_MS: Final = 86_400_000
DEFAULT_RECONNECT_TIMEOUT_MS: Final = 30_000
MAX_RECONNECT_TIMEOUT_MS: Final = 86_400_000
OPTIONS: Final = {
    "dsn": Option(Text(lambda dsn: "\0" not in dsn), None, ConfigRule.NOT_ONE_OF),
    "queue": Option(Text(valid_queue_name), DEFAULT_QUEUE, ConfigRule.NOT_ONE_OF),
    **COMMON_OPTIONS,
    "lease_timeout_ms": Option(
        Int(MIN_LEASE_TIMEOUT_MS, MAX_LEASE_TIMEOUT_MS), DEFAULT_LEASE_TIMEOUT_MS
    ),
    "reconnect_timeout_ms": Option(Int(0, MAX_RECONNECT_TIMEOUT_MS), DEFAULT_RECONNECT_TIMEOUT_MS),
}


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
    values = parse(options, OPTIONS)
    return PostgresOptions(**{**values, "dsn": values["dsn"] or None})
