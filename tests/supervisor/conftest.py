"""Fixtures shared by the supervisor's unit tests."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from telemetry_memory import Pipeline, in_memory

from coretsia.worker_protocol.internal.runtime.logs import LOGGER_NAME, JsonFormatter


@pytest.fixture
def pipeline() -> Iterator[Pipeline]:
    """OpenTelemetry SDK providers exporting into memory, shut down after the test."""
    tracer_provider, meter_provider, recorded = in_memory()
    yield tracer_provider, meter_provider, recorded
    tracer_provider.shutdown()
    meter_provider.shutdown()


@pytest.fixture
def lines() -> Iterator[list[dict[str, object]]]:
    """The events logged during the test, as the JSON formatter writes them."""
    captured: list[dict[str, object]] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            captured.append(json.loads(JsonFormatter().format(record)))

    logger = logging.getLogger(LOGGER_NAME)
    handler = Capture()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield captured
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
