"""Modules for the fork server's ``preload`` tests (``preload_app`` in a root).

Importing it appends the importing process's pid to ``preload-imports.log`` in the
working directory (the root); ``PRELOAD_APP_BREAK`` (in the environment) makes the import
fail, start a thread, or leave a file open: what the fork server must refuse.
"""

import os
import threading
import time

# Installed beside it in every test root (not where the type checker looks).
from lifecycle_app import IdleSource  # type: ignore[import-not-found]

with open("preload-imports.log", "a") as _log:
    _log.write(f"{os.getpid()}\n")

_BREAK = os.environ.get("PRELOAD_APP_BREAK")
if _BREAK == "raise":
    raise RuntimeError("a preload module that cannot be imported")
if _BREAK == "thread":
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
if _BREAK == "file":
    _kept = open("preload-imports.log")  # noqa: SIM115 - left open on purpose


def idle(ctx):
    """The task source: imported by every worker's launcher (already there if preloaded)."""
    return IdleSource(ctx)
