"""How a worker runs a process entry: rebuild it, report ready, call ``execute``.

The launcher hands every slot past the task workers here. The slot's entry comes from
the generation's process snapshot (never from the application's registration code); the
worker re-imports the entry's module, the main script included (the way
multiprocessing's spawn mode does: under the name ``__mp_main__``, so the script's
``if __name__ == "__main__":`` block does not run again), builds the entry, sends its
readiness frame and calls it with ``(pool, worker_id)``.

Exit status, which the supervisor reads as "replace this entry" while the pool runs:

* 0: ``execute`` returned;
* 1: ``execute`` raised (with ``debug = true`` the traceback goes to stderr: unsafe, for
  development), or the entry could not be rebuilt (a ``failed`` frame first);
* 0 too when, with ``max_memory_mb`` on, its resident memory passed the limit: a thread
  of the worker looks (:mod:`coretsia.supervisor.worker_side.memory`), sends ``retiring``
  (cause ``max-memory``), and the supervisor's ``retire`` makes ``pool.stopping`` true,
  so the entry returns as at a stop and the supervisor recycles the slot;
* SIGTERM: the guardian's terminate phase arrived. It is turned into an exception in the
  entry first (:class:`Terminated` for a plain entry, cancellation for an async one), so
  its ``finally`` blocks run; then the worker ends by the signal, as it would have.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import types

from coretsia.supervisor.process_entries.rules import IPC_NONE, KIND_FUNCTION, KIND_PROCESS
from coretsia.supervisor.worker_side.channel import Retirement
from coretsia.supervisor.worker_side.entry_pool import WorkerPool
from coretsia.supervisor.worker_side.exits import EXIT_CONTRACT, EXIT_FAILURE, WorkerExit
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.internal.runtime.imports import import_target

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

    from coretsia.supervisor.generation.spec import GenerationSpec, IpcRecord, MainModule
    from coretsia.supervisor.process_entries.record import ProcessSnapshot, SnapshotEntry
    from coretsia.supervisor.worker_side.channel import Reporter
    from coretsia.supervisor.worker_side.entry_ipc import Endpoint
    from coretsia.supervisor.worker_side.stop_signal import StopSignal


__all__ = ["EntryBoot", "Terminated"]

_MAIN = "__main__"
_MP_MAIN = "__mp_main__"


class Terminated(BaseException):
    """SIGTERM reached a plain entry: the pool is being stopped past its cooperative phase.

    A ``BaseException``, so an entry's ``except Exception`` does not swallow it; its
    ``finally`` blocks and context managers still run.
    """


class EntryBoot:
    """The slot's entry, checked; :meth:`serve` runs it."""

    __slots__ = ("entry", "ipc_type", "workers")

    def __init__(self, snapshot: ProcessSnapshot, index: int) -> None:
        entries = snapshot.entries
        if index >= len(entries):
            raise WorkerExit(EXIT_CONTRACT)
        self.entry: SnapshotEntry = entries[index]
        self.ipc_type = snapshot.ipc_type
        self.workers = len(entries)

    def serve(
        self, reporter: Reporter, spec: GenerationSpec, stop: StopSignal, generation: str
    ) -> int:
        """Rebuild the entry, report ready, run it; return the exit status.

        With the spec's ``max_memory_mb``, ``stop`` also watches the channel, for the
        grant of the retirement :func:`_retire_past` asks for.
        """
        entry, loop = self.entry, spec.event_loop
        max_memory_mb = spec.max_memory_mb
        if entry.enable_async and loop is None:  # the spec's rule: entries come with one
            raise WorkerExit(EXIT_FAILURE, Reason.CHILD_START_FAILED)
        try:
            _prepare_main(spec.process_main)
            run = _runnable(entry)
            endpoint = self._endpoint(spec.ipc)
        except Exception as error:
            raise WorkerExit(EXIT_FAILURE, Reason.CHILD_START_FAILED) from error
        pool = WorkerPool(entry.worker_id, entry.name, generation, stop, reporter, endpoint)
        pool._install()
        reporter.report_ready()
        retirement = _retire_past(max_memory_mb, reporter, stop) if max_memory_mb else None
        try:
            if entry.enable_async and loop is not None:
                terminated = _run_async(run, pool, entry.worker_id, loop)
            else:
                terminated = _run_sync(run, pool, entry.worker_id)
        except Terminated:
            terminated = True  # SIGTERM landed just as the entry returned: still SIGTERM
        except Exception as error:  # noqa: BLE001 - an entry's failure: replaced, not fatal
            if spec.debug:
                # start-up budget: docs/performance.md#start-up-import-rules
                import traceback

                traceback.print_exception(error)  # debug only: may show payloads
                sys.stderr.flush()
            return EXIT_FAILURE
        if terminated:
            _die_of_sigterm()
        if retirement is not None:
            retirement.granted()  # read, if it came: a frame left unread resets the close
        return 0

    def _endpoint(self, record: IpcRecord | None) -> Endpoint | None:
        """This worker's message endpoint, bound before readiness; None without IPC."""
        if self.ipc_type == IPC_NONE:
            return None  # and nothing of IPC is imported
        # start-up budget: docs/performance.md#start-up-import-rules
        from coretsia.supervisor.worker_side.entry_ipc import open_endpoint

        return open_endpoint(self.ipc_type, record, self.entry.worker_id, self.workers)


def _retire_past(max_memory_mb: int, reporter: Reporter, stop: StopSignal) -> Retirement:
    """Watch this worker's memory; past the limit, ask to retire, and let the grant stop
    the entry (``pool.stopping`` turns true): it returns and a fresh worker replaces it."""
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor.worker_side.memory import MemoryLimit, watch_memory

    retirement = Retirement(reporter, stop.listen)

    def over() -> None:
        retirement.request(over_memory=True)
        retirement.listening(on=True)

    reporter.share()  # the watch's thread sends the request
    watch_memory(MemoryLimit(max_memory_mb), over)
    return retirement


def _prepare_main(main: MainModule | None) -> None:
    """Make the parent's main script importable as it was there (multiprocessing's way).

    ``main`` is the generation's ``process_main``: ``None`` under ``coretsia-supervisor
    start`` (``app_path`` is the import path), else, under ``ProcessManager.start``, its
    ``sys_path``, with the main script's module name or path only when an entry lives in
    the main script.
    """
    if main is None:
        return
    sys.path.extend(p for p in main.sys_path if p not in sys.path)
    if main.name is not None:
        module = importlib.import_module(main.name)  # its own __name__: the guard stays false
    elif main.path is not None:
        module = types.ModuleType(_MP_MAIN)
        module.__file__ = main.path
        sys.modules[_MP_MAIN] = module
        with open(main.path, "rb") as source:
            code = compile(source.read(), main.path, "exec")
        exec(code, module.__dict__)
    else:
        return  # no entry lives in the main script: only its import path was needed
    sys.modules[_MAIN] = sys.modules[_MP_MAIN] = module


def _runnable(entry: SnapshotEntry) -> Callable[[WorkerPool, int], Any]:
    """The callable that runs the entry: its function, or a fresh instance's method."""
    found: Any = import_target(entry.target)  # ``__main__``: the script re-imported above
    if entry.kind == KIND_FUNCTION:
        function: Callable[[WorkerPool, int], Any] = found
        return function
    instance = found()  # built again here, with no arguments, as the docs promise
    if entry.kind == KIND_PROCESS:
        execute: Callable[[WorkerPool, int], Any] = instance.execute
        return execute
    call: Callable[[WorkerPool, int], Any] = instance
    return call


def _run_sync(run: Callable[[WorkerPool, int], Any], pool: WorkerPool, worker_id: int) -> bool:
    """Call a plain entry with SIGTERM raising :class:`Terminated`; True if it did."""

    def terminate(signum: int, frame: FrameType | None) -> None:
        # One-shot: a second SIGTERM (a control-group kill) must not interrupt the
        # entry's cleanup; SIGKILL still bounds it.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    signal.signal(signal.SIGTERM, terminate)
    try:
        result = run(pool, worker_id)
    except Terminated:
        return True
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the exit is decided now
    if _is_awaitable(result):
        result.close()  # an async entry recorded as plain: the generation was edited
        raise TypeError("entry returned a coroutine")
    return False


def _run_async(
    run: Callable[[WorkerPool, int], Any], pool: WorkerPool, worker_id: int, loop: str
) -> bool:
    """Run an async entry under ``loop``; SIGTERM cancels it. True if it did."""
    if loop == "trio":
        # start-up budget: docs/performance.md#start-up-import-rules
        import trio

        return trio.run(_trio_main, run, pool, worker_id)
    # start-up budget: docs/performance.md#start-up-import-rules
    import asyncio

    return asyncio.run(_asyncio_main(run, pool, worker_id))


async def _asyncio_main(
    run: Callable[[WorkerPool, int], Any], pool: WorkerPool, worker_id: int
) -> bool:
    # start-up budget: docs/performance.md#start-up-import-rules
    import asyncio

    task = asyncio.current_task()
    assert task is not None
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        if not terminated:  # once: a second cancel would cut the entry's cleanup short
            terminated = True
            task.cancel()

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, terminate)
    try:
        await run(pool, worker_id)
    except asyncio.CancelledError:
        if not terminated:
            raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return terminated


async def _trio_main(
    run: Callable[[WorkerPool, int], Any], pool: WorkerPool, worker_id: int
) -> bool:
    # start-up budget: docs/performance.md#start-up-import-rules
    import trio

    terminated = False
    with trio.open_signal_receiver(signal.SIGTERM) as received:
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                nonlocal terminated
                async for _ in received:
                    terminated = True
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(watch)
            await run(pool, worker_id)
            nursery.cancel_scope.cancel()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # after trio restored its handler
    return terminated


def _is_awaitable(value: object) -> bool:
    return hasattr(value, "__await__") and hasattr(value, "close")


def _die_of_sigterm() -> None:
    """End the way SIGTERM ends a process, now that the entry's cleanup ran."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    raise SystemExit(EXIT_FAILURE)  # not reached: the signal ends the process
