"""The peers' benchmark (``peers.py``, ``nox -s bench_peers``): Coretsia beside its peers.

Every side runs the same worker, a fresh interpreter that reports ready with one datagram
to ``ready.sock`` in its project root and idles: the floor (bare ``Popen``), supervisord,
circus, gunicorn (whose workers are forks of its arbiter: the only way it runs one),
honcho and Coretsia in each spawn mode. ``readiness`` watches the datagrams, ``sides``
starts and stops each peer, ``scenarios`` measures, ``table`` renders the issue's table.
"""
