"""A worker of the SQLite source in a child process (``python sqlite_source_child.py``).

It builds the ``sqlite`` source exactly as a worker would (``make_source`` with a context
whose stop descriptor is an inherited pipe), says ``ready``, ``leased <id>`` per task and
``stopped``, one flushed line each. Arguments: the stop descriptor, the database, the
directory of the handlers, the handler and the generation.
"""

import select
import sys

from coretsia.sources.sqlite_source import make_source


class Context:
    task_type = "queue"
    slot = 0

    def __init__(self, fd, options, generation):
        self.fd, self.options, self.generation = fd, options, generation

    @property
    def stopping(self):
        return self.wait_for_stop(0)

    def stop_fileno(self):
        return self.fd

    def wait_for_stop(self, timeout):
        return bool(select.select([self.fd], [], [], timeout)[0])

    def report_unavailable(self, fault):
        pass  # the SQLite source has no outage to report

    def report_available(self):
        pass

    def report_lease_lost(self):
        pass


fd, database, handlers, handler, generation = sys.argv[1:6]
sys.path.insert(0, handlers)
source = make_source(Context(int(fd), {"database": database, "handler": handler}, generation))
print("ready", source.notifying, flush=True)
while (task := source.receive()) is not None:
    print("leased", task.message.id, flush=True)
    task.complete(task.run())
print("stopped", flush=True)
source.close()
