"""The optional Prometheus endpoint, scraped for real from a real pool (prometheus.py).

A pool with ``metrics_port`` serves ``worker_process_total``, the slot gauges, the
recycle counter and the resident memory gauges on loopback from the moment the guardian
holds the lock until the shutdown; a taken port leaves the pool running without it, a
missing ``prometheus_client`` is refused before anything starts, and the settings are
validated like every key. Every supervisor a test starts is closed (stopped) at
teardown, whatever its assertions did.
"""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pools
import pytest
from ports import free_port
from site_hooks import pythonpath_first

from coretsia.supervisor.config import load_config
from coretsia.supervisor.shared.telemetry import FanoutMeter, Telemetry
from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError


@pytest.fixture
def port() -> int:
    """A port nothing listens on now (see :mod:`ports`)."""
    return free_port()


def scrape(port: int) -> dict[str, float]:
    """``name{labels}`` -> value, for every sample line of the endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_a_pool_serves_its_families_until_it_stops(
    root: Path, port: int, supervisors: pools.Supervisors
) -> None:
    pools.write_root(root, workers=2, metrics_port=port)
    supervisor = supervisors(root)
    supervisor.wait_running()
    samples = scrape(port)
    assert samples['worker_process_total{status="start_success"}'] == 1.0
    assert samples["worker_slots"] == 2.0
    assert samples["worker_ready_slots"] == 2.0
    assert pools.cli(root, "status").returncode == 0
    assert scrape(port)['worker_process_total{status="status_success"}'] == 1.0
    names = {name.split("{")[0] for name in samples}
    # prometheus_client's own _created timestamps come with every counter (documented).
    assert names <= {"worker_process_total", "worker_process_created", "worker_slots",
                     "worker_ready_slots", "worker_recycles_total",
                     "worker_resident_memory_bytes",
                     "worker_resident_memory_max_bytes"}  # fmt: skip
    assert samples['worker_recycles_total{cause="max-requests"}'] == 0.0
    assert 0 < samples["worker_resident_memory_max_bytes"] < samples["worker_resident_memory_bytes"]
    assert pools.cli(root, "stop").returncode == 0
    assert supervisor.finish() == 0, supervisor.stderr
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # the port is released with the pool


def test_a_taken_port_leaves_the_pool_running_without_the_endpoint(
    root: Path, port: int, supervisors: pools.Supervisors
) -> None:
    """Seed 000: an observability failure changes no lifecycle outcome."""
    pools.write_root(root, workers=1, metrics_port=port)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        supervisor = supervisors(root)
        supervisor.wait_running()
        assert pools.cli(root, "stop").returncode == 0
        assert supervisor.finish() == 0, supervisor.stderr
    (line,) = [line for line in supervisor.logs if line["event"] == "metrics.unavailable"]
    assert set(line) == {"event", "level", "ts"}  # no address, no port, no message


def test_without_prometheus_client_the_start_is_refused(root: Path, tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "prometheus_client.py").write_text('raise ImportError("not installed")\n')
    pools.write_root(root, workers=1, metrics_port=9464)
    pools.assert_start_refused(
        root, "worker.metrics_port", "unavailable", env=pythonpath_first(shim)
    )


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ('metrics_host = "localhost"', ConfigRule.NOT_ONE_OF),
        ('metrics_host = "127.0.0.1:9464"', ConfigRule.NOT_ONE_OF),
        ("metrics_host = 1", ConfigRule.WRONG_TYPE),
        ("metrics_port = 65536", ConfigRule.OUT_OF_RANGE),
        ('metrics_port = "9464"', ConfigRule.WRONG_TYPE),
    ],
)
def test_settings_are_validated(tmp_path: Path, line: str, rule: ConfigRule) -> None:
    (tmp_path / "coretsia.toml").write_text(f"[worker]\n{line}\n")
    with pytest.raises(WorkerConfigError) as info:
        load_config(tmp_path)
    assert info.value.rule is rule
    assert info.value.key == f"worker.{line.split()[0]}"


def test_any_ip_address_may_be_configured(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "10.1.2.3", "::1"):
        (tmp_path / "coretsia.toml").write_text(f'[worker]\nmetrics_host = "{host}"\n')
        assert load_config(tmp_path).observability.metrics_host == host
    assert load_config(tmp_path / "missing").observability.metrics_port == 0  # off by default


class _Recorder:
    def __init__(self) -> None:
        self.added: list[tuple[int, dict[str, str]]] = []

    def add(self, amount: int, attributes: dict[str, str]) -> None:
        self.added.append((amount, dict(attributes)))

    def record(self, amount: float, attributes: dict[str, str]) -> None:
        self.added.append((int(amount), dict(attributes)))


class _Broken:
    def add(self, amount: int, attributes: dict[str, str]) -> None:
        raise RuntimeError("exporter down")

    def record(self, amount: float, attributes: dict[str, str]) -> None:
        raise RuntimeError("exporter down")


class _Meter:
    def __init__(self, instrument: object) -> None:
        self.instrument = instrument

    def create_counter(self, name: str, unit: str = "", description: str = "") -> object:
        return self.instrument

    def create_histogram(self, name: str, unit: str = "", description: str = "") -> object:
        return self.instrument


def test_one_failing_sink_does_not_keep_the_other_from_recording() -> None:
    recorder = _Recorder()
    meter = FanoutMeter([_Meter(_Broken()), _Meter(recorder)])  # type: ignore[list-item]
    telemetry = Telemetry(meter=meter)
    telemetry.process("status").finish("success")
    assert recorder.added == [(1, {"status": "status_success"})]
