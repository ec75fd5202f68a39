"""A ``sitecustomize`` that records the order of a real pool's lifecycle steps (helpers).

Imported by test modules as ``order_log`` (``tests/support`` is on pytest's pythonpath).
Production code carries no hook: the supervisor's steps are seen from the outside, through
Python's audit events (PEP 578), which the interpreter raises before each operation:

* ``listener``: the supervisor binds its control socket (``socket.bind`` of
  ``worker.sock``, directly or through ``/proc/self/fd``);
* ``state <status>``: it renames a state file into place (``os.rename``, which
  ``os.replace`` raises too), with the status the file holds;
* ``locator``: it renames the private locator into place;
* ``locator-removed lock-held`` (or ``lock-free``): it unlinks the locator, and whether
  the lifecycle lock was still held at that moment;
* ``worker``: a worker interpreter starts (with the fork server: it forks for a worker).

Each supervisor line also says whether SIGTERM was already handled (``sigterm-handled``
or ``sigterm-default``). Every process appends whole lines to one file
(``CORETSIA_TEST_ORDER_LOG``), so the file's order is the order the steps happened in.
"""

from __future__ import annotations

from pathlib import Path

from site_hooks import site_env

ORDER_LOG_ENV = "CORETSIA_TEST_ORDER_LOG"

_HOOK = """
import os, signal, sys

_LOG = os.environ.get("CORETSIA_TEST_ORDER_LOG")


def _write(line):
    fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode() + b"\\n")
    finally:
        os.close(fd)


def _status(tmp):
    import json

    with open(tmp, "rb") as state:
        return json.loads(state.read())["status"]


def _lock(locator):
    from coretsia.worker_protocol import lock

    held = lock.probe(os.path.join(os.path.dirname(locator), "worker.lock"))
    return "lock-held" if held else "lock-free"


def _step(name, args):
    if name == "socket.bind" and isinstance(args[1], str):
        if args[1].endswith("/worker.sock"):
            return "listener"
    elif name == "os.rename":
        source, target = os.fsdecode(args[0]), os.fsdecode(args[1])
        if target.endswith("/worker.state.json"):
            return "state " + _status(source)
        if target.endswith("/worker.lifecycle.json"):
            return "locator"
    elif name == "os.remove" and os.fsdecode(args[0]).endswith("/worker.lifecycle.json"):
        return "locator-removed " + _lock(os.fsdecode(args[0]))
    return None


_busy = []


def _audit(name, args):
    if _busy or name not in ("socket.bind", "os.rename", "os.remove"):
        return
    _busy.append(True)  # what the hook itself does raises events too
    try:
        step = _step(name, args)
        if step is not None:
            handled = signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)
            _write(step + (" sigterm-handled" if handled else " sigterm-default"))
    finally:
        _busy.pop()


if _LOG is not None:
    if "coretsia.supervisor.cli" in sys.orig_argv:
        sys.addaudithook(_audit)
    elif any(arg.startswith("--coretsia-worker-artifact-root=") for arg in sys.orig_argv):
        _write("worker")
    elif "coretsia.supervisor.worker_side.fork_server" in " ".join(sys.orig_argv):
        _server = os.getpid()  # a worker starts when the server forks for it

        def _forked(name, args):
            if name == "os.fork" and os.getpid() == _server:
                _write("worker")

        sys.addaudithook(_forked)
"""


def order_env(directory: Path, log: Path) -> dict[str, str]:
    """The environment of a supervisor whose steps are recorded into ``log``."""
    env = site_env(directory, _HOOK)
    env[ORDER_LOG_ENV] = str(log)
    return env


def recorded(log: Path) -> list[str]:
    """The recorded steps, in order; each supervisor step with its SIGTERM word."""
    return log.read_text().splitlines()
