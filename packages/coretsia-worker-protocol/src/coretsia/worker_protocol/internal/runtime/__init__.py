"""Plumbing every Coretsia executable shares: one home for each piece. No stability promise.

The supervisor, the guardian, the proc host, the worker launcher and the reference task
sources all need a few of the same mechanisms. Each lives here once:

- :mod:`.logs`: the structured log events and their allow-list of safe fields;
- :mod:`.channel`: the framed guardian channel that carries descriptors (trio);
- :mod:`.subreaper`: becoming (and ceasing to be) a child subreaper;
- :mod:`.exit_kind`: the bounded names for how a process ended;
- :mod:`.imports`: the one walk from a frozen ``module:attr`` address to its object;
- :mod:`.lazy`: PEP 562 lazy exports for a package's public names.

Why in the protocol distribution: it is the one every other distribution already depends
on, so the supervisor can share the guardian's channel and logs without importing the
guardian package (which it only launches), and the proc host and the sources without
depending on either daemon. Why not in the public part: none of this is a contract for
third parties.

This package imports nothing itself, so each process loads only the modules it uses: the
``status`` probe none of them, a worker only :mod:`.imports` (to follow its task source's
address), and only the guardian and the supervisor load trio, through :mod:`.channel`
(the ``runtime`` extra of this distribution declares it; both depend on trio anyway).
"""
