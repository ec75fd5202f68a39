"""Task sources for the tests of the docs' claims (``claims_app:<factory>`` in a root).

Each leaves a marker file in the root (the worker's working directory) when it reaches
the point a test waits for, so the test waits on that event instead of sleeping. Their
tasks are ``lifecycle_app``'s, which every test root holds beside this module.
"""

import os
import signal
import time

from lifecycle_app import Task  # type: ignore[import-not-found]  # the root's copy


def _mark(name):
    """Create the marker ``name`` in the root (the worker's working directory)."""
    os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o600))


class Busy:
    """One task that marks ``busy-<slot>`` and then never ends: it ignores both the stop
    and SIGTERM, so the pool stays in its stop until the test kills the worker."""

    def __init__(self, ctx):
        self.ctx = ctx

    def assert_ready(self):
        pass

    def receive(self):
        def forever():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            _mark(f"busy-{self.ctx.slot}")
            while True:
                time.sleep(60)

        return Task(forever)


def busy(ctx):
    return Busy(ctx)


class GatedReplacement:
    """The first worker of each slot is ready at once and serves one task; a replacement
    (after a recycle) marks ``gated-<slot>`` and is not ready until the file ``gate``
    exists (at most a minute)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.given = False

    def assert_ready(self):
        try:
            fd = os.open(f"first-{self.ctx.slot}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            _mark(f"gated-{self.ctx.slot}")
            deadline = time.monotonic() + 60
            while not os.path.exists("gate") and time.monotonic() < deadline:
                time.sleep(0.01)
        else:
            os.close(fd)

    def receive(self):
        if not self.given:
            self.given = True
            return Task(lambda: None)
        self.ctx.wait_for_stop(None)
        return None


def gated_replacement(ctx):
    return GatedReplacement(ctx)
