"""The ``postgres`` source as a worker runs it: claim, wait, settle, renew.

Imported by :func:`coretsia.sources.postgres_source.make_source` in the worker only
(it imports psycopg); the supervisor imports the entry point's module, never this one.
"""

from __future__ import annotations

import random
import select
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeVar

from coretsia.sources._pg_connection import QueueUnavailableError
from coretsia.sources._pg_heartbeat import Heartbeat
from coretsia.sources._queue_records import LeaseLostError, Message, QueueError
from coretsia.sources._source_common import Handler, QueueTask, describe
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


class PostgresSource:
    """The task source of one worker: claims messages for its generation, one at a time.

    On construction it connects (creating or upgrading the schema if needed), starts
    listening for the queue's notifications and takes back the expired leases; if the
    server cannot be reached then, :meth:`assert_ready` tries once more and raises
    (``worker-task-source-not-ready``). While idle it waits on its connection and the
    pool's stop descriptor together, for at most the time until the next lease of the
    queue expires (when there is one): new work, a stop and a dead pool's lease all wake
    it, and nothing else does.

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

    def _settle(self, message: Message, settle: Callable[[PostgresQueue], T]) -> T | None:
        """``settle`` with the connection, again after an outage (see the class's doc).

        None when, after an outage, the lease no longer held: reported, not settled.
        """
        interrupted = False
        while True:
            try:
                return settle(self._open())
            except QueueUnavailableError as lost:
                interrupted = True
                self._reconnect(lost, waiting=False)
            except LeaseLostError:
                if not interrupted:
                    raise
                self._context.report_lease_lost()
                return None

    def _drop(self) -> None:
        """Forget a connection that broke (closed; a new one is opened when needed)."""
        if self._queue is not None:
            self._resources.remove(self._queue)
            self._queue.close()
            self._queue = None

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
        if self._ahead and not self._context.stopping:
            return PostgresTask(self, self._ahead.pop())
        while not self._context.stopping:
            try:
                message = self._look()
            except QueueUnavailableError as lost:
                if not self._reconnect(lost, waiting=True):
                    break
                continue
            if message is not None:
                self._heartbeat.hold(message.token)
                return PostgresTask(self, message)
        self._release_ahead()
        return None

    def _look(self) -> Message | None:
        """Claim a message, or wait until there may be one (or a stop); None if none yet."""
        queue = self._open()
        connection = queue.listen()
        if time.monotonic() >= self._reap_due:
            self._reap(queue)
        queue.poked = False
        message = queue.claim(self._generation, self._options.lease_timeout_ms)
        if message is not None or queue.poked:
            return message  # when poked, something was enqueued while we looked: again
        expiry = queue.next_expiry()
        timeout = None if expiry is None else max(expiry, MIN_WAIT_SECONDS)
        ready = select.select([connection, self._context.stop_fileno()], [], [], timeout)[0]
        if not ready:
            self._reap_due = 0.0  # a lease's expiry came: take it back if still due
        # A readable connection: the next statement reads the notification (or finds the
        # connection closed, and raises).
        return None

    def acknowledge(self, message: Message) -> None:
        """Settle ``message`` done, and lease the next one ahead in the same statement.

        The worker asks for its next task right after this, so leasing it now saves a
        round trip per task (as the SQLite source does). Not while stopping: the message
        would only be given back. Raises ``LeaseLostError`` if the lease was taken back.
        """
        try:
            if self._context.stopping:
                self._settle(message, lambda queue: queue.ack(message))
                return
            timeout_ms = self._options.lease_timeout_ms
            ahead = self._settle(
                message, lambda queue: queue.ack_and_claim(message, self._generation, timeout_ms)
            )
        finally:
            self._heartbeat.release(message.token)
        if ahead is not None:
            self._heartbeat.hold(ahead.token)
            self._ahead.append(ahead)

    def record_failure(self, message: Message, error: BaseException) -> str | None:
        """Record a failed attempt of ``message``; its new state (``pending``/``failed``),
        None if, after an outage, its lease no longer held."""
        text = describe(error, with_message=self._options.keep_error_messages)
        try:
            return self._settle(
                message, lambda queue: queue.fail(message, self._options.max_attempts, text)
            )
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
            self._heartbeat.release(message.token)
            try:
                self._queue.release(message)
            except QueueUnavailableError:
                pass  # still leased: it expires after the lease timeout

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
