"""Trusted runtime directories (issue 24): nothing under ``var/`` that another user may
write is ever used, and a worker boots only the generation its supervisor published.

The attacks are carried out as ``nobody`` against a root pool
(``tests/support/nobody_attacker.py`` drops to it): planting a generation in a
``var/generations`` it owns, holding ``worker.lock`` in a ``var/tmp`` of mode 1777. Each
is refused by ``start`` with the configuration error naming the path's role (exit 6),
before the guardian touches anything and before any worker. The third, a generation
swapped in while the pool runs, is written by root here (the directory checks leave
``nobody`` no way in): the recycled worker refuses it and the pool fails loudly.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from nobody_attacker import MARKER, plant_generation
from pools import Supervisor, Supervisors, cli, lock_held, wait_gone, write_root

NOBODY = 65534
ATTACKER = Path(__file__).resolve().parents[1] / "support" / "nobody_attacker.py"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the attacks need root and nobody")


def _untrusted(role: str) -> str:
    error = "CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid"
    return f"{error} (key {role}, rule untrusted-path)"


def _attacker(command: str, root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(ATTACKER), command, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _assert_refused(
    supervisor: Supervisor, root: Path, role: str, *, attacker_holds_lock: bool = False
) -> None:
    """Exit 6 naming the role, not the path; no lock of ours, no process, no worker."""
    assert supervisor.finish() == 6, supervisor.stderr
    assert supervisor.error == _untrusted(role)
    assert str(root) not in supervisor.stderr
    assert not any(line.get("event") == "worker.spawned" for line in supervisor.logs)
    assert lock_held(root) is attacker_holds_lock
    assert wait_gone(root) == []


@pytest.fixture
def attackers() -> Iterator[Callable[[str, Path], subprocess.Popen[str]]]:
    """Start ``nobody_attacker.py`` processes; each is ended and reaped at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(command: str, root: Path) -> subprocess.Popen[str]:
        started.append(_attacker(command, root))
        return started[-1]

    yield start
    for proc in started:
        proc.communicate(timeout=10)  # closes its stdin: a lock holder lets go and exits


def _chown(path: Path) -> None:
    os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


def _open_to_others(root: Path) -> None:
    """The quick start's layout: a root and a ``var`` that others may enter (0755)."""
    for directory in (root, root / "var"):
        directory.chmod(0o755)


class TestAttacks:
    def test_a_generation_planted_in_a_generations_dir_nobody_owns(
        self, root: Path, supervisors: Supervisors, attackers: Callable[..., subprocess.Popen[str]]
    ) -> None:
        """``var/generations`` owned by nobody, who planted a generation naming its own
        module and pointed ``current`` at it: start refuses, and nothing imports it."""
        generations = root / "var/generations"
        generations.mkdir(parents=True)
        _open_to_others(root)
        _chown(generations)
        assert attackers("plant-generation", root).wait(timeout=30) == 0
        planted = (generations / "current").read_text()
        _assert_refused(supervisors(root), root, "generations-dir")
        assert (generations / "current").read_text() == planted  # nothing published
        assert not (root / MARKER).exists()

    def test_a_lock_nobody_holds_in_a_world_writable_runtime_dir(
        self, root: Path, supervisors: Supervisors, attackers: Callable[..., subprocess.Popen[str]]
    ) -> None:
        """``var/tmp`` of mode 1777, ``worker.lock`` created and locked by nobody: start
        refuses the directory (not ``worker-already-running``)."""
        runtime = root / "var/tmp"
        runtime.mkdir(parents=True)
        _open_to_others(root)
        runtime.chmod(0o1777)
        holder = attackers("hold-lock", root)
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        assert (root / "var/tmp/worker.lock").stat().st_uid == NOBODY
        _assert_refused(supervisors(root), root, "runtime-dir", attacker_holds_lock=True)

    def test_a_generation_swapped_in_while_the_pool_runs(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """A publish-shaped generation naming another module, made ``current`` while the
        pool runs (by root: the checks leave nobody no way in): the recycled worker
        refuses to boot it, and the pool fails with the reason instead of staying healthy."""
        write_root(root, task_source="lifecycle_app:on_go", workers=1, max_requests=1)
        supervisor = supervisors.running(root)
        plant_generation(str(root))
        (root / "go").touch()  # one task: the worker retires, a new one boots
        assert supervisor.finish() == 1, supervisor.stderr
        assert supervisor.error == "CORETSIA_WORKER_START_FAILED: worker-generation-untrusted"
        assert not (root / MARKER).exists()
        assert cli(root, "health").returncode == 3  # not running: never silently healthy
        assert not lock_held(root)
        assert wait_gone(root) == []


def _var_owned_by_nobody(root: Path) -> None:
    (root / "var").mkdir()
    _chown(root / "var")


def _group_writable_runtime_dir(root: Path) -> None:
    (root / "var/tmp").mkdir(parents=True)
    (root / "var/tmp").chmod(0o775)


def _generations_dir_as_a_symlink(root: Path) -> None:
    (root / "var/elsewhere").mkdir(parents=True, mode=0o700)
    (root / "var/generations").symlink_to("elsewhere")


def _lock_file_owned_by_nobody(root: Path) -> None:
    (root / "var/tmp").mkdir(parents=True)
    (root / "var/tmp/worker.lock").touch(mode=0o600)
    _chown(root / "var/tmp/worker.lock")


def _fence_writable_by_others(root: Path) -> None:
    (root / "var/tmp").mkdir(parents=True)
    (root / "var/tmp/worker.generation.lock").touch()
    (root / "var/tmp/worker.generation.lock").chmod(0o666)


def _configured_dir_writable_by_others(root: Path) -> None:
    (root / "var/state").mkdir(parents=True)
    (root / "var/state").chmod(0o777)
    write_root(root, state_path="var/state/worker.state.json")


@pytest.mark.parametrize(
    ("layout", "role"),
    [
        (_var_owned_by_nobody, "var-dir"),
        (_group_writable_runtime_dir, "runtime-dir"),
        (_generations_dir_as_a_symlink, "generations-dir"),
        (_lock_file_owned_by_nobody, "lock-file"),
        (_fence_writable_by_others, "lock-file"),
        (_configured_dir_writable_by_others, "runtime-dir"),
    ],
    ids=lambda value: getattr(value, "__name__", value).strip("_"),
)
def test_every_untrusted_runtime_path_is_refused_by_its_role(
    root: Path, supervisors: Supervisors, layout: Callable[[Path], None], role: str
) -> None:
    layout(root)
    _assert_refused(supervisors(root), root, role)
    assert not (root / "var/generations/current").exists()


class TestTrustedLayouts:
    def test_umask_000_still_gives_private_runtime_files(self, root: Path) -> None:
        """Started under umask 000 in a root without ``var``: every directory and file of
        ours is made with its own mode, and the pool runs and stops as usual."""
        supervisor = Supervisor(root, umask=0)
        try:
            supervisor.wait_running()
            base = root / "var/generations"
            gen_dir = base / (base / "current").read_text().strip()
            for directory in (root / "var", root / "var/tmp", base, gen_dir):
                assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
            for file in (base / "current", gen_dir / "generation.json"):
                assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
            for lock in ("worker.lock", "worker.generation.lock"):
                assert stat.S_IMODE((root / "var/tmp" / lock).stat().st_mode) & 0o022 == 0
            assert cli(root, "stop").returncode == 0
            assert supervisor.finish() == 0, supervisor.stderr
        finally:
            supervisor.close()

    def test_a_project_root_another_user_owns_with_a_var_of_ours(
        self, root: Path, supervisors: Supervisors
    ) -> None:
        """The root itself is the application's (its owner may write its code anyway): a
        root owned by another user with ``var`` ours (root's, mode 0755) still runs."""
        (root / "var").mkdir(mode=0o755)
        _chown(root)
        supervisor = supervisors.running(root)
        assert cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0, supervisor.stderr
