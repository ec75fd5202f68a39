"""The example process pool, started from Python: ``python pool.py``.

Run it from this directory (the project root: ``coretsia.toml`` here sets the budgets
and ``var/`` receives the runtime files), or give the root as ``ROOT=...``. It runs two
consumers, a scheduler that shuts the pool down after a few ticks, a flaky entry that
is replaced each time it returns, and discovers the disabled heartbeat (which adds
nothing). ``coretsia-supervisor status --root .`` in another terminal shows every slot;
Ctrl-C or ``coretsia-supervisor stop --root .`` stops it early.
"""

from __future__ import annotations

import os

from jobs import Scheduler, consumer, flaky  # beside this script: first on sys.path

from coretsia.supervisor import ProcessManager
from coretsia.supervisor.process import discover


def main() -> None:
    manager = ProcessManager(root=os.environ.get("ROOT", os.path.dirname(__file__) or "."))
    manager.add_batch(2, consumer, name="consumer")  # consumer:0, consumer:1
    manager.add(Scheduler(), name="scheduler")
    manager.add(flaky, name="flaky")
    discover(["heartbeat"], manager)  # finds Heartbeat, disabled: registers nothing
    print("registered:", ", ".join(manager.all()), flush=True)
    manager.start()  # returns once the pool stopped and every worker was reaped
    print("pool stopped", flush=True)


if __name__ == "__main__":  # required: every worker imports this script again
    main()
