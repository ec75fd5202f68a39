"""Driver and control transport selection (seed 000): ``auto`` resolves by what the
platform offers, an explicit choice is honoured or refused, and a failed spawn never falls
back to the other driver.

The resolver is tested against every combination of the facts it reads (``sys.platform``,
``os.posix_spawn``, ``socket.send_fds``, ``socket.AF_UNIX``), removed for the duration of a
call; then real supervisors show the same rules from the command line and the no-fallback
rule at spawn.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import faults
import pools
import pytest
from site_hooks import site_env

from coretsia.guardian.containers import INIT_MODULE
from coretsia.supervisor.daemon.containment import available
from coretsia.supervisor.daemon.drivers import resolve_driver, resolve_transport
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.vocabulary import (
    Containment,
    Driver,
    DriverRequest,
    Transport,
    TransportRequest,
)

AUTO, FORK, PROC = DriverRequest.AUTO, DriverRequest.FORK, DriverRequest.PROC
R = TypeVar("R")
T = TypeVar("T")
UNAVAILABLE = None

PLATFORMS = {
    "posix": (),  # fork-exec and descriptor passing
    "no-posix-spawn": ("posix_spawn",),  # descriptor passing only
    "no-fd-passing": ("send_fds",),  # fork-exec only
    "neither": ("posix_spawn", "send_fds"),
    "no-unix-sockets": ("AF_UNIX",),  # no channel can be made
    "windows": ("win32",),
}

EXPECTED: dict[str, dict[DriverRequest, Driver | None]] = {
    "posix": {AUTO: Driver.FORK, FORK: Driver.FORK, PROC: Driver.PROC},
    "no-posix-spawn": {AUTO: Driver.PROC, FORK: UNAVAILABLE, PROC: Driver.PROC},
    "no-fd-passing": {AUTO: Driver.FORK, FORK: Driver.FORK, PROC: UNAVAILABLE},
    "neither": {AUTO: UNAVAILABLE, FORK: UNAVAILABLE, PROC: UNAVAILABLE},
    "no-unix-sockets": {AUTO: UNAVAILABLE, FORK: UNAVAILABLE, PROC: UNAVAILABLE},
    "windows": {AUTO: UNAVAILABLE, FORK: UNAVAILABLE, PROC: UNAVAILABLE},
}


def _remove(monkeypatch: pytest.MonkeyPatch, missing: tuple[str, ...]) -> None:
    if "posix_spawn" in missing:
        monkeypatch.delattr(os, "posix_spawn")
    if "send_fds" in missing:
        monkeypatch.delattr(socket, "send_fds")
    if "AF_UNIX" in missing:
        monkeypatch.delattr(socket, "AF_UNIX")
    if "win32" in missing:
        monkeypatch.setattr(sys, "platform", "win32")


def _resolved(
    resolve: Callable[[R], T], requested: R, missing: tuple[str, ...]
) -> T | WorkerConfigError:
    """``resolve(requested)`` on the platform of ``missing``, or the configuration error."""
    with pytest.MonkeyPatch.context() as patched:
        _remove(patched, missing)
        try:
            return resolve(requested)
        except WorkerConfigError as exc:
            return exc


@pytest.mark.parametrize("requested", [AUTO, FORK, PROC])
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_resolution(platform: str, requested: DriverRequest) -> None:
    """``auto`` is fork, else proc, else an error; an explicit driver is never replaced."""
    expected = EXPECTED[platform][requested]
    resolved = _resolved(resolve_driver, requested, PLATFORMS[platform])
    if expected is UNAVAILABLE:
        assert isinstance(resolved, WorkerConfigError)
        assert (resolved.key, resolved.rule) == ("worker.driver", ConfigRule.UNAVAILABLE)
    else:
        assert resolved is expected


@pytest.mark.parametrize("requested", list(TransportRequest))
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_transport_resolution(platform: str, requested: TransportRequest) -> None:
    """``auto`` is ``unix`` where UNIX sockets exist and the platform is not Windows, else
    ``tcp``; an explicit ``unix`` is then refused, never replaced by ``tcp``."""
    unix = platform not in ("no-unix-sockets", "windows")
    resolved = _resolved(resolve_transport, requested, PLATFORMS[platform])
    if requested is TransportRequest.TCP or (requested is TransportRequest.AUTO and not unix):
        assert resolved is Transport.TCP
    elif unix:
        assert resolved is Transport.UNIX
    else:
        assert isinstance(resolved, WorkerConfigError)
        assert (resolved.key, resolved.rule) == ("worker.control.transport", ConfigRule.UNAVAILABLE)


# -- real supervisors ------------------------------------------------------------------

WITHOUT = """
import os, socket, sys
for owner, name in ((os, "posix_spawn"), (socket, "send_fds"), (os, "pidfd_open")):
    if name in sys.argv[1].split(","):
        delattr(owner, name)
del sys.argv[1]
from coretsia.supervisor.cli import main
main()
"""
"""The real ``coretsia-supervisor`` in a process that lacks what ``argv[1]`` names."""


@pytest.mark.parametrize(
    ("driver", "missing"),
    [("fork", "posix_spawn"), ("proc", "send_fds"), ("auto", "posix_spawn,send_fds")],
)
def test_start_refuses_an_unavailable_driver(root: Path, driver: str, missing: str) -> None:
    """A configuration error before anything is spawned, never the other driver."""
    pools.write_root(root, driver=driver)
    pools.assert_start_refused(
        root, "worker.driver", "unavailable", command=(sys.executable, "-c", WITHOUT, missing)
    )


def test_auto_without_fork_exec_runs_the_proc_driver(
    root: Path, monkeypatch: pytest.MonkeyPatch, supervisors: pools.Supervisors
) -> None:
    """``auto`` on a platform without ``posix_spawn`` runs the whole pool with ``proc``."""
    pools.write_root(root, driver="auto", workers=1)
    monkeypatch.setattr(pools, "SUPERVISOR", [sys.executable, "-c", WITHOUT, "posix_spawn"])
    supervisor = supervisors.running(root)
    assert json.loads(pools.cli(root, "status", "--json").stdout)["driver"] == "proc"
    state = json.loads((root / "var/tmp/worker.state.json").read_text())
    assert (state["driver_requested"], state["driver"]) == ("auto", "proc")
    supervisor.proc_host()  # exactly one
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0


SPAWN_LOG = """
import json, os, sys
def _note(event, argv):
    with open(os.environ["CORETSIA_TEST_SPAWN_LOG"], "a") as log:
        log.write(json.dumps([os.getpid(), event, list(argv)]) + "\\n")
_note("start", sys.orig_argv)
_posix_spawn = os.posix_spawn
def _logged(path, argv, *args, **kwargs):
    _note("posix_spawn", argv)
    return _posix_spawn(path, argv, *args, **kwargs)
os.posix_spawn = _logged
"""
"""Records every interpreter's start and every ``posix_spawn`` it calls."""

UNEXECUTABLE_WORKER = """
from coretsia.supervisor import cli
from coretsia.supervisor.daemon import slots
argv = slots.Slots._argv
slots.Slots._argv = lambda self, slot: ("/nonexistent/python", *argv(self, slot)[1:])
cli.main()
"""
"""The real ``coretsia-supervisor`` asking for workers whose executable does not exist."""


@pytest.mark.parametrize("driver", ["fork", "proc"])
def test_a_failed_spawn_never_falls_back_to_the_other_driver(
    root: Path, tmp_path: Path, driver: str
) -> None:
    """The start fails with ``worker-interpreter-unavailable``; the other driver is never
    started.

    With ``fork`` no proc host ever starts; with ``proc`` the guardian spawns the proc
    host and nothing else (the proc host's own attempt is what failed).
    """
    pools.write_root(root, driver=driver, workers=1)
    log = tmp_path / "spawns.log"
    env = {**os.environ, "CORETSIA_TEST_SPAWN_LOG": str(log)}
    result = subprocess.run(
        [sys.executable, "-c", UNEXECUTABLE_WORKER, "start", "--root", str(root)],
        env=site_env(tmp_path / "site", SPAWN_LOG, env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if not line.startswith("{")]
    assert errors == ["CORETSIA_WORKER_START_FAILED: worker-interpreter-unavailable"]
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    started = {pid: argv for pid, event, argv in entries if event == "start"}
    (guardian,) = [pid for pid, argv in started.items() if "coretsia.guardian" in argv]
    by_guardian = [
        argv
        for pid, event, argv in entries
        if event == "posix_spawn" and pid == guardian and INIT_MODULE not in argv
    ]  # the PID namespace's init (containment auto, as root) is no driver's
    hosts = [pid for pid, argv in started.items() if "coretsia.proc_host" in argv]
    if driver == "fork":
        assert [argv[0] for argv in by_guardian] == ["/nonexistent/python"]
        assert hosts == []
    else:
        assert by_guardian == [[sys.executable, "-m", "coretsia.proc_host"]]
        assert len(hosts) == 1


class TestSpawnMode:
    """``spawn = "forkserver"`` runs with the ``fork`` driver at every containment level
    where the fork server forks the workers as the guardian's children
    (``clone(CLONE_PARENT)``), and at ``cgroup`` and ``process`` through its intermediate
    elsewhere; anything else is refused, never a quiet ``exec``."""

    def test_refused_with_the_proc_driver(self, root: Path) -> None:
        """The proc host spawns the workers itself."""
        pools.write_root(root, spawn="forkserver", driver="proc")
        pools.assert_start_refused(root, "worker.spawn", "unavailable")

    def test_refused_in_a_namespace_without_a_sibling_fork(self, root: Path) -> None:
        """A worker left by the intermediate would go to the namespace's init, never to
        the guardian outside it."""
        if not available(Containment.NAMESPACE):
            pytest.skip("containment namespace is not available here")
        pools.write_root(root, spawn="forkserver", driver="fork", containment="namespace")
        env = faults.fault_env("no-sibling-fork")
        pools.assert_start_refused(root, "worker.spawn", "unavailable", env=env)

    def test_refused_without_a_sibling_fork_or_a_pidfd(self, root: Path) -> None:
        """A worker learns it was adopted from a pidfd of its intermediate."""
        pools.write_root(root, spawn="forkserver", driver="fork", containment="process")
        command = (sys.executable, "-c", WITHOUT, "pidfd_open")
        env = faults.fault_env("no-sibling-fork")
        pools.assert_start_refused(root, "worker.spawn", "unavailable", command=command, env=env)

    @pytest.mark.parametrize("sibling", [True, False], ids=["sibling-fork", "intermediate"])
    def test_auto_containment_is_the_strongest_it_can_run_in(
        self, root: Path, supervisors: pools.Supervisors, sibling: bool
    ) -> None:
        """With a sibling fork, the strongest the machine offers, as with ``exec``;
        through the intermediate, ``cgroup`` where the machine has it, else ``process``,
        never ``namespace``. Either way the workers are the guardian's children."""
        pools.write_root(root, spawn="forkserver", containment="auto", workers=2)
        env = None if sibling else faults.fault_env("no-sibling-fork")
        supervisor = supervisors.running(root, env=env)
        status = json.loads(pools.cli(root, "status", "--json").stdout)
        strongest = (Containment.NAMESPACE, Containment.CGROUP)
        levels = strongest if sibling else strongest[1:]
        expected = next((level.value for level in levels if available(level)), "process")
        assert status["containment"] == expected
        guardian = supervisor.guardian().pid
        assert [worker.ppid() for worker in supervisor.workers()] == [guardian, guardian]
        supervisor.fork_server()  # exactly one
        assert pools.cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0
