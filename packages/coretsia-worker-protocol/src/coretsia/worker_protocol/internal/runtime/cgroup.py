"""A cgroup v2 per generation (Linux): the ``cgroup`` containment level.

A process cannot leave its cgroup by forking, ``setsid`` or closing descriptors, so a
cgroup of the generation's own holds everything the generation ever started, and one
write to its ``cgroup.kill`` (Linux 5.14+) SIGKILLs all of it at once, race-free. The
guardian moves itself into the generation's cgroup before it spawns anything, so the
workers, the proc host and all their descendants are born inside it.

Where: under the cgroup the process already runs in (its *base*, read from
``/proc/self/cgroup`` and the cgroup2 mount in ``/proc/self/mountinfo``: the
``unified`` mount of a hybrid layout, or ``/sys/fs/cgroup`` itself), if that directory
is writable: root's, a systemd service with ``Delegate=yes``, a container's own
cgroup. Each generation's directory is named ``coretsia-<root id>-<guardian pid>``, so the
next ``start`` of the same root finds one left behind (its guardian was killed) and
kills it, and two roots never touch each other's.

Shared by the supervisor (is the level available?) and the guardian (everything else).
Standard library only.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Final

PREFIX: Final = "coretsia-"
_POLL_S: Final = 0.005


def base() -> Path | None:
    """The cgroup v2 directory this process runs in, or None (no cgroup2 mount, not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        membership = Path("/proc/self/cgroup").read_text()
        mounts = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return None
    own = next((line[3:] for line in membership.splitlines() if line.startswith("0::")), None)
    mount = next(
        (
            line.split()[4]
            for line in mounts.splitlines()
            if " - cgroup2 " in line and line.split()[3] == "/"
        ),
        None,
    )
    if own is None or mount is None or own.endswith("(deleted)"):
        return None
    path = Path(mount) / own.lstrip("/")
    return path if path.is_dir() else None


def available() -> bool:
    """A writable base where a child cgroup can be made and killed (``cgroup.kill``).

    Checked by making (and removing) one empty child: the only test that tells a
    delegated subtree from a read-only one, and a kernel with ``cgroup.kill`` from one
    without.
    """
    found = base()
    if found is None or not os.access(found / "cgroup.procs", os.W_OK):
        return False
    probe = found / f"{PREFIX}probe-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return (probe / "cgroup.kill").exists()
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


class GenerationCgroup:
    """One generation's cgroup directory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def named(cls, parent: Path, root_id: str, guardian_pid: int) -> GenerationCgroup:
        """The directory of the generation of root ``root_id`` kept by ``guardian_pid``.

        Named after the guardian, so that its supervisor, which knows that pid, can kill
        and remove it after the guardian was killed, and nothing of a later generation.
        """
        return cls(parent / f"{PREFIX}{root_id}-{guardian_pid}")

    def create(self) -> None:
        """Make the directory; OSError if refused."""
        self.path.mkdir(mode=0o755)

    @classmethod
    def left_behind(cls, parent: Path, root_id: str) -> list[GenerationCgroup]:
        """The directories of earlier generations of this root still under ``parent``."""
        try:
            names = os.listdir(parent)
        except OSError:
            return []
        return [cls(parent / name) for name in names if name.startswith(f"{PREFIX}{root_id}-")]

    def enter(self) -> None:
        """Move the calling process (every thread of it) into this cgroup."""
        _write(self.path / "cgroup.procs", "0")

    def populated(self) -> bool:
        """Whether any process is left in the cgroup (or below it)."""
        try:
            events = (self.path / "cgroup.events").read_text()
        except FileNotFoundError:
            return False
        return "populated 1" in events.splitlines()

    def kill(self, timeout_s: float) -> bool:
        """SIGKILL every process inside and wait until none is left; True if emptied.

        A process stuck in uninterruptible sleep stays (then False); zombies do not
        count, the kernel removes a process from its cgroup when it exits.
        """
        try:
            _write(self.path / "cgroup.kill", "1")
        except FileNotFoundError:
            return True
        deadline = time.monotonic() + timeout_s
        while self.populated():
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
        return True

    def remove(self) -> bool:
        """Remove the (empty) directory; True once it is gone."""
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


def leave(parent: Path) -> None:
    """Move the calling process back to ``parent`` (before killing its own cgroup)."""
    _write(parent / "cgroup.procs", "0")


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
