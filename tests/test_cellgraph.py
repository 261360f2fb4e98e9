"""Which cells the grader runs: the book's own cells are left out only when nothing graded can read
what they bind (static analysis, checked here by hand-built cases; ``test_grader_chapters.py``
grades every chapter's solutions this way for full marks)."""

from __future__ import annotations

import nbformat
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab.exercises import cellgraph


def _nb(*cells):
    """Cells as ``"source"`` (a student's) or ``("book", "source")`` (a released book-only cell)."""
    nb = nbformat.v4.new_notebook()
    for cell in cells:
        book = isinstance(cell, tuple)
        c = nbformat.v4.new_code_cell(cell[1] if book else cell)
        if book:
            c.metadata["vidya_lab"] = {"role": cellgraph.BOOK_ROLE,
                                       "source_sha256": cellgraph.source_digest(c.source)}
        nb.cells.append(c)
    return nb


def _skipped(nb, names=("answer",)):
    return sorted(set(range(len(nb.cells))) - set(cellgraph.cells_to_run(nb.cells, names)))


def test_a_book_cell_nothing_reads_is_skipped_and_one_that_feeds_a_later_cell_runs():
    nb = _nb("import numpy as np", ("book", "runs = np.arange(5)\nglue('x', runs.sum())"),
             ("book", "busy = np.ones(3)"), "answer = float(busy.mean())")
    assert _skipped(nb) == [1]


def test_a_changed_book_cell_always_runs():
    nb = _nb(("book", "side = 1"), "answer = 2")
    assert _skipped(nb) == [0]
    nb.cells[0].source = "side = 1\nanswer = 3"  # the student wrote in it: it runs
    assert _skipped(nb) == []
    nb.cells[0].source = "side = 1"
    nb.cells[0].metadata["vidya_lab"]["source_sha256"] = "0" * 64
    assert _skipped(nb) == []


def test_a_book_cell_binding_an_answer_or_a_function_a_later_cell_calls_runs():
    assert _skipped(_nb(("book", "answer = 1"), "print('hi')")) == []
    nb = _nb("def f():\n    return K * 2", ("book", "K = 3"), "answer = f()")
    assert _skipped(nb) == []  # K is read when f is called, after the book cell
    nb = _nb("def f():\n    return K * 2", ("book", "K = 3"), "answer = 1")
    assert _skipped(nb) == []  # a late read counts wherever the call may be
    assert _skipped(_nb(("book", "g = lambda: 1"), "answer = [g() for _ in range(2)]")) == []


def test_loop_and_comprehension_variables_are_not_reads_of_earlier_cells():
    nb = _nb(("book", "rows = [r * 2 for r in range(3)]\nkey = 'a'\nr = 5\npilot = 1"),
             "answer = [r + 1 for r in range(4)]",
             "for key, value in (('a', 1),):\n    print(key, value)",
             "pilot = 2\nprint(pilot)")
    assert _skipped(nb) == [0]
    # read before it is bound in that cell: the book cell's value is the one read
    assert _skipped(_nb(("book", "pilot = 1"), "print(pilot)\npilot = 2")) == []
    assert _skipped(_nb(("book", "total = 1"), "total += 1\nanswer = total")) == []
    # a walrus in a comprehension binds outside it
    assert _skipped(_nb(("book", "y = 0"), "answer = [(y := v) for v in range(2)]\nprint(y)")) == [0]
    # an if may not bind: what it reads after counts as read from before
    assert _skipped(_nb(("book", "z = 1"), "if answer_flag:\n    z = 2\nanswer = z")) == []


def test_a_cell_the_analysis_cannot_see_into_makes_everything_before_it_run():
    for opaque in ("exec('answer = busy')", "globals()['answer'] = busy", "%run other.py",
                   "from numpy import *", "def broken(:"):
        nb = _nb(("book", "busy = 1"), opaque, ("book", "later = 2"))
        assert _skipped(nb) == [2], opaque
    too_deep = "x = " + "+".join(["busy"] * 3000)  # the parser itself gives up: opaque
    assert _skipped(_nb(("book", "busy = 1"), too_deep, ("book", "later = 2"))) == [2]
    assert cellgraph.function_cells(["busy = 1", too_deep, "def f():\n    return 1"], "f") == [1, 2]
    deep = "x = " + "+".join(["busy"] * 2000)  # parses, and is read without recursion
    assert _skipped(_nb(("book", "busy = 1"), deep, ("book", "b = 2"), "answer = x")) == [2]
    assert cellgraph.function_cells(["busy = 1", deep, "def f():\n    return 1"], "f") == [2]
    # a book cell that itself cannot be read runs
    assert _skipped(_nb(("book", "exec('x = 1')"), "answer = 1")) == []


NAMES = st.sampled_from(["a", "b", "c", "answer"])


@st.composite
def _cells(draw):
    """Straight-line cells: ``x = y + z`` and ``x += y`` lines, some cells the book's."""
    out = []
    for _ in range(draw(st.integers(1, 6))):
        lines = [f"{draw(NAMES)} {draw(st.sampled_from(['=', '+=']))} "
                 + " + ".join(draw(st.lists(NAMES, max_size=2)) or ["1"])
                 for _ in range(draw(st.integers(1, 3)))]
        out.append(("book", "\n".join(lines)) if draw(st.booleans()) else "\n".join(lines))
    return out


def _run(nb, which):
    env: dict = {}
    for i in which:
        try:
            exec(nb.cells[i].source, {}, env)
        except NameError:
            pass
    return env.get("answer")


@settings(max_examples=300, deadline=None)
@given(_cells())
def test_skipping_never_changes_the_answer(cells):
    """Property: running only the chosen cells leaves ``answer`` what the whole notebook gives
    (cells that raise stop where they raise, as in a kernel)."""
    nb = _nb(*cells)
    assert _run(nb, cellgraph.cells_to_run(nb.cells, ["answer"])) == _run(nb, range(len(cells)))
