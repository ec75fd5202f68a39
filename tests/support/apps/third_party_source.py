"""An installed third-party task source (``http``), written against the protocol's SPI alone.

Built into fixture wheels under several module names by the lifecycle source tests; it
logs each task it runs to ``third-party.log`` in the pool's root.
"""

from coretsia.worker_protocol.task_source import TaskSourceContext


class Task:
    def __init__(self, n):
        self.n = n

    def run(self):
        with open("third-party.log", "a") as log:
            log.write(f"{self.n}\n")
        return self.n

    def complete(self, result):
        pass

    def fail(self, error):
        pass


class Source:
    def __init__(self, context: TaskSourceContext):
        self.context = context
        self.n = 0

    def assert_ready(self):
        assert self.context.options.get("greeting") == "hello"

    def receive(self):
        if self.n >= 3:
            self.context.wait_for_stop(None)
            return None
        self.n += 1
        return Task(self.n)


def make_source(context):
    return Source(context)


make_source.task_type = "http"  # type: ignore[attr-defined]  # the SPI's declaration


def make_checked_source(context):
    """The same source, with a ``check_options`` that breaks (not an option error)."""
    return Source(context)


def _broken_check(options):
    raise RuntimeError("check saw /secret/path")


make_checked_source.task_type = "http"  # type: ignore[attr-defined]  # the SPI's declaration
make_checked_source.check_options = _broken_check  # type: ignore[attr-defined]  # likewise
