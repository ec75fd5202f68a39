"""The pool's runtime files: where they may go, and writing and removing them.

Seed 000 names them: the state file, the stop-signal file, the private locator, the
endpoint key, the control socket. This module owns the one check that every directory the
pool writes into lies inside the root (:func:`runtime_dirs`, run before anything is
written and again under the lock), their publication in the seed's order, and their
removal at shutdown, where every removal is attempted even if an earlier one failed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

from coretsia.supervisor.config import PoolConfig
from coretsia.supervisor.config.rules import check_path_claims
from coretsia.supervisor.daemon import files
from coretsia.worker_protocol import trusted_paths
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.endpoint import endpoint_hash
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerLifecycleFailedError
from coretsia.worker_protocol.lifecycle import (
    CANONICAL_PATHS,
    ENDPOINT_KEY_PATH,
    FENCE_PATH,
    GENERATIONS_DIR,
    LOCATOR_PATH,
    LOCATOR_TMP_PATH,
    LOCK_PATH,
    RUNTIME_DIR,
)
from coretsia.worker_protocol.locator import Locator, encode_locator
from coretsia.worker_protocol.state import PoolState, encode_state
from coretsia.worker_protocol.vocabulary import PoolStatus, Transport

if TYPE_CHECKING:
    from coretsia.supervisor.daemon.pool import Pool

PROGRESS_INTERVAL_S: Final = 0.1
"""How often a start's progress reaches the state file (and a terminal) at most."""


def trust_runtime_dirs(root: Path, dirs: list[Path]) -> None:
    """Refuse a runtime directory or lock file that is not trusted; make ``var/tmp``.

    Before the guardian touches anything (``start`` and ``ProcessManager.start`` alike):
    ``var``, ``var/tmp`` (both made ``0700``, whatever the umask, when missing),
    ``var/generations``, the lock and the fence, and every directory of ``dirs`` (from
    :func:`runtime_dirs`) that lies under ``var``, each with its parents, must be owned by
    the pool's user or root and writable by no one else, and a directory must not be a
    symlink (:mod:`~coretsia.worker_protocol.trusted_paths`). Top-down, so that whatever
    is still missing can only be made by us. A refusal is the configuration error naming
    the path's role (``key runtime-dir, rule untrusted-path``), exit 6, before any worker.
    """
    var = root / os.path.dirname(RUNTIME_DIR)
    trusted_paths.make_dir(var, trusted_paths.VAR_DIR)
    trusted_paths.make_dir(root / RUNTIME_DIR, trusted_paths.RUNTIME_DIR)
    trusted_paths.check_path(root / GENERATIONS_DIR, trusted_paths.GENERATIONS_DIR)
    for lock in (LOCK_PATH, FENCE_PATH):
        trusted_paths.check_path(root / lock, trusted_paths.LOCK_FILE)
    real_var = Path(os.path.realpath(var))
    for directory in dirs:
        if real_var in directory.parents:
            parts = directory.relative_to(real_var).parts
            for depth in range(1, len(parts) + 1):
                path = var.joinpath(*parts[:depth])
                if not trusted_paths.check_path(path, trusted_paths.RUNTIME_DIR):
                    break  # missing: made under the lock, 0700, below a trusted parent


def runtime_dirs(root: Path, config: PoolConfig, transport: Transport) -> list[Path]:
    """The directories the pool's files go into, symlinks resolved, each inside ``root``.

    Seed 000 demands that the generation root be a strict descendant of the project root,
    and every runtime path relative to it: a ``var`` that is a symlink out of the root
    would otherwise put the lock, the locator and the generation somewhere else. So
    ``var/tmp`` and ``var/generations`` must resolve strictly inside the root (else
    ``worker-invalid-state``: the root itself is in a state no pool can run in), and the
    directory of each configured runtime path inside it or the root itself (else the
    configuration error of its key, ``unsafe-path``). Nothing is created here: ``start``
    checks before writing anything, then creates the configured paths' directories
    once the lock is held.
    """
    real_root = os.path.realpath(root)

    def resolved(directory: str) -> str:
        return os.path.realpath(os.path.join(real_root, directory))

    def inside(path: str) -> bool:
        return path.startswith(real_root + os.sep)

    dirs = []
    for directory in (RUNTIME_DIR, GENERATIONS_DIR):
        path = resolved(directory)
        if not inside(path):
            raise WorkerLifecycleFailedError(Reason.INVALID_STATE)
        dirs.append(path)
    claims = []
    # No socket without the unix transport: its path is not the pool's to use.
    for key, relative in config.paths.claims(socket=transport is Transport.UNIX):
        directory = resolved(os.path.dirname(relative))
        if directory != real_root and not inside(directory):
            raise WorkerConfigError(key, ConfigRule.UNSAFE_PATH)
        dirs.append(directory)
        real = os.path.join(directory, os.path.basename(relative))
        claims.append((key, os.path.relpath(real, real_root)))
    # Symlinks inside the root may make two different texts name one file (a state file
    # written over the generation fence): the load-time rules again, on real paths.
    canonical = (os.path.relpath(resolved(path), real_root) for path in CANONICAL_PATHS)
    check_path_claims(claims, canonical)
    return [Path(path) for path in dict.fromkeys(dirs)]


@attrs.define
class RuntimeFiles:
    """One run's runtime files under ``root``, as ``config`` places them."""

    root: Path
    config: PoolConfig
    transport: Transport
    state_published: bool = False
    """The state file exists: only then does a stopping pool rewrite it."""
    _progress_next: float = attrs.field(default=0.0, init=False)

    def progress_due(self) -> bool:
        """Whether a start's progress (one more worker ready) is worth publishing now.

        At most once per :data:`PROGRESS_INTERVAL_S`: each publication is a write and a
        rename over the old file, which ext4 (``auto_da_alloc``) follows with writeback;
        once per ready worker that was a third of a 256-worker start's supervisor CPU
        (measured: ``docs/performance.md#timings-the-code-refers-to``). The file is diagnostic
        only, and the start's end (running, or failed) publishes or removes it whatever
        was skipped.
        """
        now = time.monotonic()
        if now < self._progress_next:
            return False
        self._progress_next = now + PROGRESS_INTERVAL_S
        return True

    def make_dirs(self) -> None:
        """Create the files' directories (0700 under our umask), checked again now that
        the lock is ours: a second ``start`` must change nothing."""
        for directory in runtime_dirs(self.root, self.config, self.transport):
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as exc:
                raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc

    def remove_stale(self) -> None:
        """Delete what a previous run left (locator, state, stop flag) before publishing."""
        try:
            for path in self._removable():
                files.remove(self.root / path)
        except OSError as exc:
            raise WorkerLifecycleFailedError(Reason.RUNTIME_CLEANUP_FAILED) from exc

    def endpoint_hash(self) -> str:
        """The published hash of the control endpoint, keyed by the root's secret."""
        try:
            key = files.endpoint_key(self.root / ENDPOINT_KEY_PATH)
        except OSError as exc:  # a directory at its path, a full disk
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc
        if self.transport is Transport.UNIX:
            address = self.config.paths.socket_path
        else:
            address = f"127.0.0.1:{self.config.tcp.port}"
        return endpoint_hash(key, self.transport, address)

    def publish_locator(self, credential: str) -> None:
        """Write the private locator: how a client with the credential finds the server."""
        config = self.config
        unix = self.transport is Transport.UNIX
        locator = Locator(
            transport=self.transport,
            credential=credential,
            stop_timeout_ms=config.budgets.stop_timeout_ms,
            force_kill_timeout_ms=config.budgets.force_kill_timeout_ms,
            path=config.paths.socket_path if unix else None,
            host=None if unix else "127.0.0.1",
            port=None if unix else config.tcp.port,
        )
        try:
            files.write_atomic(
                self.root / LOCATOR_PATH, encode_locator(locator), self.root / LOCATOR_TMP_PATH
            )
        except OSError as exc:
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_LOCATOR_FAILED) from exc

    def publish_state(self, pool: Pool) -> bool:
        """Write the seed's state file; False when a stopping pool has none to update."""
        if pool.status is PoolStatus.STOPPING and not self.state_published:
            return False
        config = self.config
        paths = config.paths
        state = PoolState(
            pid=pool.pid,
            status=pool.status,
            worker_count=len(pool.slots),
            ready_worker_count=pool.ready_count,
            driver_requested=config.worker.driver,
            driver=pool.driver,
            control_transport_requested=config.control.transport,
            control_transport=pool.transport,
            endpoint_hash=pool.endpoint_hash,
        )
        try:
            files.write_atomic(
                self.root / paths.state_path,
                encode_state(state),
                self.root / paths.state_tmp_path,
            )
        except OSError as exc:
            raise WorkerLifecycleFailedError(Reason.LIFECYCLE_FAILED) from exc
        self.state_published = True
        return True

    def write_stop_flag(self) -> None:
        """The seed's stop-signal file, a diagnostic artifact only: workers learn of the
        stop from their stop pipe, never by polling this file."""
        files.write_atomic(self.root / self.config.paths.stop_flag_path, b"stop\n")

    def remove_all(self) -> bool:
        """Remove state, stop flag and locator; False if one resisted (each is tried)."""
        self.state_published = False
        cleaned = True
        for path in self._removable():
            try:
                files.remove(self.root / path)
            except OSError:
                cleaned = False
        return cleaned

    def _removable(self) -> tuple[str, ...]:
        paths = self.config.paths
        return (
            LOCATOR_PATH,
            LOCATOR_TMP_PATH,
            paths.state_path,
            paths.state_tmp_path,
            paths.stop_flag_path,
        )
