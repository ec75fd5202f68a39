"""A handler and an entry that grow by 50 MiB each round (``memory_app:<name>`` in a root).

Each round allocates a bytearray it keeps for the life of the process and writes a byte
in every page of it, so the resident memory really grows. Each round then records, in
``rounds.log``, the process's pid and its own resident memory (``/proc/self/statm``), so
a test can bound every worker's memory, whichever worker it was.
"""

import os

from lifecycle_app import Task  # type: ignore[import-not-found]  # the root's copy

STEP = 50 * 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")

_held: list[bytearray] = []


def _grow(tag):
    block = bytearray(STEP)
    block[::PAGE] = b"\x01" * len(range(0, STEP, PAGE))  # touch every page
    _held.append(block)
    with open("/proc/self/statm", "rb") as statm:
        resident = int(statm.read().split()[1]) * PAGE
    with open("rounds.log", "a") as log:  # one short appended write per line
        log.write(f"{tag} {os.getpid()} {resident}\n")


class Growing:
    """``tasks`` (a source option) tasks in all, shared by the pool's workers: each is
    claimed once (a ``claim-<n>`` file made exclusively), then grows its worker."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.next = 0

    def assert_ready(self):
        pass

    def receive(self):
        while self.next < self.ctx.options["tasks"] and not self.ctx.stopping:
            number = self.next
            self.next += 1
            try:
                os.close(os.open(f"claim-{number}", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                continue
            return Task(lambda tag=f"task-{number}": _grow(tag))
        self.ctx.wait_for_stop(None)
        return None


def growing(ctx):
    return Growing(ctx)


def growing_entry(pool, worker_id):
    """Grow, then wait a little for a stop (or the grant of its retirement), until one."""
    while True:
        _grow("entry")
        if pool.wait_for_stop(0.2):
            return
