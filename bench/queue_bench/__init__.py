"""The queue benchmark's parts (``pipeline.py``, ``nox -s bench_queue``).

``roots`` makes the throw-away roots and owns every process started in them; ``sides``
drains a root with Coretsia's pool or with Huey's consumer; ``records`` and ``events`` read
what the handlers and the supervisors wrote; ``throughput``, ``soak`` and ``two_pools`` are
the parts (``--only``); ``table`` writes the report.
"""
