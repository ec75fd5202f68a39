"""A blocking control client: how third parties and the CLI talk to a running supervisor.

This is the package's one I/O module for clients (stdlib sockets only, no trio, cattrs or
psutil, so an exec probe stays fast). It finds a supervisor from a project root exactly
as seed 000's liveness rules say:

* lifecycle lock free (or absent): not running, :class:`WorkerNotRunningError`; unless
  the generation fence is still held by processes of a generation whose guardian was
  killed: :class:`WorkerAlreadyRunningError` with ``worker-generation-draining``;
* lock held, locator missing, unreadable, oversized, a symlink, not mode 0600, not ours
  or schema-invalid: :class:`WorkerCommunicationFailedError`;
* lock held, endpoint not acceptable (a socket path outside the root, a TCP host other
  than 127.0.0.1, a UNIX socket whose listening process runs as another user),
  unreachable, unable to prove it holds the credential (a forged server on a freed
  port, a version 1 supervisor), or silent (a refused client is answered by a silent
  close): :class:`WorkerCommunicationFailedError`.

The credential never crosses the socket: the client and the server each prove they hold
it (the handshake of :mod:`~coretsia.worker_protocol.control_conversation`), the server
first, and the client names its command only once the server has proved itself; every
answer is proved too. Every wait is bounded.

Example::

    from coretsia.worker_protocol.client import ControlClient

    summary = ControlClient("/srv/app").status().summary
    print(summary.pool_status.value, summary.ready_worker_count)
"""

from __future__ import annotations

import os
import socket
import stat
import sys
import time

from coretsia.worker_protocol import lock
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.control import (
    Challenge,
    ControlRequest,
    ControlResponse,
    ErrorResponse,
    HealthResponse,
    StatusResponse,
    StopProgress,
)
from coretsia.worker_protocol.control_conversation import ClientConversation
from coretsia.worker_protocol.conversation_engine import receive_sync
from coretsia.worker_protocol.exceptions import (
    ProtocolError,
    WorkerAlreadyRunningError,
    WorkerCommunicationFailedError,
    WorkerNotRunningError,
    error_for,
)
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.lifecycle import FENCE_PATH, LOCATOR_PATH, LOCK_PATH
from coretsia.worker_protocol.locator import MAX_LOCATOR_BYTES, Locator, decode_locator
from coretsia.worker_protocol.vocabulary import ControlCommand, Transport

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

DEFAULT_TIMEOUT_S: Final = 5.0
"""Bound on a ``status`` or ``health`` round trip, connection included."""

STOP_SLACK_S: Final = 5.0
"""Added to the published shutdown budgets when waiting for ``stopped``."""

_LOOPBACK: Final = "127.0.0.1"
_SUN_PATH_MAX: Final = 100
_BACKLOG_RETRY_S: Final = 0.01


class ControlClient:
    """Finds the supervisor of one project root and sends it control requests."""

    def __init__(self, root: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT_S):
        self._root = os.path.realpath(os.fspath(root))
        self._timeout = timeout

    def is_running(self) -> bool:
        """True while a worker generation holds the lock (it may still be unreachable)."""
        return self._probe()

    def status(self) -> StatusResponse:
        """The live state of the pool."""
        answer = self._ask(ControlCommand.STATUS, self._timeout, None)
        assert isinstance(answer, StatusResponse)  # the conversation allows no other
        return answer

    def health(self) -> HealthResponse:
        """The live health of the pool (``healthy`` false is an answer, not an error)."""
        answer = self._ask(ControlCommand.HEALTH, self._timeout, None)
        assert isinstance(answer, HealthResponse)  # the conversation allows no other
        return answer

    def stop(self, on_progress: Callable[[StopProgress], None] | None = None) -> None:
        """Stop the pool; return once it answers ``stopped`` (the lock is then free).

        Waits at most the published stop budget plus twice the force-kill budget plus a
        slack; shutdown goes on in the supervisor whatever this client does.
        """
        self._ask(ControlCommand.STOP, None, on_progress)

    # -- discovery ----------------------------------------------------------------------

    def _probe(self, lock_path: str = LOCK_PATH) -> bool:
        """Whether the root-relative lock is held (never taking or creating it).

        With :data:`FENCE_PATH`: a free lifecycle lock but a held fence means a killed
        generation's processes are still alive (draining).
        """
        try:
            return lock.probe(os.path.join(self._root, lock_path))
        except OSError as exc:
            raise WorkerCommunicationFailedError from exc

    def _read_locator(self) -> Locator:
        path = os.path.join(self._root, LOCATOR_PATH)
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        flags |= getattr(os, "O_NONBLOCK", 0)  # a FIFO planted there must not block us
        try:
            fd = os.open(path, flags)
        except OSError as exc:  # missing, a symlink (ELOOP), unreadable
            raise WorkerCommunicationFailedError from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_LOCATOR_BYTES:
                raise WorkerCommunicationFailedError
            if sys.platform != "win32" and (
                stat.S_IMODE(info.st_mode) != 0o600 or info.st_uid != os.geteuid()
            ):
                raise WorkerCommunicationFailedError
            data = os.read(fd, MAX_LOCATOR_BYTES + 1)
        except OSError as exc:
            raise WorkerCommunicationFailedError from exc
        finally:
            os.close(fd)
        try:
            return decode_locator(data)
        except ProtocolError as exc:
            raise WorkerCommunicationFailedError from exc

    def _socket_path(self, locator: Locator) -> str:
        """The socket's absolute path, after checking it stays inside the root."""
        assert locator.path is not None
        path = os.path.join(self._root, locator.path)
        parent = os.path.realpath(os.path.dirname(path))
        if parent != self._root and not parent.startswith(self._root + os.sep):
            raise WorkerCommunicationFailedError
        path = os.path.join(parent, os.path.basename(path))
        try:
            info = os.lstat(path)
        except OSError as exc:
            raise WorkerCommunicationFailedError from exc
        if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.geteuid():
            raise WorkerCommunicationFailedError
        return path

    def _connect(self, locator: Locator, deadline: float) -> socket.socket:
        if locator.transport is Transport.TCP:
            if locator.host != _LOOPBACK or locator.port is None:
                raise WorkerCommunicationFailedError
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            address: str | tuple[str, int] = (_LOOPBACK, locator.port)
        else:
            address = self._socket_path(locator)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        while True:
            try:
                sock.settimeout(_remaining(deadline))
                if isinstance(address, str) and len(address) > _SUN_PATH_MAX:
                    _connect_long_unix_path(sock, address)
                else:
                    sock.connect(address)
                if isinstance(address, str):
                    _check_peer(sock)
                return sock
            except BlockingIOError:
                # A full UNIX listen backlog (a flood of connections) answers EAGAIN at
                # once instead of queueing us: try again until the deadline.
                time.sleep(_BACKLOG_RETRY_S)
            except OSError as exc:
                sock.close()
                raise WorkerCommunicationFailedError from exc

    # -- one exchange -------------------------------------------------------------------

    def _ask(
        self,
        command: ControlCommand,
        timeout: float | None,
        on_progress: Callable[[StopProgress], None] | None,
    ) -> ControlResponse:
        """One conversation; returns its terminal answer, raises an ``error`` answer."""
        if not self._probe():
            if self._probe(FENCE_PATH):
                raise WorkerAlreadyRunningError(Reason.GENERATION_DRAINING)
            raise WorkerNotRunningError
        locator = self._read_locator()
        budget = timeout if timeout is not None else locator.stop_wait_ms / 1000 + STOP_SLACK_S
        deadline = time.monotonic() + budget
        conversation = ClientConversation(locator.credential, locator.transport, locator.address)
        with self._connect(locator, deadline) as sock:

            def read() -> bytes:
                sock.settimeout(_remaining(deadline))
                return sock.recv(4096)

            try:
                sock.sendall(conversation.hello())
                while True:
                    answer: Challenge | ControlResponse | Need = receive_sync(conversation, read)
                    if isinstance(answer, Need):  # closed: never DATA from the loop
                        # Closed before the terminal answer: a refused client, a version 1
                        # supervisor, a crash.
                        raise WorkerCommunicationFailedError
                    if isinstance(answer, Challenge):  # the server proved itself
                        sock.sendall(conversation.send(ControlRequest(command)))
                    elif isinstance(answer, StopProgress):
                        if on_progress is not None:
                            on_progress(answer)
                    elif isinstance(answer, ErrorResponse):
                        raise error_for(answer.reason)
                    else:
                        return answer
            except (OSError, ProtocolError) as exc:
                if isinstance(exc, WorkerCommunicationFailedError):
                    raise
                raise WorkerCommunicationFailedError from exc


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _check_peer(sock: socket.socket) -> None:
    """Refuse a UNIX socket whose listening process is not the locator's owner.

    The locator was checked to be ours, so its owner is us. The socket file being ours
    is not enough: a process of another user can listen on a socket we created (one
    passed to it), and the kernel tells who called ``listen``.
    """
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        # Not Linux: the BSDs' LOCAL_PEERCRED and getpeereid() are not in the standard
        # library. The socket's owner and the handshake's proofs still stand.
        return
    ucred = sock.getsockopt(socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    if int.from_bytes(ucred[4:8], sys.byteorder) != os.geteuid():
        raise WorkerCommunicationFailedError


def _connect_long_unix_path(sock: socket.socket, path: str) -> None:
    """Reach a socket whose absolute path is too long for ``sun_path``.

    Linux resolves ``/proc/self/fd/N/name`` through an open directory descriptor, which
    keeps the address short without a process-wide ``chdir``.
    """
    if not sys.platform.startswith("linux"):
        raise WorkerCommunicationFailedError
    dir_fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        sock.connect(f"/proc/self/fd/{dir_fd}/{os.path.basename(path)}")
    finally:
        os.close(dir_fd)
