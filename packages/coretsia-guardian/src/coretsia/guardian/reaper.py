"""The guardian's one way of reaping: a ``waitpid(-1)`` loop woken by SIGCHLD.

The guardian is a child subreaper on Linux, so orphaned grandchildren of its workers are
re-parented to it and must be reaped promptly too; a per-child wait cannot know about
them. One process-wide loop owns every child instead. Nothing else in the guardian waits
for a child: no ``Popen``, no trio process waits (architecture invariant 4), otherwise a
stolen status would turn into a wrong exit kind.

No polling: the loop sleeps until the kernel delivers SIGCHLD, then drains every status
that is ready. The receiver is opened before the first spawn, so no exit is missed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import trio

ExitCallback = Callable[[int, int], None]
"""Called with ``(pid, wait_status)`` for every reaped child, in the trio thread."""


def drain(on_exit: ExitCallback) -> None:
    """Reap every child whose status is ready, without blocking."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        on_exit(pid, status)


async def reap_forever(
    on_exit: ExitCallback, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Reap children as they exit until cancelled; started with ``nursery.start``."""
    with trio.open_signal_receiver(signal.SIGCHLD) as signals:
        task_status.started()
        drain(on_exit)
        async for _ in signals:
            drain(on_exit)
