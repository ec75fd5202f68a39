"""What every worker shares: how it leaves.

A worker process runs :mod:`.launcher`, which boots it through the modules beside this
one: :mod:`.contract` checks what the spawner passed, :mod:`.channel` is the worker's
end of its channel (every frame it sends or reads passes the sans-IO
:class:`~coretsia.worker_protocol.worker_conversation.WorkerConversation`),
:mod:`.task_worker` resolves the task source and hands it to :mod:`.task_loop`, the
sequential units of work; :mod:`.heartbeat`, only when the generation asks for it, beats
from ``ready`` on. A slot past the task workers runs a process entry instead
(:mod:`.entry_worker`).

This module holds the little that every one of them needs: the exit statuses,
:class:`WorkerExit`, how a process of ours leaves (:func:`leave`, which the ``start``
command shares), and whether this process is a managed worker (which the parent-side
``ProcessManager.start`` asks too). It is imported on every worker's boot, before the
parent-death watch is checked: nothing but the standard library's builtins at load time.
"""

from __future__ import annotations

import atexit
import os
import sys

from coretsia.worker_protocol.catalogue import Reason

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import NoReturn


EXIT_OK = 0
"""A cooperative stop, or a granted retirement."""
EXIT_FAILURE = 1
"""A failure (a ``failed`` frame went first), or the spawner died before the watch."""
EXIT_CONTRACT = 2
"""The spawner broke the contract (argv, descriptors, environment); no frame."""

_managed = False


def mark_managed() -> None:
    """Record that this process is a pool's worker (the launcher does, for every slot).

    ``ProcessManager.start`` asks :func:`is_managed` and refuses to nest a pool inside any
    managed worker.
    """
    global _managed
    _managed = True


def is_managed() -> bool:
    """Whether this process is a managed worker, entry or task worker alike."""
    return _managed


class WorkerExit(Exception):
    """Leave the worker with ``code``, sending ``failed(reason)`` first when given.

    Raised ``from`` the application's exception when there is one, so that debug mode
    can print it.
    """

    def __init__(self, code: int, reason: Reason | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.reason = reason


def failure(reason: Reason) -> WorkerExit:
    """A :class:`WorkerExit` with status 1 and ``reason``."""
    return WorkerExit(EXIT_FAILURE, reason)


def source_failure(error: Exception, reason: Reason) -> WorkerExit:
    """:func:`failure` of the step that broke (``reason``), unless the source named
    the cause: a :class:`~coretsia.worker_protocol.task_source.TaskSourceStorageError`
    (its storage is corrupt or full) ends the worker with its own reason.
    """
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.worker_protocol.task_source import TaskSourceStorageError

    if isinstance(error, TaskSourceStorageError):
        return WorkerExit(EXIT_FAILURE, error.reason)
    return failure(reason)


_leaving: int | None = None
"""The status :func:`leave` exits with; None: an ordinary exit, with the whole teardown."""


def _end_after_leave() -> None:
    """After :func:`leave`, the last ``atexit`` handler: flush stdout and stderr and end
    the process there, before the interpreter clears its modules and collects its heap.

    Registered when this module is first imported. The launcher and the
    ``coretsia-supervisor`` command import it before anything else that registers a
    handler, and handlers run last registered first: every other one has run by now.
    """
    if _leaving is None:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # closed or broken: nothing more can be said on it
    os._exit(_leaving)


atexit.register(_end_after_leave)


def leave(code: int) -> NoReturn:
    """Exit with ``code`` as any program exits, minus the interpreter's final teardown.

    What a program may rely on at exit happens as usual: non-daemon threads are joined,
    ``atexit`` handlers run (logging's flush, an OpenTelemetry exporter's), stdout and
    stderr are flushed. Then :func:`_end_after_leave` skips clearing the modules and
    collecting objects nobody will look at again: a stop of N workers is N exits sharing
    the machine's cores, and a stop is over only when the supervisor has exited too
    (measured in ``docs/performance.md``, "Plain over clever"). Other buffered files left
    open are not finalised: close them.

    Raises :class:`SystemExit`: call it only where nothing but the interpreter's exit
    catches that (the launcher's and the command's ``main``), and only for processes
    nothing else shares. Never for a supervisor run in-process by an application
    (``ProcessManager``).
    """
    global _leaving
    _leaving = code
    raise SystemExit(code)
