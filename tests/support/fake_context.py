"""A stand-in for the launcher's TaskSourceContext, for testing a task source in-process.

A real pipe carries the stop request, as the launcher's does: closing its write end makes the
read end readable (end of file), which is what a source waits on.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable, Mapping


class FakeContext:
    """A TaskSourceContext like the launcher's: a pipe whose write end closing means stop."""

    def __init__(
        self,
        options: Mapping[str, object] | None = None,
        *,
        generation: str | None = "gen-a",
        task_type: str = "queue",
    ) -> None:
        self._read, self._write = os.pipe()
        self._stopping = threading.Lock()  # a test's timer thread may stop it too
        self._task_type = task_type
        self.reports: list[str] = []
        """What the source reported, in order: ``unavailable <fault>``, ``available``,
        ``lease-lost``."""
        if options is not None:
            self.options = dict(options)
        if generation is not None:
            self.generation = generation

    @property
    def task_type(self) -> str:
        return self._task_type

    @property
    def slot(self) -> int:
        return 0

    @property
    def stopping(self) -> bool:
        return self.wait_for_stop(0)

    def stop_fileno(self) -> int:
        return self._read

    def wait_for_stop(self, timeout: float | None) -> bool:
        return bool(select.select([self._read], [], [], timeout)[0])

    def report_unavailable(self, fault: object) -> None:
        self.reports.append(f"unavailable {getattr(fault, 'value', fault)}")

    def report_available(self) -> None:
        self.reports.append("available")

    def report_lease_lost(self) -> None:
        self.reports.append("lease-lost")

    def stop(self) -> None:
        """Request a cooperative stop: the read end becomes readable (end of file)."""
        with self._stopping:
            if self._write >= 0:
                os.close(self._write)
                self._write = -1

    def close(self) -> None:
        self.stop()
        os.close(self._read)


MakeContext = Callable[..., FakeContext]
"""The ``make_context`` fixture: builds FakeContexts that are closed at teardown."""
