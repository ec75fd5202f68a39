"""A pool script run as ``__main__``: prints its entries, then the refusal of a lambda."""

import json
from typing import Any

from coretsia.supervisor.process import ProcessError, ProcessManager


class Job:
    enabled = True
    enable_async = False

    def execute(self, pool: Any, worker_id: int) -> None:
        pass


def tick(pool: Any, worker_id: int) -> None:
    pass


if __name__ == "__main__":
    manager = ProcessManager().add(tick).add_batch(2, Job(), name="job")
    print(json.dumps([[e.name, e.target, e.kind] for e in manager.entries()]))
    try:
        manager.add(lambda pool, worker_id: None)
    except ProcessError as exc:
        print(exc)
