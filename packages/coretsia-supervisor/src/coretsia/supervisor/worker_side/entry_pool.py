"""The ``pool`` an entry receives: seed 003's worker-side ``Pool``, in Python terms.

An entry runs in a worker process that the supervisor replaces when it returns, so the
one thing it must be able to do is to notice a stop and end, and the one thing it may
ask for is the end of the whole pool:

* ``stopping``, ``wait_for_stop(timeout)`` (blocking) and ``await wait_stopped()``
  (asyncio or trio) look at the worker's stop pipe, which the guardian closes when the
  pool shuts down; nothing polls a file or sleeps in a loop;
* ``shutdown()`` asks the supervisor to stop the whole pool. The request travels as a
  ``shutdown-request`` frame on the worker's own inherited channel: a worker never holds
  the control credential and never writes the stop file. ``ProcessManager.stop()``
  called inside a worker does the same;
* ``send_message(worker_id, data)``, ``receive_message(timeout)`` and
  ``await receive_message_async()`` exchange messages of at most
  :data:`~coretsia.supervisor.process_entries.rules.MAX_MESSAGE_BYTES` (8,192) bytes between
  the pool's entry workers, by worker id, when the pool's ``ipc_type`` is ``unixsock``
  or ``msgqueue`` (see :mod:`.entry_ipc`); with ``none`` they raise
  :class:`IpcUnavailableError`.

Imported by the launcher after the generation is read (only for entry slots), so it
imports nothing at load time beyond what the launcher already has.
"""

from __future__ import annotations

import os
import select
import sys
import time

from coretsia.supervisor.process_entries.errors import (
    IpcUnavailableError,
    MessageBufferFullError,
    MessageTooLargeError,
    PeerUnavailableError,
    ProcessArgumentError,
)
from coretsia.supervisor.process_entries.rules import MAX_MESSAGE_BYTES
from coretsia.worker_protocol.worker_channel import ShutdownRequest

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from coretsia.supervisor.worker_side.channel import Reporter
    from coretsia.supervisor.worker_side.entry_ipc import Endpoint
    from coretsia.supervisor.worker_side.stop_signal import StopSignal

__all__ = ["WorkerPool", "current_pool"]

_MAX_POLL_S = (2**31 - 1) / 1000

_FIRST_PAUSE_S = 0.001
_LAST_PAUSE_S = 0.05

_current: WorkerPool | None = None


def current_pool() -> WorkerPool | None:
    """The pool handle of this process if it is a managed entry worker, else None."""
    return _current


class WorkerPool:
    """One entry worker's view of its pool (see the module docstring)."""

    __slots__ = (
        "_endpoint",
        "_generation",
        "_name",
        "_reporter",
        "_shutdown_sent",
        "_stop",
        "_worker_id",
    )

    def __init__(
        self,
        worker_id: int,
        name: str,
        generation: str,
        stop: StopSignal,
        reporter: Reporter,
        endpoint: Endpoint | None = None,
    ) -> None:
        self._worker_id = worker_id
        self._name = name
        self._generation = generation
        self._stop = stop
        self._reporter = reporter
        self._endpoint = endpoint
        self._shutdown_sent = False

    def _install(self) -> None:
        """Make this the process's pool (for ``ProcessManager.stop`` and ``start``)."""
        global _current
        _current = self

    @property
    def worker_id(self) -> int:
        """The entry's zero-based registration index (seed 003's ``$workerId``)."""
        return self._worker_id

    @property
    def name(self) -> str:
        """The entry's registered name (``name``, ``name:0``, or its index)."""
        return self._name

    @property
    def generation(self) -> str:
        """The generation this worker booted from; it changes only with a new ``start``."""
        return self._generation

    @property
    def stopping(self) -> bool:
        """True once the pool is shutting down: finish up and return from ``execute``."""
        return self._stop.stopping

    def stop_fileno(self) -> int:
        """The stop pipe's descriptor, to add to an entry's own ``select``/``poll``."""
        return self._stop.fileno()

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Block until the pool stops or ``timeout`` seconds pass; True if stopping.

        Use it as an entry's sleep: ``while not pool.wait_for_stop(30): work()``.
        """
        return self._stop.wait(timeout)

    async def wait_stopped(self) -> None:
        """Wait, without blocking the event loop, until the pool stops.

        Works under trio and under asyncio (whichever runs the entry).
        """
        if not self._stop.stopping:
            await _wait_readable(self._stop.fileno())

    # -- messages (seed 003's pool-wide IPC) --------------------------------------------

    @property
    def ipc_type(self) -> str:
        """The pool's IPC mode: ``none``, ``unixsock`` or ``msgqueue``."""
        return "none" if self._endpoint is None else self._endpoint.ipc_type

    def send_message(self, worker_id: int, data: bytes, *, block: bool = True) -> None:
        """Send ``data`` (at most 8,192 bytes) to the entry worker ``worker_id``.

        ``worker_id`` is any worker of this pool, this one included. A message is
        delivered whole or not at all, and messages from one sender to one receiver
        arrive in order. ``block=False`` raises :class:`MessageBufferFullError` instead
        of waiting when the receiving buffer is full (the receiver's socket, or the
        pool's queue). A blocking send waits for room, but never past the pool's stop:
        once it is stopping, a send still waiting raises :class:`PeerUnavailableError`
        (so SIGTERM and the cooperative stop reach an entry stuck here, async ones
        included). In ``unixsock`` mode a receiver without an endpoint at the moment
        (starting, being replaced) raises :class:`PeerUnavailableError`; in ``msgqueue``
        mode its messages wait in the queue for it.
        """
        endpoint = self._messages()
        if type(worker_id) is not int or not 0 <= worker_id < endpoint.workers:
            raise ProcessArgumentError("no entry worker of this pool has this id")
        if not isinstance(data, (bytes, bytearray)):
            raise ProcessArgumentError("a message must be bytes")
        if len(data) > MAX_MESSAGE_BYTES:
            raise MessageTooLargeError
        message = bytes(data)
        pause = _FIRST_PAUSE_S
        while True:
            try:
                endpoint.send(worker_id, message)
            except MessageBufferFullError:
                if not block:
                    raise
            else:
                return
            # Neither a socket nor a queue can tell when the receiver made room, so a
            # full one is retried, with a pause that grows to 50 ms, and the stop pipe
            # ends the wait: the process never sleeps where a stop cannot reach it.
            if self._stop.wait(pause):
                raise PeerUnavailableError("the pool is stopping")
            pause = min(pause * 2, _LAST_PAUSE_S)

    def receive_message(self, timeout: float | None = None) -> bytes | None:
        """The next message sent to this worker; None after ``timeout`` or once stopping.

        Blocks (on the endpoint and the stop pipe together, no polling) until a message
        arrives, ``timeout`` seconds pass, or the pool starts stopping, so an entry can
        serve with ``while (message := pool.receive_message()) is not None: ...``.
        A message already waiting is returned first, even while stopping (``unixsock``:
        every datagram in the socket; ``msgqueue``: the one the reader already took).
        """
        endpoint = self._messages()
        if timeout is not None and not timeout >= 0:  # negative, or NaN
            timeout = 0.0
        deadline = None if timeout is None else time.monotonic() + timeout
        poller = select.poll()
        poller.register(endpoint.wait_fd(), select.POLLIN)
        poller.register(self._stop.fileno(), select.POLLIN)
        while (message := endpoint.take()) is None and not self._stop.stopping:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            # Rounded up, so that a wake-up is never early; a wait past poll's range is
            # done in steps (the loop checks the deadline again).
            step = None if left is None else min(left, _MAX_POLL_S)
            poller.poll(None if step is None else -int(-step * 1000 // 1))
        return message

    async def receive_message_async(self) -> bytes | None:
        """:meth:`receive_message` for an async entry (asyncio or trio), without a timeout.

        Bound the wait with the event loop's own means (``asyncio.timeout``,
        ``trio.move_on_after``). Do not wait for :meth:`wait_stopped` at the same time:
        this already returns None once the pool is stopping.
        """
        endpoint = self._messages()
        while (message := endpoint.take()) is None and not self._stop.stopping:
            await _wait_readable(endpoint.wait_fd(), self._stop.fileno())
        return message

    def _messages(self) -> Endpoint:
        if self._endpoint is None:
            raise IpcUnavailableError
        return self._endpoint

    def shutdown(self) -> None:
        """Ask the supervisor to stop the whole pool (seed 003's ``$pool->shutdown()``).

        Returns at once; the stop arrives like any other (``stopping`` turns true, then
        the shutdown budgets apply). Asking twice sends one request.
        """
        if self._shutdown_sent:
            return
        self._shutdown_sent = True
        self._reporter.send(ShutdownRequest())  # a supervisor gone: the pool stops anyway

    def __repr__(self) -> str:
        return f"WorkerPool(worker_id={self._worker_id})"


async def _wait_readable(*fds: int) -> None:
    """Wait until one of ``fds`` is readable, under trio or asyncio (whichever runs).

    Each call waits on its own duplicates of the descriptors: trio allows one waiter per
    descriptor and asyncio one reader callback, so two tasks of one entry waiting for
    the stop at once would otherwise hang or crash each other.
    """
    duplicates: list[int] = []
    try:
        for fd in fds:
            duplicates.append(os.dup(fd))  # noqa: PERF401 - one at a time: each is closed
        await _wait_any(duplicates)
    finally:
        for fd in duplicates:
            os.close(fd)


async def _wait_any(fds: list[int]) -> None:
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            pass  # trio is imported but not running: asyncio runs this entry
        else:
            async with trio.open_nursery() as nursery:
                for fd in fds:

                    async def wait(fd: int = fd) -> None:
                        await trio.lowlevel.wait_readable(fd)
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(wait)
            return
    # start-up budget: docs/performance.md#start-up-import-rules
    import asyncio

    loop = asyncio.get_running_loop()
    readable = loop.create_future()

    def wake() -> None:
        if not readable.done():
            readable.set_result(None)

    try:
        for fd in fds:
            loop.add_reader(fd, wake)
        await readable
    finally:
        for fd in fds:
            loop.remove_reader(fd)  # False for one never added: harmless
