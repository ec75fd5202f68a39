"""The two event loops a mounted pool (:mod:`.mounted`) can be hosted in: one-shot
events that the pool's thread sets and the host's loop awaits.

Each is set through its loop's one thread-safe entry point (asyncio's
``call_soon_threadsafe``, trio's ``TrioToken.run_sync_soon``), and each can be awaited
through a cancellation: the host must not leave a pool's block while the pool still has
processes, yet the cancel it received is passed on once the wait is over.
"""

from __future__ import annotations

import asyncio

import trio

__all__ = ["AsyncioEvent", "TrioEvent"]


class AsyncioEvent:
    """An event of the running asyncio loop (create it in that loop's task)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def set(self) -> None:
        """Set it from any thread; a closed loop has nobody left to tell."""
        try:
            self._loop.call_soon_threadsafe(self._event.set)
        except RuntimeError:
            pass  # the loop is closed

    async def wait(self) -> None:
        """Wait until it is set."""
        await self._event.wait()

    async def wait_uncancelled(self) -> None:
        """Wait until it is set, through any cancel; then raise the last cancel, if any."""
        waiter = asyncio.ensure_future(self._event.wait())
        cancelled: asyncio.CancelledError | None = None
        while not waiter.done():
            try:
                await asyncio.shield(waiter)
            except asyncio.CancelledError as exc:
                cancelled = exc
        if cancelled is not None:
            raise cancelled


class TrioEvent:
    """An event of the running trio run (create it in that run's task)."""

    def __init__(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._event = trio.Event()

    def set(self) -> None:
        """Set it from any thread; a finished run has nobody left to tell."""
        try:
            self._token.run_sync_soon(self._event.set)
        except trio.RunFinishedError:
            pass

    async def wait(self) -> None:
        """Wait until it is set."""
        await self._event.wait()

    async def wait_uncancelled(self) -> None:
        """Wait until it is set, shielded; a pending cancel strikes at the next checkpoint."""
        with trio.CancelScope(shield=True):
            await self._event.wait()
