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
  called inside a worker does the same.

Imported by the launcher after the generation is read (only for entry slots), so it
imports nothing at load time beyond what the launcher already has.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket

    from coretsia.supervisor.stop_signal import StopSignal

__all__ = ["WorkerPool", "current_pool"]

_current: WorkerPool | None = None


def current_pool() -> WorkerPool | None:
    """The pool handle of this process if it is a managed entry worker, else None."""
    return _current


class WorkerPool:
    """One entry worker's view of its pool (see the module docstring)."""

    __slots__ = ("_channel", "_generation", "_name", "_shutdown_sent", "_stop", "_worker_id")

    def __init__(
        self,
        worker_id: int,
        name: str,
        generation: str,
        stop: StopSignal,
        channel: socket.socket,
    ) -> None:
        self._worker_id = worker_id
        self._name = name
        self._generation = generation
        self._stop = stop
        self._channel = channel
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
        if self._stop.stopping:
            return
        trio = sys.modules.get("trio")
        if trio is not None:
            try:
                trio.lowlevel.current_trio_token()
            except RuntimeError:
                pass  # trio is imported but not running: asyncio runs this entry
            else:
                await trio.lowlevel.wait_readable(self._stop.fileno())
                return
        import asyncio

        loop = asyncio.get_running_loop()
        readable = loop.create_future()
        loop.add_reader(self._stop.fileno(), readable.set_result, None)
        try:
            await readable
        finally:
            loop.remove_reader(self._stop.fileno())

    def shutdown(self) -> None:
        """Ask the supervisor to stop the whole pool (seed 003's ``$pool->shutdown()``).

        Returns at once; the stop arrives like any other (``stopping`` turns true, then
        the shutdown budgets apply). Asking twice sends one request.
        """
        if self._shutdown_sent:
            return
        self._shutdown_sent = True
        import socket

        from coretsia.worker_protocol.worker_channel import ShutdownRequest, encode_worker_frame

        try:
            self._channel.sendall(
                encode_worker_frame(ShutdownRequest()), getattr(socket, "MSG_NOSIGNAL", 0)
            )
        except OSError:
            pass  # the supervisor is gone: the pool is stopping anyway

    def __repr__(self) -> str:
        return f"WorkerPool(worker_id={self._worker_id})"
