"""The fork-server channel: guardian and its generation's fork server. Internal; sans-IO.

With ``[worker] spawn = "forkserver"`` the guardian starts one fork server per
generation and asks it for each worker over a ``SOCK_SEQPACKET`` socket pair, so a
message is one datagram and never needs a framer:

- guardian to fork server: a **request**: its tag (the guardian's name for it, a decimal
  number), then the worker's argv (what the ``exec`` mode would execute), each followed
  by a NUL byte, with exactly :data:`REQUEST_FDS` descriptors as ``SCM_RIGHTS`` (the
  worker channel, the stop pipe's read end, the generation fence, in the order the
  worker gets them at 3, 4 and 5);
- the new worker to the guardian, on the same channel (it inherited the server's end):
  ``+`` and the tag (:func:`started`), once it leads its own session; the guardian reads
  the worker's pid from the datagram's ``SCM_CREDENTIALS`` (it sets ``SO_PASSCRED``),
  which the kernel fills in and gives as the *receiver's* PID namespace sees it: the
  guardian's own pid for the worker even when the server and the worker live in a
  namespace of their own;
- fork server to guardian: ``-`` and the tag (:func:`done`), once the worker told (or
  died before it could, or none was started): the end of the request's answer.

Every answer names its request, so none has to wait for another: the guardian sends
requests ahead (a bounded number) and the server forks each as it comes, while the
workers forked before are still on their way to telling; a round trip per worker, or a
worker slow to be scheduled, holds up nobody else. Both ends are standard library only:
the fork server imports this module before it forks, and every worker inherits it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Final

REQUEST_FDS: Final = 3
"""Descriptors on every request: worker channel, stop pipe, generation fence."""

MAX_MESSAGE: Final = 65536
"""The largest request (an argv is a few hundred bytes)."""

STARTED: Final = b"+"
"""From the worker, before its request's tag: its pid is the sender's, in the datagram's
credentials."""

DONE: Final = b"-"
"""From the server, before a request's tag: the request is answered (after its worker's
``STARTED``, if any)."""


def encode_request(tag: int, argv: tuple[str, ...]) -> bytes:
    """One request; ValueError for an argv that cannot travel (empty, NUL, too long)."""
    if not argv or any("\0" in arg for arg in argv):
        raise ValueError("argv")
    data = b"".join(arg.encode() + b"\0" for arg in (str(tag), *argv))
    if len(data) > MAX_MESSAGE:
        raise ValueError("argv")
    return data


def decode_request(data: bytes) -> tuple[bytes, tuple[str, ...]] | None:
    """The tag and the argv of a request, or None if it is not one (no argv, unterminated,
    a tag that is not a number, not UTF-8)."""
    tag, _, rest = data.partition(b"\0")
    if not tag.isdigit() or not rest.endswith(b"\0"):
        return None
    try:
        return tag, tuple(arg.decode() for arg in rest[:-1].split(b"\0"))
    except UnicodeDecodeError:
        return None


def started(tag: bytes) -> bytes:
    """The worker's datagram: it runs (its pid in the credentials)."""
    return STARTED + tag


def done(tag: bytes) -> bytes:
    """The server's datagram: the request is answered."""
    return DONE + tag


def parse_answer(data: bytes) -> tuple[bytes, bytes] | None:
    """An answer's kind (:data:`STARTED` or :data:`DONE`) and tag; None for anything else
    (the end of the channel among them)."""
    kind, tag = data[:1], data[1:]
    return (kind, tag) if kind in (STARTED, DONE) and tag.isdigit() else None
