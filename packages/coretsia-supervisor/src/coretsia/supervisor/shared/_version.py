"""The version of this distribution: the repo-wide version (see VERSION at the top)."""

__version__ = "0.1.0"
