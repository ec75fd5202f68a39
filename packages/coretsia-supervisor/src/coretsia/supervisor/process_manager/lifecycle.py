"""``ProcessManager.start`` and ``stop``: a named pool run by the Coretsia supervisor.

``start`` runs the same supervisor, guardian, drivers and launcher as
``coretsia-supervisor start`` in the calling process's foreground, with the registry's
entries as the pool's slots and every other setting (driver, control transport, paths,
budgets, respawn pace, async event loop) from the root's ``coretsia.toml`` ``[worker]``
table, or the defaults. The table's task-worker settings and ``[[process]]`` entries are
not used: this pool runs exactly the manager's registrations.

The runtime sees the manager's
:class:`~coretsia.supervisor.process_entries.registry.Registry` only, never the manager
(which imports this module).

Guards, in order (seed 003 asks for a start "in a clean CLI"):

1. only the process that created the manager may start it (seed 003's creator-only
   guard): ``worker-signal-handling-unavailable``;
2. registration and settings close (seed 003: at the first start attempt);
3. inside a managed worker (an entry or a task worker): :class:`NestedPoolError`;
4. from a thread other than the main one, or inside a running asyncio or trio loop:
   ``worker-signal-handling-unavailable`` (the supervisor must own SIGTERM and SIGINT);
5. a manager runs its pool once (:class:`RegistrationClosedError`); an empty registry,
   or one whose ``stop`` came before ``start``, starts nothing;
6. one pool per process at a time (:class:`PoolAlreadyRunningError`).

The mounted form (:mod:`.mounted`, ``ProcessManager.running``) shares 1-3, 5 and 6 and
replaces 4 with its own: a running asyncio or trio loop is required, since the pool then
runs in a thread of its own and the host keeps its signals.

The whole start runs under umask 077, with the ``coretsia`` logger set up for the pool's
log lines, and the process is a child subreaper on Linux (what contains a generation
whose guardian was killed); all three are put back when ``start`` returns. A manager runs
its pool once: a second ``start`` after a run raises :class:`RegistrationClosedError`.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from coretsia.supervisor.generation.spec import MainModule
from coretsia.supervisor.process_entries.errors import (
    NestedPoolError,
    PoolAlreadyRunningError,
    RegistrationClosedError,
)
from coretsia.supervisor.worker_side.entry_pool import current_pool
from coretsia.supervisor.worker_side.exits import is_managed
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerStartFailedError
from coretsia.worker_protocol.internal.runtime.logs import LOGGER_NAME
from coretsia.worker_protocol.internal.runtime.subreaper import become_subreaper, is_subreaper

if TYPE_CHECKING:
    from collections.abc import Callable

    import trio

    from coretsia.supervisor.daemon.supervisor import Supervisor
    from coretsia.supervisor.process_entries.registry import Registry

__all__ = ["Runtime", "running_loop"]

_MAIN = "__main__"

_ONE_POOL = threading.Lock()
"""Held while a pool runs in this process, whichever manager and form runs it."""


class Runtime:
    """One manager's pool lifecycle: created with the manager, in its creator process.

    Also created in every entry worker that re-imports a module-level manager (for
    ``manager.stop()`` there), so it imports little at load time (``threading`` for its
    locks); ``logging`` and ``pathlib`` come with ``start``.
    """

    def __init__(self, root: str | os.PathLike[str] | None) -> None:
        self.creator_pid = os.getpid()
        self.root = root
        self._lock = threading.Lock()
        self._cancelled = False
        self._finished = False
        self._supervisor: Supervisor | None = None
        self._token: trio.lowlevel.TrioToken | None = None

    @property
    def supervisor(self) -> Supervisor | None:
        """The supervisor of this manager's run, once it began (kept after it ended)."""
        return self._supervisor

    def start(self, registry: Registry) -> None:
        """Run the pool until it stops (see the module docstring); raise its failure."""
        self.admit(registry)
        if threading.current_thread() is not threading.main_thread() or running_loop():
            raise WorkerStartFailedError(Reason.SIGNAL_HANDLING_UNAVAILABLE)
        if self.claim(registry):
            self.run(registry)

    def admit(self, registry: Registry) -> None:
        """The guards both forms share, before anything else: the creator process,
        closing the registration, not inside a managed worker."""
        if os.getpid() != self.creator_pid:
            raise WorkerStartFailedError(Reason.SIGNAL_HANDLING_UNAVAILABLE)
        registry.close()
        if is_managed():
            raise NestedPoolError

    def claim(self, registry: Registry) -> bool:
        """Take this manager's one run and the process's one pool; False if there is
        nothing to start. A True claim must be followed by :meth:`run`, which frees it."""
        with self._lock:
            if self._finished:
                raise RegistrationClosedError("a manager runs its pool once")
            if self._cancelled or not registry.entries():
                return False
            if not _ONE_POOL.acquire(blocking=False):
                raise PoolAlreadyRunningError
            self._finished = True
        return True

    def run(self, registry: Registry, hosted: Callable[[], None] | None = None) -> None:
        """Run a claimed pool until it stops; raise its failure.

        ``hosted``: the pool is mounted in a host's event loop (this is then its own
        thread), and ``hosted`` is called once every slot is ready (:mod:`.mounted`).
        """
        try:
            umask = os.umask(0o077)
            logger = _LoggerState.save()
            subreaper = is_subreaper()
            try:
                self._run(registry, umask, hosted)
            finally:
                os.umask(umask)
                logger.restore()
                become_subreaper(enable=subreaper)  # as the application had it before
        finally:
            with self._lock:
                self._token = None
            _ONE_POOL.release()

    def _run(self, registry: Registry, umask: int, hosted: Callable[[], None] | None) -> None:
        # deferred: platform-only
        from coretsia.supervisor.config import load_config
        from coretsia.supervisor.daemon.generation_builder import build_generation_spec
        from coretsia.supervisor.daemon.runner import run_supervisor

        root = Path(os.getcwd() if self.root is None else self.root).resolve()
        config = load_config(root)
        spec = build_generation_spec(
            root, config, None, registry=registry, main=_main_module(registry)
        )
        run_supervisor(root, config, spec, umask, attach=self._attach, hosted=hosted)

    def _attach(self, supervisor: Supervisor, token: trio.lowlevel.TrioToken) -> None:
        with self._lock:
            self._supervisor, self._token = supervisor, token
            if self._cancelled:
                supervisor.request_stop()

    def stop(self) -> None:
        """Stop the pool from anywhere: a worker, another thread, a signal handler, or
        before ``start``. Returns at once."""
        pool = current_pool()
        if pool is not None:
            pool.shutdown()  # travels on the worker's own channel
            return
        with self._lock:
            self._cancelled = True
            supervisor, token = self._supervisor, self._token
        if supervisor is None or token is None:
            return  # not started yet (it never will be) or already finished
        import trio  # deferred: platform-only

        try:
            # Thread-safe and signal-safe: the stop runs as the next step of the run.
            token.run_sync_soon(supervisor.request_stop)
        except trio.RunFinishedError:
            pass  # it stopped meanwhile


class _LoggerState:
    """The ``coretsia`` logger's settings, which the pool's run replaces, to put back."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.handlers = list(logger.handlers)
        self.level = logger.level
        self.propagate = logger.propagate

    @classmethod
    def save(cls) -> _LoggerState:
        return cls(logging.getLogger(LOGGER_NAME))

    def restore(self) -> None:
        self.logger.handlers[:] = self.handlers
        self.logger.setLevel(self.level)
        self.logger.propagate = self.propagate


def running_loop() -> str | None:
    """``"trio"`` or ``"asyncio"`` when this thread is inside that library's running
    loop, else None (what sniffio would say, without the dependency: a library that was
    never imported cannot be running)."""
    trio = sys.modules.get("trio")
    if trio is not None and trio.lowlevel.in_trio_run():
        return "trio"
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        return "asyncio"
    return None


def _main_module(registry: Registry) -> MainModule:
    """How a worker re-creates this process's import state (multiprocessing's spawn data).

    ``sys_path`` always (entries may live beside the script); the main script's module
    name or file only when an entry lives in it.
    """
    cwd = os.getcwd()
    sys_path = tuple(os.path.join(cwd, p) if not os.path.isabs(p) else p for p in sys.path)
    if not any(entry.target.startswith(_MAIN + ":") for entry in registry.entries()):
        return MainModule(sys_path=sys_path)
    main = sys.modules[_MAIN]
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if isinstance(name, str) and not name.endswith(_MAIN):
        return MainModule(name=name, sys_path=sys_path)
    return MainModule(path=os.path.abspath(str(main.__file__)), sys_path=sys_path)
