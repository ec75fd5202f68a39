"""The pool benchmark's parts (``run.py``, ``nox -s bench``): pools, floor, scenarios, table.

One module per group of scenarios, as the report groups its rows: start and stop (S1, S2,
N = 1024), a worker's life (S3, the launcher alone, S4), idle cost (S5), control (S6) and
the task loop (S7). ``pools`` and ``floors`` start and end every process they measure.
"""
