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

After hooks and reset hooks always run (before settlement, as in seed 000, where the
unit of work ends before the source settles it). A task left unsettled by a terminal
failure is not lost: a durable source (the SQLite queue) recovers its lease when the next
generation starts.

Each unit of work is recorded as one ``worker.task`` span plus the task metrics (see
:mod:`coretsia.supervisor.telemetry`), whose ``outcome`` names its row: ``completed``,
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
``receive`` like a stop, and the loop's top tells the two apart.

Imported on the worker boot path: standard library only at load time.
"""

from __future__ import annotations

import os
import select

from coretsia.supervisor.telemetry import NO_TELEMETRY

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable, Sequence

    from coretsia.supervisor.telemetry import Telemetry
    from coretsia.worker_protocol.catalogue import Reason
    from coretsia.worker_protocol.task_source import Task, TaskSource, TaskSourceContext

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONTRACT = 2

_managed = False


def mark_managed() -> None:
    """Record that this process is a pool's worker (the launcher does, for every slot).

    Kept here, in a module every worker imports anyway: ``ProcessManager.start`` asks
    :func:`is_managed` and refuses to nest a pool inside any managed worker.
    """
    global _managed
    _managed = True


def is_managed() -> bool:
    """Whether this process is a managed worker, entry or task worker alike."""
    return _managed


class WorkerExit(Exception):
    """Leave the worker with ``code``, sending ``failed(reason)`` first when given.

    Raised ``from`` the application's exception when there is one, so that debug mode
    can print it.
    """

    def __init__(self, code: int, reason: Reason | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.reason = reason


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


def _failure(reason_name: str) -> WorkerExit:
    from coretsia.worker_protocol.catalogue import Reason

    return WorkerExit(EXIT_FAILURE, Reason[reason_name])


_EXIT_OUTCOMES = {
    "TASK_HOOK_FAILED": "hook-failed",
    "TASK_RESET_FAILED": "reset-failed",
    "TASK_SETTLEMENT_FAILED": "settlement-failed",
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
        outcome = _EXIT_OUTCOMES.get(leaving.reason.name if leaving.reason else "", outcome)
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
    for kind, reason in ((hooks.after, "TASK_HOOK_FAILED"), (hooks.reset, "TASK_RESET_FAILED")):
        for hook in kind:
            try:
                hook()
            except Exception as hook_error:
                raise _failure(reason) from hook_error
    try:
        if error is None:
            task.complete(result)
        else:
            task.fail(error)
    except Exception as settle_error:
        raise _failure("TASK_SETTLEMENT_FAILED") from settle_error
    return error


class Retirement:
    """Asks the supervisor for permission to retire and notices its answer.

    The order (ask once, a grant only in answer) is the sans-IO
    :class:`~coretsia.worker_protocol.worker_conversation.WorkerConversation`'s; this
    class only moves bytes, without ever blocking in :meth:`granted`.
    """

    __slots__ = ("_channel", "_conversation", "_listen")

    def __init__(
        self, channel: _socket.socket, listen: Callable[[bool], None] = lambda _on: None
    ) -> None:
        from coretsia.worker_protocol.worker_conversation import WorkerConversation

        self._channel = channel
        self._listen = listen
        self._conversation = WorkerConversation()

    def listening(self, *, on: bool) -> None:
        """Let the answer wake a waiting source (only while it waits for a task)."""
        if self._conversation.asked:
            self._listen(on)

    def request(self, send: Callable[[], None]) -> None:
        """Send ``retiring`` once."""
        if self._conversation.ask_to_retire():
            send()

    def wait(self, stop_fileno: int) -> None:
        """Block until the supervisor's answer (or its end) arrives or a stop is requested.

        No timeout: the supervisor answers in turn, a stop ends the wait, and a worker
        whose supervisor died sees its channel close (and its parent-death watch fire).
        """
        select.select([self._channel.fileno(), stop_fileno], [], [])

    def granted(self) -> bool:
        """True once ``retire`` arrived, or the supervisor is gone; never blocks."""
        from coretsia.worker_protocol.exceptions import ProtocolError
        from coretsia.worker_protocol.framing import Need

        fd = self._channel.fileno()
        try:
            while self._conversation.next_event() is Need.DATA:
                if not select.select([fd], [], [], 0)[0]:
                    return False
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    return True
                self._conversation.receive_data(data)
        except ProtocolError:
            raise _failure("LIFECYCLE_FAILED") from None
        return True  # the grant, or nobody to ask any more (the channel closed): retire


def work(
    source: TaskSource,
    context: TaskSourceContext,
    max_requests: int,
    hooks: Hooks,
    retirement: Retirement,
    request_retirement: Callable[[], None],
    telemetry: Telemetry = NO_TELEMETRY,
    on_failure: Callable[[Task, Exception], None] = lambda _task, _error: None,
) -> int:
    """Serve tasks until a cooperative stop or a granted retirement; returns 0."""
    attempts = 0
    while True:
        # The grant first: where it also wakes the stop descriptor, it must still be read
        # before the exit (a frame left unread turns our close into a connection reset).
        if attempts >= max_requests:
            if not context.stopping:
                retirement.request(request_retirement)
            if retirement.granted():
                break
            if attempts > max_requests and not context.stopping:
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
            raise _failure("TASK_SOURCE_RECEIVE_FAILED") from error
        if task is None:
            if context.wait_for_stop(0):
                continue  # a stop, or this worker's turn to retire: the top tells which
            raise _failure("TASK_SOURCE_TERMINATED")
        retirement.listening(on=False)  # a running task never sees a recycle as a stop
        attempts += 1  # seed 000: max_requests counts acquired attempts, failed ones too
        failure = run_unit(task, hooks, telemetry, context.task_type)
        if failure is not None:
            on_failure(task, failure)
    return EXIT_OK


def resolve_hooks(spec: dict[str, object]) -> Hooks:
    """Import the generation's frozen hook targets (``module:attr``), in order."""
    lists = []
    for key in ("before_hooks", "after_hooks", "reset_hooks"):
        targets = spec.get(key, [])
        if not isinstance(targets, list):
            raise _failure("CHILD_START_FAILED")
        lists.append([_import_callable(t) for t in targets])
    return Hooks(*lists)


def _import_callable(target: object) -> Callable[[], object]:
    from coretsia.worker_protocol.internal.runtime.imports import import_target

    if not isinstance(target, str) or ":" not in target:
        raise _failure("CHILD_START_FAILED")
    try:
        value = import_target(target)
    except Exception as error:
        raise _failure("CHILD_START_FAILED") from error
    if not callable(value):
        raise _failure("CHILD_START_FAILED")
    return value
