"""What a supervisor's JSON log says: recycles, retirements, failures."""

from __future__ import annotations

import contextlib
import datetime
import json
from pathlib import Path
from typing import Any


def read_events(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a supervisor's (and guardian's) stderr; other lines skipped."""
    events = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and "event" in event:
                    events.append(event)
    return events


def _ts(event: dict[str, Any]) -> float:
    text = str(event["ts"]).replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(text).timestamp()


def spawn_to_ready(events: list[dict[str, Any]]) -> list[float]:
    """Spawn-to-ready seconds of each *replacement* worker in one log.

    A slot's first ``worker.spawned`` in a log is the pool's start; each later one is a
    replacement (a recycle), paired with the slot's next ``worker.ready``.
    """
    seen: set[int] = set()
    pending: dict[int, float] = {}
    times: list[float] = []
    for event in events:
        slot = event.get("slot")
        if not isinstance(slot, int):
            continue
        if event["event"] == "worker.spawned":
            if slot in seen:
                pending[slot] = _ts(event)
            seen.add(slot)
        elif event["event"] == "worker.ready" and slot in pending:
            times.append(_ts(event) - pending.pop(slot))
    return times


def count_events(events: list[dict[str, Any]], name: str) -> int:
    return sum(1 for e in events if e["event"] == name)


def failure_reasons(events: list[dict[str, Any]]) -> list[str]:
    """The reason fields of warning/error events (what failed the pool)."""
    found = []
    for event in events:
        if event.get("level") in ("warning", "error", "critical"):
            detail = {k: v for k, v in event.items() if k not in ("ts", "level")}
            found.append(json.dumps(detail, sort_keys=True))
    return found


def pool_failed(events: list[dict[str, Any]]) -> list[str]:
    """The ``reason`` of each ``pool.failed`` event."""
    return [str(e.get("reason")) for e in events if e["event"] == "pool.failed"]
