"""The proc host's one loop: spawn, signal and reap workers for the guardian.

Why it exists in Python: it is the portable driver. It owns each worker's ``Popen``
handle from its main thread for the worker's whole life (so on Linux the parent-death
signal of a worker fires only when this process dies), and on Windows it holds every
worker in a Job Object that kills them when the proc host's handle closes. It needs no
event loop: one ``select`` over its channel and a SIGCHLD wake-up descriptor, no polling.

Descriptor isolation: the proc host first moves its own three descriptors above 10,
close-on-exec, and parks ``/dev/null`` on 3, 4 and 5. For each spawn it places the
worker's channel, the stop pipe and the fence there, passes exactly those, and parks
``/dev/null`` again; it is single-threaded, so nothing else can spawn in between. No
worker ever inherits the guardian connection.

Portability: the module imports anywhere (nothing POSIX-only at import time: ``fcntl``
is imported where it is used), but serving is POSIX-only in practice: descriptor passing
(``SCM_RIGHTS``, ``pass_fds``), SIGCHLD, ``killpg`` and a ``select`` over a pipe have no
Windows form here (see docs/reliability.md).
"""

from __future__ import annotations

import collections
import os
import selectors
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from typing import Final, Protocol

from coretsia.proc_host._version import __version__
from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.conversation_engine import receive_sync
from coretsia.worker_protocol.exceptions import ProtocolError, WorkerStartFailedError
from coretsia.worker_protocol.framing import Need
from coretsia.worker_protocol.internal.guardian import (
    Exited,
    Refused,
    Spawn,
    Spawned,
    SpawnFailed,
    Welcome,
)
from coretsia.worker_protocol.internal.proc_host import ProcHostFrame, Quit, Signal, SignalName
from coretsia.worker_protocol.internal.proc_host_conversation import HostEnd, HostState
from coretsia.worker_protocol.internal.runtime.ancillary import passed_fds
from coretsia.worker_protocol.internal.runtime.exit_kind import from_returncode
from coretsia.worker_protocol.internal.runtime.spawn_errors import spawn_failure
from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV

CHANNEL_FD: Final = 3
STOP_FD: Final = 4
FENCE_FD: Final = 5
_HIGH_FD: Final = 10
_HANDSHAKE_TIMEOUT_S: Final = 30.0
_MAX_FDS: Final = 8


def _move_high(fd: int) -> int:
    # deferred: platform-only
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD)
    os.close(fd)
    return high


def _reserve_slots() -> None:
    """Park close-on-exec ``/dev/null`` on 3, 4 and 5 between spawns.

    Every descriptor the process opens (its selector, its wake-up pipe, a received
    channel) then lands above 5, so placing a worker's descriptors there for a spawn can
    never clobber one of ours.
    """
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    for slot in (CHANNEL_FD, STOP_FD, FENCE_FD):
        if slot != null:
            os.dup2(null, slot, inheritable=False)
    if null not in (CHANNEL_FD, STOP_FD, FENCE_FD):
        os.close(null)


def _noop(_signum: int, _frame: object) -> None:
    """SIGCHLD's handler: the wake-up descriptor does the work."""


class Host:
    """The proc host's state: its channel and the workers it owns."""

    def __init__(self) -> None:
        self._sock = socket.socket(fileno=_move_high(CHANNEL_FD))
        self._stop = _move_high(STOP_FD)
        self._fence = _move_high(FENCE_FD)
        _reserve_slots()
        self._conversation = HostEnd(__version__)
        self._fds: collections.deque[int] = collections.deque()
        self._workers: dict[int, subprocess.Popen[bytes]] = {}
        self._env = {**os.environ, PARENT_PID_ENV: str(os.getpid())}
        self._wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, _noop)
        self._job = _job_object()

    # -- channel ------------------------------------------------------------------------

    def _send(self, frame: ProcHostFrame) -> None:
        data = self._conversation.send(frame)
        try:
            self._sock.sendall(data)
        except OSError:
            pass  # the guardian is gone; the loop sees the end of the channel next

    def _read(self) -> bytes:
        """What the guardian sent, waiting for it (``b""`` at the end)."""
        return self._receive(0)

    def _arrived(self) -> bytes | None:
        """What the guardian sent, if anything arrived (None: nothing yet)."""
        try:
            return self._receive(socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None

    def _receive(self, flags: int) -> bytes:
        """One read; its descriptors queue up."""
        flags |= getattr(socket, "MSG_CMSG_CLOEXEC", 0)
        room = socket.CMSG_SPACE(_MAX_FDS * 4)
        data, ancillary, _flags, _addr = self._sock.recvmsg(65536, room, flags)
        self._fds.extend(passed_fds(ancillary))
        return data

    def handshake(self) -> bool:
        """Answer the guardian's ``host-hello``; False if it must be refused.

        The conversation checks the hello (a garbled one raises); a guardian of another
        version is refused, one that leaves first gets nothing.
        """
        self._sock.settimeout(_HANDSHAKE_TIMEOUT_S)
        try:
            receive_sync(self._conversation, self._read)
        except WorkerStartFailedError as exc:
            self._send(Refused(reason=exc.reason))
            return False
        finally:
            self._sock.settimeout(None)
        if self._conversation.state is not HostState.WELCOME:
            return False
        self._send(Welcome(peer_version=__version__, pid=os.getpid()))
        return True

    # -- workers ------------------------------------------------------------------------

    def _spawn(self, frame: Spawn) -> None:
        channel_fd = self._fds.popleft() if self._fds else None
        if channel_fd is None:
            self._send(SpawnFailed(slot=frame.slot, reason=Reason.CHILD_START_FAILED))
            return
        try:
            for source, target in (
                (channel_fd, CHANNEL_FD),
                (self._stop, STOP_FD),
                (self._fence, FENCE_FD),
            ):
                os.dup2(source, target)
            proc = self._start(list(frame.argv))
        except OSError as exc:
            reason = spawn_failure(exc, Reason.FORK_FAILED, frame.argv[0])
            self._send(SpawnFailed(slot=frame.slot, reason=reason))
            return
        finally:
            os.close(channel_fd)
            _reserve_slots()
        self._workers[frame.slot] = proc
        self._send(Spawned(slot=frame.slot, pid=proc.pid))

    def _start(self, argv: list[str]) -> subprocess.Popen[bytes]:
        """Start one worker with exactly its three descriptors, in a session of its own.

        On Windows (never run, see ``_windows``) descriptors cannot be passed this way:
        the worker starts suspended inside the proc host's Job Object instead.
        """
        if self._job is not None:  # pragma: no cover - Windows only
            return self._job.start(argv, self._env)
        return subprocess.Popen(
            argv,
            pass_fds=(CHANNEL_FD, STOP_FD, FENCE_FD),
            close_fds=True,
            start_new_session=True,
            env=self._env,
        )

    def _signal(self, frame: Signal) -> None:
        proc = self._workers.get(frame.slot)
        if proc is None or proc.returncode is not None:
            return  # reaped already: its pid may belong to someone else now
        sig = signal.SIGKILL if frame.signal is SignalName.KILL else signal.SIGTERM
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self) -> None:
        for slot, proc in list(self._workers.items()):
            code = proc.poll()  # a per-child wait: this process owns only these children
            if code is not None:
                del self._workers[slot]
                self._send(Exited(slot=slot, exit_kind=from_returncode(code)))

    def _kill_all(self) -> None:
        """Kill and reap every worker (the guardian is gone or asked us to quit)."""
        for proc in self._workers.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for proc in self._workers.values():
            proc.wait()
        self._workers.clear()

    # -- the loop -----------------------------------------------------------------------

    def serve(self) -> int:
        """Serve the guardian until ``quit`` or the end of the channel."""
        selector = selectors.DefaultSelector()
        selector.register(self._sock, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        try:
            # Frames that came in the handshake's read are served first: the selector
            # only reports data that is still to be read.
            if self._serve_frames():
                return 0
            while True:
                for key, _ in selector.select():
                    if key.fileobj == self._wake_read:
                        os.read(self._wake_read, 512)
                        self._reap()
                        continue
                    if self._serve_frames():
                        return 0
        except (OSError, ProtocolError):
            return 1
        finally:
            self._kill_all()

    def _serve_frames(self) -> bool:
        """Act on every frame that has arrived; True once told to ``quit`` or at the end."""
        while not isinstance(frame := receive_sync(self._conversation, self._arrived), Need):
            if isinstance(frame, Spawn):
                self._spawn(frame)
            elif isinstance(frame, Signal):
                self._signal(frame)
            elif isinstance(frame, Quit):
                return True
        return frame is Need.CLOSED


class _JobLike(Protocol):
    def start(self, argv: list[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]: ...


def _job_object() -> _JobLike | None:
    if sys.platform == "win32":  # pragma: no cover - Windows only
        # deferred: platform-only
        from coretsia.proc_host._windows import Job

        return Job()
    return None


def run() -> int:
    """Run the proc host: handshake, then serve; returns the exit status."""
    host = Host()
    if not host.handshake():
        return 1
    return host.serve()
