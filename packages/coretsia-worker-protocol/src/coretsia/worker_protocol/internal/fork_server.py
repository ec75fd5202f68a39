"""The fork-server channel: guardian and its generation's fork server. Internal; sans-IO.

With ``[worker] spawn = "forkserver"`` the guardian starts one fork server per
generation and asks it for each worker over a ``SOCK_SEQPACKET`` socket pair, so a
message is one datagram and never needs a framer:

- guardian to fork server: a **request**, the worker's argv (what the ``exec`` mode would
  execute), each argument followed by a NUL byte, with exactly :data:`REQUEST_FDS`
  descriptors as ``SCM_RIGHTS`` (the worker channel, the stop pipe's read end, the
  generation fence, in the order the worker gets them at 3, 4 and 5);
- the new worker to the guardian, on the same channel (it inherited the server's end):
  :data:`STARTED`, once it leads its own session; the guardian reads the worker's pid
  from the datagram's ``SCM_CREDENTIALS`` (it sets ``SO_PASSCRED``), which the kernel
  fills in and gives as the *receiver's* PID namespace sees it: the guardian's own pid
  for the worker even when the server and the worker live in a namespace of their own;
- fork server to guardian: :data:`DONE`, once the worker told (or died before it could,
  or none was started): the end of the request's answer.

The server answers one request at a time, in the order they came: it reads the next
one only once the last one's worker told (or none was started), so the answers never
interleave and a ``STARTED`` always belongs to the oldest request unanswered. The
guardian need not wait for an answer before it sends the next request: it sends them
ahead (a bounded number), so the server forks on without a round trip per worker.
Both ends are standard library only: the fork server imports this module before it
forks, and every worker inherits it.
"""

from __future__ import annotations

import socket
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

REQUEST_FDS: Final = 3
"""Descriptors on every request: worker channel, stop pipe, generation fence."""

MAX_MESSAGE: Final = 65536
"""The largest request (an argv is a few hundred bytes)."""

STARTED: Final = b"+"
"""From the worker: its pid is the sender's, in the datagram's credentials."""

DONE: Final = b"-"
"""From the server: the request is answered (after its worker's ``STARTED``, if any)."""

_UCRED: Final = struct.Struct("iII")
"""``struct ucred``: pid, uid, gid."""

CREDENTIALS_SPACE: Final = socket.CMSG_SPACE(_UCRED.size)
"""Room for the ancillary data of a datagram received with ``SO_PASSCRED``."""


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


def sender_pid(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The sender's pid from a datagram's ``SCM_CREDENTIALS``; None without them (or 0: a
    sender the receiver's PID namespace cannot see)."""
    for level, kind, data in ancillary:
        credentials = level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS
        if credentials and len(data) >= _UCRED.size:
            pid: int = _UCRED.unpack_from(data)[0]
            return pid if pid > 0 else None
    return None
