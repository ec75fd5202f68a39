"""Real pools for tests: a project root, a supervisor process, and cleanup (helpers).

Imported by test modules as ``pools`` (``tests/support`` is on pytest's pythonpath).

Every pool here is a real ``coretsia-supervisor start`` with a real guardian and real
worker interpreters. Tests wait on events (the summary line, process exit, socket
answers), never on fixed sleeps, and every wait is bounded. At teardown, any process whose
working directory is the test's root (supervisor, guardian, workers, their children) is
killed and reported, so a test that leaks a process fails even if the process was
re-parented away from the test runner.
"""

from __future__ import annotations

import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

SUPERVISOR = [sys.executable, "-m", "coretsia.supervisor.cli"]

APPS = Path(__file__).resolve().parent / "apps"
"""The test applications: each is copied into a root, where the pool imports it."""


KEPT_KEYS = ("driver", "spawn", "containment")
"""``[worker]`` keys a root keeps when a test rewrites its configuration without them: the
ones a test is parametrized by."""


def _kept(root: Path) -> dict[str, str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        data = tomllib.loads((root / "coretsia.toml").read_text())
    except FileNotFoundError:
        return {}
    worker: dict[str, str] = data.get("worker", {})
    return {key: worker[key] for key in KEPT_KEYS if key in worker}


def write_root(
    root: Path,
    *,
    source_options: Mapping[str, object] | None = None,
    tables: Mapping[str, Mapping[str, object]] | None = None,
    **worker: Any,
) -> Path:
    """Write ``coretsia.toml`` (its ``[worker]`` table from ``worker``) and the test app.

    The driver, spawn mode and containment level already configured for this root are kept unless
    given, so a test parametrized by them can rewrite its configuration freely. ``source_options``
    becomes the ``[worker.source_options]`` table; ``tables`` are more tables by their
    dotted name (``{"worker.hooks": {"before": ["app:hook"]}}``).
    """
    worker = {**_kept(root), **worker}
    settings = {
        "workers": 2,
        "task_source": "lifecycle_app:idle",
        "start_timeout_ms": 20000,
        "stop_timeout_ms": 3000,
        "force_kill_timeout_ms": 1000,
        **worker,
    }
    lines = ["[worker]", *_toml_lines(settings)]
    if source_options is not None:
        tables = {"worker.source_options": source_options, **(tables or {})}
    for name, table in (tables or {}).items():
        lines += ["", f"[{name}]", *_toml_lines(table)]
    (root / "coretsia.toml").write_text("\n".join(lines) + "\n")
    install_app(root, "lifecycle_app.py")
    return root


def install_app(root: Path, name: str, as_name: str | None = None) -> Path:
    """Copy the test application ``apps/<name>`` into ``root`` (the pool imports it there)."""
    return Path(shutil.copy(APPS / name, root / (as_name or name)))


def app_source(name: str) -> str:
    """The text of the test application ``apps/<name>``: a module of a fixture wheel."""
    return (APPS / name).read_text()


def _toml_lines(table: Mapping[str, object]) -> list[str]:
    """``key = value`` lines of a flat TOML table (booleans, integers, strings and lists
    of them)."""
    return [f"{key} = {_toml_value(value)}" for key, value in table.items() if value is not None]


def _toml_value(value: object) -> str:
    """A TOML value; a key whose value is None is left out by the caller (its default, or
    discovery, applies)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return f'"{value}"'


class Supervisor:
    """A ``coretsia-supervisor start`` process of one root."""

    def __init__(
        self,
        root: Path,
        *extra: str,
        env: dict[str, str] | None = None,
        python: str | None = None,
        user: int | None = None,
        umask: int = -1,
    ) -> None:
        """``python``: another interpreter to run it with; ``user``: the uid (and gid) it
        runs as, every other group dropped (root only); ``umask``: its umask (-1: ours)."""
        self.root = root
        command = SUPERVISOR if python is None else [python, *SUPERVISOR[1:]]
        self.proc = subprocess.Popen(
            [*command, "start", "--root", str(root), *extra],
            env=env,
            user=user,
            group=user,
            extra_groups=None if user is None else [],
            umask=umask,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.summary = ""
        self.stdout = ""
        self.stderr = ""

    def wait_running(self, timeout: float = 30) -> str:
        """Block until the startup summary line; fail if the process ends first."""
        assert self.proc.stdout is not None
        # Bounded: a supervisor that never prints must fail the test, not hang it (the
        # summary is one write, so a readable pipe holds the whole line).
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            self.proc.kill()
            raise AssertionError("startup took too long", self.finish(5))
        line = self.proc.stdout.readline().decode()
        assert line.startswith("running:"), (line, self.finish(5))
        self.summary = line
        return line

    def finish(self, timeout: float = 30) -> int:
        """Wait for exit; collect the rest of stdout and stderr."""
        out, err = self.proc.communicate(timeout=timeout)
        self.stdout = self.summary + out.decode()
        self.stderr = err.decode()
        return self.proc.returncode

    @property
    def logs(self) -> list[dict[str, Any]]:
        """The JSON log lines the supervisor and the guardian wrote on stderr."""
        import json

        return [json.loads(line) for line in self.stderr.splitlines() if line.startswith("{")]

    @property
    def error(self) -> str:
        """What stderr says besides the log lines: the command's error, if any."""
        lines = self.stderr.splitlines()
        return "\n".join(line for line in lines if not line.startswith("{")).strip()

    def kill(self) -> None:
        """SIGKILL the supervisor and wait for it alone.

        Not :meth:`finish`: that reads stdout and stderr to their end, which the guardian
        and the workers hold open too, so it would wait for the whole cleanup.
        """
        self.proc.kill()
        self.proc.wait(timeout=30)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def close(self) -> None:
        """Teardown: a graceful stop if it still runs (SIGKILL after 30 s), then its pipes."""
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def tree(self) -> list[psutil.Process]:
        """The guardian and every worker (descendants of the supervisor), right now."""
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def _named(self, needle: str) -> list[psutil.Process]:
        found = []
        for proc in self.tree():
            try:
                if needle in " ".join(proc.cmdline()):
                    found.append(proc)
            except psutil.Error:  # exited (or a zombie) since the snapshot
                continue
        return found

    def workers(self) -> list[psutil.Process]:
        """The live worker processes, right now."""
        return self._named("coretsia.supervisor.worker_side.launcher")

    def guardian(self) -> psutil.Process:
        (guardian,) = self._named("-m coretsia.guardian --channel-fd")
        return guardian

    def proc_host(self) -> psutil.Process:
        (host,) = self._named("coretsia.proc_host")
        return host

    def fork_server(self) -> psutil.Process:
        (server,) = self._named("coretsia.supervisor.worker_side.fork_server")
        return server


class Supervisors:
    """The supervisors a test started (call it like :class:`Supervisor`); :meth:`close`
    stops each at teardown."""

    def __init__(self) -> None:
        self.started: list[Supervisor] = []

    def __call__(self, root: Path, *extra: str, env: dict[str, str] | None = None) -> Supervisor:
        supervisor = Supervisor(root, *extra, env=env)
        self.started.append(supervisor)
        return supervisor

    def running(self, root: Path, *extra: str, env: dict[str, str] | None = None) -> Supervisor:
        """Start one and wait for its startup summary."""
        supervisor = self(root, *extra, env=env)
        supervisor.wait_running()
        return supervisor

    def close(self) -> None:
        for supervisor in self.started:
            supervisor.close()


def cli(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a client command (status, health, stop) to completion."""
    return subprocess.run(
        [*SUPERVISOR, *args, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def processes_in(root: Path) -> list[psutil.Process]:
    """Every live process whose working directory is ``root`` (our whole tree)."""
    found = []
    for proc in psutil.process_iter(["cwd", "status"]):
        try:
            if proc.info["cwd"] == str(root) and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_for(predicate: Callable[[], bool], timeout: float = 30) -> None:
    """Wait for a condition that no event announces (a file appearing), bounded."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def wait_gone(root: Path, timeout: float = 10) -> list[psutil.Process]:
    """Wait until no process runs in ``root``; return what is left at the deadline."""
    deadline = time.monotonic() + timeout
    left = processes_in(root)
    while left and time.monotonic() < deadline:
        psutil.wait_procs(left, timeout=max(0.0, min(0.5, deadline - time.monotonic())))
        left = processes_in(root)
    return left


def assert_none_left(root: Path, timeout: float = 10) -> None:
    """Teardown of a test's root: kill whatever still runs in it, then fail if anything did."""
    left = wait_gone(root, timeout)
    for proc in left:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(left, timeout=10)
    assert not left, f"processes left behind: {[p.pid for p in left]}"


def events(root: Path, prefix: str) -> list[list[str]]:
    """The words of each line of ``root/events.log`` whose first word is ``prefix``.

    The test applications append one line per thing an entry did (one ``os.write`` per
    line, so concurrent workers never interleave).
    """
    try:
        lines = (root / "events.log").read_text().splitlines()
    except FileNotFoundError:
        return []
    return [words for words in (line.split() for line in lines) if words[:1] == [prefix]]


def lock_held(root: Path) -> bool:
    from coretsia.worker_protocol import lock

    return lock.probe(str(root / "var/tmp/worker.lock"))


def assert_start_refused(
    root: Path,
    key: str,
    rule: str,
    *,
    command: Sequence[str] = SUPERVISOR,
    env: Mapping[str, str] | None = None,
    options: Sequence[str] = (),
) -> None:
    """``start`` is a configuration error naming ``key`` and ``rule`` (exit 6), refused
    before anything was published. ``options`` are more of ``start``'s options.

    stderr is that one line and nothing else: no log line either (the log format is JSON
    on a pipe), so no ``worker.spawned``."""
    result = subprocess.run(
        [*command, "start", "--root", str(root), *options],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 6, result.stderr
    assert result.stderr.strip() == (
        f"CORETSIA_WORKER_CONFIG_INVALID: worker-config-invalid (key {key}, rule {rule})"
    )
    assert not (root / "var/generations").exists()


def assert_failed(supervisor: Supervisor, root: Path, expected: str) -> None:
    """The pool failed with ``expected`` (exit 1), said nothing secret (no traceback
    either), and left nothing."""
    assert supervisor.finish(60) == 1, supervisor.stderr
    assert supervisor.error == expected, supervisor.stderr
    assert "secret" not in supervisor.stderr + supervisor.stdout
    assert "Traceback" not in supervisor.stderr
    assert not lock_held(root)
    assert wait_gone(root) == []
