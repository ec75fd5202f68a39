"""The ``postgres`` source as a worker runs it: claim, wait, settle, renew.

Imported by :func:`coretsia.sources.postgres_source.make_source` in the worker only
(it imports psycopg); the supervisor imports the entry point's module, never this one.
"""

from __future__ import annotations

import select
import time
import weakref
from typing import TYPE_CHECKING, Final

from coretsia.sources._pg_heartbeat import Heartbeat
from coretsia.sources._queue_records import Message, QueueError
from coretsia.sources._source_common import Handler, QueueTask, describe
from coretsia.sources.postgres_queue import PostgresQueue

if TYPE_CHECKING:
    from coretsia.sources._pg_options import PostgresOptions
    from coretsia.worker_protocol.task_source import TaskSourceContext

MIN_WAIT_SECONDS: Final = 0.02
"""The shortest wait for an expiry: a lease that expired but is still locked by its
renewal is looked at again after this, not in a tight loop."""


class PostgresTask(QueueTask):
    """One leased message of the PostgreSQL queue (:class:`QueueTask`'s settlement rules)."""

    __slots__ = ()


class PostgresSource:
    """The task source of one worker: claims messages for its generation, one at a time.

    On construction it connects (creating or upgrading the schema if needed), starts
    listening for the queue's notifications and takes back the expired leases; if the
    server cannot be reached then, :meth:`assert_ready` tries once more and raises
    (``worker-task-source-not-ready``). While idle it waits on its connection and the
    pool's stop descriptor together, for at most the time until the next lease of the
    queue expires (when there is one): new work, a stop and a dead pool's lease all wake
    it, and nothing else does.

    A lost connection is not retried: the next ``receive`` (or settlement) raises
    :class:`QueueError`, the worker exits with ``worker-task-source-receive-failed`` (or
    ``worker-task-settlement-failed``), and the pool fails; its leases come back after
    the lease timeout. docs/task-sources.md says why.
    """

    def __init__(
        self,
        context: TaskSourceContext,
        options: PostgresOptions,
        handler: Handler,
        generation: str,
    ) -> None:
        self._context = context
        self._options = options
        self._handler = handler
        self._generation = generation
        self._queue: PostgresQueue | None = None
        self._reap_due = 0.0
        self._heartbeat = Heartbeat(options.dsn, options.queue, options.lease_timeout_ms)
        # The message leased with the last acknowledgement (at most one), shared with the
        # finalizer: a worker that leaves without another receive() gives it back.
        self._ahead: list[Message] = []
        self._resources: list[PostgresQueue] = []
        self._finalizer = weakref.finalize(
            self, _close_all, self._heartbeat, self._resources, self._ahead
        )
        try:
            self._open()
        except QueueError:
            pass  # assert_ready tries again and reports it

    def _open(self) -> PostgresQueue:
        """The connection, listening, expired leases taken back (on first success)."""
        if self._queue is None:
            queue = PostgresQueue(self._options.dsn, self._options.queue)
            try:
                queue.listen()  # before the first look: no notification can fall between
                self._reap(queue)
            except BaseException:
                queue.close()
                raise
            self._queue = queue
            self._resources.append(queue)
        return self._queue

    @property
    def handler(self) -> Handler:
        """What a task's ``run`` calls with its payload."""
        return self._handler

    def assert_ready(self) -> None:
        """Raise unless the server answers and holds the queue schema."""
        self._open().check()

    def receive(self) -> PostgresTask | None:
        """The next message as a task; None only once a cooperative stop is requested."""
        queue = self._open()
        stop = self._context.stop_fileno()
        connection = queue.listen()
        if self._ahead and not self._context.stopping:
            return PostgresTask(self, self._ahead.pop())
        while not self._context.stopping:
            if time.monotonic() >= self._reap_due:
                self._reap(queue)
            queue.poked = False
            message = queue.claim(self._generation, self._options.lease_timeout_ms)
            if message is not None:
                self._heartbeat.hold(message.token)
                return PostgresTask(self, message)
            if queue.poked:
                continue  # something was enqueued while we looked: look again
            expiry = queue.next_expiry()
            timeout = None if expiry is None else max(expiry, MIN_WAIT_SECONDS)
            ready = select.select([connection, stop], [], [], timeout)[0]
            if not ready:
                self._reap_due = 0.0  # a lease's expiry came: take it back if still due
            # A readable connection: the next statement reads the notification (or finds
            # the connection closed, and raises).
        self._release_ahead()
        return None

    def acknowledge(self, message: Message) -> None:
        """Settle ``message`` done, and lease the next one ahead in the same statement.

        The worker asks for its next task right after this, so leasing it now saves a
        round trip per task (as the SQLite source does). Not while stopping: the message
        would only be given back. Raises ``LeaseLostError`` if the lease was taken back.
        """
        queue = self._open()
        try:
            if self._context.stopping:
                queue.ack(message)
                return
            ahead = queue.ack_and_claim(message, self._generation, self._options.lease_timeout_ms)
        finally:
            self._heartbeat.release(message.token)
        if ahead is not None:
            self._heartbeat.hold(ahead.token)
            self._ahead.append(ahead)

    def record_failure(self, message: Message, error: BaseException) -> str:
        """Record a failed attempt of ``message``; its new state (``pending``/``failed``)."""
        text = describe(error, with_message=self._options.keep_error_messages)
        try:
            return self._open().fail(message, self._options.max_attempts, text)
        finally:
            self._heartbeat.release(message.token)

    def _reap(self, queue: PostgresQueue) -> None:
        """Take back expired leases; again at most half a lease timeout from now.

        A busy worker never waits, so it looks here (one statement every half timeout):
        a dead pool's leases come back even while every live worker has work.
        """
        queue.reap(self._options.max_attempts)
        self._reap_due = time.monotonic() + self._options.lease_timeout_ms / 2000

    def _release_ahead(self) -> None:
        """Give back the message leased ahead, if any: this worker will not run it."""
        if self._ahead and self._queue is not None:
            message = self._ahead.pop()
            self._queue.release(message)
            self._heartbeat.release(message.token)

    def close(self) -> None:
        """Give back a message leased ahead, stop the heartbeat, close; idempotent."""
        self._finalizer()


def _close_all(heartbeat: Heartbeat, resources: list[PostgresQueue], ahead: list[Message]) -> None:
    """Give back a message leased ahead (at a clean exit too), then close everything."""
    try:
        for resource in resources:
            while ahead:
                resource.release(ahead.pop())
    except QueueError:
        pass  # still leased: it expires after the lease timeout, as a dead worker's does
    finally:
        heartbeat.close()
        for resource in resources:
            resource.close()
        resources.clear()


__all__ = ["PostgresSource", "PostgresTask"]
