"""The public endpoint hash: an identity for the control endpoint that reveals nothing.

Seed 000 allows the endpoint to appear publicly only as a deterministic hash. A plain hash
of a socket path or a port could be reversed by hashing every likely candidate (there are
only 65,535 ports), so the hash is keyed with a per-root secret of 32 random bytes that the
supervisor keeps in ``var/tmp/worker.endpoint-key`` (mode 0600) and reuses across
restarts: the same endpoint of the same root always hashes the same, and nobody without
the key can test guesses against it.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

from coretsia.worker_protocol.vocabulary import ENDPOINT_HASH_HEX_LEN, Transport

ENDPOINT_KEY_BYTES: Final = 32
"""Size of the per-root secret that keys the hash."""


def endpoint_hash(key: bytes, transport: Transport, address: str) -> str:
    """Hash ``transport`` and ``address`` (root-relative path, or ``host:port``)."""
    if len(key) != ENDPOINT_KEY_BYTES:
        msg = "the endpoint key must be 32 bytes"
        raise ValueError(msg)
    message = f"coretsia-endpoint-v1\0{transport.value}\0{address}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:ENDPOINT_HASH_HEX_LEN]
