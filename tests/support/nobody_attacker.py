"""What ``nobody`` does to a root pool's runtime files when it may: issue 24's attacks.

Run as root, ``python nobody_attacker.py COMMAND ROOT``: it imports all it needs, drops to
``nobody`` (as :mod:`forged_server` does), then:

* ``plant-generation``: writes a generation of its own into ``var/generations`` (its task
  source is :data:`PLANTED_MODULE`, a module of its own beside it, which writes
  :data:`MARKER` into the root when anyone imports it) and points ``current`` at it;
* ``hold-lock``: creates ``var/tmp/worker.lock`` and holds a lock on it, prints ``held``
  (or ``busy``) and keeps it until its stdin closes.

Anything it cannot do is a traceback and a non-zero exit: the tests say which must work.
"""

from __future__ import annotations

import os
import pwd
import sys
from typing import Any

from coretsia.supervisor.generation.published import (
    GenerationError,
    encode_generation,
    load_current_generation,
)
from coretsia.supervisor.generation.spec import GenerationSpec, TaskType
from coretsia.worker_protocol import lock
from coretsia.worker_protocol.lifecycle import GENERATIONS_DIR, LOCK_PATH

MARKER = "imported-as-root"
PLANTED_MODULE = "planted"
_PLANTED_SOURCE = f"""import os
with open(os.path.join(os.getcwd(), {MARKER!r}), "w") as marker:
    marker.write(str(os.geteuid()))
def make(ctx):
    raise SystemExit(0)
"""


def _drop_to_nobody() -> None:
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


def plant_generation(root: str) -> None:
    """A generation whose spec names our module, made current, as ``publish`` would."""
    base = os.path.join(root, GENERATIONS_DIR)
    os.makedirs(os.path.join(base, "app"), exist_ok=True)
    with open(os.path.join(base, "app", PLANTED_MODULE + ".py"), "w") as module:
        module.write(_PLANTED_SOURCE)
    fields: dict[str, Any] = {"workers": 1, "max_requests": 1, "task_type": TaskType.QUEUE}
    try:  # the pool's own spec, where it can be read, so that only the handler differs
        fields = load_current_generation(root, GENERATIONS_DIR)[1]._asdict()
    except GenerationError:
        pass
    fields.update(task_source=f"{PLANTED_MODULE}:make", app_path=(f"{GENERATIONS_DIR}/app",))
    digest, document = encode_generation(GenerationSpec(**fields))
    gen_id = f"{digest[:16]}-999999-{'0' * 16}"
    os.mkdir(os.path.join(base, gen_id))
    with open(os.path.join(base, gen_id, "generation.json"), "wb") as file:
        file.write(document)
    with open(os.path.join(base, "current"), "w") as current:
        current.write(gen_id + "\n")


def hold_lock(root: str) -> None:
    fd = lock.acquire(os.path.join(root, LOCK_PATH))
    print("held" if fd is not None else "busy", flush=True)
    sys.stdin.read()


def main() -> None:
    command, root = sys.argv[1:]
    _drop_to_nobody()
    if command == "plant-generation":
        plant_generation(root)
    elif command == "hold-lock":
        hold_lock(root)
    else:
        raise SystemExit(2)


if __name__ == "__main__":
    main()
