"""Refused control connections, logged at most once per interval per cause, with a count.

Every connection the control server closes without an answer used to write its own
``control.refused`` line. An unprivileged local flood over TCP wrote 43,501 lines in 25 s:
enough to trip journald's rate limit, which then drops the pool's real events with the
noise. So refusals are counted per cause and logged at most once per
:data:`INTERVAL_S`: the first refusal of a quiet period is logged at once (``count=1``),
the ones that follow within the interval are folded into the next line's ``count``, and
what is still counted when the server closes is logged then. The real events never
share this budget.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from typing import Final

from coretsia.worker_protocol.internal.runtime.logs import event

INTERVAL_S: Final = 1.0
"""At most one ``control.refused`` line per cause in this many seconds."""


class RefusalCause(enum.Enum):
    """Why a connection got no answer: a bounded token, safe to log."""

    CREDENTIAL = "credential"
    """A well-formed request whose proof is wrong: the client lacks the credential."""
    VERSION = "version"
    """A frame of another control protocol version: a client from before the handshake."""
    MALFORMED = "malformed"
    """A line that is not a valid frame, or not in its place (or is too long)."""
    INCOMPLETE = "incomplete"
    """No whole line: closed early, too slow, or dropped for a newer connection."""


class RefusalLog:
    """Counts refusals per cause and logs them at a bounded rate (see the module doc)."""

    def __init__(
        self, interval: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval = interval
        self._clock = clock
        self._counts: dict[RefusalCause, int] = {}
        self._quiet_until: dict[RefusalCause, float] = {}

    def refused(self, cause: RefusalCause) -> None:
        """Count one refusal; log the count if this cause's interval has passed."""
        self._counts[cause] = self._counts.get(cause, 0) + 1
        now = self._clock()
        if now >= self._quiet_until.get(cause, now):
            self._log(cause)
            self._quiet_until[cause] = now + self._interval

    def flush(self) -> None:
        """Log every count not yet logged (the server is closing)."""
        for cause in list(self._counts):
            self._log(cause)

    def _log(self, cause: RefusalCause) -> None:
        count = self._counts.pop(cause, 0)
        if count:
            event("control.refused", logging.WARNING, cause=cause.value, count=count)
