"""Test-only fault injection into the processes of a real pool; production code has no hook.

A test that wants a fault starts its supervisor with this directory first on
``PYTHONPATH`` (``faults.fault_env``), so every interpreter of the pool's tree (the
supervisor, the guardian, the proc host, every worker) imports this module at start-up.
Without ``CORETSIA_TEST_FAULT`` it does nothing. With it, it waits until the module that
the named fault concerns is imported, in whichever process imports it, and then replaces
one function of that module: nothing else of the process changes, and the replaced
function's callers are the real ones.

Faults (``CORETSIA_TEST_FAULT``, and ``CORETSIA_TEST_FAULT_ARG`` where one is needed):

``survivor``
    The guardian sees its generation as alive while the file named by the argument
    exists: what a process in uninterruptible sleep, which even SIGKILL cannot end, looks
    like to it. Removing the file is the survivor finally dying.
``fork-refused``
    The OS refuses to create a worker process (``EAGAIN``, as under a process limit):
    the guardian's spawn with ``fork``, the proc host's ``Popen`` with ``proc``, the fork
    server's fork with ``spawn = "forkserver"``.
``no-sibling-fork``
    ``clone(CLONE_PARENT)`` is not offered (as on a machine other than x86_64 and
    aarch64): the supervisor's check and the fork server fall back to the intermediate.
``proc-unmountable``
    The namespace's init cannot mount its ``/proc`` (``EPERM``) and exits before it said
    it is ready (containment ``namespace``).
``locator-unwritable``
    The supervisor's write of the private locator fails (``ENOSPC``, a full disk).
``supervisor-raises``
    Something unexpected (not a ``WorkerError``) is raised inside the supervisor's start,
    once the lock is held and the generation is published.
"""

from __future__ import annotations

import errno
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

FAULT_ENV = "CORETSIA_TEST_FAULT"
ARG_ENV = "CORETSIA_TEST_FAULT_ARG"

Patch = Callable[[ModuleType], None]


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``patch`` on a module right after its code ran, the first time it is imported."""

    def __init__(self, name: str, patch: Patch) -> None:
        self._name = name
        self._patch = patch

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None:
            return spec
        inner = spec.loader
        patch = self._patch

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
                return inner.create_module(spec)

            def exec_module(self, module: ModuleType) -> None:
                inner.exec_module(module)
                patch(module)

        spec.loader = Loader()
        return spec


def _when_imported(name: str, patch: Patch) -> None:
    sys.meta_path.insert(0, _AfterImport(name, patch))


def _is_worker(argv: Sequence[str]) -> bool:
    return any(arg.startswith("--coretsia-worker-artifact-root=") for arg in argv)


def _refused() -> OSError:
    return BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def _survivor(runtime: ModuleType) -> None:
    marker = os.environ[ARG_ENV]
    alive = runtime.Generation.alive

    def survivor_alive(self: Any) -> bool:
        return bool(alive(self)) or os.path.exists(marker)

    runtime.Generation.alive = survivor_alive


def _fork_refused_in_guardian(spawner: ModuleType) -> None:
    spawn = spawner._spawn

    def refusing_spawn(request: Any) -> int:
        if _is_worker(request.argv):
            raise _refused()
        return int(spawn(request))

    vars(spawner)["_spawn"] = refusing_spawn


def _fork_refused_in_proc_host(host: ModuleType) -> None:
    popen = host.subprocess.Popen

    def refusing_popen(argv: Sequence[str], **kwargs: Any) -> Any:
        if _is_worker(argv):
            raise _refused()
        return popen(argv, **kwargs)

    host.subprocess.Popen = refusing_popen


def _fork_refused_in_fork_server(server: ModuleType) -> None:
    def refusing_fork(*_self: object) -> int:
        raise _refused()

    server.os.fork = refusing_fork  # the fork server's own process: it forks nothing else
    server.SiblingFork.fork = refusing_fork


def _no_sibling_fork(sibling_fork: ModuleType) -> None:
    def not_offered(_cls: type) -> None:
        return None

    sibling_fork.SiblingFork.prepare = classmethod(not_offered)


def _proc_unmountable(pidns: ModuleType) -> None:
    def refusing_mount() -> None:
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    vars(pidns)["mount_proc"] = refusing_mount  # only the namespace's init mounts it


def _locator_unwritable(files: ModuleType) -> None:
    write_atomic = files.write_atomic

    def failing_write(path: Any, data: bytes, tmp: Any = None, **options: Any) -> None:
        if os.path.basename(path) == "worker.lifecycle.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write_atomic(path, data, tmp, **options)

    vars(files)["write_atomic"] = failing_write


def _supervisor_raises(runtime_files: ModuleType) -> None:
    def unexpected(self: Any) -> str:
        raise RuntimeError("unexpected at /secret/path")

    runtime_files.RuntimeFiles.endpoint_hash = unexpected


FAULTS: dict[str, list[tuple[str, Patch]]] = {
    "survivor": [("coretsia.guardian.runtime", _survivor)],
    "fork-refused": [
        ("coretsia.guardian.spawner", _fork_refused_in_guardian),
        ("coretsia.proc_host.host", _fork_refused_in_proc_host),
        ("coretsia.supervisor.worker_side.fork_server", _fork_refused_in_fork_server),
    ],
    "no-sibling-fork": [("coretsia.supervisor.worker_side.sibling_fork", _no_sibling_fork)],
    "proc-unmountable": [("coretsia.worker_protocol.internal.runtime.pidns", _proc_unmountable)],
    "locator-unwritable": [("coretsia.supervisor.daemon.files", _locator_unwritable)],
    "supervisor-raises": [("coretsia.supervisor.daemon.runtime_files", _supervisor_raises)],
}

for _name, _patch in FAULTS.get(os.environ.get(FAULT_ENV, ""), []):
    _when_imported(_name, _patch)
