"""Leaving a process that is ours alone, without the interpreter's final teardown.

A stop of N workers is N interpreter exits sharing the machine's cores, and a stop of the
pool is over only when the supervisor has exited too: most of each exit is clearing
modules and collecting objects nobody will look at again (some 10-40 ms for a supervisor
that imported trio, cattrs and psutil). What a program may rely on at exit still happens,
as a ``multiprocessing`` child leaves: non-daemon threads are joined, ``atexit`` handlers
run (logging's flush, an OpenTelemetry exporter's), stdout and stderr are flushed. Other
buffered files left open are not finalised: close them.

Only for processes that nothing else shares: a worker, and the ``start`` command. Never
for the supervisor run in-process by an application (``ProcessManager``).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not ``from typing``: the launcher imports this on every clean exit
if TYPE_CHECKING:
    from typing import NoReturn


def leave(code: int) -> NoReturn:
    """Exit with ``code`` after threads, ``atexit`` handlers and the standard streams."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # what the interpreter's exit would do first
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # closed or broken: nothing more can be said on it
    os._exit(code)
