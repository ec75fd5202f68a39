"""An entry worker's message endpoint: what ``pool.send_message`` and ``receive_message`` use.

Imported only by workers of a pool whose ``ipc_type`` is ``unixsock`` or ``msgqueue``
(a pool with ``none`` never loads this module, nor :mod:`socket` or ``sysv_ipc`` for it).
The supervisor prepared the pool's resources before publishing the generation (see
:mod:`~coretsia.supervisor.daemon.ipc_resources`); the generation's ``ipc`` record
says where they are. Both modes offer the same three operations, so
:class:`~.entry_pool.WorkerPool` does not care which one runs:

* ``send(worker_id, data)``: one message to one worker of the pool, now, or
  :class:`MessageBufferFullError` (waiting for room is the ``WorkerPool``'s);
* ``wait_fd()``: a descriptor that turns readable when a message may be waiting, for
  ``poll`` and event loops (no busy polling anywhere);
* ``take()``: the next message if one is there, else ``None``, never blocking.

``unixsock``: each worker binds its own datagram socket at ``<ipc dir>/<worker id>``
before it reports ready, in the private directory the supervisor made; a sender
addresses a worker by that path, so payloads go from worker to worker and never through
the supervisor. A replaced worker binds the same address again (its old socket file is
unlinked first): its endpoint comes back, though datagrams queued in the dead socket are
lost. The address is absolute when it fits the ``AF_UNIX`` limit (so an entry may change
its working directory), else relative to the project root, the worker's start directory.

``msgqueue``: one System V queue for the pool; a message to worker ``n`` has type
``n + 1``, so each worker receives only its own and messages to a worker being replaced
wait in the queue for its successor. A queue is not a descriptor, so a helper thread
does the blocking ``msgrcv`` and hands over one message at a time through a pipe; it
starts at the first receive (a worker that only sends consumes nothing) and holds at
most one message that a worker ending right then would take with it.

Every descriptor here is non-inheritable (PEP 446 defaults), so processes an entry
spawns get none of them.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import threading
from typing import TYPE_CHECKING

from coretsia.supervisor.process_entries.errors import (
    MessageBufferFullError,
    MessageTooLargeError,
    PeerUnavailableError,
)
from coretsia.supervisor.process_entries.rules import IPC_MSGQUEUE, IPC_UNIXSOCK, MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    import sysv_ipc

    from coretsia.supervisor.generation.spec import IpcRecord

__all__ = ["Endpoint", "QueueEndpoint", "UnixEndpoint", "open_endpoint"]

_DROP_BYTES = 1 << 20
"""Enough for any System V message (Linux caps ``msgmax`` far below)."""

_SUN_PATH_MAX = 103
"""The longest ``AF_UNIX`` path every POSIX system takes (macOS: 104 bytes with the NUL)."""


def open_endpoint(
    ipc_type: str, record: IpcRecord | None, worker_id: int, workers: int
) -> UnixEndpoint | QueueEndpoint:
    """This worker's endpoint, from the generation's ``ipc`` record; raise if it is off.

    Anything wrong (no record, a record of another mode, a queue that is not the one the
    supervisor created) raises, and the worker fails its boot.
    """
    if record is None:
        raise TypeError("ipc")
    if ipc_type == IPC_UNIXSOCK and record.unixsock_dir is not None:
        return UnixEndpoint(record.unixsock_dir, worker_id, workers)
    key, msqid = record.msgqueue_key, record.msgqueue_id
    if ipc_type == IPC_MSGQUEUE and key is not None and msqid is not None:
        return QueueEndpoint(key, msqid, worker_id, workers)
    raise TypeError("ipc")


class UnixEndpoint:
    """A bound datagram socket per worker, addressed by worker id (module docstring)."""

    ipc_type = IPC_UNIXSOCK
    __slots__ = ("_base", "_flags", "_sock", "workers")

    def __init__(self, directory: str, worker_id: int, workers: int) -> None:
        absolute = os.path.abspath(directory)  # the working directory is the project root
        longest = os.path.join(absolute, str(workers - 1))
        self._base = absolute if len(os.fsencode(longest)) <= _SUN_PATH_MAX else directory
        self.workers = workers
        self._flags: int = socket.MSG_DONTWAIT
        address = self._address(worker_id)
        try:
            os.unlink(address)  # left by this slot's previous worker, which cannot unlink
        except FileNotFoundError:
            pass
        self._sock: socket.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._sock.bind(address)
        except OSError:
            self._sock.close()
            raise

    def _address(self, worker_id: int) -> str:
        return os.path.join(self._base, str(worker_id))

    def send(self, worker_id: int, data: bytes) -> None:
        """Send one datagram now, or raise (the pool object retries a full receiver)."""
        try:
            self._sock.sendto(data, self._flags, self._address(worker_id))
        except (FileNotFoundError, ConnectionRefusedError):
            raise PeerUnavailableError from None
        except BlockingIOError:
            raise MessageBufferFullError from None
        except OSError as error:
            if error.errno == errno.ENOBUFS:  # BSD and macOS: a full receiver, never waits
                raise MessageBufferFullError from None
            if error.errno == errno.EMSGSIZE:
                raise MessageTooLargeError from None
            raise

    def wait_fd(self) -> int:
        return self._sock.fileno()

    def take(self) -> bytes | None:
        """The next datagram, or None; one larger than the bound (not ours) is dropped."""
        while True:
            try:
                data = self._sock.recv(MAX_MESSAGE_BYTES + 1, self._flags)
            except BlockingIOError:
                return None
            if len(data) <= MAX_MESSAGE_BYTES:
                return data


class QueueEndpoint:
    """The pool's System V queue, message type = worker id + 1 (module docstring)."""

    ipc_type = IPC_MSGQUEUE
    __slots__ = (
        "_key",
        "_lock",
        "_queue",
        "_read",
        "_reader",
        "_slot",
        "_taken",
        "_type",
        "_write",
        "workers",
    )

    def __init__(self, key: int, msqid: int, worker_id: int, workers: int) -> None:
        # deferred: optional extra
        import sysv_ipc

        queue = sysv_ipc.MessageQueue(key, max_message_size=MAX_MESSAGE_BYTES)
        if queue.id != msqid:
            raise LookupError("ipc")  # the key now names another queue: not this pool's
        self._queue: sysv_ipc.MessageQueue = queue
        self._key = key
        self._lock = threading.Lock()  # two threads' first receive start one reader
        self._type = worker_id + 1
        self.workers = workers
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        self._slot: bytes | None = None
        self._taken: threading.Event | None = None
        self._reader: threading.Thread | None = None

    def send(self, worker_id: int, data: bytes) -> None:
        """Put one message on the queue now, or raise (the pool object retries a full one)."""
        # deferred: optional extra
        import sysv_ipc

        try:
            self._queue.send(data, block=False, type=worker_id + 1)
        except sysv_ipc.BusyError:
            raise MessageBufferFullError from None
        except sysv_ipc.ExistentialError:
            raise PeerUnavailableError from None  # the queue is gone: the pool ended
        except OSError as error:
            if error.errno != errno.EINVAL:
                raise
            # EINVAL is both "the queue was removed" and "longer than the system's
            # msgmax" (below our bound on some systems): ask the queue which.
            try:
                self._queue.current_messages  # noqa: B018 - raises once the queue is gone
            except sysv_ipc.ExistentialError:
                raise PeerUnavailableError from None
            raise MessageTooLargeError from None

    def wait_fd(self) -> int:
        """The hand-over pipe; the first call starts the reader thread."""
        with self._lock:
            if self._reader is None:
                self._start_reader()
        return self._read

    def take(self) -> bytes | None:
        try:
            os.read(self._read, 1)
        except BlockingIOError:
            return None
        message, self._slot = self._slot, None
        assert self._taken is not None
        self._taken.set()
        return message

    def _start_reader(self) -> None:
        """Start the reader with every signal blocked: signals must reach the main thread.

        A process-directed signal goes to any thread that does not block it; one that
        landed here would leave the main thread asleep in ``poll`` with its handler
        (SIGTERM's, which ends the entry) never run.
        """
        self._taken = threading.Event()
        self._reader = threading.Thread(target=self._read_forever, name="coretsia-ipc", daemon=True)
        old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        try:
            self._reader.start()  # the new thread inherits the mask
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _read_forever(self) -> None:
        """Receive one message, hand it over, wait until it is taken; until the queue goes."""
        # deferred: optional extra
        import sysv_ipc

        assert self._taken is not None
        while True:
            try:
                message, _ = self._queue.receive(type=self._type)
            except sysv_ipc.Error:
                # Removed at the end of the generation (EINTR cannot happen with every
                # signal blocked): from now on a receiver sees only the stop.
                return
            except OSError:
                # E2BIG: a message above our bound, put there by another program of the
                # same user; it would stop every later worker of this slot, so drop it.
                if self._drop_oversized():
                    continue
                return
            self._taken.clear()
            self._slot = message
            os.write(self._write, b"\0")
            self._taken.wait()

    def _drop_oversized(self) -> bool:
        """Take this slot's next message off the queue whatever its size; False if not."""
        # deferred: optional extra
        import sysv_ipc

        try:
            unbounded = sysv_ipc.MessageQueue(self._key, max_message_size=_DROP_BYTES)
            unbounded.receive(block=False, type=self._type)
        except (sysv_ipc.Error, OSError):
            return False
        return True


Endpoint = UnixEndpoint | QueueEndpoint
"""What :func:`open_endpoint` returns: one of the two modes, used through one interface."""
