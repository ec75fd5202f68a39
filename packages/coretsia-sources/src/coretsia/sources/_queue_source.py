"""What a worker's queue source does whatever the backend: lease, wait, settle, give back.

The ``sqlite`` and ``postgres`` sources lease one message at a time for their worker's
generation, lease the next one ahead with each acknowledgement, wait for new work and a
cooperative stop together, and give back the message leased ahead when the worker leaves
(at a clean exit too). :class:`QueueSource` is that loop, written once; a backend says how
it opens its queue, leases, waits and meets a failure, through the hooks below. Both
queues name their operations alike: ``lease``, ``ack_and_lease``, ``ack``, ``fail``,
``release`` and ``recover`` (taking back a dead worker's leases).
"""

from __future__ import annotations

import abc
import contextlib
import sqlite3
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from coretsia.sources._queue_records import QueueError
from coretsia.sources._source_common import Handler, QueueTask, describe

if TYPE_CHECKING:
    from coretsia.sources._queue_records import Message
    from coretsia.worker_protocol.task_source import TaskSourceContext

T = TypeVar("T")

STORE_ERRORS = (QueueError, sqlite3.Error, OSError)
"""What a queue's operations raise when its storage or server fails them."""


class Closable(Protocol):
    def close(self) -> None: ...


class LeasingQueue(Closable, Protocol):
    """The operations the shared loop calls on either queue by name."""

    def ack(self, message: Message) -> None: ...

    def fail(self, message: Message, max_attempts: int, *, error: str | None = None) -> str: ...

    def release(self, message: Message) -> bool: ...


Q = TypeVar("Q", bound=LeasingQueue)
K = TypeVar("K", bound=QueueTask)


class _Held(Generic[Q]):
    """What a source holds open, shared with its finalizer (which must not hold the source)."""

    __slots__ = ("ahead", "extras", "queue")

    def __init__(self) -> None:
        self.queue: Q | None = None
        self.ahead: list[Message] = []
        """The message leased with the last acknowledgement (at most one)."""
        self.extras: list[Closable] = []
        """What the backend opened beside the queue (a poke socket, a heartbeat)."""


class QueueSource(abc.ABC, Generic[Q, K]):
    """The task source of one worker: leases messages for its generation, one at a time.

    The queue is opened on construction, and again on first use if that failed (the
    backend's ``assert_ready`` then reports why); ``extras`` are closed with it. The
    hooks a backend provides: :meth:`_connect` (open the queue, take back dead workers'
    leases, subscribe to its pokes), :meth:`_lease`, :meth:`_ack_and_lease`,
    :meth:`_wait`, and the failure policies :meth:`_call` and :meth:`_giving_back`;
    :meth:`_leased` and :meth:`_unleased` mark the life of a lease (no-ops unless the
    backend renews leases).
    """

    task_class: type[K]
    """What ``receive`` returns a message as."""

    def __init__(
        self,
        context: TaskSourceContext,
        handler: Handler,
        *,
        generation: str,
        max_attempts: int,
        keep_error_messages: bool,
        extras: Iterable[Closable] = (),
    ) -> None:
        self._context = context
        self._handler = handler
        self._generation = generation
        self._max_attempts = max_attempts
        self._keep_messages = keep_error_messages
        self._held: _Held[Q] = _Held()
        self._held.extras += extras
        # Closed at interpreter exit too: a worker that leaves without another receive()
        # gives back the message leased ahead and leaves no socket behind.
        self._finalizer = weakref.finalize(self, _close_all, self._held)
        with contextlib.suppress(*STORE_ERRORS):
            self._open()  # else assert_ready tries again and reports it

    # -- the backend's hooks -------------------------------------------------------------

    @abc.abstractmethod
    def _connect(self) -> Q:
        """Open the queue: recover what dead workers left leased, subscribe to pokes."""

    @abc.abstractmethod
    def _lease(self, queue: Q) -> Message | None:
        """Lease the oldest pending message, or None if there is none."""

    @abc.abstractmethod
    def _ack_and_lease(self, queue: Q, message: Message) -> Message | None:
        """Acknowledge ``message`` and lease the next pending one in one step."""

    @abc.abstractmethod
    def _wait(self, queue: Q) -> None:
        """Wait (bounded) until a message may be pending or a stop is requested."""

    @abc.abstractmethod
    def _call(self, operation: Callable[[Q], T], *, waiting: bool) -> T | None:
        """``operation`` on the open queue, under the backend's failure policy.

        ``waiting``: a look in ``receive`` (False: a settlement). None when the backend
        gave up without an error (a stop came during an outage, or a lease was lost).
        """

    def _giving_back(self) -> contextlib.AbstractContextManager[None]:
        """Around the give-back at a stop: the backend's view of its failures."""
        return contextlib.nullcontext()

    def _leased(self, message: Message) -> None:
        """``message`` is now leased by this worker."""

    def _unleased(self, message: Message) -> None:
        """``message`` is settled or given back."""

    # -- the loop ------------------------------------------------------------------------

    def _open(self) -> Q:
        """The queue, opened (and dead workers' leases recovered) on first success."""
        if self._held.queue is None:
            self._held.queue = self._connect()
        return self._held.queue

    @property
    def handler(self) -> Handler:
        """What a task's ``run`` calls with its payload."""
        return self._handler

    def receive(self) -> K | None:
        """The next message as a task; None only once a cooperative stop is requested."""
        while not self._context.stopping:
            if self._held.ahead:
                return self.task_class(self, self._held.ahead.pop())
            message = self._call(self._look, waiting=True)
            if message is not None:
                self._leased(message)
                return self.task_class(self, message)
        self._release_ahead()
        return None

    def _look(self, queue: Q) -> Message | None:
        """Lease a message, or wait until there may be one (or a stop); None if none yet."""
        message = self._lease(queue)
        if message is None:
            self._wait(queue)
        return message

    def acknowledge(self, message: Message) -> None:
        """Settle ``message`` done, and lease the next one ahead in the same step.

        The worker asks for its next task right after this, so leasing it now saves a
        turn at the queue per task. Not while stopping: the message would only be given
        back.
        """
        try:
            if self._context.stopping:
                self._call(lambda queue: queue.ack(message), waiting=False)
                return
            ahead = self._call(lambda queue: self._ack_and_lease(queue, message), waiting=False)
        finally:
            self._unleased(message)
        if ahead is not None:
            self._leased(ahead)
            self._held.ahead.append(ahead)

    def record_failure(self, message: Message, error: BaseException) -> str | None:
        """Record a failed attempt of ``message``; its new state (``pending``/``failed``),
        None if its lease was lost meanwhile."""
        text = describe(error, with_message=self._keep_messages)
        try:
            return self._call(
                lambda queue: queue.fail(message, self._max_attempts, error=text), waiting=False
            )
        finally:
            self._unleased(message)

    def _release_ahead(self) -> None:
        """Give back the message leased ahead, if any: this worker will not run it."""
        queue = self._held.queue
        if self._held.ahead and queue is not None:
            message = self._held.ahead.pop()
            self._unleased(message)
            with self._giving_back():
                queue.release(message)

    def close(self) -> None:
        """Give back a message leased ahead, close everything; idempotent."""
        self._finalizer()


def _close_all(held: _Held[Q]) -> None:
    """Give back a message leased ahead (at a clean exit too), then close everything."""
    queue = held.queue
    try:
        while held.ahead and queue is not None:
            queue.release(held.ahead.pop())
    except STORE_ERRORS:
        pass  # still leased: recovered, as a dead worker's lease is
    finally:
        for extra in held.extras:
            extra.close()
        held.extras.clear()
        if queue is not None:
            queue.close()
        held.queue = None
