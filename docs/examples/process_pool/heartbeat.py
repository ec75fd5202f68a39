"""A disabled, long-running supervised entry: the starting point for your own.

Like seed 003's template process, it is declared with ``@process`` and discovered at
start, but its ``enabled`` property is false, so it takes no worker and no name. To use
it, return True from ``enabled`` and replace the heartbeat with the application's work.
It never returns from ``execute`` on its own: while the pool runs, a returning entry is
replaced, it does not complete. It is async (``enable_async`` true), so its wait is
inside an event loop: asyncio, the default ``event_loop`` (it uses ``asyncio.wait_for``;
under ``event_loop = "trio"`` use ``trio.move_on_after`` instead).
"""

from __future__ import annotations

import asyncio
import logging

from coretsia.supervisor.process import WorkerPool, process

logger = logging.getLogger("example.heartbeat")

INTERVAL_S = 30.0


@process()  # name: "heartbeat.Heartbeat", one worker, async inherited from the class
class Heartbeat:
    """Logs a heartbeat with its worker id every 30 seconds until the pool stops."""

    @property
    def enabled(self) -> bool:
        return False  # enable it here

    @property
    def enable_async(self) -> bool:
        return True

    async def execute(self, pool: WorkerPool, worker_id: int) -> None:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
        while True:
            logger.info("heartbeat from worker %d", worker_id)
            try:
                await asyncio.wait_for(pool.wait_stopped(), INTERVAL_S)
            except asyncio.TimeoutError:
                continue
            return
