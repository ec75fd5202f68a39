"""Exit kinds from ``waitpid`` statuses (see the protocol's ``internal.exit_kind``)."""

from __future__ import annotations

import os

from coretsia.worker_protocol.internal.exit_kind import from_returncode


def exit_kind(wait_status: int) -> str:
    """The bounded exit kind of a raw ``waitpid`` status."""
    return from_returncode(os.waitstatus_to_exitcode(wait_status))
