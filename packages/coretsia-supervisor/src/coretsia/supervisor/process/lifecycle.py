"""``ProcessManager.start`` and ``stop``: a named pool run by the Coretsia supervisor.

``start`` runs the same supervisor, guardian, drivers and launcher as
``coretsia-supervisor start`` in the calling process's foreground, with the registry's
entries as the pool's slots and every other setting (driver, control transport, paths,
budgets, respawn pace, async event loop) from the root's ``coretsia.toml`` ``[worker]``
table, or the defaults. The table's task-worker settings and ``[[process]]`` entries are
not used: this pool runs exactly the manager's registrations.

The runtime sees the manager's :class:`~.registry.Registry` only, never the manager
(which imports this module).

Guards, in order (seed 003 asks for a start "in a clean CLI"):

1. only the process that created the manager may start it (seed 003's creator-only
   guard): ``worker-signal-handling-unavailable``;
2. registration and settings close (seed 003: at the first start attempt);
3. inside a managed worker (an entry or a task worker): :class:`NestedPoolError`;
4. from a thread other than the main one, or inside a running asyncio or trio loop:
   ``worker-signal-handling-unavailable`` (the supervisor must own SIGTERM and SIGINT);
5. an empty registry, or one whose ``stop`` came before ``start``, starts nothing.

The whole start runs under umask 077, with the ``coretsia`` logger set up for the pool's
log lines, and the process is a child subreaper on Linux (what contains a generation
whose guardian was killed); all three are put back when ``start`` returns. A manager runs
its pool once: a second ``start`` after a run raises :class:`RegistrationClosedError`.
"""

from __future__ import annotations

import _thread
import os
import sys

from coretsia.supervisor.process.errors import NestedPoolError, RegistrationClosedError
from coretsia.supervisor.process.worker.pool import current_pool
from coretsia.supervisor.worker import is_managed
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerStartFailedError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging

    import trio

    from coretsia.supervisor.process.registry import Registry
    from coretsia.supervisor.supervisor import Supervisor

__all__ = ["Runtime"]

_MAIN = "__main__"


class Runtime:
    """One manager's pool lifecycle: created with the manager, in its creator process.

    Also created in every entry worker that re-imports a module-level manager (for
    ``manager.stop()`` there), so it imports nothing at load time but what a worker has
    anyway: ``logging``, ``threading`` and ``pathlib`` come with ``start``.
    """

    def __init__(self, root: str | os.PathLike[str] | None) -> None:
        self.creator_pid = os.getpid()
        self.root = root
        self._lock = _thread.allocate_lock()
        self._cancelled = False
        self._finished = False
        self._supervisor: Supervisor | None = None
        self._token: trio.lowlevel.TrioToken | None = None

    def start(self, registry: Registry) -> None:
        """Run the pool until it stops (see the module docstring); raise its failure."""
        if os.getpid() != self.creator_pid:
            raise WorkerStartFailedError(Reason.SIGNAL_HANDLING_UNAVAILABLE)
        registry.close()
        if is_managed():
            raise NestedPoolError
        import threading

        if threading.current_thread() is not threading.main_thread() or _loop_running():
            raise WorkerStartFailedError(Reason.SIGNAL_HANDLING_UNAVAILABLE)
        with self._lock:
            if self._finished:
                raise RegistrationClosedError("a manager runs its pool once")
            if self._cancelled or not registry.entries():
                return
            self._finished = True
        from coretsia.worker_protocol.internal.runtime.subreaper import (
            become_subreaper,
            is_subreaper,
        )

        umask = os.umask(0o077)
        logger = _LoggerState.save()
        subreaper = is_subreaper()
        try:
            self._run(registry, umask)
        finally:
            os.umask(umask)
            logger.restore()
            become_subreaper(enable=subreaper)  # as the application had it before
            with self._lock:
                self._supervisor = self._token = None

    def _run(self, registry: Registry, umask: int) -> None:
        from pathlib import Path

        from coretsia.supervisor.config import load_config
        from coretsia.supervisor.process.record import snapshot
        from coretsia.supervisor.runner import run_supervisor

        root = Path(os.getcwd() if self.root is None else self.root).resolve()
        config = load_config(root)
        spec = config.to_generation_dict()
        spec.update(
            workers=0,
            task_source=None,
            before_hooks=[],
            after_hooks=[],
            reset_hooks=[],
            processes=snapshot(registry),
            process_main=_main_module(registry),
        )
        run_supervisor(root, config, spec, umask, attach=self._attach)

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
        import trio

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
        import logging

        from coretsia.worker_protocol.internal.runtime.logs import LOGGER_NAME

        return cls(logging.getLogger(LOGGER_NAME))

    def restore(self) -> None:
        self.logger.handlers[:] = self.handlers
        self.logger.setLevel(self.level)
        self.logger.propagate = self.propagate


def _loop_running() -> bool:
    """Whether this thread is inside a running asyncio or trio event loop."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return True
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            return False
        return True
    return False


def _main_module(registry: Registry) -> dict[str, object]:
    """How a worker re-creates this process's import state (multiprocessing's spawn data).

    ``sys_path`` always (entries may live beside the script); the main script's module
    name or file only when an entry lives in it.
    """
    cwd = os.getcwd()
    info: dict[str, object] = {
        "name": None,
        "path": None,
        "sys_path": [os.path.join(cwd, p) if not os.path.isabs(p) else p for p in sys.path],
    }
    if not any(entry.target.startswith(_MAIN + ":") for entry in registry.entries()):
        return info
    main = sys.modules[_MAIN]
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if isinstance(name, str) and not name.endswith(_MAIN):
        info["name"] = name
    else:
        info["path"] = os.path.abspath(str(main.__file__))
    return info
