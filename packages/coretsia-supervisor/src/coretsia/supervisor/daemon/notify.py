"""systemd's notification protocol (``Type=notify``), in a few lines of stdlib.

The supervisor tells its service manager the truth and nothing else: ``READY=1`` only
once every worker is ready and the pool is running, ``STOPPING=1`` as soon as shutdown
starts, ``STATUS=`` with safe fields only, and ``WATCHDOG=1`` from the event loop itself,
so a wedged loop stops feeding the watchdog. Without ``NOTIFY_SOCKET`` every call is a
no-op. A failure to notify is never fatal, but it is reported once: with ``Type=notify``
a lost ``READY=1`` makes the unit time out, and a silent failure would waste the
operator's time.

The notify variables are removed from the environment the guardian and the workers get
(:func:`coretsia.supervisor.daemon.guardian_process.guardian_env`): only the main process speaks
for the service.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from typing import Final

from coretsia.supervisor.shared import output

_MAX_STATUS: Final = 200


class Notifier:
    """Sends ``KEY=VALUE`` datagrams to ``$NOTIFY_SOCKET``, if there is one."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._address = _address(environ.get("NOTIFY_SOCKET", ""))
        self._warned = False
        self.watchdog_interval_s = _watchdog_interval(environ)

    @property
    def enabled(self) -> bool:
        """True when a service manager listens."""
        return self._address is not None

    def send(self, **fields: str) -> None:
        """Send one notification, e.g. ``send(READY="1", STATUS="running")``."""
        if self._address is None:
            return
        message = "\n".join(f"{key}={value}" for key, value in fields.items()).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(message, self._address)
        except OSError:
            if not self._warned:
                self._warned = True
                output.warning("sd_notify failed")

    def ready(self, status: str) -> None:
        """The pool is running: every worker is ready."""
        self.send(READY="1", STATUS=status[:_MAX_STATUS])

    def status(self, status: str) -> None:
        """A new status line (safe fields only)."""
        self.send(STATUS=status[:_MAX_STATUS])

    def stopping(self) -> None:
        """Shutdown has started."""
        self.send(STOPPING="1", STATUS="stopping")

    def watchdog(self) -> None:
        """Still alive: sent from the event loop every half watchdog interval."""
        self.send(WATCHDOG="1")


def _address(value: str) -> str | bytes | None:
    """``/path`` or ``@abstract`` (Linux); anything else is ignored, as systemd does."""
    if value.startswith("/"):
        return value
    if value.startswith("@") and sys.platform.startswith("linux"):
        return b"\0" + value[1:].encode()
    return None


def _watchdog_interval(environ: Mapping[str, str]) -> float | None:
    """Half of ``WATCHDOG_USEC``, when it is meant for this process."""
    usec = environ.get("WATCHDOG_USEC", "")
    pid = environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    if pid and pid != str(os.getpid()):
        return None
    return int(usec) / 2_000_000
