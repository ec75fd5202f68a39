"""``coretsia-worker``: the launcher every worker process runs. Internal.

The guardian (or the proc host) starts one launcher per slot, with the project root as
its working directory. The launcher boots from the current immutable generation and
nothing else (seed 000's "artifact-only boot"). A task slot (below the generation's
``workers``) resolves the task source, reports readiness, and runs the sequential worker
loop until a cooperative stop, ``max_requests`` or a terminal failure; a slot past them
runs a process entry (seed 003) through :mod:`.entry_worker`, whose exit statuses differ
(it exits 1 without a frame when the entry raised: the supervisor replaces it). Every
spawn is a fresh interpreter, recycled and replaced ones included.

This module is the boot sequence; its steps live beside it in the worker side (the
contract checks, the channel, the task source and the loop; for an entry,
:mod:`.entry_worker`, :mod:`.entry_pool` and :mod:`.entry_ipc`). It imports at load time
only :mod:`os`, :mod:`sys`, the tiny :mod:`.exits` (the exit statuses) and the protocol's
``parent_watch``; everything else is imported inside the functions that need it, once
:func:`main` armed the parent-death watch and dropped ``sys.path[0]`` (the project root,
under ``python -c``), so that no module of the boot is looked up in the application's
directory. It never imports trio, attrs, cattrs or
psutil (a test checks this with ``-X importtime``). With ``telemetry = "otel"`` in the
generation, OpenTelemetry is imported once ``ready`` was sent (see
:mod:`coretsia.supervisor.shared.otel`), so readiness never waits for it.

The contract with the spawner:

argv, each exactly once, in any order::

    --coretsia-worker-artifact-root=<root-relative path>   (normally var/generations)
    --coretsia-worker-generation=<id>:<fingerprint>        (the pin publish returned)
    --coretsia-worker-slot=<n>                             (0 <= n < workers)
    --coretsia-worker-channel-fd=<fd>                      (connected AF_UNIX stream socket)
    --coretsia-worker-stop-fd=<fd>                         (read end of the stop pipe)

Anything else is refused: an unknown or repeated argument, a non-canonical integer, a
descriptor below 3 or the same descriptor twice, the per-file arguments the seed forbids
(``--coretsia-worker-module-manifest``, ``--coretsia-worker-config``,
``--coretsia-worker-container``, with or without a value), an artifact root that is not
a safe relative path or does not resolve (symlinks included) strictly inside the working
directory, a generation pin of another shape. The worker boots only the generation its
pin names (``current`` must name it, and its file record the pinned fingerprint), and
only from directories and files owned by its own user or root and writable by no one
else (:mod:`coretsia.supervisor.generation.published`); anything else is a ``failed`` frame with
``worker-generation-untrusted``: a generation the supervisor of this run did not write.

environment: ``CORETSIA_WORKER_PARENT_PID=<pid of the spawning process>``. On Linux the
launcher first arms ``PR_SET_PDEATHSIG`` (SIGKILL), then checks that its parent is still
that pid (the parent may have died before the watch was armed), then removes the variable
so that application code never sees it. Elsewhere it only checks and removes.

descriptors: the launcher writes worker-channel frames (newline-delimited JSON, see
:mod:`coretsia.worker_protocol.worker_channel`, in the order
:mod:`coretsia.worker_protocol.worker_conversation` allows) on the channel socket:
``ready`` (token ``null``: the inherited descriptor proves who speaks) once
``assert_ready`` passed; ``failed`` with a reason token before every exit with status 1
(except the parent-death case, when nobody is listening); ``retiring`` before a
``max_requests`` or ``max_memory_mb`` exit; with ``heartbeat_timeout_ms`` in the
generation, ``heartbeat`` from ``ready`` on, every third of it, from a thread of its own
(:mod:`coretsia.supervisor.worker_side.heartbeat`). The stop descriptor becomes readable
(EOF) when a cooperative stop is requested; the launcher and the task source wait on it
with ``poll``/``select``, never by sleeping in a loop. Both descriptors are made
non-inheritable, so processes the application spawns do not get them.

Exit statuses:

====  ==============================================================================
0     clean: a cooperative stop, or ``retiring`` after ``max_requests`` (or memory)
1     failure: a ``failed`` frame with the reason was sent first (boot failures use the
      ``CORETSIA_WORKER_START_FAILED`` tokens, failures after ``ready`` the
      ``CORETSIA_WORKER_LIFECYCLE_FAILED`` ones); also the parent died before the
      watch was armed (no frame)
2     contract violation: bad argv, descriptors or environment, artifact root outside
      the root, slot past every task worker and entry; no frame
====  ==============================================================================

A task raising ``Exception`` is settled with ``fail``; anything else escaping application
code (``SystemExit``, ``KeyboardInterrupt``) ends the worker with status 1 and
``worker-child-start-failed`` before readiness or ``worker-lifecycle-failed`` after it.
A signal ends it with the signal's status, as for any process. A clean exit (status 0)
goes through :func:`~coretsia.supervisor.worker_side.exits.leave`: non-daemon threads are joined and
atexit handlers run (so a thread the application left running delays it; the guardian's
SIGTERM and SIGKILL phases still bound it), stdout and stderr are flushed, and the
interpreter's final teardown is skipped. Other exits are ordinary interpreter exits
(a fork server's worker skips the teardown on every exit: its heap is the server's).

The launcher itself writes nothing to stdout or stderr (seed 000: the supervisor maps the
exit; raw messages may carry configuration or payloads). With ``debug = true`` in the
spec it writes the traceback behind a failure to stderr: unsafe, for development only.
"""

from __future__ import annotations

import os
import sys

from coretsia.supervisor.worker_side.exits import (
    EXIT_CONTRACT,
    EXIT_FAILURE,
    WorkerExit,
    failure,
    leave,
    mark_managed,
)
from coretsia.worker_protocol.parent_watch import arm_parent_death, parent_matches

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules

if TYPE_CHECKING:
    from typing import NoReturn

    from coretsia.supervisor.worker_side.channel import Reporter


def main() -> NoReturn:
    """Run one worker; exits with 0, 1 or 2 (see the module docstring), always through
    :class:`SystemExit`."""
    armed = arm_parent_death()  # first: the parent may die at any moment from now on
    # ``python -c``, ``-m`` or a console script put the working directory (or a script's
    # directory) first on sys.path. The application's import path is app_path, whatever
    # way the spawner started us, so drop that entry unless -P/-I kept it from being added.
    if not (getattr(sys.flags, "safe_path", False) or sys.flags.isolated) and sys.path:
        del sys.path[0]
    _check_parent()
    code = _run(sys.argv[1:], armed=armed)
    if code == 0:
        leave(0)
    raise SystemExit(code)


def _check_parent() -> None:
    """Exit 1 if the spawner already died (before the watch was armed), 2 if unnamed."""
    matches = parent_matches()
    if matches is None:
        raise SystemExit(EXIT_CONTRACT)
    if not matches:
        raise SystemExit(EXIT_FAILURE)


def _run(argv: list[str], *, armed: bool) -> int:
    """Check the contract, then boot and serve; return the exit status."""
    # deferred: until main() drops sys.path[0]
    from coretsia.supervisor.worker_side.channel import Reporter, open_channel
    from coretsia.supervisor.worker_side.contract import adopt_stop_fd, parse, project_root

    try:
        artifact_root, pin, slot, channel_fd, stop_fd = parse(argv)
        root = project_root(artifact_root)
        channel = open_channel(channel_fd)
    except WorkerExit as refused:
        return refused.code
    reporter = Reporter(channel)
    try:
        adopt_stop_fd(stop_fd)
        return _serve(reporter, root, (artifact_root, pin), slot, stop_fd, armed=armed)
    except WorkerExit as leaving:
        if leaving.reason is not None:
            reporter.fail(leaving.reason, leaving.__cause__)
        return leaving.code
    except BaseException as error:  # noqa: BLE001 - whatever escapes, the worker reports why
        # deferred: until main() drops sys.path[0]
        from coretsia.worker_protocol.catalogue import Reason

        reason = Reason.LIFECYCLE_FAILED if reporter.ready else Reason.CHILD_START_FAILED
        reporter.fail(reason, error)
        return EXIT_FAILURE
    finally:
        reporter.close()


def _serve(
    reporter: Reporter,
    root: str,
    generation_args: tuple[str, str],
    slot: int,
    stop_fd: int,
    *,
    armed: bool,
) -> int:
    """Boot from the generation (artifact root and pin), decoded once into its typed spec;
    run a task worker or, past the task slots, an entry."""
    # deferred: until main() drops sys.path[0]
    from coretsia.supervisor.generation.published import GenerationError, load_current_generation
    from coretsia.supervisor.worker_side.stop_signal import StopSignal
    from coretsia.worker_protocol.catalogue import Reason

    if not armed:  # no parent-death watch: this worker could outlive its generation
        raise failure(Reason.CHILD_START_FAILED)
    mark_managed()  # a worker, of either kind, never starts a pool of its own
    try:
        generation, spec = load_current_generation(root, *generation_args)
    except GenerationError as error:
        # The supervisor published and pinned it: anything else is someone else's.
        raise failure(Reason.GENERATION_UNTRUSTED) from error
    reporter.debug = spec.debug
    reporter.heartbeat_timeout_ms = spec.heartbeat_timeout_ms
    if slot < spec.workers:
        _extend_path(root, spec.app_path)
        # deferred: until main() drops sys.path[0]
        from coretsia.supervisor.worker_side.task_worker import serve_tasks

        stop = StopSignal.any_of(stop_fd, reporter.channel.fileno())
        return serve_tasks(reporter, spec, slot, stop, generation)
    stop = StopSignal(stop_fd)
    if spec.max_memory_mb:  # an entry retires past it as a task worker does: the grant stops it
        stop = StopSignal.any_of(stop_fd, reporter.channel.fileno())
    if spec.processes is None:
        raise WorkerExit(EXIT_CONTRACT)  # no entries: the slot is past every task slot
    # deferred: until main() drops sys.path[0]
    from coretsia.supervisor.worker_side.entry_worker import EntryBoot

    # A slot past every entry is a contract error.
    boot = EntryBoot(spec.processes, slot - spec.workers)
    _extend_path(root, spec.app_path)
    return boot.serve(reporter, spec, stop, generation)


def _extend_path(root: str, app_path: tuple[str, ...]) -> None:
    """Put the application's directories first on ``sys.path``, in their order (each one
    ``.`` or a safe relative path: the generation's codec checked them)."""
    sys.path[0:0] = [root if entry == "." else os.path.join(root, entry) for entry in app_path]


if __name__ == "__main__":
    main()
