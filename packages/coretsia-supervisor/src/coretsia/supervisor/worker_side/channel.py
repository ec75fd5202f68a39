"""The worker's end of its channel: every frame it sends, and the one it reads.

The rules (one ``ready``, ``retiring`` once, ``retire`` only in answer) are the sans-IO
:class:`~coretsia.worker_protocol.worker_conversation.WorkerConversation`'s: the
:class:`Reporter` hands it each frame and writes the bytes it returns, the
:class:`Retirement` feeds it what the supervisor sent; neither holds a rule of its own.
Both share one conversation, so the grant is only ever read for a request that went.

With the heartbeat on (:mod:`.heartbeat`), a second thread sends frames too: from then on
every frame goes out whole under one lock, so two frames never interleave on the wire,
and the channel is closed under it, so a beat never writes into a descriptor number
reused after the close. With it off there is no lock and no other thread.
"""

from __future__ import annotations

import os
import select
import socket
import sys

from coretsia.supervisor.worker_side.exits import EXIT_CONTRACT, WorkerExit, failure
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.conversation_engine import receive_sync
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.worker_channel import (
    MAX_ATTEMPT,
    Failed,
    Heartbeat,
    Ready,
    RecycleCause,
    Retiring,
    TaskFailed,
    error_type_name,
)
from coretsia.worker_protocol.worker_conversation import WorkerConversation

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable

    from coretsia.worker_protocol.worker_channel import WorkerFrame


def open_channel(fd: int) -> socket.socket:
    """Adopt the inherited channel; anything but a stream UNIX socket is ``WorkerExit(2)``."""
    try:
        channel = socket.socket(fileno=fd)  # family and type read from the descriptor
    except OSError:
        raise WorkerExit(EXIT_CONTRACT) from None
    family = getattr(socket, "AF_UNIX", None)
    if channel.family != family or channel.type != socket.SOCK_STREAM:
        channel.close()
        raise WorkerExit(EXIT_CONTRACT)
    channel.settimeout(None)  # blocking: frames are tiny and the peer reads them
    os.set_inheritable(fd, False)  # noqa: FBT003 - positional-only
    return channel


class _Unlocked:
    """The lock of a reporter that is its worker's only sender: none at all."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


_UNLOCKED = _Unlocked()


class Reporter:
    """Sends frames through the conversation, never failing: a closed channel means
    nobody listens.

    A frame the conversation refuses (a second ``ready``...) is the worker's own bug: its
    :class:`~coretsia.worker_protocol.exceptions.LocalProtocolError` propagates.
    """

    __slots__ = (
        "_closed",
        "_flags",
        "channel",
        "conversation",
        "debug",
        "heartbeat_timeout_ms",
        "lock",
    )

    def __init__(self, channel: socket.socket) -> None:
        self.channel = channel
        self.conversation = WorkerConversation()
        self.debug = False
        self.heartbeat_timeout_ms = 0
        """The generation's: after ``ready``, beat every third of it; 0: never."""
        self.lock: threading.Lock | _Unlocked = _UNLOCKED
        """Held around each frame and the close once a second thread sends (heartbeat)."""
        self._closed = False
        self._flags: int = getattr(socket, "MSG_NOSIGNAL", 0)

    @property
    def ready(self) -> bool:
        """Whether ``ready`` went (a failure from now on is a lifecycle failure)."""
        return self.conversation.ready

    def report_ready(self) -> None:
        """Send ``ready``; then, if the generation asks for it, start the heartbeat."""
        self.send(Ready())
        if self.heartbeat_timeout_ms:
            # start-up budget: docs/performance.md#start-up-import-rules
            from coretsia.supervisor.worker_side.heartbeat import beat_every

            self.share()
            heartbeat = Heartbeat()
            beat_every(self.heartbeat_timeout_ms, lambda: self.send(heartbeat))

    def share(self) -> None:
        """From now on another thread sends frames too: every frame under the lock."""
        if self.lock is _UNLOCKED:
            self._lock_sends()
            # A fork (an application's multiprocessing child) copies the lock as it was,
            # possibly held by the other thread, which the child does not have.
            os.register_at_fork(after_in_child=self._lock_sends)

    def _lock_sends(self) -> None:
        # start-up budget: docs/performance.md#start-up-import-rules
        import threading

        self.lock = threading.Lock()

    def send(self, frame: WorkerFrame) -> bool:
        """Send ``frame`` if the conversation allows it; False once nobody listens."""
        with self.lock:
            if self._closed:
                return False
            data = self.conversation.send(frame)
            try:
                self.channel.sendall(data, self._flags)
            except OSError:
                return False  # the supervisor is gone; the exit status tells the guardian
            return True

    def close(self) -> None:
        """Close the channel, after any frame being sent; nothing is sent afterwards."""
        with self.lock:
            self._closed = True
            self.channel.close()

    def fail(self, reason: Reason, error: BaseException | None) -> None:
        """Say why the worker is about to exit with status 1 (with the task source's
        fault when one that could not reach its backend is why)."""
        # start-up budget: docs/performance.md#start-up-import-rules
        from coretsia.worker_protocol.task_source import TaskSourceUnavailableError

        self._show(error)
        fault = error.fault if isinstance(error, TaskSourceUnavailableError) else None
        self.send(Failed(reason, fault))

    def task_failed(self, task: object, error: Exception) -> None:
        """Tell the supervisor what an operator may see of a failed task (safe fields).

        ``attempt`` and ``retried`` are optional attributes of a source's task (the SQLite
        source has both); anything else than an int of at least 1 or a bool is not sent.
        """
        self._show(error)
        attempt = getattr(task, "attempt", None)
        retried = getattr(task, "retried", None)
        self.send(
            TaskFailed(
                error_type_name(type(error)),
                attempt if type(attempt) is int and 1 <= attempt <= MAX_ATTEMPT else None,
                retried if type(retried) is bool else None,
            )
        )

    def _show(self, error: BaseException | None) -> None:
        if self.debug and error is not None:
            # start-up budget: docs/performance.md#start-up-import-rules
            import traceback

            traceback.print_exception(error)  # debug only: may show payloads and config
            sys.stderr.flush()


class Retirement:
    """Asks the supervisor for permission to retire and notices its answer.

    Only moves bytes, without ever blocking in :meth:`granted`; the order (ask once, a
    grant only in answer) is the conversation's.
    """

    __slots__ = ("_listen", "_reporter")

    def __init__(
        self, reporter: Reporter, listen: Callable[[bool], None] = lambda _on: None
    ) -> None:
        self._reporter = reporter
        self._listen = listen

    def listening(self, *, on: bool) -> None:
        """Let the answer wake a waiting source (only while it waits for a task)."""
        if self._reporter.conversation.asked:
            self._listen(on)

    def request(self, *, over_memory: bool = False) -> None:
        """Send ``retiring``, once; its cause is ``max-memory`` if ``over_memory``."""
        if not self._reporter.conversation.asked:
            cause = RecycleCause.MAX_MEMORY if over_memory else RecycleCause.MAX_REQUESTS
            self._reporter.send(Retiring(cause))

    def wait(self, stop_fileno: int) -> None:
        """Block until the supervisor's answer (or its end) arrives or a stop is requested.

        No timeout: the supervisor answers in turn, a stop ends the wait, and a worker
        whose supervisor died sees its channel close (and its parent-death watch fire).
        """
        select.select([self._reporter.channel.fileno(), stop_fileno], [], [])

    def granted(self) -> bool:
        """True once ``retire`` arrived, or the supervisor is gone; never blocks."""
        try:
            event = receive_sync(self._reporter.conversation, self._arrived)
        except ProtocolError:
            raise failure(Reason.LIFECYCLE_FAILED) from None
        return event is not Need.DATA  # the grant, or nobody to ask any more: retire

    def _arrived(self) -> bytes | None:
        """What the supervisor sent so far (``b""``: it is gone), or None: nothing yet."""
        fd = self._reporter.channel.fileno()
        if not select.select([fd], [], [], 0)[0]:
            return None
        try:
            return os.read(fd, 4096)
        except OSError:
            return b""
