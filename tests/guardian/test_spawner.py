"""The spawner thread and the parent-death trap (Linux).

The kernel fires a child's ``PR_SET_PDEATHSIG`` when the *thread* that forked it exits,
not the process (see docs/architecture.md). The guardian's workers arm that signal, so a
worker forked from a short-lived thread (one of trio's cached worker threads, which exit
after ten idle seconds) would be killed for nothing. These tests spawn through the real
:class:`~coretsia.guardian.spawner.Spawner` from a thread that then exits, and check that
the child lives on until the spawner itself goes away.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from coretsia.guardian.spawner import Spawner, SpawnRequest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the parent-death signal is Linux-only"
)

# Arms its parent-death signal as a worker does, then answers each ping on fd 3.
CHILD = """
import os
from coretsia.worker_protocol.parent_watch import arm_parent_death
assert arm_parent_death()
os.write(3, b"armed\\n")
while os.read(3, 1):
    os.write(3, b"pong\\n")
"""


def _spawn_from_short_lived_thread(spawner: Spawner, ours: socket.socket, fd: int) -> int:
    """Ask ``spawner`` for a child from a thread of our own that exits once the child armed.

    Returns when the kernel no longer lists that thread: ``join()`` returns before the OS
    thread has finished exiting, and the parent-death signal is sent during that exit.
    """
    seen: list[object] = []
    request = SpawnRequest((sys.executable, "-c", CHILD), dict(os.environ), (fd,))

    def requester() -> None:
        seen.append(trio.run(spawner.spawn, request))
        seen.append(_answer(ours))  # armed before this thread exits, or the test proves nothing

    thread = threading.Thread(target=requester)
    thread.start()
    thread.join()
    task = Path(f"/proc/self/task/{thread.native_id}")
    deadline = time.monotonic() + 10
    while task.exists():
        assert time.monotonic() < deadline, "the requesting thread never exited"
        os.sched_yield()
    pid, armed = seen
    assert armed == b"armed\n"
    assert isinstance(pid, int)
    return pid


def _answer(sock: socket.socket) -> bytes:
    """The child's next line, or b"" once it is dead (its end of the socket closed)."""
    line = b""
    while not line.endswith(b"\n"):
        try:
            chunk = sock.recv(64)
        except ConnectionResetError:  # it died with our ping unread
            return b""
        if not chunk:
            return b""
        line += chunk
    return line


@pytest.fixture
def channel() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.settimeout(30)
    yield ours, theirs
    ours.close()
    theirs.close()


def test_a_child_outlives_the_thread_that_asked_for_it(
    channel: tuple[socket.socket, socket.socket],
) -> None:
    """The requesting thread's exit does not kill the child; the spawner's close does."""
    ours, theirs = channel
    spawner = Spawner()
    try:
        pid = _spawn_from_short_lived_thread(spawner, ours, theirs.fileno())
        theirs.close()
        ours.sendall(b"?")
        assert _answer(ours) == b"pong\n"  # alive after its requester's thread exited
    finally:
        spawner.close()  # the spawner thread, the child's real parent thread, exits
    assert _answer(ours) == b""
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    assert os.WTERMSIG(status) == signal.SIGKILL
