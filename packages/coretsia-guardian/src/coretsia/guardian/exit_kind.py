"""Bounded names for how a process ended; raw statuses never leave the guardian."""

from __future__ import annotations

import os
import signal


def exit_kind(wait_status: int) -> str:
    """``exit-0``, ``exit-nonzero``, ``signal-term``, ``signal-kill`` or ``signal-other``."""
    code = os.waitstatus_to_exitcode(wait_status)
    if code == 0:
        return "exit-0"
    if code > 0:
        return "exit-nonzero"
    if -code == signal.SIGTERM:
        return "signal-term"
    if -code == signal.SIGKILL:
        return "signal-kill"
    return "signal-other"
