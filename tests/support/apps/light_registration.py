"""Registers an entry with ``@process`` and loads a snapshot, as a worker boots, then
prints the heavy modules that pulled in (none, comma-separated)."""

import sys

HEAVY = ("typing", "inspect", "json", "trio", "cattrs", "attrs", "psutil")
before = {m for m in HEAVY if m in sys.modules}

# After the census above, on purpose; ProcessError too, as a worker's entry module may.
from coretsia.supervisor.process import ProcessError, load_snapshot, process  # noqa: E402, F401


@process(name="x", workers=2)
class Job:
    enabled = True
    enable_async = False

    def execute(self, pool, worker_id):
        pass


load_snapshot(
    {"schema": 1, "ipc_type": "none", "msg_queue_key": 0, "entries": [], "declarations": []}
)
print(",".join(sorted({m for m in HEAVY if m in sys.modules} - before)))
