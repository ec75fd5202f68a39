"""Run one supervisor in the foreground: shared by ``coretsia-supervisor start`` and
``ProcessManager.start()``.

Both callers have loaded the configuration and built the generation's spec; this module
does the rest of seed 000's start in one place: the runtime directories (checked
trusted, made if missing), the guardian's ``hello`` (sent before trio is imported, to the
guardian ``start`` spawned early), the subreaper (what a killed guardian leaves behind
comes to us), the log handler, and the trio run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from coretsia.supervisor.config import PoolConfig, SpawnMode
from coretsia.supervisor.daemon.containment import resolve_containment, root_id
from coretsia.supervisor.daemon.drivers import (
    fork_server_argv,
    fork_server_available,
    resolve_driver,
    resolve_transport,
)
from coretsia.supervisor.daemon.guardian_process import EarlyGuardian, without_service_manager
from coretsia.supervisor.daemon.ipc_resources import require_ipc
from coretsia.supervisor.daemon.platforms import require_supported_platform
from coretsia.supervisor.daemon.runtime_files import runtime_dirs, trust_runtime_dirs
from coretsia.supervisor.shared._version import __version__
from coretsia.supervisor.shared.telemetry import NO_TELEMETRY, FanoutMeter, Telemetry
from coretsia.worker_protocol.internal.guardian import Hello
from coretsia.worker_protocol.internal.guardian_conversation import SupervisorEnd
from coretsia.worker_protocol.internal.runtime.logs import event, wants_json
from coretsia.worker_protocol.internal.runtime.subreaper import become_subreaper
from coretsia.worker_protocol.vocabulary import Containment

if TYPE_CHECKING:
    import trio

    from coretsia.supervisor.daemon.prometheus import MetricsEndpoint
    from coretsia.supervisor.daemon.supervisor import Supervisor
    from coretsia.supervisor.generation.spec import GenerationSpec
    from coretsia.supervisor.shared.telemetry import Meter, Tracer

__all__ = ["run_supervisor"]


def run_supervisor(
    root: Path,
    config: PoolConfig,
    spec: GenerationSpec,
    umask: int,
    log_format: str = "auto",
    attach: Callable[[Supervisor, trio.lowlevel.TrioToken], None] | None = None,
    *,
    hosted: Callable[[], None] | None = None,
    early: EarlyGuardian | None = None,
) -> bool:
    """Start the pool at ``root`` and serve it until it stops; raise its failure.

    Returns whether the stop was forced: a worker had to be sent SIGTERM or SIGKILL.

    Call with the umask already 077 (``umask`` is the operator's, for the workers).
    ``attach`` is called from inside the run, before anything starts, with the
    supervisor and the run's token: how another thread can reach it later.

    ``hosted`` mounts the pool in a host application (``ProcessManager.running``): it is
    called once every slot is ready; the run installs no signal handler (the host owns
    SIGTERM and SIGINT and forwards its stop), may be in any thread, and never speaks to
    a service manager (the host is the service: its own ``NOTIFY_SOCKET`` is not ours).

    ``early`` is the guardian ``start`` spawned first thing, if any: it gets ``hello``
    before trio is imported, and the guardian link adopts it.
    """
    require_supported_platform()  # ProcessManager.start() comes here without the CLI
    driver = resolve_driver(config.worker.driver)
    transport = resolve_transport(config.control.transport)
    exec_mode = config.worker.spawn is SpawnMode.EXEC
    namespace = exec_mode or fork_server_available(Containment.NAMESPACE)
    containment = resolve_containment(config.worker.containment, namespace=namespace)
    fork_server = fork_server_argv(config.worker, driver, containment)
    require_ipc(spec)  # like the driver: refused before anything is started
    metrics = _metrics_endpoint(config)
    # Refused before anything is written outside the root, or used that is not trusted.
    trust_runtime_dirs(root, runtime_dirs(root, config, transport))
    hello = Hello(
        peer_version=__version__,
        driver=driver,
        containment=containment,
        root_id=root_id(root),
        stop_timeout_ms=config.budgets.stop_timeout_ms,
        force_kill_timeout_ms=config.budgets.force_kill_timeout_ms,
        umask=umask,
        log_json=wants_json(log_format),
        fork_server=fork_server,
    )
    # The early guardian (``start``'s) claims the lock and starts the generation's
    # helpers while this process imports trio and the runtime below; whatever of the
    # generation outlives it comes to us from now on.
    become_subreaper()
    if early is not None:
        early.send(SupervisorEnd().send(hello))

    # deferred: platform-only
    import trio

    from coretsia.supervisor.daemon.supervisor import Supervisor
    from coretsia.worker_protocol.internal.runtime.logs import configure

    configure(log_format)
    supervisor = Supervisor(
        root,
        config,
        spec,
        driver,
        transport,
        containment,
        os.environ if hosted is None else without_service_manager(os.environ),
        hello,
        telemetry=_telemetry(config.observability.telemetry.value, metrics),
        metrics=metrics,
        on_running=hosted,
        early=early,
    )

    async def main() -> None:
        if attach is not None:
            attach(supervisor, trio.lowlevel.current_trio_token())
        await supervisor.run(own_signals=hosted is None)

    trio.run(main)
    return supervisor.forced


def _metrics_endpoint(config: PoolConfig) -> MetricsEndpoint | None:
    """The Prometheus endpoint when ``metrics_port`` is set (refused without the client)."""
    observability = config.observability
    if observability.metrics_port == 0:
        return None
    # deferred: optional extra
    from coretsia.supervisor.daemon.prometheus import MetricsEndpoint, require_prometheus

    require_prometheus()
    return MetricsEndpoint(observability.metrics_host, observability.metrics_port)


def _telemetry(mode: str, metrics: MetricsEndpoint | None) -> Telemetry:
    """The supervisor's telemetry: OpenTelemetry for ``otel`` (imported only then), the
    Prometheus endpoint's meter when it is configured, both when both are."""
    tracer: Tracer | None = None
    meters: list[Meter] = [] if metrics is None else [metrics.meter]
    if mode == "otel":
        from coretsia.supervisor.shared.otel import opentelemetry_parts  # deferred: optional extra

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
