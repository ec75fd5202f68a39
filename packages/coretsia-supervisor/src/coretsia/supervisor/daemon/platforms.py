"""Where a pool runs: the one decision behind the platform claims, made before anything.

The claims (the wheels' classifiers, the README, ``docs/reliability.md``) say what was
run: **Linux** is supported and tested. **macOS and other POSIX systems** have every code
path the pool needs, but nothing has run there and some guarantees are weaker (no
parent-death signal, no subreaper, no OFD locks): they run, untested, and ``start`` says
so in one warning line. **Windows** (and interpreters without processes, such as
Emscripten and WASI) runs no pool at all: the guardian needs ``posix_spawn``, ``fcntl``,
sessions and SIGCHLD. There every command fails at once, before it reads anything, with
``CORETSIA_WORKER_START_FAILED: worker-platform-unsupported`` (exit 1), rather than deep
inside a start.

Called on every command's path (the probes too), so it imports nothing.
"""

from __future__ import annotations

import os
import sys

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerStartFailedError

TESTED = "tested"
"""Supported, and every test runs here: Linux."""
UNTESTED = "untested"
"""Runs, but no test has run here, and some guarantees are weaker: macOS, the BSDs."""
UNSUPPORTED = "unsupported"
"""No pool runs here: Windows, and interpreters without processes."""

_NO_PROCESSES = frozenset({"win32", "cygwin", "msys", "emscripten", "wasi"})


def platform_support(platform: str, os_name: str) -> str:
    """:data:`TESTED`, :data:`UNTESTED` or :data:`UNSUPPORTED` for a ``sys.platform`` and
    an ``os.name``."""
    if os_name != "posix" or platform in _NO_PROCESSES:
        return UNSUPPORTED
    if platform.startswith("linux"):
        return TESTED
    return UNTESTED


def require_supported_platform() -> str:
    """This interpreter's support; raise ``worker-platform-unsupported`` where none."""
    support = platform_support(sys.platform, os.name)
    if support == UNSUPPORTED:
        raise WorkerStartFailedError(Reason.PLATFORM_UNSUPPORTED)
    return support
