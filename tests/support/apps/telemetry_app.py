"""The task source of the telemetry test (``telemetry_app:three`` in a root).

The failing task's message carries :data:`SECRET` and a private path: neither may reach
the exporter.
"""

SECRET = "s3cr3t-task-payload"


class Task:
    def __init__(self, slot, number):
        self.slot, self.number = slot, number

    def run(self):
        if self.number == 2:
            raise ValueError(f"{SECRET} at /srv/private/path")
        return self.number

    def complete(self, result):
        self._done()

    def fail(self, error):
        self._done()

    def _done(self):
        if self.number == 3:
            open(f"done-{self.slot}", "w").close()


class Three:
    """Hands out three tasks (the second one fails), then waits for the stop."""

    def __init__(self, ctx):
        self.ctx, self.given = ctx, 0

    def assert_ready(self):
        pass

    def receive(self):
        if self.given < 3:
            self.given += 1
            return Task(self.ctx.slot, self.given)
        self.ctx.wait_for_stop(None)
        return None


def three(ctx):
    return Three(ctx)
