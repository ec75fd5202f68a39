"""Which refusal a failed spawn of the pool's interpreter was: the OS's limits, or the program.

Every Coretsia process (the guardian, the proc host, the fork server, the namespace's
init, each ``exec`` worker) is the supervisor's own interpreter, started again. When that
start fails, the operator's next step depends on why: a process limit or a lack of memory
(``worker-fork-failed``) passes, while an interpreter that is gone, that the pool's user
may not execute, or that is not a program (a virtual environment replaced in place, a
``chmod``, a ``noexec`` mount) fails every later start alike, so it has a token of its own
(``worker-interpreter-unavailable``) rather than the generic failure of whatever was
being started.
"""

from __future__ import annotations

import errno
import sys

from coretsia.worker_protocol.catalogue import Reason

_NOT_RUNNABLE = frozenset(
    {
        errno.ENOENT,  # gone (or its loader is)
        errno.ENOTDIR,
        errno.ELOOP,
        errno.ENAMETOOLONG,
        errno.EACCES,  # not executable by this user, or a directory on its path is not
        errno.EPERM,  # a noexec mount, a security module
        errno.ENOEXEC,  # not a program this machine runs
        errno.ETXTBSY,  # being written to right now
        errno.ELIBBAD,
    }
)


def spawn_failure(exc: OSError, otherwise: Reason, program: str = sys.executable) -> Reason:
    """``worker-interpreter-unavailable`` if ``exc`` is the refusal to execute ``program``
    (the interpreter), else ``otherwise`` (the failure of what was being started).

    Both ``os.posix_spawn`` and ``subprocess`` name the program in the error's
    ``filename``; a refusal that names another file (a cgroup's, a socket's) is not the
    interpreter's.
    """
    if exc.errno in _NOT_RUNNABLE and exc.filename == program:
        return Reason.INTERPRETER_UNAVAILABLE
    return otherwise
