"""Finding a pool's processes: by the root they work in, or by their command line."""

from __future__ import annotations

from pathlib import Path

import psutil


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def processes_in(root: Path) -> list[psutil.Process]:
    """Every live process whose working directory is ``root`` (a pool's whole tree)."""
    found = []
    for proc in psutil.process_iter(["cwd", "status"]):
        try:
            if proc.info["cwd"] == str(root) and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def descendants_named(top: psutil.Process, needle: str) -> list[psutil.Process]:
    """The descendants of ``top`` whose command line contains ``needle``."""
    found = []
    for proc in top.children(recursive=True):
        try:
            if needle in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found
