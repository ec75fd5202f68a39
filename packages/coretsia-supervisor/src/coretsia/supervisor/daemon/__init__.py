"""The supervisor daemon: the foreground trio program that owns one pool (``start``).

Its run (:mod:`.runner`, :mod:`.supervisor`), its slots and in-memory pool, the guardian
link, the control server, the runtime files, and the start-time resolution it needs
(drivers, containment, task sources, the generation's builder). Imports the
configuration, the generation, the process entries, the shared layer, and from the
worker side only what it launches.
"""
