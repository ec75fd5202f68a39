"""``coretsia-proc-host``: the internal process host of the ``proc`` driver. Not a user command.

The guardian spawns it with three descriptors: its channel (3), the read end of the
cooperative-stop pipe (4) and the generation fence (5). It dies with the guardian (the
parent-death watch, armed first of all), obeys only its channel (SIGINT, SIGTERM and SIGHUP
are caught and ignored: caught rather than ignored so that workers, after exec, get them
back at their defaults), and treats the channel's loss as the guardian's death: it kills
and reaps every worker, then exits.

Exit statuses: 0 after ``quit`` or the channel's end, 1 on a failure (refused handshake,
dead parent, anything unexpected), 2 for a broken spawn contract. Never a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

from coretsia.worker_protocol.parent_watch import arm_parent_death, parent_matches


def _ignore(_signum: int, _frame: object) -> None:
    """A caught, ignored signal (see the module docstring)."""


def main() -> None:
    """Entry point of the proc host process."""
    armed = arm_parent_death()
    matches = parent_matches()
    if matches is None or len(sys.argv) != 1:
        os._exit(2)
    if not (armed and matches):
        os._exit(1)
    try:
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):  # Windows has no SIGHUP
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, _ignore)
        # deferred: entry point
        from coretsia.proc_host.host import run

        code = run()
    except BaseException:  # noqa: BLE001 - the last line of defence: no traceback, ever
        if os.environ.get("CORETSIA_DEBUG") == "1":  # unsafe: a traceback may leak
            traceback.print_exc()
        code = 1
    os._exit(code)


if __name__ == "__main__":
    main()
