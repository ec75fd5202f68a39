"""The worker's cooperative stop signal: the read end of a pipe that reaches EOF.

The guardian closes the write end when the generation is asked to stop, so the descriptor
becomes readable and stays readable. Task sources and process entries both wait on it,
through :class:`StopSignal`, without ever reading it (every later check still sees it)
and without sleeping in a loop. On the worker boot path: imports only :mod:`select`.
"""

from __future__ import annotations

import select

__all__ = ["StopSignal"]

_MAX_POLL_MS = 2**31 - 1


class StopSignal:
    """Whether a stop was requested, and a bounded wait for one; once seen, remembered."""

    __slots__ = ("_fd", "_poller", "_stopping", "_waker")

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._stopping = False
        self._waker: tuple[select.epoll, int] | None = None
        self._poller: select.poll | None = None
        if hasattr(select, "poll"):  # no FD_SETSIZE limit; Windows has only select()
            self._poller = select.poll()
            self._poller.register(fd, select.POLLIN)

    @classmethod
    def any_of(cls, stop_fd: int, other: int) -> StopSignal:
        """A signal over ``stop_fd`` that :meth:`listen` can make fire on ``other`` too.

        A task worker's ``other`` is its own channel: once the worker asked to retire,
        the supervisor's ``retire`` (its turn to recycle) must wake a source blocked on
        :meth:`fileno` just as a stop does, or an idle worker would hold the one
        recycling turn until its next task; but never while a task runs, which must not
        see a routine recycle as a stop. One descriptor stands for both where the kernel
        offers it (an epoll set is readable while an armed member is); elsewhere only
        ``stop_fd``, and ``retire`` is seen between tasks.
        """
        if not hasattr(select, "epoll"):
            return cls(stop_fd)
        waker = select.epoll()
        waker.register(stop_fd, select.EPOLLIN)
        waker.register(other, 0)  # dormant until listen(True)
        signal = cls(waker.fileno())
        signal._waker = (waker, other)  # the set lives as long as the signal
        return signal

    def listen(self, on: bool) -> None:
        """Arm or disarm the other descriptor of :meth:`any_of` (no-op otherwise).

        Disarming forgets a stop seen through it: only the stop descriptor's own
        readiness, which never goes away, is remembered across.
        """
        if self._waker is None:
            return
        waker, other = self._waker
        waker.modify(other, select.EPOLLIN if on else 0)
        if not on:
            self._stopping = False  # the next look polls the stop descriptor alone

    def fileno(self) -> int:
        """The descriptor, for a caller's own ``poll``/``select`` or event loop."""
        return self._fd

    @property
    def stopping(self) -> bool:
        """True once a stop was requested (never blocks)."""
        return self.wait(0)

    def wait(self, timeout: float | None) -> bool:
        """Block until a stop is requested or ``timeout`` seconds passed; True if stopping."""
        if self._stopping:
            return True
        if timeout is not None:
            timeout = max(timeout, 0.0)
        if self._poller is not None:
            ms = None  # block; also for a timeout poll() cannot express (about 24 days)
            if timeout is not None and timeout * 1000 <= _MAX_POLL_MS:
                ms = -int(-timeout * 1000 // 1)  # round up: never wake before the timeout
            self._stopping = bool(self._poller.poll(ms))
        else:
            self._stopping = bool(select.select([self._fd], [], [], timeout)[0])
        return self._stopping
