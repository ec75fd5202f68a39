"""``coretsia-guardian``: the internal guardian process. Not a user command.

The supervisor starts it in a session of its own with one inherited descriptor, the
guardian channel (``--channel-fd=N``). It ignores SIGINT, SIGTERM and SIGHUP: a terminal's
Ctrl-C or a service manager's group signal goes to the supervisor, which turns it into a
graceful stop; the guardian obeys only its channel, and treats the channel's loss as the
supervisor's death.

Exit statuses: 0 after a normal shutdown, 1 when the handshake or the lock is refused or
anything unexpected happens, 2 for bad arguments. It never prints a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback


def _channel_fd(argv: list[str]) -> int | None:
    if len(argv) != 1 or not argv[0].startswith("--channel-fd="):
        return None
    value = argv[0].removeprefix("--channel-fd=")
    return int(value) if value.isdigit() else None


def main() -> None:
    """Entry point of the guardian process."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    fd = _channel_fd(sys.argv[1:])
    if fd is None:
        sys.exit(2)
    try:
        # deferred: entry point
        from coretsia.guardian.session import run

        code = run(fd)
    except BaseException:  # noqa: BLE001 - the last line of defence: no traceback, ever
        if os.environ.get("CORETSIA_DEBUG") == "1":  # unsafe: a traceback may leak
            traceback.print_exc()
        code = 1
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
