"""Spawn refusals: the interpreter's own (its token) against everything else (the caller's)."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from coretsia.worker_protocol.catalogue import Reason
from coretsia.worker_protocol.internal.runtime.spawn_errors import spawn_failure


def _posix_spawn_error(program: str) -> OSError:
    with pytest.raises(OSError) as caught:
        os.posix_spawn(program, [program], {})
    return caught.value


def test_the_interpreter_refused_by_the_kernel(tmp_path: Path) -> None:
    """A real refusal names the program it could not run, which is how it is recognised."""
    program = str(tmp_path / "gone")
    error = _posix_spawn_error(program)
    assert error.errno == errno.ENOENT
    assert spawn_failure(error, Reason.FORK_FAILED, program) is Reason.INTERPRETER_UNAVAILABLE
    assert spawn_failure(error, Reason.FORK_FAILED) is Reason.FORK_FAILED  # not sys.executable


@pytest.mark.parametrize("code", [errno.EAGAIN, errno.ENOMEM, errno.EMFILE])
def test_limits_stay_the_callers_failure(code: int) -> None:
    """A process limit or a lack of memory passes: it is not the interpreter's fault."""
    error = OSError(code, os.strerror(code), sys.executable)
    assert spawn_failure(error, Reason.FORK_FAILED) is Reason.FORK_FAILED


def test_a_refusal_about_another_file() -> None:
    """EACCES on a cgroup's file (no filename of ours) is the caller's failure."""
    error = OSError(errno.EACCES, "denied", "/sys/fs/cgroup/x/cgroup.procs")
    assert spawn_failure(error, Reason.CONTAINMENT_FAILED) is Reason.CONTAINMENT_FAILED
