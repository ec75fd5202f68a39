"""A demo task source for the quick start: not a real queue.

It stands in for a real transport (the reference SQLite queue comes later) so the quick
start shows a pool doing work with nothing to install. Each worker gets its own source;
``receive`` hands out a new task every second, and each task computes a trivial sum and
prints one line, ``worker <slot>: task <n> done``.

What it shows about the task-source contract (``coretsia.worker_protocol.task_source``):

* ``receive`` waits with ``context.wait_for_stop(1.0)`` instead of ``time.sleep``, so a
  cooperative stop wakes it at once, and it returns ``None`` only when stopping (never for
  "nothing to do");
* ``assert_ready`` is where a real source checks its broker before the worker is ready;
* ``complete`` and ``fail`` are where a real source acknowledges or retries a message;
  here there is nothing to settle.
"""

from __future__ import annotations

from coretsia.worker_protocol.task_source import TaskSourceContext


class DemoTask:
    """One unit of work: add up some numbers and say so."""

    def __init__(self, slot: int, number: int) -> None:
        self.slot = slot
        self.number = number

    def run(self) -> int:
        total = sum(range(self.number * 1000))
        print(f"worker {self.slot}: task {self.number} done", flush=True)
        return total

    def complete(self, result: object) -> None:
        """A real source would acknowledge the message here."""

    def fail(self, error: BaseException) -> None:
        """A real source would retry or dead-letter the message here."""


class DemoSource:
    """Hands out one task per second until a cooperative stop."""

    def __init__(self, context: TaskSourceContext) -> None:
        self.context = context
        self.handed_out = 0

    def assert_ready(self) -> None:
        """Nothing to check: the demo has no broker."""

    def receive(self) -> DemoTask | None:
        if self.context.wait_for_stop(1.0):
            return None  # stopping: the only time receive() may return None
        self.handed_out += 1
        return DemoTask(self.context.slot, self.handed_out)


def make_source(context: TaskSourceContext) -> DemoSource:
    """The factory named by ``task_source = "quickstart_app:make_source"``."""
    return DemoSource(context)
