"""A start's progress in the state file: at most once per interval, whatever the rate of
ready workers (each publication is a write and a rename; 256 of them were a third of a
256-worker start's supervisor CPU on ext4)."""

from __future__ import annotations

import time
from pathlib import Path

from coretsia.supervisor.config.loading import parse_config
from coretsia.supervisor.daemon.runtime_files import PROGRESS_INTERVAL_S, RuntimeFiles
from coretsia.worker_protocol.vocabulary import Transport


def test_once_per_interval(tmp_path: Path) -> None:
    files = RuntimeFiles(tmp_path, parse_config({}), Transport.UNIX)
    opened = time.monotonic()
    assert files.progress_due()  # the first ready worker is shown at once
    burst = [files.progress_due() for _ in range(100)]
    if time.monotonic() - opened < PROGRESS_INTERVAL_S:  # else the machine stalled: moot
        assert burst == [False] * 100
    time.sleep(PROGRESS_INTERVAL_S)  # the interval itself is what is tested
    assert files.progress_due()
