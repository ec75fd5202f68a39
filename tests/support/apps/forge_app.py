"""The task source of the forged-generation test: one task once ``go`` exists in the
root (with ``max_requests = 1`` its worker then retires, and a recycled one boots)."""

import os


class Task:
    def run(self):
        return None

    def complete(self, result):
        pass

    def fail(self, error):
        pass


class OnGo:
    def __init__(self, ctx):
        self.ctx = ctx
        self.given = False

    def assert_ready(self):
        pass

    def receive(self):
        while not self.given:
            if os.path.exists("go"):
                self.given = True
                return Task()
            if self.ctx.wait_for_stop(0.02):
                return None
        self.ctx.wait_for_stop(None)
        return None


def on_go(ctx):
    return OnGo(ctx)
