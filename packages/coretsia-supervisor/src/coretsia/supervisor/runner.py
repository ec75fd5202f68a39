"""Run one supervisor in the foreground: shared by ``coretsia-supervisor start`` and
``ProcessManager.start()``.

Both callers have loaded the configuration and frozen the generation spec; this module
does the rest of seed 000's start in one place: the state directory, the subreaper (what
a killed guardian leaves behind comes to us), the log handler, and the trio run. It also
owns the one check that every directory the pool writes into lies inside the root
(:func:`runtime_dirs`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from coretsia.supervisor.config import PoolConfig
from coretsia.supervisor.config.rules import check_path_claims
from coretsia.supervisor.drivers import resolve_driver, resolve_transport
from coretsia.supervisor.process.ipc_resources import require_ipc
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.exceptions import WorkerConfigError, WorkerLifecycleFailedError
from coretsia.worker_protocol.lifecycle import CANONICAL_PATHS, GENERATIONS_DIR, RUNTIME_DIR
from coretsia.worker_protocol.vocabulary import Transport

TYPE_CHECKING = False
if TYPE_CHECKING:
    import trio

    from coretsia.supervisor.prometheus import MetricsEndpoint
    from coretsia.supervisor.supervisor import Supervisor
    from coretsia.supervisor.telemetry import Meter, Telemetry, Tracer

__all__ = ["run_supervisor", "runtime_dirs"]


def run_supervisor(
    root: Path,
    config: PoolConfig,
    spec: dict[str, object],
    umask: int,
    log_format: str = "auto",
    attach: Callable[[Supervisor, trio.lowlevel.TrioToken], None] | None = None,
) -> None:
    """Start the pool at ``root`` and serve it until it stops; raise its failure.

    Call with the umask already 077 (``umask`` is the operator's, for the workers).
    ``attach`` is called from inside the run, before anything starts, with the
    supervisor and the run's token: how another thread can reach it later.
    """
    driver = resolve_driver(config.worker.driver)
    transport = resolve_transport(config.control.transport)
    require_ipc(spec)  # like the driver: refused before anything is started
    metrics = _metrics_endpoint(config)
    runtime_dirs(root, config, transport)  # refused before anything is written outside
    (root / RUNTIME_DIR).mkdir(parents=True, exist_ok=True)

    import trio

    from coretsia.guardian.logs import JsonFormatter, configure
    from coretsia.guardian.subreaper import become_subreaper
    from coretsia.supervisor.supervisor import Supervisor

    become_subreaper()
    logger = configure(log_format)
    log_json = isinstance(logger.handlers[0].formatter, JsonFormatter)
    supervisor = Supervisor(
        root,
        config,
        spec,
        driver,
        transport,
        umask,
        os.environ,
        log_json=log_json,
        telemetry=_telemetry(config.observability.telemetry.value, metrics),
        metrics=metrics,
    )

    async def main() -> None:
        if attach is not None:
            attach(supervisor, trio.lowlevel.current_trio_token())
        await supervisor.run()

    trio.run(main)


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


def _metrics_endpoint(config: PoolConfig) -> MetricsEndpoint | None:
    """The Prometheus endpoint when ``metrics_port`` is set (refused without the client)."""
    observability = config.observability
    if observability.metrics_port == 0:
        return None
    from coretsia.supervisor.prometheus import MetricsEndpoint, require_prometheus

    require_prometheus()
    return MetricsEndpoint(observability.metrics_host, observability.metrics_port)


def _telemetry(mode: str, metrics: MetricsEndpoint | None) -> Telemetry:
    """The supervisor's telemetry: OpenTelemetry for ``otel`` (imported only then), the
    Prometheus endpoint's meter when it is configured, both when both are."""
    from coretsia.supervisor.telemetry import NO_TELEMETRY, FanoutMeter, Telemetry

    tracer: Tracer | None = None
    meters: list[Meter] = [] if metrics is None else [metrics.meter]
    if mode == "otel":
        import logging

        from coretsia.guardian.logs import event
        from coretsia.supervisor.otel import opentelemetry_parts

        parts = opentelemetry_parts("coretsia.supervisor")
        if parts is None:
            event("telemetry.unavailable", logging.WARNING)
        else:
            tracer = parts[0]
            meters.insert(0, parts[1])
    if tracer is None and not meters:
        return NO_TELEMETRY
    meter = meters[0] if len(meters) == 1 else FanoutMeter(meters) if meters else None
    return Telemetry(tracer, meter)
