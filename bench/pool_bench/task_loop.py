"""S7 task loop: the per-task overhead of ``run_unit`` and ``work`` over a bare loop."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

from bench_app import NoopTask  # beside the scripts: the pools' application
from harness.results import Results, median

from pool_bench.pools import log


class _MemorySource:
    """Hands out the same no-op task ``count`` times, then requests the stop and ends."""

    def __init__(self, count: int, stop: Callable[[], None]) -> None:
        self.left = count
        self.task = NoopTask()
        self.stop = stop

    def assert_ready(self) -> None:
        pass

    def receive(self) -> NoopTask | None:
        if self.left:
            self.left -= 1
            return self.task
        self.stop()
        return None


def scenario_task_loop(results: Results, runs: int, count: int = 200_000) -> None:
    """S7: per-task overhead of run_unit and work() against a bare loop."""
    from coretsia.supervisor.worker_side.channel import Reporter, Retirement
    from coretsia.supervisor.worker_side.stop_signal import StopSignal
    from coretsia.supervisor.worker_side.task_loop import Hooks, run_unit, work
    from coretsia.supervisor.worker_side.task_worker import SourceContext

    hooks = Hooks()
    task = NoopTask()

    def bare() -> float:
        run = task.run
        started = time.perf_counter()
        for _ in range(count):
            run()
        return time.perf_counter() - started

    def units() -> float:
        started = time.perf_counter()
        for _ in range(count):
            run_unit(task, hooks)
        return time.perf_counter() - started

    def loop() -> float:
        read_end, write_end = os.pipe()
        ours, theirs = socket.socketpair()
        try:
            reporter = Reporter(ours)
            context = SourceContext("queue", 0, StopSignal(read_end), "bench", {}, reporter)
            source = _MemorySource(count, lambda: os.close(write_end))
            retirement = Retirement(reporter)
            started = time.perf_counter()
            work(source, context, count + 1, hooks, retirement)
            return time.perf_counter() - started
        finally:
            os.close(read_end)
            ours.close()
            theirs.close()

    telemetry = _sdk_telemetry()

    def units_with_telemetry() -> float:
        started = time.perf_counter()
        for _ in range(count // 10):  # a span and three instruments per task: fewer tasks
            run_unit(task, hooks, telemetry)
        return (time.perf_counter() - started) * 10

    per_unit: list[float] = []
    per_loop: list[float] = []
    per_traced: list[float] = []
    for _ in range(runs):
        base = min(bare() for _ in range(3))
        per_unit.append((min(units() for _ in range(3)) - base) / count)
        per_loop.append((min(loop() for _ in range(3)) - base) / count)
        if telemetry is not None:
            per_traced.append((min(units_with_telemetry() for _ in range(3)) - base) / count)
    results.data["s7_bare_per_task"] = [base / count]
    results.data["s7_run_unit_overhead"] = per_unit
    results.data["s7_work_overhead"] = per_loop
    if per_traced:
        results.data["s7_run_unit_telemetry_overhead"] = per_traced
    log(f"S7: run_unit +{median(per_unit) * 1e6:.2f} us, work +{median(per_loop) * 1e6:.2f} us")


def _sdk_telemetry() -> Any:
    """A Telemetry on the OpenTelemetry SDK (in-memory export), or None without the SDK.

    What ``telemetry = "otel"`` costs a task with an SDK that keeps every span and metric:
    the in-memory exporter stands for the cheapest real one.
    """
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
    except ImportError:
        return None
    from coretsia.supervisor.shared.telemetry import Telemetry

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Telemetry(tracer_provider.get_tracer("bench"), meter_provider.get_meter("bench"))
