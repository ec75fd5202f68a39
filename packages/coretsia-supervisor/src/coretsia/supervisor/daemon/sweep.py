"""Killing what a killed guardian left behind: the supervisor's last line of containment.

The supervisor is a child subreaper, so every process of the generation that outlived the
guardian (workers dying of their parent-death signal, grandchildren that left their
process group) is then its descendant. So may be an embedding application's own children
(``ProcessManager`` runs the supervisor inside the application): only descendants that
carry this supervisor's :data:`~coretsia.supervisor.daemon.guardian_process.TREE_ENV` mark are
killed.
"""

from __future__ import annotations

import psutil

from coretsia.supervisor.daemon.guardian_process import TREE_ENV, TREE_MARK


def sweep_orphans(budget_s: float, known: frozenset[int]) -> None:
    """Kill and reap the marked descendants (blocking: run it in a worker thread).

    A zombie's environment cannot be read, so a dead worker or proc host (its parent-death
    signal fired before the sweep) is known by its pid, as the guardian last reported it
    (``known``), and reaped; so is a PID namespace's init, whose environment is gone while
    it waits, exiting, for the rest of its namespace to be reaped (by this sweep). psutil
    checks each process's identity before signalling, and waits for our children by
    explicit pid, never ``waitpid(-1)``.
    """
    try:
        descendants = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    left = []
    for proc in descendants:
        try:
            if proc.pid not in known and proc.environ().get(TREE_ENV) != TREE_MARK:
                continue
            proc.kill()
        except psutil.ZombieProcess:
            if proc.pid not in known:
                continue  # not known to be ours: its parent reaps it
        except psutil.Error:
            if proc.pid not in known:
                continue  # gone already, or not ours to read
        left.append(proc)
    psutil.wait_procs(left, timeout=budget_s)
