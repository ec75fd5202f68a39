"""Reference task sources for Coretsia Worker.

:mod:`coretsia.sources.sqlite_queue` is a durable queue in one SQLite file, and
:mod:`coretsia.sources.sqlite_source` the ``sqlite`` task source (task type ``queue``)
that feeds a pool from it. They depend only on the task-source SPI of
``coretsia-worker-protocol``; the supervisor never imports them (it finds the source
through its entry point and the worker imports the frozen ``module:attr``).
"""

from coretsia.sources._version import __version__

__all__ = ["__version__"]
