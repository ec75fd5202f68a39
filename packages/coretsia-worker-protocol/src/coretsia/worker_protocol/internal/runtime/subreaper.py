"""Child subreaper (Linux): orphaned descendants re-parent to us, not to init.

The guardian is one so that grandchildren of workers stay reachable for reaping and
containment; the supervisor is one so that, should the guardian itself be killed, what it
left behind re-parents to the supervisor, which then kills and reaps it.
"""

from __future__ import annotations

import ctypes
import sys

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def become_subreaper(enable: bool = True) -> bool:
    """Make orphaned descendants re-parent to us (Linux); False where unsupported.

    ``enable=False`` gives the role back, for a process that ran a pool and goes on
    (``ProcessManager.start`` returning) and was no subreaper before (see
    :func:`is_subreaper`): its later orphans go to init again.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(enable), 0, 0, 0)) == 0


def is_subreaper() -> bool:
    """Whether this process is a child subreaper now (Linux; False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    flag = ctypes.c_int(0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return flag.value != 0
