"""Windows: a Job Object that kills every worker when the proc host's handle closes.

On POSIX a worker dies with its parent through the parent-death signal; Windows has no
such thing, but a process assigned to a job with ``JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE``
is terminated when the last handle to the job closes, which happens when the proc host
exits however it exits. Never run: the proc host cannot serve on Windows yet, and the
test suite runs on Linux only (see docs/reliability.md).
"""

from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Mapping
from ctypes import wintypes
from typing import Any

_JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
_JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
# subprocess defines these names on Windows only.
_CREATE_SUSPENDED = 0x00000004
_CREATE_NEW_PROCESS_GROUP = 0x00000200


class _BasicLimits(ctypes.Structure):
    _fields_ = (
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", wintypes.DWORD),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", wintypes.DWORD),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", wintypes.DWORD),
        ("SchedulingClass", wintypes.DWORD),
    )


class _IoCounters(ctypes.Structure):
    _fields_ = tuple(
        (name, ctypes.c_uint64)
        for name in (
            "ReadOperationCount",
            "WriteOperationCount",
            "OtherOperationCount",
            "ReadTransferCount",
            "WriteTransferCount",
            "OtherTransferCount",
        )
    )


class _ExtendedLimits(ctypes.Structure):
    _fields_ = (
        ("BasicLimitInformation", _BasicLimits),
        ("IoInfo", _IoCounters),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    )


class Job:
    """One job object for the proc host's lifetime; never closed explicitly."""

    def __init__(self) -> None:
        kernel32: Any = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        ntdll: Any = ctypes.WinDLL("ntdll")  # type: ignore[attr-defined]
        # Declared, or ctypes passes and returns C ints: a 64-bit handle would be cut short.
        kernel32.CreateJobObjectW.argtypes = (ctypes.c_void_p, wintypes.LPCWSTR)
        kernel32.CreateJobObjectW.restype = wintypes.HANDLE
        kernel32.SetInformationJobObject.argtypes = (
            wintypes.HANDLE,
            ctypes.c_int,
            ctypes.c_void_p,
            wintypes.DWORD,
        )
        kernel32.SetInformationJobObject.restype = wintypes.BOOL
        kernel32.AssignProcessToJobObject.argtypes = (wintypes.HANDLE, wintypes.HANDLE)
        kernel32.AssignProcessToJobObject.restype = wintypes.BOOL
        ntdll.NtResumeProcess.argtypes = (wintypes.HANDLE,)
        ntdll.NtResumeProcess.restype = ctypes.c_long  # an NTSTATUS
        self._kernel32 = kernel32
        self._ntdll = ntdll
        self._handle = kernel32.CreateJobObjectW(None, None)
        if not self._handle:
            raise OSError(ctypes.get_last_error())  # type: ignore[attr-defined]
        limits = _ExtendedLimits()
        limits.BasicLimitInformation.LimitFlags = _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        if not kernel32.SetInformationJobObject(
            self._handle,
            _JOB_OBJECT_EXTENDED_LIMIT_INFORMATION,
            ctypes.byref(limits),
            ctypes.sizeof(limits),
        ):
            raise OSError(ctypes.get_last_error())  # type: ignore[attr-defined]

    def start(self, argv: list[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        """Start a worker inside the job: created suspended, assigned, then resumed.

        Assigning a worker that already runs would leave it a moment outside the job, in
        which it could start a child that the job never holds. A suspended worker runs
        nothing before it is in the job. ``NtResumeProcess`` resumes it by its process
        handle (``Popen`` keeps no handle on its main thread); psutil resumes processes
        the same way.
        """
        proc = subprocess.Popen(
            argv, env=dict(env), creationflags=_CREATE_SUSPENDED | _CREATE_NEW_PROCESS_GROUP
        )
        handle = proc._handle  # type: ignore[attr-defined]
        assigned = bool(self._kernel32.AssignProcessToJobObject(self._handle, handle))
        # An NTSTATUS: 0 is success. Never resumed outside the job.
        if not (assigned and self._ntdll.NtResumeProcess(handle) == 0):
            proc.kill()  # TerminateProcess: it never ran an instruction of its own
            proc.wait()
            raise OSError
        return proc
