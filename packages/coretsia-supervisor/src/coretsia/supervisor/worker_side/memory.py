"""The worker's own resident memory, against ``max_memory_mb``. Internal.

Read the plain way, from ``/proc/self/statm`` (its second field, in pages): a few
microseconds after each task, no library. Where there is no ``/proc`` (macOS, the BSDs:
untested platforms) :func:`resource.getrusage` gives the peak instead, which only grows:
a worker that passed the limit once stays past it, so it retires all the same.

A task worker looks after each task (:mod:`.task_loop`); a process entry has no task to look
after, so it looks every :data:`WATCH_INTERVAL_S` from a thread of its own
(:func:`watch_memory`), built like the heartbeat's. Imported on the worker boot path only
when ``max_memory_mb`` is on, and then only the standard library's builtins.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

MIB: Final = 1024 * 1024

WATCH_INTERVAL_S: Final = 0.25
"""How often an entry worker looks at its memory: an entry that allocates fast may pass
the limit by what it allocates in this long plus the supervisor's answer."""

_STATM: Final = "/proc/self/statm"


def resident_bytes() -> int:
    """This process's resident set size in bytes (its peak where ``/proc`` is missing)."""
    try:
        with open(_STATM, "rb") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        # deferred: platform-only
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes there, KiB elsewhere
    return pages * os.sysconf("SC_PAGE_SIZE")


class MemoryLimit:
    """``max_memory_mb`` in bytes; :meth:`exceeded` reads the memory only when on."""

    __slots__ = ("limit",)

    def __init__(self, max_memory_mb: int) -> None:
        self.limit = max_memory_mb * MIB
        """0: off."""

    def exceeded(self) -> bool:
        """Whether the limit is on and the resident memory passed it."""
        return self.limit > 0 and resident_bytes() > self.limit


def watch_memory(limit: MemoryLimit, over: Callable[[], None]) -> None:
    """Call ``over`` once, from a thread of its own, when ``limit`` is exceeded.

    The thread blocks every signal (the entry's SIGTERM must reach the main thread) and
    ends with the call, or with the process.
    """
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor.worker_side.heartbeat import start_quiet_thread

    start_quiet_thread(_watching, limit, over)


def _watching(limit: MemoryLimit, over: Callable[[], None]) -> None:
    while not limit.exceeded():
        time.sleep(WATCH_INTERVAL_S)
    over()
