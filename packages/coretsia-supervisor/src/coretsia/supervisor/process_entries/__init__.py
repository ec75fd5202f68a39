"""Process entries (seed 003): what an entry is, its ``@process`` declaration and
discovery, the registry with its rules, the errors, and the snapshot a generation carries.

The vocabulary every side of a process pool shares: the ``ProcessManager`` library above
it (:mod:`coretsia.supervisor.process_manager`), the daemon's ``start`` (``[[process]]``
tables), the generation's spec, and each entry worker. The public names are
re-exported by :mod:`coretsia.supervisor.process`. Empty on purpose.
"""
