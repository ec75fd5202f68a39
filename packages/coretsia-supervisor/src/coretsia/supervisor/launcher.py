"""``coretsia-worker``: the launcher every worker process runs. Internal.

The guardian (or the proc host) starts one launcher per slot, with the project root as
its working directory. The launcher boots from the current immutable generation and
nothing else (seed 000's "artifact-only boot"). A task slot (below the generation's
``workers``) resolves the task source, reports readiness, and runs the sequential worker
loop until a cooperative stop, ``max_requests`` or a terminal failure; a slot past them
runs a process entry (seed 003) through
:mod:`coretsia.supervisor.process.worker.entry`, whose exit statuses differ (it exits 1
without a frame when the entry raised: the supervisor replaces it). Every spawn is a
fresh interpreter, recycled and replaced ones included.

Interpreter start-up dominates pool start and recycle, so this module imports at load
time only :mod:`os`, :mod:`sys`, the small :mod:`coretsia.supervisor.worker_loop` (its
exit statuses; it brings :mod:`select` and :mod:`coretsia.supervisor.telemetry`) and
the protocol's ``parent_watch``; everything else (``ctypes``, ``_socket``, the protocol
frames, :mod:`coretsia.supervisor.generation`) is imported inside the functions that
need it, after the parent-death watch is armed. It never
imports trio, attrs, cattrs or psutil (a test checks this with ``-X importtime``). With
``telemetry = "otel"`` in the generation, OpenTelemetry is imported once ``ready`` was
sent (see :mod:`coretsia.supervisor.otel`), so readiness never waits for it.

The contract with the spawner:

argv, each exactly once, in any order::

    --coretsia-worker-artifact-root=<root-relative path>   (normally var/generations)
    --coretsia-worker-slot=<n>                             (0 <= n < workers)
    --coretsia-worker-channel-fd=<fd>                      (connected AF_UNIX stream socket)
    --coretsia-worker-stop-fd=<fd>                         (read end of the stop pipe)

Anything else is refused: an unknown or repeated argument, a non-canonical integer, a
descriptor below 3 or the same descriptor twice, the per-file arguments the seed forbids
(``--coretsia-worker-module-manifest``, ``--coretsia-worker-config``,
``--coretsia-worker-container``, with or without a value), an artifact root that is not
a safe relative path or does not resolve (symlinks included) strictly inside the working
directory.

environment: ``CORETSIA_WORKER_PARENT_PID=<pid of the spawning process>``. On Linux the
launcher first arms ``PR_SET_PDEATHSIG`` (SIGKILL), then checks that its parent is still
that pid (the parent may have died before the watch was armed), then removes the variable
so that application code never sees it. Elsewhere it only checks and removes.

descriptors: the launcher writes worker-channel frames (newline-delimited JSON, see
:mod:`coretsia.worker_protocol.worker_channel`) on the channel socket: ``ready`` (token
``null``: the inherited descriptor proves who speaks) once ``assert_ready`` passed;
``failed`` with a reason token before every exit with status 1 (except the parent-death
case, when nobody is listening); ``retiring`` before a ``max_requests`` exit. The stop
descriptor becomes readable (EOF) when a cooperative stop is requested; the launcher and
the task source wait on it with ``poll``/``select``, never by sleeping in a loop. Both
descriptors are made non-inheritable, so processes the application spawns do not get them.

Exit statuses:

====  ==============================================================================
0     clean: a cooperative stop, or ``retiring`` after ``max_requests``
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
leaves like a multiprocessing child (:func:`_leave`): non-daemon threads are joined and
atexit handlers run (so a thread the application left running delays it; the guardian's
SIGTERM and SIGKILL phases still bound it), stdout and stderr are flushed, and the
interpreter's final collections are skipped. Other exits are ordinary interpreter exits.

The launcher itself writes nothing to stdout or stderr (seed 000: the supervisor maps the
exit; raw messages may carry configuration or payloads). With ``debug = true`` in the
spec it writes the traceback behind a failure to stderr: unsafe, for development only.
"""

from __future__ import annotations

import os
import sys

from coretsia.supervisor.worker_loop import EXIT_CONTRACT, EXIT_FAILURE
from coretsia.supervisor.worker_loop import WorkerExit as _Exit
from coretsia.worker_protocol.parent_watch import arm_parent_death, is_decimal, parent_matches

# Not ``from typing import TYPE_CHECKING``: importing typing costs milliseconds on every
# worker boot, and type checkers honour a module-level ``TYPE_CHECKING`` all the same.
TYPE_CHECKING = False

if TYPE_CHECKING:
    import _socket
    from collections.abc import Mapping

    from coretsia.supervisor.stop_signal import StopSignal
    from coretsia.supervisor.telemetry import Telemetry
    from coretsia.worker_protocol.catalogue import Reason
    from coretsia.worker_protocol.task_source import TaskSource
    from coretsia.worker_protocol.worker_channel import WorkerFrame

ARG_PREFIX = "--coretsia-worker-"
ARGS = ("artifact-root", "slot", "channel-fd", "stop-fd")
FORBIDDEN_ARGS = ("module-manifest", "config", "container")
"""Seed 000: a child boots from the whole generation, never from individual files."""


def main() -> None:
    """Run one worker; exits with 0, 1 or 2 (see the module docstring)."""
    armed = arm_parent_death()  # first: the parent may die at any moment from now on
    # ``python -c``, ``-m`` or a console script put the working directory (or a script's
    # directory) first on sys.path. The application's import path is app_path, whatever
    # way the spawner started us, so drop that entry unless -P/-I kept it from being added.
    if not (getattr(sys.flags, "safe_path", False) or sys.flags.isolated) and sys.path:
        del sys.path[0]
    _check_parent()
    code = _run(sys.argv[1:], armed=armed)
    if code == 0:
        _leave()
    raise SystemExit(code)


def _leave() -> None:
    """A clean exit the way a multiprocessing child leaves: no final collections.

    A stop of N workers is N interpreter shutdowns sharing the machine's cores, and most
    of each one is finalising modules and objects nobody will look at again. What an
    application may rely on still happens: its non-daemon threads are joined, its
    ``atexit`` handlers run, stdout and stderr are flushed. Other buffered files it left
    open are not finalised: close them (as with ``multiprocessing``).
    """
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # what the interpreter's exit would do first
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # closed or broken: nothing more can be said on it
    os._exit(0)


# --- parent watch ---------------------------------------------------------------------


def _check_parent() -> None:
    """Exit 1 if the spawner already died (before the watch was armed), 2 if unnamed."""
    matches = parent_matches()
    if matches is None:
        raise SystemExit(EXIT_CONTRACT)
    if not matches:
        raise SystemExit(EXIT_FAILURE)


# --- contract checks ------------------------------------------------------------------


def _parse(argv: list[str]) -> tuple[str, int, int, int]:
    """Return (artifact root, slot, channel fd, stop fd) or raise ``_Exit(2)``."""
    values: dict[str, str] = {}
    for arg in argv:
        name, sep, value = arg.partition("=")
        key = name[len(ARG_PREFIX) :] if name.startswith(ARG_PREFIX) else ""
        if key in FORBIDDEN_ARGS or key not in ARGS or not sep or key in values:
            raise _Exit(EXIT_CONTRACT)
        values[key] = value
    if len(values) != len(ARGS):
        raise _Exit(EXIT_CONTRACT)
    numbers = [values["slot"], values["channel-fd"], values["stop-fd"]]
    if not all(is_decimal(number) for number in numbers):
        raise _Exit(EXIT_CONTRACT)
    slot, channel_fd, stop_fd = (int(number) for number in numbers)
    if channel_fd < 3 or stop_fd < 3 or channel_fd == stop_fd:
        raise _Exit(EXIT_CONTRACT)
    return values["artifact-root"], slot, channel_fd, stop_fd


def _project_root(artifact_root: str) -> str:
    """The working directory (resolved), once the artifact root is proven to lie inside it."""
    from coretsia.worker_protocol.paths import is_safe_relative_path

    if not is_safe_relative_path(artifact_root):
        raise _Exit(EXIT_CONTRACT)
    root = os.path.realpath(os.getcwd())
    target = os.path.realpath(os.path.join(root, artifact_root))
    inside = os.path.normcase(root).rstrip(os.sep) + os.sep
    if not os.path.normcase(target).startswith(inside):
        raise _Exit(EXIT_CONTRACT)
    return root


def _open_channel(fd: int) -> _socket.socket:
    """Adopt the inherited channel; anything but a stream UNIX socket is ``_Exit(2)``.

    The C-level ``_socket`` type, not :mod:`socket`: a worker needs no more than
    ``sendall`` and ``recv``, and :mod:`socket` with :mod:`selectors` is about 0.5 MiB
    of every worker's memory.
    """
    import _socket

    try:
        channel = _socket.socket(fileno=fd)  # family and type read from the descriptor
    except OSError:
        raise _Exit(EXIT_CONTRACT) from None
    family = getattr(_socket, "AF_UNIX", None)
    if channel.family != family or channel.type != _socket.SOCK_STREAM:
        channel.close()
        raise _Exit(EXIT_CONTRACT)
    channel.settimeout(None)  # blocking: frames are tiny and the peer reads them
    os.set_inheritable(fd, False)  # noqa: FBT003 - positional-only
    return channel


def _adopt_stop_fd(fd: int) -> None:
    """Check the stop descriptor is open and keep it from the application's children."""
    try:
        os.fstat(fd)
        os.set_inheritable(fd, False)  # noqa: FBT003 - positional-only
    except OSError:
        raise _Exit(EXIT_CONTRACT) from None


# --- the worker -----------------------------------------------------------------------


class _Reporter:
    """Sends frames on the channel, never failing: a closed channel means nobody listens."""

    def __init__(self, channel: _socket.socket) -> None:
        import _socket

        self.channel = channel
        self.flags: int = getattr(_socket, "MSG_NOSIGNAL", 0)
        self.ready = False
        self.debug = False

    def send(self, frame: WorkerFrame) -> None:
        from coretsia.worker_protocol.worker_channel import encode_worker_frame

        try:
            self.channel.sendall(encode_worker_frame(frame), self.flags)
        except OSError:
            pass  # the supervisor is gone; the exit status still tells the guardian

    def fail(self, reason: Reason, error: BaseException | None) -> None:
        from coretsia.worker_protocol.worker_channel import Failed

        self._show(error)
        self.send(Failed(reason))

    def task_failed(self, task: object, error: Exception) -> None:
        """Tell the supervisor what an operator may see of a failed task (safe fields).

        ``attempt`` and ``retried`` are optional attributes of a source's task (the SQLite
        source has both); anything else than an int of at least 1 or a bool is not sent.
        """
        from coretsia.worker_protocol.worker_channel import (
            MAX_ATTEMPT,
            TaskFailed,
            error_type_name,
        )

        self._show(error)
        attempt = getattr(task, "attempt", None)
        retried = getattr(task, "retried", None)
        self.send(
            TaskFailed(
                error_type_name(type(error)),
                attempt if type(attempt) is int and 1 <= attempt <= MAX_ATTEMPT else None,
                retried if type(retried) is bool else None,
            )
        )

    def _show(self, error: BaseException | None) -> None:
        if self.debug and error is not None:
            import traceback

            traceback.print_exception(error)  # debug only: may show payloads and config
            sys.stderr.flush()


class _Context:
    """The :class:`~coretsia.worker_protocol.task_source.TaskSourceContext` a source gets.

    ``stopping`` and ``wait_for_stop`` look at the stop descriptor through a
    :class:`~coretsia.supervisor.stop_signal.StopSignal`, which never reads it.
    """

    __slots__ = ("_generation", "_options", "_slot", "_stop", "_task_type")

    def __init__(
        self,
        task_type: str,
        slot: int,
        stop: StopSignal,
        generation: str,
        options: dict[str, object],
    ) -> None:
        import types

        self._task_type = task_type
        self._slot = slot
        self._generation = generation
        self._options = types.MappingProxyType(dict(options))
        self._stop = stop

    @property
    def task_type(self) -> str:
        return self._task_type

    @property
    def slot(self) -> int:
        return self._slot

    @property
    def generation(self) -> str:
        return self._generation

    @property
    def options(self) -> Mapping[str, object]:
        return self._options

    @property
    def stopping(self) -> bool:
        return self._stop.stopping

    def stop_fileno(self) -> int:
        return self._stop.fileno()

    def wait_for_stop(self, timeout: float | None) -> bool:
        return self._stop.wait(timeout)


def _run(argv: list[str], *, armed: bool) -> int:
    """Check the contract, then boot and serve; return the exit status."""
    try:
        artifact_root, slot, channel_fd, stop_fd = _parse(argv)
        root = _project_root(artifact_root)
        channel = _open_channel(channel_fd)
    except _Exit as refused:
        return refused.code
    reporter = _Reporter(channel)
    try:
        _adopt_stop_fd(stop_fd)
        return _serve(reporter, root, artifact_root, slot, stop_fd, armed=armed)
    except _Exit as leaving:
        if leaving.reason is not None:
            reporter.fail(leaving.reason, leaving.__cause__)
        return leaving.code
    except BaseException as error:  # noqa: BLE001 - whatever escapes, the worker reports why
        from coretsia.worker_protocol.catalogue import Reason

        reason = Reason.LIFECYCLE_FAILED if reporter.ready else Reason.CHILD_START_FAILED
        reporter.fail(reason, error)
        return EXIT_FAILURE
    finally:
        channel.close()


def _serve(
    reporter: _Reporter, root: str, artifact_root: str, slot: int, stop_fd: int, *, armed: bool
) -> int:
    """Boot from the generation; run a task worker or, past the task slots, an entry."""
    from coretsia.supervisor.generation import GenerationError, load_current_generation
    from coretsia.supervisor.stop_signal import StopSignal
    from coretsia.worker_protocol.catalogue import Reason

    if not armed:  # no parent-death watch: this worker could outlive its generation
        raise _Exit(EXIT_FAILURE, Reason.CHILD_START_FAILED)
    from coretsia.supervisor.worker_loop import mark_managed

    mark_managed()  # a worker, of either kind, never starts a pool of its own
    try:
        generation, spec = load_current_generation(root, artifact_root)
    except GenerationError as error:
        raise _Exit(EXIT_FAILURE, Reason.CHILD_START_FAILED) from error
    reporter.debug = spec.get("debug") is True
    workers = _count(spec, "workers", 0)
    if slot < workers:
        _extend_path(root, spec.get("app_path"))
        stop = StopSignal.any_of(stop_fd, reporter.channel.fileno())
        return _serve_tasks(reporter, spec, slot, stop, generation)
    stop = StopSignal(stop_fd)
    processes = spec.get("processes")
    if processes is None:
        raise _Exit(EXIT_CONTRACT)  # no entries: the slot is past every task slot
    from coretsia.supervisor.process.worker.entry import EntryBoot

    boot = EntryBoot(processes, slot - workers)  # a slot past every entry is a contract error
    _extend_path(root, spec.get("app_path"))
    return boot.serve(reporter, spec, stop, generation)


def _serve_tasks(
    reporter: _Reporter, spec: dict[str, object], slot: int, stop: StopSignal, generation: str
) -> int:
    """Resolve the task source, report ready, run the sequential loop."""
    from coretsia.supervisor.worker_loop import Retirement, resolve_hooks, work
    from coretsia.worker_protocol.catalogue import Reason
    from coretsia.worker_protocol.worker_channel import Ready, Retiring

    max_requests = _count(spec, "max_requests", 1)
    task_type = spec.get("task_type")
    if task_type not in ("queue", "http"):
        raise _Exit(EXIT_FAILURE, Reason.CHILD_START_FAILED)
    options = spec.get("source_options", {})
    if not isinstance(options, dict):
        raise _Exit(EXIT_FAILURE, Reason.CHILD_START_FAILED)
    context = _Context(str(task_type), slot, stop, generation, options)
    hooks = resolve_hooks(spec)
    source = _resolve_source(spec.get("task_source"), context)
    reporter.send(Ready())
    reporter.ready = True
    return work(
        source,
        context,
        max_requests,
        hooks,
        Retirement(reporter.channel, stop.listen),
        lambda: reporter.send(Retiring()),
        _telemetry(spec.get("telemetry")),
        reporter.task_failed,
    )


def _telemetry(mode: object) -> Telemetry:
    """The worker's telemetry: OpenTelemetry for ``otel``, imported only now, after ready."""
    from coretsia.supervisor.telemetry import NO_TELEMETRY

    if mode != "otel":
        return NO_TELEMETRY
    from coretsia.supervisor.otel import opentelemetry_telemetry

    return opentelemetry_telemetry("coretsia.worker") or NO_TELEMETRY


def _count(spec: dict[str, object], key: str, low: int) -> int:
    value = spec.get(key)
    if type(value) is not int or value < low:
        from coretsia.worker_protocol.catalogue import Reason

        raise _Exit(EXIT_FAILURE, Reason.CHILD_START_FAILED)
    return value


def _extend_path(root: str, app_path: object) -> None:
    """Put the application's directories first on ``sys.path``, in their order."""
    from coretsia.worker_protocol.paths import is_safe_relative_path

    if not isinstance(app_path, list) or not all(
        isinstance(entry, str) and (entry == "." or is_safe_relative_path(entry))
        for entry in app_path
    ):
        from coretsia.worker_protocol.catalogue import Reason

        raise _Exit(EXIT_FAILURE, Reason.CHILD_START_FAILED)
    sys.path[0:0] = [root if entry == "." else os.path.join(root, entry) for entry in app_path]


def _resolve_source(target: object, context: _Context) -> TaskSource:
    """Import the frozen ``module:attr``, build the source, check it is ready to serve."""
    from coretsia.worker_protocol.catalogue import Reason

    if not isinstance(target, str) or not all(target.partition(":")[::2]):
        raise _Exit(EXIT_FAILURE, Reason.TASK_SOURCE_UNRESOLVABLE)  # no module, or no attr
    from coretsia.worker_protocol.internal.runtime.imports import import_target

    try:
        factory = import_target(target)
    except Exception as error:
        raise _Exit(EXIT_FAILURE, Reason.TASK_SOURCE_UNRESOLVABLE) from error
    if not callable(factory):
        raise _Exit(EXIT_FAILURE, Reason.TASK_SOURCE_UNRESOLVABLE)
    declared = getattr(factory, "task_type", context.task_type)
    if declared != context.task_type:
        # The application's own factory is imported here first; one that declares
        # another task type is refused like one that is not a source at all.
        raise _Exit(EXIT_FAILURE, Reason.TASK_SOURCE_INVALID)
    try:
        source = factory(context)
    except Exception as error:
        raise _Exit(EXIT_FAILURE, Reason.TASK_SOURCE_UNRESOLVABLE) from error
    try:
        valid = callable(getattr(source, "assert_ready", None)) and callable(
            getattr(source, "receive", None)
        )
    except Exception as error:
        raise _Exit(EXIT_FAILURE, Reason.TASK_SOURCE_INVALID) from error
    if not valid:
        raise _Exit(EXIT_FAILURE, Reason.TASK_SOURCE_INVALID)
    try:
        source.assert_ready()
    except Exception as error:
        raise _Exit(EXIT_FAILURE, Reason.TASK_SOURCE_NOT_READY) from error
    return source  # type: ignore[no-any-return]


if __name__ == "__main__":
    main()
