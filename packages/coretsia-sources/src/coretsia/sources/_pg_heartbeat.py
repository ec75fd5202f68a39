"""The renewal of a worker's leases while its task runs: a thread with its own connection.

A lease of the PostgreSQL queue expires ``lease_timeout_ms`` after its last renewal, and
the task runs on the worker's main thread (a handler may block for as long as it likes),
so the renewing happens beside it: every third of the timeout, this thread pushes the
expiry of every lease the worker holds. It has its own connection because the main one is
busy or waiting on its notifications; it is opened at the first lease, so a worker that
never leases costs the server one connection, and it idles (no statement, no wake-up)
while the worker holds nothing.

A failed renewal (the server restarting, the network down) is tried again at the next
beat, over a new connection; if the lease expires meanwhile another worker may take it,
and this worker's settlement then raises ``LeaseLostError``: at least once still holds,
and the acknowledgement stays exactly once. A task that keeps the GIL for longer than the
timeout (a long call into native code that never releases it) starves this thread the
same way: choose ``lease_timeout_ms`` above any such stretch.
"""

from __future__ import annotations

import threading
import time

from coretsia.sources._queue_records import QueueError
from coretsia.sources.postgres_queue import PostgresQueue

JOIN_TIMEOUT = 5.0
"""Seconds :meth:`Heartbeat.close` waits for a renewal in progress to end."""


class Heartbeat:
    """Renews the leases of the tokens :meth:`hold` was given until :meth:`release`."""

    def __init__(self, dsn: str | None, queue: str, lease_timeout_ms: int) -> None:
        self._dsn = dsn
        self._queue = queue
        self._timeout_ms = lease_timeout_ms
        self._tokens: set[str] = set()
        self._changed = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def hold(self, token: str) -> None:
        """Renew this lease from now on (the thread starts with the first one)."""
        with self._changed:
            self._tokens.add(token)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="coretsia-lease-heartbeat", daemon=True
                )
                self._thread.start()
            self._changed.notify()

    def release(self, token: str) -> None:
        """Stop renewing this lease (it was settled)."""
        with self._changed:
            self._tokens.discard(token)

    def close(self) -> None:
        """Stop the thread and close its connection; idempotent."""
        with self._changed:
            self._closed = True
            self._changed.notify()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(JOIN_TIMEOUT)

    def _run(self) -> None:
        connection: PostgresQueue | None = None
        try:
            while True:
                with self._changed:
                    while not self._closed and not self._tokens:
                        self._changed.wait()
                    # A beat's length whatever happens meanwhile: a new lease wakes the
                    # wait above only, never shortens this one.
                    beat = time.monotonic() + self._timeout_ms / 3000
                    while not self._closed and (left := beat - time.monotonic()) > 0:
                        self._changed.wait(left)
                    if self._closed:
                        return
                    tokens = list(self._tokens)
                if tokens:
                    connection = self._renew(connection, tokens)
        finally:
            if connection is not None:
                connection.close()

    def _renew(self, connection: PostgresQueue | None, tokens: list[str]) -> PostgresQueue | None:
        """One renewal; the connection to use next time (None after a failure)."""
        try:
            if connection is None:
                connection = PostgresQueue(self._dsn, self._queue, create=False)
            connection.renew(tokens, self._timeout_ms)
            return connection
        except QueueError:
            if connection is not None:
                connection.close()
            return None
