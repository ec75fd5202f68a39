"""A task source that reports, at its first ``receive`` (the boot is over: ``ready`` was
sent, the task loop runs), the modules its worker holds and how many objects it found
frozen (``modules_app:report`` in a root, as ``modules-<slot>.json``)."""

import gc
import json
import os
import sys

# Installed beside it in every test root (not where the type checker looks).
from lifecycle_app import IdleSource  # type: ignore[import-not-found]


class Reporting(IdleSource):
    def receive(self):
        facts = {"modules": sorted(sys.modules), "frozen": gc.get_freeze_count()}
        path = os.path.join(os.getcwd(), f"modules-{self.ctx.slot}.json")
        with open(path + ".tmp", "w") as out:
            json.dump(facts, out)
        os.rename(path + ".tmp", path)
        return super().receive()


def report(ctx):
    return Reporting(ctx)
