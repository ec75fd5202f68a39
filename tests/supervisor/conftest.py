"""Fixtures shared by the supervisor's unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from telemetry_memory import Pipeline, in_memory


@pytest.fixture
def pipeline() -> Iterator[Pipeline]:
    """OpenTelemetry SDK providers exporting into memory, shut down after the test."""
    tracer_provider, meter_provider, recorded = in_memory()
    yield tracer_provider, meter_provider, recorded
    tracer_provider.shutdown()
    meter_provider.shutdown()
