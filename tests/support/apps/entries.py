"""The entries of the ``[[process]]`` route tests (``entries:<name>`` in a root).

Each logs a line of words to ``events.log``: its name, worker id and pool name.
"""

import os

from coretsia.supervisor.process import process


def log(*words):
    fd = os.open("events.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, (" ".join(str(w) for w in words) + "\n").encode())
    os.close(fd)


def steady(pool, worker_id):
    log("steady", worker_id, pool.name)
    pool.wait_for_stop(None)


def returner(pool, worker_id):
    log("returner", worker_id)


class Idle:
    def __init__(self, context):
        self.context = context

    def assert_ready(self):
        pass

    def receive(self):
        self.context.wait_for_stop(None)


def nesting_source(context):
    # A task worker that tries to start a pool of its own is refused.
    from coretsia.supervisor import ProcessManager

    try:
        ProcessManager().add(steady).start()
    except Exception as exc:
        log("nesting", type(exc).__name__)
    return Idle(context)


def light(pool, worker_id):
    # Reports which heavy modules its worker imported, then stops the pool.
    import sys

    heavy = ("trio", "asyncio", "attrs", "cattrs", "psutil", "inspect", "importlib.metadata")
    log("light", *[name for name in heavy if name in sys.modules])
    pool.shutdown()
    pool.wait_for_stop(None)


async def not_async(pool, worker_id):
    pass


class Typed:
    enabled = True
    enable_async = False

    def execute(self, pool, worker_id):
        log("typed", worker_id, pool.name)
        pool.wait_for_stop(None)


class Off(Typed):
    enabled = False


@process(name="beat", workers=2)
class Beat(Typed):
    pass


@process()
class Quiet(Typed):
    enabled = False


@process(workers=0)
class Never(Typed):
    pass
