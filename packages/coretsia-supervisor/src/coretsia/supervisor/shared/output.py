"""The one way anything reaches the user's terminal: safe fields and error tokens only.

Redaction lives here, in one place: a summary may carry only seed 000's safe fields, and
an error only its ``CODE: reason-token`` (plus, for configuration errors, the key and the
rule; for a runtime-entrypoint failure, the entrypoint's fixed id). Anything else is a
programming error caught by :func:`summary`. Commands write through this module and
nowhere else; it imports nothing beyond the standard library so that the probe commands
stay fast.
"""

from __future__ import annotations

import json
import sys

from coretsia.worker_protocol.exceptions import (
    RuntimeEntrypointError,
    WorkerConfigError,
    WorkerError,
)
from coretsia.worker_protocol.vocabulary import SAFE_FIELDS

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Mapping

    from coretsia.worker_protocol.control import PoolSummary, StatusResponse

    Value = str | int | bool | list[int | None]
    Fields = Mapping[str, Value]


def summary_fields(summary: PoolSummary) -> dict[str, str | int | bool]:
    """The safe fields of a live pool summary."""
    return {
        "status": summary.pool_status.value,
        "pool_status": summary.pool_status.value,
        "pid": summary.pid,
        "worker_count": summary.worker_count,
        "ready_worker_count": summary.ready_worker_count,
        "driver": summary.driver.value,
        "control_transport": summary.control_transport.value,
        "endpoint_hash": summary.endpoint_hash,
        **({} if summary.containment is None else {"containment": summary.containment.value}),
        **(
            {}
            if summary.reconnecting_worker_count is None
            else {"reconnecting_worker_count": summary.reconnecting_worker_count}
        ),
    }


def status_fields(response: StatusResponse) -> dict[str, Value]:
    """The safe fields of a ``status`` answer: the summary, each slot's resident memory
    and the recycle counts (those a supervisor that predates them leaves out)."""
    fields: dict[str, Value] = dict(summary_fields(response.summary))
    if response.slot_rss_kib is not None:
        fields["slot_rss_kib"] = list(response.slot_rss_kib)
    for key in ("recycles_max_requests", "recycles_max_memory"):
        count = getattr(response, key)
        if count is not None:
            fields[key] = count
    return fields


def _checked(fields: Fields) -> Fields:
    unsafe = set(fields) - SAFE_FIELDS
    if unsafe:
        msg = "unsafe output field"
        raise ValueError(msg)
    return fields


def is_terminal() -> bool:
    """Whether stdout is a person's terminal (where live progress lines make sense)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def progress(text: str) -> None:
    """Redraw one live line on a terminal (``\r`` and erase); nothing elsewhere.

    Only for people watching: with ``--json`` or without a terminal, callers do not call
    this, so scripts and logs see the normal output alone.
    """
    sys.stdout.write("\r\x1b[K" + text)
    sys.stdout.flush()


def summary(fields: Fields, *, as_json: bool) -> None:
    """Print one summary line: deterministic JSON, or readable text."""
    _checked(fields)
    if not as_json and is_terminal():
        sys.stdout.write("\r\x1b[K")  # replaces a live progress line, if one is shown
    if as_json:
        line = json.dumps(dict(fields), sort_keys=True, separators=(",", ":"))
    else:
        line = _text(fields)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _text(fields: Fields) -> str:
    status = str(fields.get("status", ""))
    rest = set(fields) - {"status"}
    parts = [f"{status}:" if rest else status] if status else []
    if "reason" in fields:
        parts.append(str(fields["reason"]))
    if "worker_count" in fields:
        parts.append(f"{fields['ready_worker_count']}/{fields['worker_count']} workers ready")
    details = [
        f"{label} {fields[key]}"
        for key, label in (
            ("pid", "pid"),
            ("driver", "driver"),
            ("control_transport", "control"),
            ("endpoint_hash", "endpoint"),
            ("containment", "containment"),
            ("reconnecting_worker_count", "reconnecting"),
        )
        if key in fields
    ]
    if details:
        parts.append("(" + ", ".join(details) + ")")
    rss = fields.get("slot_rss_kib")
    if isinstance(rss, list) and any(size is not None for size in rss):
        largest = max(size for size in rss if size is not None)
        parts.append(f"largest worker {largest // 1024} MiB")
    return " ".join(parts)


def error(exc: WorkerError) -> None:
    """Print a failure as ``CODE: reason-token`` on stderr (and key/rule for config, the
    entrypoint for a runtime entrypoint, the fault of a task source that could not reach
    its backend)."""
    line = str(exc)
    if isinstance(exc, WorkerConfigError):
        line += f" (key {exc.key}, rule {exc.rule.value})"
    elif isinstance(exc, RuntimeEntrypointError):
        line += f" (entrypoint {exc.entrypoint})"
    elif exc.fault is not None:
        line += f" (source {exc.fault.value})"
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def warning(phrase: str) -> None:
    """Print a non-fatal problem on stderr: a fixed phrase of ours, never a value."""
    sys.stderr.write(f"coretsia-supervisor: warning: {phrase}\n")
    sys.stderr.flush()
