"""Holds the lifecycle lock at ``argv[1]`` until stdin closes; says ``held`` or ``busy``."""

import sys

from coretsia.worker_protocol import lock

fd = lock.acquire(sys.argv[1])
print("held" if fd is not None else "busy", flush=True)
sys.stdin.read()
