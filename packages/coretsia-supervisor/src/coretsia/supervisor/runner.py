"""Run one supervisor in the foreground: shared by ``coretsia-supervisor start`` and
``ProcessManager.start()``.

Both callers have loaded the configuration and frozen the generation spec; this module
does the rest of seed 000's start in one place: the state directory, the subreaper (what
a killed guardian leaves behind comes to us), the log handler, and the trio run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from coretsia.supervisor.config import PoolConfig
from coretsia.supervisor.drivers import resolve_driver, resolve_transport
from coretsia.supervisor.process.ipc_resources import require_ipc

TYPE_CHECKING = False
if TYPE_CHECKING:
    import trio

    from coretsia.supervisor.supervisor import Supervisor
    from coretsia.supervisor.telemetry import Telemetry

__all__ = ["run_supervisor"]


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
    driver = resolve_driver(config.driver)
    transport = resolve_transport(config.control_transport)
    require_ipc(spec)  # like the driver: refused before anything is started
    (root / "var/tmp").mkdir(parents=True, exist_ok=True)

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
        telemetry=_telemetry(config.telemetry.value),
    )

    async def main() -> None:
        if attach is not None:
            attach(supervisor, trio.lowlevel.current_trio_token())
        await supervisor.run()

    trio.run(main)


def _telemetry(mode: str) -> Telemetry:
    """The supervisor's telemetry; OpenTelemetry is imported only for ``otel``."""
    from coretsia.supervisor.telemetry import NO_TELEMETRY

    if mode != "otel":
        return NO_TELEMETRY
    import logging

    from coretsia.guardian.logs import event
    from coretsia.supervisor.otel import opentelemetry_telemetry

    telemetry = opentelemetry_telemetry("coretsia.supervisor")
    if telemetry is None:
        event("telemetry.unavailable", logging.WARNING)
        return NO_TELEMETRY
    return telemetry
