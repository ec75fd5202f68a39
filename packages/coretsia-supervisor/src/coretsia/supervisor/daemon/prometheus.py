"""The supervisor's optional Prometheus text endpoint (``[worker] metrics_port``).

Off by default. When ``metrics_port`` is set, the supervisor serves its own families in
Prometheus' text format on ``metrics_host`` (``127.0.0.1`` unless configured: in
Kubernetes, the pod's IP or ``0.0.0.0`` for the scraper to reach it):

====================================  =======  ==========================================
family                                type     meaning
====================================  =======  ==========================================
``worker_process_total``              counter  seed 000's ``worker.process_total``, label
                                               ``status`` (``start_success``,
                                               ``start_failure``, ``stop_success``,
                                               ``stop_failure``, ``status_success``,
                                               ``status_failure``)
``worker_slots``                      gauge    slots of the pool (task workers, entries)
``worker_ready_slots``                gauge    slots whose worker is ready now
``worker_recycles_total``             counter  workers retired cleanly and replaced,
                                               label ``cause`` (``max-requests``,
                                               ``max-memory``)
``worker_resident_memory_bytes``      gauge    the workers' resident memory, summed
``worker_resident_memory_max_bytes``  gauge    the largest worker's (what
                                               ``max_memory_mb`` bounds)
====================================  =======  ==========================================

The counter is fed through the same :class:`~coretsia.supervisor.shared.telemetry.Telemetry`
as OpenTelemetry's (this module provides a meter), so the two can never disagree; a
``status`` series appears at its first count, and ``prometheus_client`` adds its usual
``worker_process_created`` timestamps. The gauges and the recycle counter read the live
pool at scrape time (the memory from ``/proc``, see
:mod:`~coretsia.supervisor.daemon.resident_memory`). Nothing else is exposed: no worker index,
pid, path, port or error reason (seed 000's forbidden labels: so the memory is the sum
and the largest, not one series per slot, which ``status --json`` lists), and no task
families, which are produced in the workers (use ``telemetry = "otel"`` for those).

``prometheus_client`` (the ``prometheus`` extra) is imported only when the endpoint is
configured; its absence is refused at start like a missing driver. The endpoint is bound
once the guardian holds the lifecycle lock (a second ``start`` never steals the port) and
closed in the shutdown. A port that cannot be bound is an observability failure, which
seed 000 says changes no lifecycle: the pool runs without the endpoint and logs
``metrics.unavailable``. The server answers from its own threads (one per connection,
each bounded by a timeout), never binds through a name lookup, and stops within 50 ms.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import socketserver
import threading
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from coretsia.supervisor.daemon.resident_memory import slot_resident_bytes
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.internal.runtime.logs import event

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from prometheus_client import CollectorRegistry, Counter
    from prometheus_client.core import Metric

    from coretsia.supervisor.daemon.pool import Pool

__all__ = ["MetricsEndpoint", "require_prometheus"]

_POLL_S = 0.05
"""How often the server loop looks for a shutdown: the bound on :meth:`close`."""
_CONNECTION_TIMEOUT_S = 10.0
"""An idle scraper connection is dropped after this, so it cannot pin a thread."""


def require_prometheus() -> None:
    """Refuse a configured endpoint without ``prometheus_client``, before anything starts."""
    try:
        # deferred: optional extra
        import prometheus_client  # noqa: F401 - importable is all this checks
    except ImportError:
        raise WorkerConfigError("worker.metrics_port", ConfigRule.UNAVAILABLE) from None


def _prometheus_name(name: str) -> str:
    """``worker.process_total`` -> ``worker_process`` (the client adds ``_total``)."""
    flat = name.replace(".", "_")
    return flat.removesuffix("_total")


class _Counter:
    """A counter instrument, as telemetry's meter protocol asks, on a Prometheus counter."""

    def __init__(self, registry: CollectorRegistry, name: str, description: str) -> None:
        self._registry = registry
        self._name = _prometheus_name(name)
        self._description = description
        self._family: Counter | None = None
        self._labels: tuple[str, ...] = ()

    def add(self, amount: int, attributes: Mapping[str, str]) -> None:
        family = self._family
        if family is None:  # label names are known at the first use only
            # deferred: optional extra
            from prometheus_client import Counter

            self._labels = tuple(sorted(attributes))
            family = self._family = Counter(
                self._name, self._description, self._labels, registry=self._registry
            )
        family.labels(*(attributes[label] for label in self._labels)).inc(amount)


class _Histogram:
    """Histograms are the workers' task families: the supervisor records none."""

    def record(self, amount: float, attributes: Mapping[str, str]) -> None:
        """Not exported here (see the module docstring)."""


class _Meter:
    """The meter that :class:`~coretsia.supervisor.shared.telemetry.Telemetry` records into."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def create_counter(self, name: str, unit: str = "", description: str = "") -> _Counter:
        return _Counter(self._registry, name, description or name)

    def create_histogram(self, name: str, unit: str = "", description: str = "") -> _Histogram:
        return _Histogram()


class _PoolCollector:
    """The pool's slot gauges, read at scrape time from the supervisor's live picture."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    def collect(self) -> Iterator[Metric]:
        # deferred: optional extra
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        slots = len(self._pool.slots)  # fixed for the generation's life
        yield GaugeMetricFamily("worker_slots", "Worker slots of the pool", value=slots)
        yield GaugeMetricFamily(
            "worker_ready_slots", "Slots whose worker is ready", value=self._pool.ready_count
        )
        recycles = CounterMetricFamily(
            "worker_recycles", "Workers retired cleanly and replaced", labels=("cause",)
        )
        for cause, count in self._pool.recycles.items():
            recycles.add_metric((cause.value,), count)
        yield recycles
        sizes = [size for size in slot_resident_bytes(self._pool) if size is not None]
        yield GaugeMetricFamily(
            "worker_resident_memory_bytes", "Resident memory of the workers", value=sum(sizes)
        )
        yield GaugeMetricFamily(
            "worker_resident_memory_max_bytes",
            "Resident memory of the largest worker",
            value=max(sizes, default=0),
        )


class MetricsEndpoint:
    """The registry, its meter for telemetry, and the HTTP server once :meth:`open`."""

    def __init__(self, host: str, port: int) -> None:
        # deferred: optional extra
        from prometheus_client import CollectorRegistry

        self.host = host
        self.port = port
        self._registry = CollectorRegistry(auto_describe=True)
        self.meter = _Meter(self._registry)
        self._server: WSGIServer | None = None

    def open(self, pool: Pool) -> None:
        """Serve ``/metrics`` (any path, as the client library does); the pool's gauges too.

        A port that cannot be bound leaves the pool without the endpoint, never failed.
        """
        # deferred: optional extra
        from prometheus_client import make_wsgi_app

        self._registry.register(_PoolCollector(pool))
        try:
            server = _server(self.host, self.port, make_wsgi_app(self._registry))
        except OSError:  # the port is taken, or the address is not this machine's
            event("metrics.unavailable", logging.WARNING)
            return
        self._server = server
        threading.Thread(
            target=server.serve_forever, args=(_POLL_S,), name="coretsia-metrics", daemon=True
        ).start()

    def close(self) -> None:
        """Stop serving and release the port; idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()  # returns within _POLL_S
            server.server_close()


def _server(host: str, port: int, app: object) -> WSGIServer:
    """A threading WSGI server bound to ``host:port`` without a name lookup."""

    class Handler(WSGIRequestHandler):
        timeout = _CONNECTION_TIMEOUT_S

        def log_message(self, format: str, *args: object) -> None:
            """Silent: a scrape is not an event, and the request line is not ours to log."""

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = (
            socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
        )

        def server_bind(self) -> None:
            # HTTPServer.server_bind resolves the host's FQDN (a DNS query on the event
            # loop's thread); the WSGI environ only needs a name, so use the address.
            socketserver.TCPServer.server_bind(self)
            self.server_name = host
            self.server_port = port
            self.setup_environ()

    server = Server((host, port), Handler)
    server.set_app(app)  # type: ignore[arg-type]
    return server
