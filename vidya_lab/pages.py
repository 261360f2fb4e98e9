"""``glue`` for a chapter's kernel wherever it runs, with or without myst_nb.

The book's build writes the numbers a chapter computes into its text with ``myst_nb.glue``. A
released student handout runs where only its own ``requirements.txt`` is installed, without
myst-nb: ``vidya-lab release`` points the handout's ``from myst_nb import glue`` here, so the cell
still runs (the value is shown if ``display``, as the in-browser book does) and the rest of the
notebook after it too.
"""

from __future__ import annotations

try:  # the book's build and Binder: the real thing
    from myst_nb import glue
except ImportError:  # a handout's own environment, the browser: show the value, record nothing
    from vidya_lab._browser import glue

__all__ = ["glue"]
