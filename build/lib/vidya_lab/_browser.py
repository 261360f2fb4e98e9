"""What changes when a chapter runs in the reader's browser (JupyterLite's Pyodide kernel).

The book's JupyterLite copy of each chapter starts with one extra cell, ``setup_notebook()``. Nothing
else in a chapter knows where it runs, except a heavy cell that asks :func:`lighter` for a smaller
setting in the browser (WebAssembly Python is slower than a laptop's CPython, and a chapter must run
top to bottom in the browser within a minute).

* ``IN_BROWSER`` is True under Pyodide (``sys.platform == "emscripten"``).
* In the browser there are no processes or threads: the grader (``vidya-lab grade``) runs only in a
  real Python; the chapters' own cells never need it.
* The book's build writes the numbers a chapter computes into its text with ``myst_nb.glue``; in the
  browser there is no build and no myst_nb, so ``setup_notebook`` registers a stand-in ``myst_nb``
  whose ``glue`` shows the value when asked to (``display=True``) and otherwise does nothing.
"""

from __future__ import annotations

import sys
import types

IN_BROWSER = sys.platform == "emscripten"


def lighter(full, browser):
    """``full`` in a real Python, ``browser`` in the reader's browser (a heavy cell's setting)."""
    return browser if IN_BROWSER else full


def glue(name: str, value, display: bool = True) -> None:
    """The browser's stand-in for ``myst_nb.glue``: shows ``value`` if ``display``, else nothing."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if display:
        from IPython.display import display as show

        show(value)


def setup_notebook(*, force: bool = False) -> bool:
    """Prepare a chapter's kernel in the browser; return True if the stand-ins were installed.

    Outside the browser this does nothing (a real ``myst_nb`` stays as it is) unless ``force``.
    """
    if not (IN_BROWSER or force):
        return False
    if "myst_nb" not in sys.modules:
        stand_in = types.ModuleType("myst_nb", "In the browser: glue() only shows its value.")
        stand_in.glue = glue
        sys.modules["myst_nb"] = stand_in
    return True
