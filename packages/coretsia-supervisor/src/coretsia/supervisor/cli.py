"""``coretsia-supervisor``: start, stop, status and health of a worker pool.

``stop``, ``status`` and ``health`` are Kubernetes exec probes as much as commands: they
import only the protocol's client (no trio, no psutil, no cattrs) and never read the
configuration; they find the supervisor through the lock and the locator. ``start``
imports the runtime only once it knows it will start.

No traceback ever reaches the user: a :class:`WorkerError` is printed as its
``CODE: reason-token``, anything else as the command's catch-all token, and the exit
status follows :class:`~coretsia.worker_protocol.exit_codes.ExitCode`.
"""

from __future__ import annotations

import os
import sys

from coretsia.supervisor.daemon.platforms import UNTESTED, require_supported_platform
from coretsia.supervisor.parser import build_parser
from coretsia.supervisor.shared import output
from coretsia.supervisor.worker_side.exits import leave  # before any atexit handler: see leave()
from coretsia.worker_protocol.catalogue import ConfigRule, Reason
from coretsia.worker_protocol.exceptions import (
    WorkerAlreadyRunningError,
    WorkerCommunicationFailedError,
    WorkerConfigError,
    WorkerError,
    WorkerNotRunningError,
    WorkerStartFailedError,
)
from coretsia.worker_protocol.exit_codes import ExitCode

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from coretsia.supervisor.daemon.guardian_process import EarlyGuardian
    from coretsia.worker_protocol.client import ControlClient

DEBUG_ENV = "CORETSIA_DEBUG"
"""Set to 1 to let an unexpected exception's traceback through (unsafe: it may leak)."""


def _root(value: str) -> str:
    root = os.path.realpath(value)
    if not os.path.isdir(root):
        raise WorkerConfigError("--root", ConfigRule.FILE_MISSING)
    return root


def _client(root: str) -> ControlClient:
    # deferred: platform-only
    from coretsia.worker_protocol.client import ControlClient

    return ControlClient(_root(root))


def _not_live(exc: WorkerNotRunningError | WorkerAlreadyRunningError, as_json: bool) -> ExitCode:
    """Report a root with no live supervisor: free, or still draining a killed generation."""
    status = "not-running" if isinstance(exc, WorkerNotRunningError) else "draining"
    output.summary({"status": status, "reason": exc.reason.value}, as_json=as_json)
    return exc.exit_code


def cmd_status(args: argparse.Namespace) -> ExitCode:
    """Print the live state; 0 when a pool answers, 3 when none runs, 1 when draining."""
    try:
        response = _client(args.root).status()
    except (WorkerNotRunningError, WorkerAlreadyRunningError) as exc:
        return _not_live(exc, args.json)
    output.summary(output.status_fields(response), as_json=args.json)
    return ExitCode.OK


def cmd_health(args: argparse.Namespace) -> ExitCode:
    """Print health; 0 healthy, 1 unhealthy or draining, 3 not running."""
    as_json = args.json
    try:
        response = _client(args.root).health()
    except (WorkerNotRunningError, WorkerAlreadyRunningError) as exc:
        return _not_live(exc, as_json)
    fields = output.summary_fields(response.summary)
    fields.update(
        status="healthy" if response.healthy else "unhealthy",
        healthy=response.healthy,
        reason=response.reason.value,
    )
    output.summary(fields, as_json=as_json)
    return ExitCode.OK if response.healthy else ExitCode.FAILURE


def cmd_stop(args: argparse.Namespace) -> ExitCode:
    """Stop the pool; returns after ``stopped`` (every worker reaped, lock free).

    On a terminal (and without ``--json``) it shows the shutdown phase the pool is in
    and counts down that phase's budget.
    """
    client = _client(args.root)
    if args.json or not output.is_terminal():
        client.stop()
    else:
        # start-up budget: docs/performance.md#start-up-import-rules
        from coretsia.supervisor.stop_progress import Countdown

        with Countdown() as countdown:
            client.stop(countdown.phase)
    output.summary({"status": "stopped"}, as_json=args.json)
    return ExitCode.OK


def cmd_start(args: argparse.Namespace) -> int:
    """Run the pool in the foreground until it is stopped."""
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor import init

    if init.needed():  # PID 1 of a container: become a tiny init, run ourselves below it
        return init.run([sys.executable, "-m", "coretsia.supervisor.cli", *sys.argv[1:]])
    # Before any thread exists: every file and socket the supervisor creates is private
    # from birth. The operator's umask is handed to the guardian for the workers.
    umask = os.umask(0o077)
    # start-up budget: docs/performance.md#start-up-import-rules
    from pathlib import Path

    from coretsia.supervisor.daemon.guardian_process import EarlyGuardian

    root = Path(_root(args.root))
    # First thing: the guardian's interpreter boots on the other core while this one
    # imports the runtime below; the guardian link adopts it (see guardian_process).
    # Leaving the block lets it go if nobody did (the start ended before the launch).
    with EarlyGuardian.spawn(root, os.environ) as early:
        forced = _run_pool(args, root, umask, early)
    return ExitCode.FORCED_STOP if forced else ExitCode.OK


def _run_pool(args: argparse.Namespace, root: Path, umask: int, early: EarlyGuardian) -> bool:
    """Validate, resolve and run the pool until it is stopped (``start`` after the checks);
    whether the stop was forced."""
    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor.config import load_config
    from coretsia.supervisor.daemon.drivers import resolve_driver, resolve_transport
    from coretsia.supervisor.daemon.generation_builder import build_generation_spec
    from coretsia.supervisor.worker_side.runtime_guard import resolve_runtime_entrypoint

    config = load_config(root, args.config)
    # The seed's order: the runtime-entrypoint guard right after the pool spec, then an
    # unavailable driver or transport, and only then discovery (once, never in a worker).
    runtime = (
        resolve_runtime_entrypoint(config.worker.task_type.value) if config.worker.workers else None
    )
    resolve_driver(config.worker.driver)
    resolve_transport(config.control.transport)
    spec = build_generation_spec(root, config, runtime)

    # start-up budget: docs/performance.md#start-up-import-rules
    from coretsia.supervisor.daemon.runner import run_supervisor

    return run_supervisor(root, config, spec, umask, args.log_format, early=early)


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], Callable[[], WorkerError]]] = {
    "start": (cmd_start, lambda: WorkerStartFailedError(Reason.START_FAILED)),
    "stop": (cmd_stop, WorkerCommunicationFailedError),
    "status": (cmd_status, WorkerCommunicationFailedError),
    "health": (cmd_health, WorkerCommunicationFailedError),
}
"""Each command and its catch-all error for anything unexpected."""


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``coretsia-supervisor``; exits with the command's status.

    Without ``argv`` it is the process's own entry (the console script, ``python -m``),
    and it leaves without the interpreter's teardown
    (:func:`~coretsia.supervisor.worker_side.exits.leave`):
    a stop is over only when the supervisor has exited, and a probe when its process has.
    With ``argv`` (tests, an embedding program) it raises :class:`SystemExit` as usual.
    """
    code = int(_run(argv))
    if argv is None:
        leave(code)
    sys.exit(code)


def _run(argv: Sequence[str] | None) -> int:
    """Refuse a platform that runs no pool, then parse and run the command; its status."""
    try:
        support = require_supported_platform()  # first: before anything is read or run
    except WorkerError as exc:
        output.error(exc)
        return int(exc.exit_code)
    args = build_parser().parse_args(argv)
    command, catch_all = COMMANDS[args.command]
    if args.command == "start" and support == UNTESTED:
        output.warning("no test has run on this platform; see docs/reliability.md")
    try:
        return command(args)
    except WorkerError as exc:
        if exc.__cause__ is not None and os.environ.get(DEBUG_ENV) == "1":
            # start-up budget: docs/performance.md#start-up-import-rules
            import traceback  # unsafe, on request: what the token stands for

            traceback.print_exception(exc.__cause__)
        output.error(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        error = catch_all()
        if args.command == "start":
            error = WorkerStartFailedError(Reason.START_CANCELLED)
        output.error(error)
        return error.exit_code
    except Exception:
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        error = catch_all()
        output.error(error)
        return error.exit_code


if __name__ == "__main__":
    main()
