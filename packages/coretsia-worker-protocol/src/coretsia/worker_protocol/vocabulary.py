"""The bounded vocabularies and limits shared by every frame and file of the protocol."""

from __future__ import annotations

import enum

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from typing import Final

MAX_WORKERS: Final = 1024
"""Most worker slots one pool may have (seed 003's registration limit)."""

MAX_PID: Final = 2**31 - 1
"""Largest pid a frame may carry (pid_t is a signed 32-bit integer on every platform)."""

MAX_TIMEOUT_MS: Final = 3_600_000
"""Largest budget any deadline field may carry: one hour."""

CREDENTIAL_HEX_LEN: Final = 64
"""A control credential is 256 bits, written as 64 lowercase hexadecimal characters."""

NONCE_HEX_LEN: Final = 64
"""A control handshake nonce: 256 fresh random bits, in lowercase hexadecimal."""

MAC_HEX_LEN: Final = 64
"""A control frame's MAC is an HMAC-SHA256: 32 bytes, in lowercase hexadecimal."""

TOKEN_HEX_LEN: Final = 64
"""A per-spawn readiness token has the same shape as a credential."""

ENDPOINT_HASH_HEX_LEN: Final = 32
"""The public endpoint hash: 128 bits of a keyed SHA-256, in lowercase hexadecimal."""


SAFE_FIELDS: Final = frozenset(
    {
        "status",
        "pool_status",
        "pid",
        "worker_count",
        "ready_worker_count",
        "healthy",
        "reason",
        "driver",
        "control_transport",
        "endpoint_hash",
        "containment",
        "reconnecting_worker_count",
        "operation",
        "outcome",
        "duration_ms",
        "slot_rss_kib",
        "recycles_max_requests",
        "recycles_max_memory",
    }
)
"""Seed 000's safe public fields: the only ones any public output may carry.

Plus ``containment``, the level in force (an extension: a bounded token, like ``driver``),
and ``status``'s memory and recycle counts (numbers: no index, pid or path),
and ``reconnecting_worker_count``, the ready workers whose task source is reconnecting (an
extension: a count, present while it is not zero)."""


class PoolStatus(str, enum.Enum):
    """The persisted pool status (``stopped`` is only ever a terminal control answer)."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"


class DriverRequest(str, enum.Enum):
    """The process driver asked for in the configuration."""

    AUTO = "auto"
    FORK = "fork"
    PROC = "proc"


class Driver(str, enum.Enum):
    """The process driver in use: ``fork`` is seed 000's ``pcntl``."""

    FORK = "fork"
    PROC = "proc"


class ContainmentRequest(str, enum.Enum):
    """The containment level asked for in the configuration (``auto``: the strongest)."""

    AUTO = "auto"
    NAMESPACE = "namespace"
    CGROUP = "cgroup"
    PROCESS = "process"


class Containment(str, enum.Enum):
    """The containment level in force: what keeps a generation's processes from outliving it.

    ``namespace``: a PID namespace whose init dies with the guardian (the kernel kills
    everything inside). ``cgroup``: a cgroup v2 of the generation's own, killed whole at the
    end and by the next ``start`` if left behind. ``process``: the next ``start`` finds what
    a previous generation of the root left behind by its environment mark and kills it.
    """

    NAMESPACE = "namespace"
    CGROUP = "cgroup"
    PROCESS = "process"


class TransportRequest(str, enum.Enum):
    """The control transport asked for in the configuration."""

    AUTO = "auto"
    UNIX = "unix"
    TCP = "tcp"


class Transport(str, enum.Enum):
    """The control transport in use."""

    UNIX = "unix"
    TCP = "tcp"


class ShutdownPhase(str, enum.Enum):
    """The three bounded phases of a shutdown, in order."""

    COOPERATIVE = "cooperative"
    TERMINATE = "terminate"
    KILL = "kill"


class ControlCommand(str, enum.Enum):
    """The whole control vocabulary: there is deliberately no ``start`` and nothing else."""

    STATUS = "status"
    HEALTH = "health"
    STOP = "stop"
