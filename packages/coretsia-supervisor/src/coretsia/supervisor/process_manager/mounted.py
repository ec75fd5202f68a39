"""``ProcessManager.running()``: a pool mounted in a host application's event loop.

Seed 003 mounts its pool as a child of a host server's main process, started and
stopped with the host. In Python the host is an event loop (an ASGI server's, a trio
program's), and the pool is an async context manager inside it::

    async with manager.running() as pool:   # returns once every slot is ready
        ...                                  # the host serves; pool.summary() reports
    # on exit: the pool was stopped within its budgets and every process reaped

The pool runs the same supervisor as ``start()``, in a thread of its own (a trio run is
blocking), so the host's loop never blocks: the host awaits two one-shot events that
thread sets through the host loop's own thread-safe entry point (asyncio's
``call_soon_threadsafe``, trio's ``TrioToken.run_sync_soon``): *running* and *ended*.
The host keeps its signals (the supervisor installs no handler: SIGTERM to an ASGI
server makes it leave its lifespan, which leaves this block, which stops the pool); its
stop travels as ``ProcessManager.stop()`` does. Leaving the block, normally, by an
exception or by a cancellation, stops the pool and waits, whatever cancels the wait,
until the pool's thread ended: after the guardian reported every worker gone and the
lock was released. That wait is bounded by the pool's own budgets (the supervisor's
shutdown is).

Guards (codes in :mod:`coretsia.supervisor.process_entries.errors`): the creator process,
not inside a managed worker (:class:`NestedPoolError`), a running asyncio or trio loop
(:class:`HostLoopUnsupportedError`), one pool per process
(:class:`PoolAlreadyRunningError`), a manager runs its pool once
(:class:`RegistrationClosedError`). No main-thread rule: the host may run its loop in
any thread.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol, final

from coretsia.supervisor.process_entries.errors import HostLoopUnsupportedError
from coretsia.supervisor.process_manager import host_events
from coretsia.supervisor.process_manager.lifecycle import Runtime, running_loop

if TYPE_CHECKING:
    from types import TracebackType

    from coretsia.supervisor.process_entries.registry import Registry
    from coretsia.worker_protocol.control import HealthResponse, PoolSummary

__all__ = ["MountedPool"]


@final
class MountedPool:
    """The async context manager ``ProcessManager.running()`` returns; also the handle
    the block receives (``async with manager.running() as pool``)."""

    def __init__(self, runtime: Runtime, registry: Registry) -> None:
        self._runtime = runtime
        self._registry = registry
        self._thread: threading.Thread | None = None
        self._ended: _HostEvent | None = None
        self._running = False
        self._failure: BaseException | None = None

    async def __aenter__(self) -> MountedPool:
        """Start the pool without blocking the host's loop; return once every slot is
        ready. A pool that fails to start raises its failure once it is reaped."""
        self._runtime.admit(self._registry)
        event = _host_event_type()
        ready, ended = event(), event()
        if not self._runtime.claim(self._registry):
            return self  # nothing registered, or stopped before it started
        # A daemon thread: a host that ends without leaving the block (its loop lost,
        # os._exit) must not hang at exit on a pool nobody will stop. Its end closes the
        # guardian's ownership channel, and the guardian stops and reaps every worker,
        # as after a SIGKILL of the supervisor.
        thread = threading.Thread(
            target=self._serve, args=(ready, ended), name="coretsia-pool", daemon=True
        )
        self._thread, self._ended = thread, ended
        thread.start()
        try:
            await ready.wait()
        except BaseException:
            await self._finish()  # the host gave up on the start: stop, reap, pass it on
            raise
        if not self._running:
            await self._finish()
            if self._failure is not None:
                raise self._failure
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the pool and wait until it is down; raise its failure if the block did
        not raise one of its own."""
        await self._finish()
        if self._failure is not None and exc is None:
            raise self._failure

    async def wait(self) -> None:
        """Wait until the pool ended by itself (a worker's shutdown request, a failure,
        ``coretsia-supervisor stop``); at once if none runs. Cancellable."""
        if self._ended is not None:
            await self._ended.wait()

    def summary(self) -> PoolSummary | None:
        """The pool's safe live summary, as ``status`` gives it; None if no pool ran."""
        supervisor = self._runtime.supervisor
        return None if supervisor is None or not self._running else supervisor.pool.summary()

    def health(self) -> HealthResponse | None:
        """The pool's health, as ``health`` answers it; None if no pool ran."""
        supervisor = self._runtime.supervisor
        return None if supervisor is None or not self._running else supervisor.pool.health()

    def _serve(self, ready: _HostEvent, ended: _HostEvent) -> None:
        """The pool's thread: the whole run, then both events (in that order)."""

        def running() -> None:
            self._running = True
            ready.set()

        try:
            self._runtime.run(self._registry, hosted=running)
        except BaseException as exc:  # noqa: BLE001 - handed over to the host's task
            self._failure = exc
        finally:
            ready.set()
            ended.set()

    async def _finish(self) -> None:
        """Forward the host's stop, then wait for the pool's end through any cancel."""
        if self._thread is None or self._ended is None:
            return
        self._runtime.stop()
        await self._ended.wait_uncancelled()
        self._thread.join()  # it set ``ended`` last: only its return is left


class _HostEvent(Protocol):
    """A one-shot event that the pool's thread sets and the host's loop awaits."""

    def set(self) -> None:
        """Set it, from any thread (the host's loop may be gone: then nothing)."""

    async def wait(self) -> None:
        """Wait until it is set; cancellable as the host's loop cancels."""

    async def wait_uncancelled(self) -> None:
        """Wait until it is set, through any cancel, then let a cancel take effect."""


def _host_event_type() -> type[_HostEvent]:
    """The event class for the loop running this task; refused outside asyncio and trio."""
    library = running_loop()
    if library is None:
        raise HostLoopUnsupportedError
    return host_events.TrioEvent if library == "trio" else host_events.AsyncioEvent
