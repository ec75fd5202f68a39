"""The proofs of the control handshake (protocol v2): an HMAC over the whole conversation.

Both ends hold the pool's credential (the client from the 0600 locator, the supervisor in
memory) and neither ever sends it. Each proves it holds it with a MAC over everything said
on the connection so far, so a proof is good for this connection, this endpoint, this
point of the conversation and this role only::

    key     = the credential's 32 bytes (its 64 hexadecimal characters, decoded)
    message = "coretsia-control-v2" NUL role NUL transport NUL address NUL
              body_1 LF body_2 LF ... body_n LF
    mac_n   = lowercase hexadecimal of HMAC-SHA256(key, message)

``role`` is ``server`` for what the supervisor sends (the challenge, every answer) and
``client`` for the request; ``transport`` is ``unix`` or ``tcp``; ``address`` is the
locator's endpoint, the root-relative socket path or ``127.0.0.1:<port>`` (UTF-8);
``body_1`` to ``body_n`` are the canonical JSON (without the ``mac`` key) of every frame
of the connection in the order sent, both directions, up to and including the frame
sealed. The client's ``hello`` opens the transcript with its fresh nonce, the server's
``challenge`` adds its own, so:

* a proof from another connection never fits (both nonces are new each time): no replay;
* the server's proof cannot pass for the client's (another role, another frame type):
  no reflection;
* an answer removed, added, reordered or altered changes every later MAC: no
  substitution, and a cut before the terminal answer is a failure, as before.

The conversation (:mod:`~coretsia.worker_protocol.control_conversation`) decides when to
seal and when to verify; this module only keeps the transcript and computes MACs, with
the standard library's :mod:`hmac` (what it costs a ``status`` probe is measured in
``docs/performance.md``, "Plain over clever").
"""

from __future__ import annotations

import enum
import hmac
import os

from coretsia.worker_protocol.control import CONTROL_VERSION
from coretsia.worker_protocol.vocabulary import NONCE_HEX_LEN, Transport

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final


_LABEL: Final = f"coretsia-control-v{CONTROL_VERSION}\0".encode()


class Role(str, enum.Enum):
    """Who seals a frame: the end that sends it."""

    CLIENT = "client"
    SERVER = "server"


def fresh_nonce() -> str:
    """256 bits from the kernel's random source, as lowercase hexadecimal.

    :func:`os.urandom` is what :func:`secrets.token_bytes` returns; importing
    :mod:`secrets` (and :mod:`random` with it) would add to every probe what
    ``docs/performance.md`` ("Plain over clever") measures, for nothing more.
    """
    return os.urandom(NONCE_HEX_LEN // 2).hex()


class Transcript:
    """Everything said on one connection so far, and the MACs over it (module doc).

    Holds the key, never the credential's text; its size is bounded by the conversation
    (a handful of frames, each within the frame size).
    """

    __slots__ = ("_endpoint", "_frames", "_key")

    def __init__(self, credential: str, transport: Transport, address: str) -> None:
        self._key = bytes.fromhex(credential)
        self._endpoint = f"\0{transport.value}\0{address}\0".encode()
        self._frames = bytearray()

    def add(self, body: bytes) -> None:
        """Append one frame's body (canonical JSON without its ``mac``)."""
        self._frames += body + b"\n"

    def mac(self, role: Role) -> str:
        """The MAC ``role`` seals the transcript so far with."""
        message = b"".join((_LABEL, role.value.encode(), self._endpoint, self._frames))
        return hmac.digest(self._key, message, "sha256").hex()

    def verify(self, role: Role, mac: str) -> bool:
        """Whether ``mac`` is ``role``'s over the transcript so far (constant time)."""
        return hmac.compare_digest(self.mac(role).encode(), mac.encode())
