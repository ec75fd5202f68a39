"""The worker's heartbeat: one small daemon thread that has a ``heartbeat`` frame sent
every third of ``heartbeat_timeout_ms``, from ``ready`` until the channel closes.
Imported only when the generation turns the heartbeat on (the
:class:`~coretsia.supervisor.worker_side.channel.Reporter` starts it).

Why a thread, and not a timer in the worker's waits or an interval-timer signal:

* The worker's waits are not the worker's. While idle it is inside the task source's
  ``receive`` (the application's or a third party's code, blocked in its own ``select``
  on the stop descriptor, or in a database driver); while busy it is inside the task.
  A timer in "the existing wait" would need every source to cooperate, and would say
  nothing while a task runs.
* A signal (``setitimer`` + ``SIGALRM``) runs its Python handler on the main thread
  between bytecodes only: a task in C for a minute (a big query, a regex, numpy) would
  look hung. It also takes the process's one real-time interval timer and ``SIGALRM``
  from the application (``signal.alarm`` is a common task timeout), makes every slow
  system call of the application's C extensions see ``EINTR``, and its handler can run
  in the middle of the main thread's partial ``sendall`` of another frame.
* A thread beats while the main thread waits, runs Python or runs C that releases the
  GIL, and stops with the process: ``SIGSTOP``, a frozen cgroup, a machine starved of CPU
  all silence it, which is what the supervisor watches for. It costs one thread (a few
  tens of KiB resident) and a wake-up per interval. It is a daemon thread: a worker's
  exit never waits for it.

Frames never interleave: the :class:`~coretsia.supervisor.worker_side.channel.Reporter` sends
every frame, and closes the channel, under one lock from the moment this thread exists.
The thread blocks every signal, so the process's signals (the guardian's SIGTERM, a
``signal.alarm``) keep reaching the main thread, where Python runs its handlers, rather
than landing here and leaving the main thread asleep in a system call.

What it proves is that the interpreter is alive and scheduled, not that the task makes
progress: a main thread deadlocked in C while this thread runs is not "hung" to the
supervisor (``docs/reliability.md``). A task that holds the GIL in C longer than the
timeout (an extension that never releases it) does stop the beats.
"""

from __future__ import annotations

import signal
import threading
import time

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

BEATS_PER_TIMEOUT: Final = 3
"""Beats per ``heartbeat_timeout_ms``: two may be lost to a busy machine before the third."""


def beat_every(timeout_ms: int, beat: Callable[[], bool]) -> None:
    """Call ``beat`` now and every ``timeout_ms / 3`` on a thread of its own, until it
    returns False (the channel closed, or nobody listens any more)."""
    start_quiet_thread(_beating, beat, timeout_ms / 1000 / BEATS_PER_TIMEOUT)


def start_quiet_thread(function: Callable[..., None], *args: object) -> None:
    """Run ``function(*args)`` on a new thread that blocks every signal (see above)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())  # inherited
    try:
        threading.Thread(target=function, args=args, daemon=True).start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _beating(beat: Callable[[], bool], interval_s: float) -> None:
    while beat():
        time.sleep(interval_s)
