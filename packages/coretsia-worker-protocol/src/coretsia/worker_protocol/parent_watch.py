"""Dying with the parent: how a spawned worker (or proc host) never outlives its spawner.

Shared by the worker launcher and the proc host, the two processes that must die when
the process that spawned them dies. Both call :func:`arm_parent_death` as their very
first instruction, then :func:`parent_matches` to close the race in which the parent died
before the watch was armed. The spawner names itself in ``CORETSIA_WORKER_PARENT_PID``.

On Linux this is ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` through ctypes rather than a
watcher thread: a thread in every worker would make application code that
forks warn on 3.12+ and risk deadlock. The kernel fires the signal when the *thread* that
spawned us exits, so spawners spawn from a thread that lives as long as their children
(the guardian's spawner thread, the proc host's main thread). Other systems have no such
call; there the spawner's own containment (process groups, Job Objects) has to do.

Standard library only and imported on the worker boot path: keep it small.
"""

from __future__ import annotations

import os
import sys

PARENT_PID_ENV = "CORETSIA_WORKER_PARENT_PID"
"""Set by a spawner to its own pid; removed by the child once checked."""

_PR_SET_PDEATHSIG = 1
_SIGKILL = 9
_MAX_INT_CHARS = 10


def arm_parent_death() -> bool:
    """Ask the kernel to SIGKILL us when our parent dies; False if that failed.

    True on systems without the call: there is nothing to arm.
    """
    if not sys.platform.startswith("linux"):
        return True
    try:
        # deferred: platform-only
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        arg = ctypes.c_ulong
        result: int = libc.prctl(
            ctypes.c_int(_PR_SET_PDEATHSIG), arg(_SIGKILL), arg(0), arg(0), arg(0)
        )
    except (OSError, AttributeError):
        return False
    return result == 0


def parent_matches() -> bool | None:
    """Pop ``CORETSIA_WORKER_PARENT_PID`` and compare it with our parent.

    None when the variable is missing or not a canonical decimal (a contract violation),
    False when our parent is already someone else (the spawner died before we armed the
    watch), True otherwise. The variable is removed either way: it is not the
    application's.
    """
    value = os.environ.pop(PARENT_PID_ENV, None)
    if value is None or not is_decimal(value):
        return None
    return os.getppid() == int(value)


def is_decimal(value: str) -> bool:
    """A canonical non-negative decimal: ASCII digits, no sign, no leading zero."""
    return (
        0 < len(value) <= _MAX_INT_CHARS
        and value.isascii()
        and value.isdigit()
        and (value == "0" or value[0] != "0")
    )
