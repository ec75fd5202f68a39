"""Starts worker processes from one dedicated, long-lived thread.

Why a thread of its own: on Linux a worker arms ``PR_SET_PDEATHSIG`` so that it dies with
the guardian, and the kernel fires that signal when the *thread* that created the child
exits, not the process. trio's worker threads exit after ten idle seconds, which would kill
every worker ten seconds after it started. This thread lives exactly as long as the
generation.

Why ``posix_spawn`` and not ``subprocess``: the guardian reaps every child itself, with one
``waitpid`` loop (it is a subreaper, so orphaned grandchildren land on it too). A
``Popen`` object would keep its own idea of its child and may ``waitpid`` it later, which
could steal a status or, worse, reap a recycled pid. ``posix_spawn`` is fork-exec with no
Python code between the two, so it is also safe in a multi-threaded process.

Descriptor isolation: every descriptor of the guardian is close-on-exec (PEP 446), so the
child inherits only 0, 1, 2 and the descriptors the request names, duplicated to 3, 4, 5
in order by the file actions. Sources are first moved to descriptors 10 and up so that
``dup2`` never maps a descriptor onto itself, which would leave close-on-exec set.
"""

from __future__ import annotations

import fcntl
import os
import queue
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeVar

import attrs
import trio

FIRST_FD: Final = 3
"""Where the first passed descriptor lands in the child; the others follow in order.

A worker gets its worker channel at 3, the cooperative-stop pipe at 4 and the
generation fence at 5; the proc host gets its guardian channel, the stop pipe and the
fence at the same numbers."""

_HIGH_FD: Final = 10
_T = TypeVar("_T")

# Signals the guardian ignores or handles must be default again in a fresh worker:
# ignored dispositions survive exec.
_RESET_SIGNALS: Final = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGPIPE,
    signal.SIGCHLD,
    signal.SIGQUIT,
)


@attrs.frozen
class SpawnRequest:
    """What to start: a shell-free argv, its environment, the descriptors it gets."""

    argv: Sequence[str]
    env: Mapping[str, str]
    fds: tuple[int, ...]


class Spawner:
    """Owns the spawner thread; :meth:`spawn` hands it a request and awaits the pid.

    :meth:`call` runs anything else that must happen on that thread: entering a PID
    namespace (``unshare`` changes the calling thread's namespaces for its children).
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[
            tuple[Callable[[], object], trio.lowlevel.TrioToken, list[object], trio.Event] | None
        ] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="coretsia-spawner", daemon=True)
        self._thread.start()

    async def spawn(self, request: SpawnRequest) -> int:
        """Start the process and return its pid; raises OSError if the OS refuses."""
        return await self.call(lambda: _spawn(request))

    async def call(self, job: Callable[[], _T]) -> _T:
        """Run ``job`` on the spawner thread and return its result (or raise its OSError)."""
        done = trio.Event()
        result: list[object] = []
        self._requests.put((job, trio.lowlevel.current_trio_token(), result, done))
        # Never abandoned half way: the caller closes the descriptors it passes once this
        # returns, and the thread may be duplicating them right now (a spawn is quick).
        with trio.CancelScope(shield=True):
            await done.wait()
        outcome = result[0]
        if isinstance(outcome, OSError):
            raise outcome
        return outcome  # type: ignore[return-value]  # what ``job`` returned

    def close(self) -> None:
        """Stop the thread, once the generation is gone.

        Its exit is what fires the parent-death signal of every child it spawned (Linux):
        a worker still alive at this point is SIGKILLed by the kernel.
        """
        self._requests.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._requests.get()
            if item is None:
                return
            job, token, result, done = item
            try:
                result.append(job())
            except OSError as exc:
                result.append(exc)
            token.run_sync_soon(done.set)


def _spawn(request: SpawnRequest) -> int:
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD) for fd in request.fds]
    try:
        return os.posix_spawn(
            request.argv[0],
            list(request.argv),
            dict(request.env),
            file_actions=[(os.POSIX_SPAWN_DUP2, fd, FIRST_FD + i) for i, fd in enumerate(high)],
            setsid=True,
            setsigdef=_RESET_SIGNALS,
            setsigmask=(),
        )
    finally:
        for fd in high:
            os.close(fd)
