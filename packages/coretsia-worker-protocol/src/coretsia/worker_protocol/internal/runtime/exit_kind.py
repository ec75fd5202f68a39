"""Bounded names for how a process ended; raw statuses never leave the daemons.

The guardian (from ``waitpid`` statuses) and the proc host (from ``Popen.returncode``)
report exits the same way: the supervisor's logs and decisions need to tell a clean exit
from a failure and a SIGTERM from a SIGKILL (an out-of-memory kill), nothing more.
"""

from __future__ import annotations

import os
import signal


def from_returncode(code: int) -> str:
    """``exit-0``, ``exit-nonzero``, ``signal-term``, ``signal-kill`` or ``signal-other``.

    ``code`` follows ``subprocess``: negative for a death by signal.
    """
    if code == 0:
        return "exit-0"
    if code > 0:
        return "exit-nonzero"
    if -code == signal.SIGTERM:
        return "signal-term"
    if -code == signal.SIGKILL:
        return "signal-kill"
    return "signal-other"


def from_wait_status(wait_status: int) -> str:
    """The bounded exit kind of a raw ``waitpid`` status (the guardian's reaper)."""
    return from_returncode(os.waitstatus_to_exitcode(wait_status))
