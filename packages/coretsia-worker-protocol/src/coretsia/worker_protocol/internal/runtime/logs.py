"""Structured logs of the supervisor and the guardian: one event per line on stderr.

JSON lines when stderr is not a terminal (journald, containers and log shippers read them
as they are), readable text on a terminal; ``--log-format`` forces either. Every event
has a stable name (``pool.running``, ``worker.exited``...) and carries only safe fields:
seed 000's list, plus a few that exist only in logs (a documented deviation): ``slot``, a
bounded slot index, and ``exit_kind``, a bounded token such as ``signal-kill``, so that an
operator can tell which slot died and how (an out-of-memory kill would otherwise be
invisible); and for ``task.failed``, ``attempt`` (a count), ``retried`` (a boolean) and
``error_type`` (an exception's class name: code, never its message); for
``control.refused``, ``cause`` (a bounded token) and ``count``; for a task source that
cannot reach its backend, ``fault`` (a :class:`~coretsia.worker_protocol.catalogue.SourceFault`
token). Anything else is
refused at the call site: redaction is an allow-list, kept here in one place. Paths,
ports, credentials, payloads and exception messages have no field to travel in.

Standard library :mod:`logging` only. The supervisor and the guardian both log through it,
so it lives in the protocol distribution's runtime plumbing, not in either of them.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Final

from coretsia.worker_protocol.vocabulary import SAFE_FIELDS as SEED_SAFE_FIELDS

LOGGER_NAME: Final = "coretsia"

SAFE_FIELDS: Final = SEED_SAFE_FIELDS | {
    "slot",
    "exit_kind",
    "attempt",
    "retried",
    "error_type",
    "cause",
    "count",
    "fault",
    "mid_frame",
}
"""Seed 000's safe fields, plus the log-only ones (see the module docstring)."""

Field = str | int | bool


class JsonFormatter(logging.Formatter):
    """``{"event": ..., "level": ..., "ts": ..., <safe fields>}``, sorted, one line."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Field] = {
            "event": record.getMessage(),
            "level": record.levelname.lower(),
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
        }
        body.update(getattr(record, "fields", {}))
        return json.dumps(body, sort_keys=True, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """``event key=value ...`` for a human at a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", {})
        rest = " ".join(f"{k}={v}" for k, v in sorted(fields.items()))
        return f"coretsia: {record.getMessage()} {rest}".rstrip()


def wants_json(log_format: str = "auto") -> bool:
    """Whether ``log_format`` means JSON lines here: ``auto`` is JSON unless stderr is a
    terminal."""
    return log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())


def configure(log_format: str = "auto") -> logging.Logger:
    """Set up the process's one handler (see :func:`wants_json`)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if wants_json(log_format) else TextFormatter())
    logger = logging.getLogger(LOGGER_NAME)
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


def event(name: str, level: int = logging.INFO, **fields: Field) -> None:
    """Log one event with safe fields only (anything else is a programming error)."""
    unsafe = set(fields) - SAFE_FIELDS
    if unsafe:
        msg = "unsafe log field"
        raise ValueError(msg)
    logging.getLogger(LOGGER_NAME).log(level, name, extra={"fields": fields})
