"""Bounded names for how a process ended; raw statuses never leave the daemons.

The guardian (from ``waitpid`` statuses) and the proc host (from ``Popen.returncode``)
report exits the same way: the supervisor's logs and decisions need to tell a clean exit
from a failure and a SIGTERM from a SIGKILL (an out-of-memory kill), nothing more. The
``exited`` frame carries an :class:`ExitKind` and refuses any other value.
"""

from __future__ import annotations

import enum
import os
import signal


class ExitKind(str, enum.Enum):
    """How a worker ended, as the ``exited`` frame and the logs name it."""

    EXIT_0 = "exit-0"
    EXIT_NONZERO = "exit-nonzero"
    SIGNAL_TERM = "signal-term"
    SIGNAL_KILL = "signal-kill"
    SIGNAL_OTHER = "signal-other"


def from_returncode(code: int) -> ExitKind:
    """The exit kind of a ``subprocess``-style return code (negative: a death by signal)."""
    if code == 0:
        return ExitKind.EXIT_0
    if code > 0:
        return ExitKind.EXIT_NONZERO
    if -code == signal.SIGTERM:
        return ExitKind.SIGNAL_TERM
    if -code == signal.SIGKILL:
        return ExitKind.SIGNAL_KILL
    return ExitKind.SIGNAL_OTHER


def from_wait_status(wait_status: int) -> ExitKind:
    """The bounded exit kind of a raw ``waitpid`` status (the guardian's reaper)."""
    return from_returncode(os.waitstatus_to_exitcode(wait_status))
