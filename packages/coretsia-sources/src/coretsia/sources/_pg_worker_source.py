"""The ``postgres`` source as a worker runs it: lease, wait, settle, renew, reconnect.

Imported by :func:`coretsia.sources.postgres_source.make_source` in the worker only
(it imports psycopg); the supervisor imports the entry point's module, never this one.
"""

from __future__ import annotations

import contextlib
import random
import select
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeVar

from coretsia.sources._pg_connection import QueueUnavailableError
from coretsia.sources._pg_heartbeat import Heartbeat
from coretsia.sources._queue_records import LeaseLostError, Message
from coretsia.sources._queue_source import QueueSource
from coretsia.sources._source_common import Handler, QueueTask
from coretsia.sources.postgres_queue import PostgresQueue

if TYPE_CHECKING:
    from coretsia.sources._pg_options import PostgresOptions
    from coretsia.worker_protocol.task_source import TaskSourceContext

T = TypeVar("T")

MIN_WAIT_SECONDS: Final = 0.02
"""The shortest wait for an expiry: a lease that expired but is still locked by its
renewal is looked at again after this, not in a tight loop."""
FIRST_RETRY_SECONDS: Final = 0.05
"""The first pause before a reconnection; each one doubles it, up to the next bound."""
MAX_RETRY_SECONDS: Final = 0.5
"""The longest pause between two reconnections: the work resumes within about this of
the server's return, and a pool of N workers tries at most 4N connections a second."""


class PostgresTask(QueueTask):
    """One leased message of the PostgreSQL queue (:class:`QueueTask`'s settlement rules)."""

    __slots__ = ()


class PostgresSource(QueueSource[PostgresQueue, PostgresTask]):
    """The task source of one worker: leases messages for its generation, one at a time.

    On construction it connects (creating or upgrading the schema if needed), starts
    listening for the queue's notifications and takes back the expired leases; if the
    server cannot be reached then, :meth:`assert_ready` tries once more and raises
    (``worker-task-source-not-ready``). While idle it waits on its connection and the
    pool's stop descriptor together, for at most the time until the next lease of the
    queue expires (when there is one): new work, a stop and a dead pool's lease all wake
    it, and nothing else does. The loop itself is
    :class:`~coretsia.sources._queue_source.QueueSource`'s.

    **A lost connection is ridden out** for ``reconnect_timeout_ms``: the worker reports
    the outage (``context.report_unavailable``), reconnects after pauses that double from
    :data:`FIRST_RETRY_SECONDS` to :data:`MAX_RETRY_SECONDS` (each between half and all
    of its length, so that a pool's workers do not knock together), then reports its
    return and carries on where it was: a ``receive`` looks again, a settlement is sent
    again with the same lease. A lease that no longer holds by then (it expired and may
    have been taken, or the settlement had committed as the connection broke) is
    reported (``context.report_lease_lost``), never settled twice. Past the timeout the
    :class:`QueueUnavailableError` is raised: the worker fails with
    ``worker-task-source-receive-failed`` (or ``worker-task-settlement-failed``) and its
    fault, and so does the pool, as before. docs/task-sources.md says more.
    """

    task_class = PostgresTask

    def __init__(
        self,
        context: TaskSourceContext,
        options: PostgresOptions,
        handler: Handler,
        generation: str,
    ) -> None:
        self._options = options
        self._recover_due = 0.0
        self._descriptor = -1
        """The connection's descriptor, read by the last look."""
        self._heartbeat = Heartbeat(options.dsn, options.queue, options.lease_timeout_ms)
        super().__init__(
            context,
            handler,
            generation=generation,
            max_attempts=options.max_attempts,
            keep_error_messages=options.keep_error_messages,
            extras=[self._heartbeat],
        )

    def _connect(self) -> PostgresQueue:
        """The connection, listening, expired leases taken back."""
        queue = PostgresQueue(self._options.dsn, self._options.queue)
        try:
            queue.listen()  # before the first look: no notification can fall between
            self._recover(queue)
        except BaseException:
            queue.close()
            raise
        return queue

    def assert_ready(self) -> None:
        """Raise unless the server answers and holds the queue schema."""
        self._open().check()

    def _lease(self, queue: PostgresQueue) -> Message | None:
        # Read now, while the connection is known good: a closed one has no descriptor.
        self._descriptor = queue.listen()
        if time.monotonic() >= self._recover_due:
            self._recover(queue)
        queue.poked = False
        return queue.lease(self._generation, self._options.lease_timeout_ms)

    def _ack_and_lease(self, queue: PostgresQueue, message: Message) -> Message | None:
        return queue.ack_and_lease(message, self._generation, self._options.lease_timeout_ms)

    def _wait(self, queue: PostgresQueue) -> None:
        """Until a notification, a stop or the next lease's expiry; at once if poked.

        When poked, something was enqueued while the lease looked: look again.
        """
        if queue.poked:
            return
        expiry = queue.next_expiry()
        timeout = None if expiry is None else max(expiry, MIN_WAIT_SECONDS)
        ready = select.select([self._descriptor, self._context.stop_fileno()], [], [], timeout)[0]
        if not ready:
            self._recover_due = 0.0  # a lease's expiry came: take it back if still due
        # A readable connection: the next statement reads the notification (or finds the
        # connection closed, and raises).

    def _leased(self, message: Message) -> None:
        self._heartbeat.hold(message.token)

    def _unleased(self, message: Message) -> None:
        self._heartbeat.release(message.token)

    def _giving_back(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.suppress(QueueUnavailableError)  # it expires after the lease timeout

    def _call(self, operation: Callable[[PostgresQueue], T], *, waiting: bool) -> T | None:
        """``operation`` with the connection, again after an outage (the class's doc).

        None when a stop came while ``waiting`` through an outage, or when, after an
        outage, the lease no longer held: reported, not settled.
        """
        interrupted = False
        while True:
            try:
                return operation(self._open())
            except QueueUnavailableError as lost:
                interrupted = True
                if not self._reconnect(lost, waiting=waiting):
                    return None
            except LeaseLostError:
                if not interrupted:
                    raise
                self._context.report_lease_lost()
                return None

    def _reconnect(self, lost: QueueUnavailableError, *, waiting: bool) -> bool:
        """Reconnect after ``lost``, for at most ``reconnect_timeout_ms``; True once back.

        ``waiting`` (in ``receive``): False as soon as a stop is requested. A settlement
        is not given up for a stop: its task ran, and the stop's own timeout bounds it.
        Raises the last :class:`QueueUnavailableError` past the timeout.
        """
        self._drop()
        deadline = time.monotonic() + self._options.reconnect_timeout_ms / 1000
        fault = lost.fault
        self._context.report_unavailable(fault)
        pause = FIRST_RETRY_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            nap = min(left, random.uniform(pause / 2, pause))
            pause = min(pause * 2, MAX_RETRY_SECONDS)
            if waiting and self._context.wait_for_stop(nap):
                return False
            if not waiting:
                time.sleep(nap)
            try:
                self._open()
            except QueueUnavailableError as again:
                if again.fault is not fault:
                    fault = again.fault
                    self._context.report_unavailable(fault)
                lost = again
                continue
            self._context.report_available()
            return True
        raise lost

    def _drop(self) -> None:
        """Forget a connection that broke (closed; a new one is opened when needed)."""
        if self._held.queue is not None:
            self._held.queue.close()
            self._held.queue = None

    def _recover(self, queue: PostgresQueue) -> None:
        """Take back expired leases; again at most half a lease timeout from now.

        A busy worker never waits, so it looks here (one statement every half timeout):
        a dead pool's leases come back even while every live worker has work.
        """
        queue.recover(self._options.max_attempts)
        self._recover_due = time.monotonic() + self._options.lease_timeout_ms / 2000


__all__ = ["PostgresSource", "PostgresTask"]
