"""A minimal init for when ``coretsia-supervisor start`` runs as PID 1 (a container).

PID 1 has two duties nobody else has: every orphan of the PID namespace is re-parented to
it and must be reaped, or zombies pile up (the processes an exec probe leaves behind,
say); and the kernel delivers it no signal it has not installed a handler for. The
supervisor is a trio program that reaps its one child (the guardian) with trio's own
wait; a ``waitpid(-1)`` loop beside it would steal that status (architecture invariant
4). So, like ``docker run --init``, the PID 1 process becomes this tiny init instead: it
starts the real supervisor as its only child, forwards SIGTERM, SIGINT, SIGHUP and
SIGQUIT to it, reaps every process that exits, and leaves with the supervisor's status.
No trio, no threads: ``signal.set_wakeup_fd`` and one blocking ``waitpid(-1)`` loop.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
INIT_ENV = "CORETSIA_INIT_CHILD"
"""Set in the supervisor started by the init, so it does not start another one."""


def needed() -> bool:
    """True when this process is PID 1 and not already the init's child."""
    return os.getpid() == 1 and os.environ.get(INIT_ENV) != "1"


def run(argv: Sequence[str]) -> int:
    """Start ``argv`` as the supervisor, forward signals, reap everything; its status."""
    child_pid = 0

    def forward(signum: int, _frame: object) -> None:
        if child_pid:
            os.kill(child_pid, signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    env = {**os.environ, INIT_ENV: "1"}
    child = subprocess.Popen(list(argv), env=env, restore_signals=True)
    child_pid = child.pid
    while True:
        try:
            pid, status = os.waitpid(-1, 0)  # the one reaper of this process
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if pid == child_pid:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code
