"""What the queue hands out and raises: its errors and value records.

Public through :mod:`coretsia.sources.sqlite_queue`, which also claims them as its own
(``__module__``): see there for why.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from coretsia.worker_protocol.records import Frozen, field

Synchronous = Literal["FULL", "NORMAL"]


class QueueError(Exception):
    """The database cannot be used as a queue (missing, foreign, newer schema...).

    ``token`` names the kind for ``coretsia-queue check``: each subclass has its own.
    """

    token = "queue-unavailable"


class QueueSchemaError(QueueError):
    """The database holds no queue schema, or one of another version."""

    token = "queue-schema-invalid"


class QueueCorruptError(QueueError):
    """The queue file is damaged, or is not a database (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``)."""

    token = "queue-corrupt"


class QueueFullError(QueueError):
    """No space is left for the queue file to grow (``SQLITE_FULL``, or a full file system)."""

    token = "queue-full"


class LeaseLostError(QueueError):
    """``ack``/``fail`` of a message that is no longer leased with this lease's token."""


class Message(Frozen):
    """One leased message: what a worker needs to run it and to settle it exactly once.

    ``attempts`` counts the earlier failed (or interrupted) attempts; ``token`` is this
    lease's secret, without which the row cannot be settled (never in a ``repr``).

    Coretsia's one record base rather than :mod:`dataclasses`, which would import
    :mod:`inspect` on every worker's boot (measured:
    ``docs/performance.md#timings-the-code-refers-to``).
    """

    id: int
    payload: str
    attempts: int
    generation: str
    token: str = field(secret=True)


class FailedMessage(Frozen):
    """A message that failed for good, as an operator sees it: never its payload.

    ``settled_at`` is a Unix time (seconds); ``last_error`` the recorded description.
    """

    id: int
    attempts: int
    settled_at: float | None
    last_error: str | None


class Retried(NamedTuple):
    """What :meth:`SqliteQueue.retry` did: how many went back, and what it refused."""

    retried: int
    unknown: tuple[int, ...]
    """Ids with no message."""
    not_failed: tuple[int, ...]
    """Ids of messages in another state (pending, leased or done): left as they are."""


def lease_lost(message: Message) -> LeaseLostError:
    """The error of every settlement whose lease no longer holds (one wording)."""
    return LeaseLostError(f"message {message.id} is not leased with this lease")
