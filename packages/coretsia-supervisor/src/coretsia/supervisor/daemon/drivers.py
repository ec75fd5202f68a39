"""Resolution of the requested process driver, spawn mode and control transport.

``auto`` is resolved deterministically, once, from what the platform offers; an explicit
choice is honoured or refused, never silently replaced by the other one.

Both drivers need UNIX sockets whatever the control transport: the guardian's channel and
every worker's are UNIX socket pairs. So where there are none, no driver is available
(``start`` refuses with the driver's configuration error), and ``auto``'s ``tcp`` outcome
for the transport concerns no platform a pool runs on today.

The fork server (``spawn = "forkserver"``) needs the ``fork`` driver and a way to leave
each worker the guardian's child: a sibling fork (``clone(CLONE_PARENT)``, x86_64 and
aarch64) at every containment level, else an intermediate and a pidfd, at every level
but ``namespace``; the supervisor's ``auto`` containment takes that into account.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import TYPE_CHECKING, Final

from coretsia.supervisor.worker_side import sibling_fork
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.vocabulary import (
    Containment,
    Driver,
    DriverRequest,
    Transport,
    TransportRequest,
)

if TYPE_CHECKING:
    from coretsia.supervisor.config import WorkerSettings

FORK_SERVER_CODE: Final = (
    "from coretsia.supervisor.worker_side.fork_server import main; main()".ljust(512)
)
"""What the generation's fork server runs, as ``python -c`` (like every worker's launcher).

Padded with spaces: the room in which each forked worker writes its own command line, the
launcher's, so that ``ps`` (and whoever looks for the launcher) sees what ``exec`` shows."""


def unix_sockets() -> bool:
    """UNIX sockets on a platform that is not Windows: seed 000's test for ``unix``."""
    return sys.platform != "win32" and hasattr(socket, "AF_UNIX")


def fork_available() -> bool:
    """POSIX fork-exec (``posix_spawn``) with sessions, and UNIX socket pairs for the
    channels: the ``fork`` driver's needs."""
    return unix_sockets() and hasattr(os, "posix_spawn") and hasattr(os, "setsid")


def proc_available() -> bool:
    """The proc host can pass each worker its channel: descriptor passing over UNIX sockets.

    Windows has the proc host's Job Object but not yet a readiness channel a worker can
    inherit (the seed's port + token form), so ``proc`` is refused there for now.
    """
    return unix_sockets() and hasattr(socket, "send_fds")


def resolve_driver(requested: DriverRequest) -> Driver:
    """``auto`` is ``fork`` where POSIX fork-exec exists, else ``proc``; never a fallback.

    An explicit choice the platform cannot honour is a configuration error, not a quiet
    switch to the other driver.
    """
    if requested is DriverRequest.FORK or requested is DriverRequest.AUTO:
        if fork_available():
            return Driver.FORK
        if requested is DriverRequest.FORK:
            raise WorkerConfigError("worker.driver", ConfigRule.UNAVAILABLE)
    if proc_available():
        return Driver.PROC
    raise WorkerConfigError("worker.driver", ConfigRule.UNAVAILABLE)


def resolve_transport(requested: TransportRequest) -> Transport:
    """``auto`` is ``unix`` where UNIX sockets exist and the platform is not Windows."""
    if requested is TransportRequest.TCP:
        return Transport.TCP
    unix = unix_sockets()
    if requested is TransportRequest.UNIX and not unix:
        raise WorkerConfigError("worker.control.transport", ConfigRule.UNAVAILABLE)
    return Transport.UNIX if unix else Transport.TCP


def fork_server_available(containment: Containment) -> bool:
    """What the fork server needs: ``fork``, and a way to leave the worker the guardian's.

    A sibling fork (``clone(CLONE_PARENT)``, :mod:`coretsia.supervisor.worker_side.sibling_fork`)
    makes the worker the guardian's child at birth, at every containment level; without
    it the worker is re-parented through an intermediate, which needs a pidfd (Linux 5.3,
    Python 3.9) for the worker to learn it was adopted, and cannot work in a PID
    namespace, where the orphan would go to the namespace's init.
    """
    if not (fork_available() and hasattr(os, "fork")):
        return False
    if sibling_fork.available():
        return True
    return containment is not Containment.NAMESPACE and hasattr(os, "pidfd_open")


def fork_server_argv(
    worker: WorkerSettings, driver: Driver, containment: Containment
) -> tuple[str, ...] | None:
    """The fork server's argv for ``spawn = "forkserver"`` (None for ``exec``).

    Refused (``worker.spawn``, unavailable) with the ``proc`` driver, whose proc host
    spawns the workers, and where :func:`fork_server_available` says no.
    """
    if worker.spawn.value == "exec":
        return None
    if driver is not Driver.FORK or not fork_server_available(containment):
        raise WorkerConfigError("worker.spawn", ConfigRule.UNAVAILABLE)
    paths = [f"--app-path={entry}" for entry in worker.app_path]
    modules = [f"--preload={module}" for module in worker.preload]
    return (sys.executable, "-c", FORK_SERVER_CODE, *(paths if modules else ()), *modules)
