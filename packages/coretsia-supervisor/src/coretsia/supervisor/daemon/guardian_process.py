"""The guardian's process: started early, before the supervisor imports trio.

A supervisor and its guardian are two interpreters that each import trio, cattrs and
their own modules, about 0.2 s apiece; started one after the other they cost every
``start`` twice that before the first worker. So ``start`` spawns the guardian first
thing (:meth:`EarlyGuardian.spawn`), and the two boot side by side on two cores. Once
the configuration is read, and still before trio, ``start`` sends it ``hello``
(:meth:`EarlyGuardian.send`): the guardian claims the lock and starts the generation's
helpers (the fork server boots) while this process imports the rest. The
:class:`~coretsia.supervisor.daemon.guardian_link.GuardianLink` adopts it later
(:meth:`EarlyGuardian.take`) and goes on with the handshake. One that is never adopted
(the start failed in between) is let go (:meth:`EarlyGuardian.discard`): killed at once
if it never got ``hello`` (it holds nothing), else by closing its channel, as a
supervisor's death lets it go, so that it releases what it claimed. The
:class:`EarlyGuardian` is ``start``'s, passed down explicitly to the run and the link.

This module imports only the standard library: it runs before trio is imported.
:class:`GuardianProcess` imports trio only in :meth:`~GuardianProcess.wait`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

UNADOPTED_EXIT_S = 10.0
"""Bound on the exit of a guardian that got ``hello`` and was let go unadopted (it has no
worker to stop: it releases the lock and exits within milliseconds)."""

_PRIVATE_ENV = frozenset(
    {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID"}
)

TREE_ENV = "CORETSIA_WORKER_TREE"
"""Marks every process of this supervisor's generations: the guardian, the proc host, the
workers and whatever they start (an environment is inherited unless a program clears
it). The last-resort sweep after a lost guardian kills only processes carrying it, so an
application that embeds the supervisor (``ProcessManager``) keeps its own children."""

TREE_MARK = f"{os.getpid()}-{os.urandom(8).hex()}"
"""This supervisor process's value of :data:`TREE_ENV`."""


def guardian_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment handed to the guardian (and through it to every worker).

    Service-manager variables are meant for the supervisor alone: a worker that saw
    ``NOTIFY_SOCKET`` could announce readiness for the whole service.
    """
    env = without_service_manager(environ)
    env[TREE_ENV] = TREE_MARK
    return env


def without_service_manager(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the service manager's variables (``NOTIFY_SOCKET``, ...)."""
    return {k: v for k, v in environ.items() if k not in _PRIVATE_ENV}


class GuardianProcess:
    """A started guardian: its process, reaped by pid, and the supervisor's end of its channel.

    The guardian is the supervisor's only child, and this is its one way of reaping it:
    :meth:`wait` waits for that pid alone (a pidfd where Linux offers one, else a worker
    thread), never ``waitpid(-1)``.
    """

    def __init__(self, popen: subprocess.Popen[bytes], channel: socket.socket) -> None:
        self._popen = popen
        self.channel = channel
        """The supervisor's end of the guardian channel (a UNIX stream socket)."""
        self.sent: bytes | None = None
        """What :meth:`EarlyGuardian.send` wrote on the channel (``hello``), if anything."""

    @classmethod
    def start(cls, root: Path, env: Mapping[str, str]) -> GuardianProcess:
        """Spawn ``python -m coretsia.guardian`` in a session of its own; OSError if refused."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            popen = subprocess.Popen(
                [sys.executable, "-m", "coretsia.guardian", f"--channel-fd={theirs.fileno()}"],
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                cwd=root,
                env=dict(env),
                stdin=subprocess.DEVNULL,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return cls(popen, ours)

    @property
    def pid(self) -> int:
        """The guardian's pid (it stays ours until :meth:`wait` has reaped it)."""
        return self._popen.pid

    async def wait(self) -> int:
        """Wait for the guardian to exit and reap it; its exit status."""
        import trio  # deferred: the guardian boots meanwhile

        if self._popen.returncode is None:
            try:
                pidfd = os.pidfd_open(self._popen.pid)
            except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
                await trio.to_thread.run_sync(self._popen.wait, abandon_on_cancel=True)
            else:
                try:
                    await trio.lowlevel.wait_readable(pidfd)
                finally:
                    os.close(pidfd)
        return self._popen.wait()  # exited: reaps at once

    def kill(self) -> None:
        """End and reap a guardian nobody adopted.

        One that never received ``hello`` holds nothing: SIGKILL. One that did may hold
        the lock and have started the generation's helpers: its channel is closed, which
        is how the supervisor's death looks to it, and it lets everything go and exits;
        SIGKILL only if it has not within :data:`UNADOPTED_EXIT_S`.
        """
        self.channel.close()
        if self.sent is not None:
            try:
                self._popen.wait(UNADOPTED_EXIT_S)
            except subprocess.TimeoutExpired:
                pass
        if self._popen.returncode is None:
            self._popen.send_signal(signal.SIGKILL)
        self._popen.wait()


class EarlyGuardian:
    """The guardian ``start`` spawned first thing, until the guardian link adopts it.

    ``start`` creates it (:meth:`spawn`) and hands it down to the run: :meth:`send`
    writes ``hello`` before trio, :meth:`take` gives the process to
    :meth:`~coretsia.supervisor.daemon.guardian_link.GuardianLink.launch`, and :meth:`discard`
    (also on leaving a ``with`` block) lets one go that nobody adopted.
    """

    def __init__(self, root: Path, env: dict[str, str], process: GuardianProcess | None) -> None:
        self._root = root
        self._env = env
        self._process = process

    @classmethod
    def spawn(cls, root: Path, environ: Mapping[str, str]) -> EarlyGuardian:
        """Spawn the guardian now, for :meth:`take` to hand to the guardian link.

        If the spawn fails, nothing is kept: the link then spawns the guardian itself at
        launch time and reports the failure the usual way.
        """
        env = guardian_env(environ)
        if not hasattr(socket, "AF_UNIX"):
            # No channel can be made here (nor any worker's): ``start`` refuses the driver
            # once the configuration is read, with its configuration error.
            return cls(root, env, None)
        try:
            return cls(root, env, GuardianProcess.start(root, env))
        except OSError:
            return cls(root, env, None)

    def send(self, hello: bytes) -> None:
        """Write ``hello`` (encoded) on the early guardian's channel now, if there is one.

        The channel is empty and the frame small: the write completes at once, whether or
        not the guardian reads yet. If it fails, the guardian is gone: the link finds out
        at the handshake, as it would have without this.
        """
        if self._process is None:
            return
        try:
            self._process.channel.sendall(hello)
        except OSError:
            return
        self._process.sent = hello

    def take(self, root: Path, env: Mapping[str, str]) -> GuardianProcess | None:
        """The early guardian, if one was started for exactly this root and environment;
        it is the caller's from now on (a second call gives None)."""
        process, self._process = self._process, None
        if process is None:
            return None
        if self._root == root and self._env == dict(env):
            return process
        process.kill()
        return None

    def discard(self) -> None:
        """Kill and reap the early guardian if nobody adopted it (the start ended before)."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()

    def __enter__(self) -> EarlyGuardian:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.discard()
