"""The fork-server channel: guardian and its generation's fork server. Internal; sans-IO.

With ``[worker] spawn = "forkserver"`` the guardian starts one fork server per
generation and asks it for each worker over a ``SOCK_SEQPACKET`` socket pair, so a
message is one datagram and never needs a framer:

- guardian to fork server: a **request**, the worker's argv (what the ``exec`` mode would
  execute), each argument followed by a NUL byte, with exactly :data:`REQUEST_FDS`
  descriptors as ``SCM_RIGHTS`` (the worker channel, the stop pipe's read end, the
  generation fence, in the order the worker gets them at 3, 4 and 5);
- fork server to guardian: a **reply**, the worker's pid in decimal, or ``-`` when no
  worker was started.

One request at a time: the guardian waits for the reply before it sends the next one.
Both ends are standard library only: the fork server imports this module before it
forks, and every worker inherits it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

REQUEST_FDS: Final = 3
"""Descriptors on every request: worker channel, stop pipe, generation fence."""

MAX_MESSAGE: Final = 65536
"""The largest request (an argv is a few hundred bytes) or reply."""

_NO_WORKER: Final = b"-"
_MAX_PID_CHARS: Final = 10


def encode_request(argv: tuple[str, ...]) -> bytes:
    """One request; ValueError for an argv that cannot travel (empty, NUL, too long)."""
    if not argv or any("\0" in arg for arg in argv):
        raise ValueError("argv")
    data = b"".join(arg.encode() + b"\0" for arg in argv)
    if len(data) > MAX_MESSAGE:
        raise ValueError("argv")
    return data


def decode_request(data: bytes) -> tuple[str, ...] | None:
    """The argv of a request, or None if it is not one (empty, unterminated, not UTF-8)."""
    if not data.endswith(b"\0"):
        return None
    try:
        return tuple(arg.decode() for arg in data[:-1].split(b"\0"))
    except UnicodeDecodeError:
        return None


def encode_reply(pid: int | None) -> bytes:
    """The reply: the worker's pid, or that none was started."""
    return _NO_WORKER if pid is None else str(pid).encode()


def decode_reply(data: bytes) -> int | None:
    """The worker's pid, or None (no worker, or not a reply: an empty read is the end)."""
    if not (0 < len(data) <= _MAX_PID_CHARS) or not data.isdigit() or data.startswith(b"0"):
        return None
    return int(data)
