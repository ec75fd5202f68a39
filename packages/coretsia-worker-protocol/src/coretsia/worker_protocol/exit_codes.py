"""Exit statuses of every Coretsia command, in LSB's numbering.

``status`` and ``health`` are LSB-style status actions and Kubernetes exec probes, so the
numbers follow LSB's init-script table. 126 and above stay free: shells use them for
"cannot execute" and for deaths by signal, and systemd owns 200-243. The one status
LSB has no word for, a stop that had to force its workers, is 8: the first after LSB's
table, and one that systemd prints as a plain number (it names 0-7 and 64-78).
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """The exit status of a Coretsia command."""

    OK = 0
    """Success: running, healthy, stopped (or already stopped)."""
    FAILURE = 1
    """Generic failure: the pool failed, or ``health`` found it unhealthy."""
    USAGE = 2
    """The command line was wrong (argparse's own status)."""
    NOT_RUNNING = 3
    """No worker generation is active for the root."""
    UNKNOWN = 4
    """The state cannot be determined: the supervisor could not be reached."""
    CONFIG_INVALID = 6
    """The configuration is invalid (pair with systemd's ``RestartPreventExitStatus=6``)."""
    FORCED_STOP = 8
    """``start``: the pool stopped, but a worker had to be sent SIGTERM or SIGKILL (a task
    was cut short): not a failure, and not the clean stop of 0 either."""
