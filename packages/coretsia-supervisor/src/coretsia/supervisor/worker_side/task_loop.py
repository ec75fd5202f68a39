"""The worker loop: sequential units of work, their settlement, and retirement.

One unit of work, in seed 000's order, and what each failure means:

=====================  ==========  ==========================  ==============================
what fails             the task    settlement                  the worker
=====================  ==========  ==========================  ==============================
a before hook          skipped     ``fail(hook's error)``      goes on
``task.run()``         ran         ``fail(task's error)``      goes on
nothing                ran         ``complete(result)``        goes on
an after hook          ran         none (left unsettled)       exits: worker-task-hook-failed
a reset hook           ran         none (left unsettled)       exits: worker-task-reset-failed
``complete()``         ran         raised; ``fail`` NOT called exits: worker-task-settlement-failed
``fail()``             either      raised                      exits: worker-task-settlement-failed
=====================  ==========  ==========================  ==============================

A source that raises :class:`~coretsia.worker_protocol.task_source.TaskSourceStorageError`
(from ``receive`` or a settlement) ends the worker with its reason instead:
``worker-task-source-corrupt`` or ``worker-task-source-full``.

After hooks and reset hooks always run (before settlement, as in seed 000, where the
unit of work ends before the source settles it). A task left unsettled by a terminal
failure is not lost: a durable source (the SQLite queue) recovers its lease when the next
generation starts.

Each unit of work is recorded as one ``worker.task`` span plus the task metrics (see
:mod:`coretsia.supervisor.shared.telemetry`), whose ``outcome`` names its row: ``completed``,
``failed``, ``hook-failed``, ``reset-failed``, ``settlement-failed``, or ``aborted``
(anything but an ``Exception`` escaping, such as ``SystemExit``).

A task that fails (settled with ``fail``) is reported through ``on_failure`` with the
exception, so the launcher can tell the supervisor what an operator may see of it.

Retirement: after ``max_requests`` attempts (failed ones count) the worker sends
``retiring``; it may take one more task while the request travels, then takes none until
the supervisor answers ``retire`` (or a stop comes), and exits 0. So a worker process
runs at most ``max_requests + 1`` attempts, whatever the source or the supervisor are
doing. The supervisor grants one retirement at a time. Where the launcher's stop
descriptor also watches the channel (Linux), the answer wakes a source idle in
``receive`` like a stop, and the loop's top tells the two apart. The request and the
grant travel through :class:`~coretsia.supervisor.worker_side.channel.Retirement`.

With ``max_memory_mb`` on, the worker also reads its resident memory after each task
(:mod:`.memory`); past the limit it sends ``retiring`` with the cause ``max-memory`` and
takes no other task before its turn: the task that grew it is its last one.

Imported on the worker boot path: at load time only the worker package and the
telemetry's no-op default (no ``typing``, no third-party module).
"""

from __future__ import annotations

from coretsia.supervisor.shared.telemetry import NO_TELEMETRY
from coretsia.supervisor.worker_side.exits import EXIT_OK, WorkerExit, failure, source_failure
from coretsia.worker_protocol.catalogue import Reason

TYPE_CHECKING = False  # start-up budget: docs/performance.md#start-up-import-rules
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from coretsia.supervisor.shared.telemetry import Telemetry
    from coretsia.supervisor.worker_side.channel import Retirement
    from coretsia.supervisor.worker_side.memory import MemoryLimit
    from coretsia.worker_protocol.task_source import Task, TaskSource, TaskSourceContext


class Hooks:
    """The resolved before, after and reset hooks of the generation (no-argument calls)."""

    __slots__ = ("after", "before", "reset")

    def __init__(
        self,
        before: Sequence[Callable[[], object]] = (),
        after: Sequence[Callable[[], object]] = (),
        reset: Sequence[Callable[[], object]] = (),
    ) -> None:
        self.before = tuple(before)
        self.after = tuple(after)
        self.reset = tuple(reset)


_EXIT_OUTCOMES = {
    Reason.TASK_HOOK_FAILED: "hook-failed",
    Reason.TASK_RESET_FAILED: "reset-failed",
    Reason.TASK_SETTLEMENT_FAILED: "settlement-failed",
    # A source that names why its settlement failed (TaskSourceStorageError): still one.
    Reason.TASK_SOURCE_CORRUPT: "settlement-failed",
    Reason.TASK_SOURCE_FULL: "settlement-failed",
}
"""The ``worker.task`` outcome of each way a unit of work ends the worker."""


def run_unit(
    task: Task, hooks: Hooks, telemetry: Telemetry = NO_TELEMETRY, operation: str = "queue"
) -> Exception | None:
    """One unit of work (see the module's table), recorded as one ``worker.task``.

    Returns the error the task was failed with, None when it completed. ``operation`` is
    the generation's task type. Telemetry is recorded after the outcome is decided and
    never raises, so it cannot change the outcome.
    """
    recording = telemetry.task(operation)
    outcome = "aborted"  # anything but Exception escaping (SystemExit...) ends here
    try:
        error = _run_unit(task, hooks)
        outcome = "completed" if error is None else "failed"
    except WorkerExit as leaving:
        if leaving.reason is not None:
            outcome = _EXIT_OUTCOMES.get(leaving.reason, outcome)
        raise
    finally:
        recording.finish(outcome)
    return error


def _run_unit(task: Task, hooks: Hooks) -> Exception | None:
    """The unit itself; returns the error it was settled with by ``fail``, if any."""
    error: Exception | None = None
    result: object = None
    try:
        for hook in hooks.before:
            hook()
    except Exception as before_error:  # noqa: BLE001 - settled with fail(), see the table
        error = before_error
    else:
        try:
            result = task.run()
        except Exception as task_error:  # noqa: BLE001 - settled with fail()
            error = task_error
    for kind, reason in (
        (hooks.after, Reason.TASK_HOOK_FAILED),
        (hooks.reset, Reason.TASK_RESET_FAILED),
    ):
        for hook in kind:
            try:
                hook()
            except Exception as hook_error:
                raise failure(reason) from hook_error
    try:
        if error is None:
            task.complete(result)
        else:
            task.fail(error)
    except Exception as settle_error:
        raise source_failure(settle_error, Reason.TASK_SETTLEMENT_FAILED) from settle_error
    return error


def work(
    source: TaskSource,
    context: TaskSourceContext,
    max_requests: int,
    hooks: Hooks,
    retirement: Retirement,
    telemetry: Telemetry = NO_TELEMETRY,
    on_failure: Callable[[Task, Exception], None] = lambda _task, _error: None,
    memory: MemoryLimit | None = None,
) -> int:
    """Serve tasks until a cooperative stop or a granted retirement; returns 0."""
    attempts = 0
    over_memory = False
    while True:
        # The grant first: where it also wakes the stop descriptor, it must still be read
        # before the exit (a frame left unread turns our close into a connection reset).
        if attempts >= max_requests or over_memory:
            if not context.stopping:
                retirement.request(over_memory=over_memory)
            if retirement.granted():
                break
            if (attempts > max_requests or over_memory) and not context.stopping:
                # The one attempt allowed while the request travels is spent: no other
                # task is taken before the turn (or a stop) comes.
                retirement.wait(context.stop_fileno())
                continue
        if context.stopping:
            retirement.granted()  # a grant that came meanwhile is read, never left unread
            break
        retirement.listening(on=True)
        try:
            task = source.receive()
        except Exception as error:
            raise source_failure(error, Reason.TASK_SOURCE_RECEIVE_FAILED) from error
        if task is None:
            if context.wait_for_stop(0):
                continue  # a stop, or this worker's turn to retire: the top tells which
            raise failure(Reason.TASK_SOURCE_TERMINATED)
        retirement.listening(on=False)  # a running task never sees a recycle as a stop
        attempts += 1  # seed 000: max_requests counts acquired attempts, failed ones too
        failed = run_unit(task, hooks, telemetry, context.task_type)
        if failed is not None:
            on_failure(task, failed)
        over_memory = memory is not None and memory.exceeded()
    return EXIT_OK
