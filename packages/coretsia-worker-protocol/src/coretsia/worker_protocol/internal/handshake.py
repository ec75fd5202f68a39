"""The version rule every internal handshake applies.

The three daemons are separate distributions pinned to each other exactly, but an
operator can still end up with mixed versions (a partial upgrade, ``--no-deps``). Internal
frames have no compatibility promise across versions, so each side refuses any peer whose
package version differs from its own, before any other frame is exchanged.
"""

from __future__ import annotations

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.exceptions import WorkerStartFailedError


def check_peer_version(mine: str, peer: str) -> None:
    """Raise ``worker-peer-version-mismatch`` unless both versions are the same."""
    if mine != peer:
        raise WorkerStartFailedError(Reason.PEER_VERSION_MISMATCH)
