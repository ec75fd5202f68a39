"""The fork server of one generation (``[worker] spawn = "forkserver"``). Internal.

The guardian starts it once per generation, a fresh interpreter like any worker, and then
asks it for each worker instead of executing a new interpreter: a fork costs a small
part of an interpreter's start (``docs/performance.md``, "The fork server"). It imports
the launcher's boot modules (:data:`BOOT_MODULES`; and the ``preload`` modules, if
configured) and nothing else: never the application, the configuration or the
supervisor process's modules. Each forked worker then runs exactly the launcher's
artifact-only boot (:func:`coretsia.supervisor.worker_side.launcher.main`), so a recycled worker is
as fresh as the first: it is forked from this server, never from a used worker.

Who owns the workers. The guardian stays their only reaper, as in the ``exec`` mode:
each worker is born the guardian's child, forked with ``clone(CLONE_PARENT)``
(:mod:`coretsia.supervisor.worker_side.sibling_fork`: the child's parent is the server's parent), so
the server has no child and reaps nothing, and the guardian may run it in the
generation's PID namespace (containment ``namespace``) like any other child: a worker
born there is still the guardian's. A raw ``clone`` skips what glibc's ``fork`` does
around the system call; in this server that is safe: the cached tid and the robust-mutex
list are set as glibc sets them, glibc's locks can be held by no other thread (the
server runs none: it refuses to serve with one), and CPython's at-fork work is done as
``os.fork`` does it (the details in that module). Where that fork is not offered (a
machine other than x86_64 and aarch64, a kernel without ``PR_GET_TID_ADDRESS``), the
server forks an *intermediate* instead, which forks the worker and exits at once; the worker is
re-parented to the guardian (a child subreaper, and the nearest one: there containment
``namespace`` is refused, because the orphan would go to the namespace's init), waits on
a pidfd of the intermediate until it is gone, and only then arms its parent-death
signal; the server reaps only its intermediates, by pid.

How the guardian learns the pid. The worker tells it itself, on the server's channel
(which it inherited), once it leads a session of its own (so the guardian may
``killpg`` it from the first instant): the guardian reads the pid from that datagram's
credentials, which the kernel gives in the guardian's PID namespace, so nothing
translates a pid from the server's namespace and nothing can race with the worker's
exit. The server learns that the worker told (it closes a pipe once it told, or dies),
then ends the answer (:mod:`coretsia.worker_protocol.internal.fork_server`); it does not
wait for that before it forks the next request's worker: answers name their request.
The guardian registers the pid; an exit it reaps before then is matched to the spawn like
any early exit. The worker's parent-death check expects the pid the server's own parent
has (the guardian's, or 0 from inside a namespace, as for any child the guardian spawns
there).

Per-worker freshness (what a fork would share with its siblings), see
``docs/architecture.md``: descriptors (the worker keeps exactly 0 to 5, the server
refuses to serve if a preload module left one open), threads (none: the server refuses
to serve if a preload module started one), ``random`` (reseeded by the module itself
after every fork, or seeded at its import in the worker), signal dispositions (the server changes
none, so a worker gets an interpreter's defaults, as after exec), ``sys.argv`` and
``sys.orig_argv`` (the requested argv's, as after exec). The hash secret is the server's:
shared by the workers of one generation, drawn afresh for each generation (unless the
operator fixed ``PYTHONHASHSEED``).

argv: ``--preload=<module>`` and ``--app-path=<root-relative directory>`` (only with
preload modules), any number of times. Descriptors: 3, its channel to the
guardian (:mod:`coretsia.worker_protocol.internal.fork_server`); nothing else. Exit
statuses: 0 when the guardian closes the channel, 1 when the guardian is already gone,
a preload failed or left a thread or a descriptor behind, 2 for a broken contract.
"""

from __future__ import annotations

import fcntl
import gc
import os
import select
import socket
import sys
from typing import TYPE_CHECKING

from coretsia.supervisor.worker_side.exits import leave  # imported by the launcher already
from coretsia.supervisor.worker_side.launcher import main as launch
from coretsia.supervisor.worker_side.sibling_fork import SiblingFork
from coretsia.worker_protocol.conversation_engine import receive_sync
from coretsia.worker_protocol.exceptions import ProtocolError
from coretsia.worker_protocol.internal.fork_server import MAX_MESSAGE, REQUEST_FDS
from coretsia.worker_protocol.internal.fork_server_conversation import (
    Done,
    ForkServerConversation,
    Request,
    Role,
    Started,
)
from coretsia.worker_protocol.parent_watch import PARENT_PID_ENV, arm_parent_death, parent_matches

if TYPE_CHECKING:
    from typing import Final, NoReturn

CHANNEL_FD: Final = 3
PRELOAD_ARG: Final = "--preload="
APP_PATH_ARG: Final = "--app-path="
_WORKER_FDS: Final = 3
"""The worker's passed descriptors land on 3, 4 and 5, as after exec."""
_FIRST_FREE: Final = _WORKER_FDS + REQUEST_FDS
_HIGH_FD: Final = 10
BOOT_MODULES: Final = (
    "coretsia.supervisor.worker_side.launcher",
    "coretsia.supervisor.generation.published",
    "coretsia.supervisor.worker_side.runtime_guard",
    "coretsia.supervisor.worker_side.stop_signal",
    "coretsia.supervisor.shared.telemetry",
    "coretsia.supervisor.worker_side.channel",
    "coretsia.supervisor.worker_side.contract",
    "coretsia.supervisor.worker_side.task_loop",
    "coretsia.supervisor.worker_side.task_worker",
    "coretsia.supervisor.worker_side.entry_worker",
    "coretsia.worker_protocol.catalogue",
    "coretsia.worker_protocol.internal.runtime.imports",
    "coretsia.worker_protocol.paths",
    "coretsia.worker_protocol.trusted_paths",
    "coretsia.worker_protocol.worker_conversation",
    "fcntl",
    "importlib",
)
"""Every module a worker's boot imports, before the application and after it (``json``,
``re``, ``hashlib``, ``socket`` and the channel's frames with them: most of a worker's
boot CPU, measured in ``docs/performance.md``): imported once here, shared by every
fork, so that a forked worker imports nothing but the application (a test holds the
list to that). In the ``exec`` mode the launcher imports the frames only
once its parent-death watch is armed; here they cost nothing per worker. None of them
does anything at import; the launcher's own test keeps trio, attrs, cattrs and psutil
out of them."""
_ARG_START: Final = 45
"""``arg_start`` in ``/proc/self/stat`` (field 48), counted from the field after the name."""


def main() -> None:
    """Serve the guardian's requests until it closes the channel; never a traceback."""
    if not arm_parent_death() or not parent_matches():
        os._exit(1)  # the guardian is gone already (or did not start us)
    paths = _values(APP_PATH_ARG)
    modules = _values(PRELOAD_ARG)
    if len(paths) + len(modules) != len(sys.argv) - 1:
        os._exit(2)
    channel = _Link(socket.socket(fileno=CHANNEL_FD))
    if not _preload([], list(BOOT_MODULES)) or not _preload(paths, modules):
        os._exit(1)
    if not _alone(CHANNEL_FD):
        os._exit(1)
    # Everything imported so far is every worker's for life: out of the collector's
    # reach, a worker's collections neither scan it (CPU) nor write its headers (which
    # would copy the pages a fork shares).
    sibling = SiblingFork.prepare()  # before the freeze: ctypes is every worker's too
    gc.freeze()
    try:
        _serve(channel, os.getppid(), sibling)
    except SystemExit as leaving:  # only ever a forked worker's launcher leaving
        leave(leaving.code if isinstance(leaving.code, int) else 1)
    except OSError:  # the guardian is gone (the reply could not be sent)
        os._exit(0)
    except BaseException:  # noqa: BLE001 - a bug: exit as refused, without a traceback
        os._exit(1)


class _Link:
    """The server's end of its channel: the socket, and the conversation (each worker
    forked says ``started`` through its copy of both)."""

    __slots__ = ("conversation", "fds", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.conversation = ForkServerConversation(Role.FORK_SERVER)
        self.fds: list[int] = []
        """The descriptors of the last request read."""

    def say(self, frame: Done | Started) -> None:
        self.sock.sendall(self.conversation.send(frame))

    def read(self) -> bytes:
        """One datagram (``b""`` at the channel's end); its descriptors in :attr:`fds`."""
        data, self.fds, _flags, _addr = socket.recv_fds(self.sock, MAX_MESSAGE, REQUEST_FDS)
        return data


def _serve(channel: _Link, parent: int, sibling: SiblingFork | None) -> NoReturn:
    """Fork each request's worker as it comes; answer each once its worker told.

    The answers name their requests, so the next worker is forked while the last one is
    still on its way to telling (a new process waits its turn for a core): ``telling``
    maps each worker's pipe, whose end of file says it told (or died), to the request's
    tag and the intermediate to reap, if any.
    """

    telling: dict[int, tuple[bytes, int | None]] = {}
    while True:
        ready, _, _ = select.select([CHANNEL_FD, *telling], [], [])
        for fd in ready:
            if fd == CHANNEL_FD:
                _serve_request(channel, parent, sibling, telling)
                continue
            os.read(fd, 1)  # the end of file: every copy of the write end is closed
            os.close(fd)
            tag, intermediate = telling.pop(fd)
            if intermediate is not None:
                os.waitpid(intermediate, 0)  # it exits at once; the worker is not ours
            channel.say(Done(tag))


def _serve_request(
    channel: _Link,
    parent: int,
    sibling: SiblingFork | None,
    telling: dict[int, tuple[bytes, int | None]],
) -> None:
    """Read one request and fork its worker; answer it at once if none was started."""
    try:
        request = receive_sync(channel.conversation, channel.read)
    except ProtocolError:
        os._exit(2)  # no tag to answer: the guardian broke the contract
    if not isinstance(request, Request):
        os._exit(0)  # the guardian closed the channel (or is gone)
    tag, argv, fds = request.tag, request.argv, channel.fds
    # Not ``try``/``finally``: a forked worker leaves through here (``SystemExit``), and
    # its descriptors are its own; an exception in the server ends the server (main).
    forked = _start(tag, argv, fds, channel, parent, sibling) if len(fds) == REQUEST_FDS else None
    for fd in fds:
        os.close(fd)
    if forked is None:
        channel.say(Done(tag))
    else:
        telling[forked[0]] = (tag, forked[1])


def _values(prefix: str) -> list[str]:
    return [arg.removeprefix(prefix) for arg in sys.argv[1:] if arg.startswith(prefix)]


def _preload(paths: list[str], modules: list[str]) -> bool:
    """Import the ``preload`` modules before any fork, the application's directories
    first on ``sys.path`` meanwhile (each worker's launcher puts them there again)."""
    if not modules:
        return True
    saved = list(sys.path)
    root = os.getcwd()
    sys.path[0:0] = [root if path == "." else os.path.join(root, path) for path in paths]
    try:
        for module in modules:
            __import__(module)  # the import statement's path: ``-X importtime`` sees it
    except BaseException:  # noqa: BLE001 - any failure refuses the generation, no traceback
        return False
    finally:
        sys.path[:] = saved
    return True


def _alone(channel_fd: int) -> bool:
    """No thread and no descriptor but 0 to 2 and the channel: what a fork must not copy.

    A listing of ``/proc/self/fd`` holds one more, its own; anything beyond is a
    descriptor a preload module left open.
    """
    if len(os.listdir("/proc/self/task")) > 1:
        return False
    kept = {"0", "1", "2", str(channel_fd)}
    return len(set(os.listdir("/proc/self/fd")) - kept) <= 1


def _start(
    tag: bytes,
    argv: tuple[str, ...],
    fds: list[int],
    channel: _Link,
    parent: int,
    sibling: SiblingFork | None,
) -> tuple[int, int | None] | None:
    """Fork the worker (through an intermediate without ``sibling``); None if none was
    started, else the pipe that reads end of file once it told (or died), and the
    intermediate to reap."""
    told, telling = os.pipe()
    try:
        child = sibling.fork() if sibling is not None else os.fork()
    except OSError:
        child = None
    if child == 0:
        os.close(told)
        if sibling is None:
            _intermediate(tag, argv, fds, channel, parent, telling)
        _worker(tag, argv, fds, channel, parent, telling, None)
    os.close(telling)
    if child is None:
        os.close(told)
        return None
    return told, None if sibling is not None else child


def _intermediate(
    tag: bytes,
    argv: tuple[str, ...],
    fds: list[int],
    channel: _Link,
    parent: int,
    telling: int,
) -> NoReturn:
    """Fork the worker and exit: the worker is re-parented to the guardian."""
    try:
        gone = os.pidfd_open(os.getpid())
        worker = os.fork() == 0
    except BaseException:  # noqa: BLE001 - no worker: the server's pipe tells the guardian
        os._exit(0)
    if not worker:
        os._exit(0)
    _worker(tag, argv, fds, channel, parent, telling, gone)


def _worker(
    tag: bytes,
    argv: tuple[str, ...],
    fds: list[int],
    channel: _Link,
    parent: int,
    telling: int,
    gone: int | None,
) -> NoReturn:
    """Become the worker: own session, told, the guardian's child, descriptors 3-5,
    exec's state; boot.

    ``gone``: a pidfd of the intermediate, which reads ready once it exited (the worker
    is the guardian's from then on); None when the worker was born the guardian's. The
    launcher leaves through ``SystemExit``, which goes up through the server's frames
    (none of them catches it or cleans up in ``finally``) to :func:`main`, and from there
    to the interpreter's exit, as after exec; whatever else escapes ends it with status 1
    there.
    """
    try:
        os.setsid()  # before the pid is told: the guardian signals the worker's group
        channel.say(Started(tag))  # our pid, in the guardian's namespace: the credentials
        os.close(telling)
        if gone is not None:
            select.select([gone], [], [])  # the intermediate is gone: we are the guardian's
            os.close(gone)
        os.close(channel.sock.detach())
        _descriptors(fds)
        _fresh(argv, parent)
    except BaseException:  # noqa: BLE001 - nothing may unwind into the server's loop
        os._exit(1)
    launch()


def _descriptors(fds: list[int]) -> None:
    """The passed descriptors onto 3, 4, 5 (inheritable, as after exec); nothing else open.

    Each goes above 5 first, so that ``dup2`` never maps one onto itself or onto another
    that is still to be moved (they arrived at the lowest free numbers, 3 and up).
    """

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, _HIGH_FD) for fd in fds]
    for i, fd in enumerate(high):
        os.dup2(fd, _WORKER_FDS + i)
    os.closerange(_FIRST_FREE, os.sysconf("SC_OPEN_MAX"))


def _fresh(argv: tuple[str, ...], parent: int) -> None:
    """What a fresh interpreter would have and a fork copies: argv (and the command line
    others see), the parent's name. (``random``, if a preload imported it, reseeds itself
    in every forked child: CPython registers that at-fork hook.)"""
    sys.argv = ["-c", *argv[3:]]
    sys.orig_argv = list(argv)
    _retitle(argv)
    os.environ[PARENT_PID_ENV] = str(parent)


def _retitle(argv: tuple[str, ...]) -> None:
    """Show ``argv`` as this process's command line (``ps``, ``/proc/<pid>/cmdline``).

    The kernel reads the command line from the process's own argv area, which a fork
    copies: the area is rewritten in place, the way ``setproctitle`` does, truncated to
    the room the server's command line left (its ``-c`` code is padded with spaces for
    that) and the rest zeroed. Linux only; elsewhere the server's command line stays.
    """
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        start, end = int(fields[_ARG_START]), int(fields[_ARG_START + 1])
    except (OSError, ValueError, IndexError):
        return
    import ctypes  # deferred: platform-only

    text = b"".join(arg.encode() + b"\0" for arg in argv)[: end - start - 1]
    ctypes.memmove(start, text.ljust(end - start, b"\0"), end - start)


if __name__ == "__main__":
    main()
