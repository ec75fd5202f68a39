"""The ``stop`` command's live line on a terminal: the phase, and its budget counting down.

A person waiting for a stop deserves to know whether the pool is stopping cooperatively,
terminating or killing, and how long that can take at most. The client blocks while it
waits for the supervisor's answer, so a small daemon thread redraws the line ten times a
second; it exists only on a terminal, and only while ``stop`` runs.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from coretsia.supervisor.shared import output
from coretsia.worker_protocol.control import StopProgress

_REDRAW_S = 0.1


class Countdown:
    """Shows ``stopping: <phase> (<seconds> s left)`` until the stop returns."""

    def __init__(self) -> None:
        self._phase = "requested"
        self._deadline: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._draw, name="stop-progress", daemon=True)

    def phase(self, progress: StopProgress) -> None:
        """Callback for :meth:`ControlClient.stop`: a new phase has begun."""
        self._phase = progress.phase.value
        self._deadline = time.monotonic() + progress.budget_ms / 1000

    def _draw(self) -> None:
        while not self._done.wait(_REDRAW_S):
            line = f"stopping: {self._phase}"
            if self._deadline is not None:
                left = max(0.0, self._deadline - time.monotonic())
                line += f" ({left:.1f} s left)"
            output.progress(line)

    def __enter__(self) -> Countdown:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        self._thread.join()
