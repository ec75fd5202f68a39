"""The generation every worker of one worker generation boots from: its spec
(:mod:`.spec`, one typed record) and its published, immutable files (:mod:`.published`,
``var/generations/``).

Written by the daemon, read by every worker: it imports only the process entries'
snapshot below it. Empty on purpose: a worker's boot imports one module of it at a time.
"""
