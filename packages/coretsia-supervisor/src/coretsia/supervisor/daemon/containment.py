"""Resolution of the requested containment level, once, at ``start`` (like the driver).

``auto`` is the strongest level the machine offers: a PID namespace (the kernel kills
the whole generation when its init dies; root makes one directly, any other user inside
a user namespace where the kernel allows them), else a cgroup of the generation's own (killed
whole at the end and by the next ``start``), else ``process`` (the next ``start`` finds
what was left behind by its environment mark), which is always available. An explicit
level the machine cannot give is a configuration error, never a quiet downgrade: an
operator who asked for ``namespace`` relies on what it guarantees.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from coretsia.worker_protocol.catalogue import ConfigRule
from coretsia.worker_protocol.exceptions import WorkerConfigError
from coretsia.worker_protocol.internal.guardian import ROOT_ID_HEX_LEN
from coretsia.worker_protocol.internal.runtime import cgroup, pidns, userns
from coretsia.worker_protocol.vocabulary import Containment, ContainmentRequest

_STRONGEST_FIRST = (Containment.NAMESPACE, Containment.CGROUP)


def available(level: Containment) -> bool:
    """Whether this process could give its generations ``level`` (``process``: always)."""
    if level is Containment.NAMESPACE:
        return pidns.available() or userns.available()
    if level is Containment.CGROUP:
        return cgroup.available()
    return True


def resolve_containment(requested: ContainmentRequest, *, namespace: bool = True) -> Containment:
    """The level in force; ``worker.containment`` unavailable if an explicit one is not.

    ``namespace`` false (the fork server where it cannot run in a PID namespace: no
    sibling fork there): ``auto`` starts from ``cgroup``; an explicit ``namespace`` is
    left to the spawn mode's check.
    """
    if requested is ContainmentRequest.AUTO:
        levels = _STRONGEST_FIRST if namespace else _STRONGEST_FIRST[1:]
        return next((lvl for lvl in levels if available(lvl)), Containment.PROCESS)
    level = Containment(requested.value)
    if not available(level):
        raise WorkerConfigError("worker.containment", ConfigRule.UNAVAILABLE)
    return level


def root_id(root: Path) -> str:
    """The root's identity: a hash of its real path (not a secret, and never logged).

    It marks what this root's generations leave behind (the workers' environment, the
    cgroup names), so the next ``start`` of this root kills that and nothing of another.
    """
    digest = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()
    return digest[:ROOT_ID_HEX_LEN]


def generation_cgroup(root: Path, guardian_pid: int) -> cgroup.GenerationCgroup | None:
    """Where the guardian ``guardian_pid`` made its generation's cgroup (level ``cgroup``)."""
    parent = cgroup.base()
    if parent is None:
        return None
    return cgroup.GenerationCgroup.named(parent, root_id(root), guardian_pid)
