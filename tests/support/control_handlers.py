"""A pool object and a control handler for in-process tests of the control server (helpers).

Imported by test modules as ``control_handlers`` (``tests/support`` is on pytest's
pythonpath). The control server asks its handler for answers; these answer from a pool
object the test sets up, with no supervisor behind it.
"""

from __future__ import annotations

from collections.abc import Sequence

import trio

from coretsia.supervisor.daemon.pool import Pool, Slot
from coretsia.worker_protocol.control import ControlResponse, StatusResponse
from coretsia.worker_protocol.vocabulary import Containment, ControlCommand, Driver, Transport


def pool_of(slots: Sequence[Slot]) -> Pool:
    """A pool of ``slots`` as a ``fork`` pool on ``unix`` describes itself."""
    return Pool(
        pid=1,
        driver=Driver.FORK,
        transport=Transport.UNIX,
        containment=Containment.PROCESS,
        endpoint_hash="0" * 32,
        slots=list(slots),
    )


class Handler:
    """Answers ``status`` and ``health`` from a pool of one slot; notes each answer.

    A ``stop`` is not expected: a test that needs one subclasses it.
    """

    def __init__(self) -> None:
        self.pool = pool_of([Slot(0)])
        self.answered = trio.Event()

    def answer(self, command: ControlCommand) -> ControlResponse:
        self.answered.set()
        if command is ControlCommand.HEALTH:
            return self.pool.health()
        return StatusResponse(self.pool.summary())

    def subscribe_stop(self) -> trio.MemoryReceiveChannel[ControlResponse]:
        raise AssertionError("not used here")
