"""The init of a generation's PID namespace (``namespace`` containment). Not a user command.

The guardian's spawner thread starts it as the first process of a new PID namespace, so
it is that namespace's PID 1: when it dies, the kernel SIGKILLs every process inside,
whatever they closed or however they detached. It dies with the guardian (its
parent-death signal, armed first, as the launcher does), and the guardian SIGKILLs it at
the end of every shutdown. Meanwhile it has the two duties of a PID 1: it mounts a
``/proc`` of its namespace (in the namespace's own mount namespace, made private by the
spawner thread), so that a worker's ``os.getpid()`` and ``/proc/<pid>`` agree (psutil
relies on it), and it reaps every orphan of the namespace (the guardian, outside, is
not their subreaper any more), so no zombie lingers.

It tells the guardian it is ready by writing ``1`` on fd 3 once ``/proc`` is mounted.
Standard library only (and the protocol's stdlib-only helpers): it must boot fast.
"""

from __future__ import annotations

import os
import signal

from coretsia.worker_protocol.internal.runtime.pidns import mount_proc
from coretsia.worker_protocol.parent_watch import arm_parent_death, parent_matches


def main() -> None:
    """Arm the parent watch, mount ``/proc``, report ready, then reap until killed."""
    if not arm_parent_death() or not parent_matches():
        os._exit(1)  # the guardian is gone already (or this was not started by it)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        mount_proc()
    except OSError:
        os._exit(1)
    os.write(3, b"1")
    os.close(3)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            signal.sigwait({signal.SIGCHLD})  # pending if an orphan ended meanwhile


if __name__ == "__main__":
    main()
