"""The error catalogue as the Markdown table rows that docs/ shows, generated from the code.

docs/protocol.md and docs/operations.md say their catalogue tables are generated from
``REASON_CODES``, ``EXIT_CODES`` and ``EXPLANATIONS``: the docs tests generate the rows
here and compare, so a hand edit on either side shows up as a failing test. Regenerate a
page's rows with ``.venv/bin/python tests/support/catalogue_table.py``.
"""

from __future__ import annotations

from coretsia.worker_protocol.catalogue import EXIT_CODES, EXPLANATIONS, REASON_CODES, Reason


def catalogue_rows() -> list[str]:
    """One ``| code | reason | exit | meaning |`` row per reason, in catalogue order."""
    rows = []
    for reason in Reason:
        code = REASON_CODES[reason]
        cells = (f"`{code.value}`", f"`{reason.value}`", str(int(EXIT_CODES[code])))
        rows.append(f"| {' | '.join(cells)} | {EXPLANATIONS[reason]} |")
    return rows


if __name__ == "__main__":
    print("\n".join(catalogue_rows()))
