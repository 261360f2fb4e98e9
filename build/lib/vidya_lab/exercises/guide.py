"""How to write an exercise (for chapter authors). This module holds no code; it is the guide.

Where things go
===============
* ``vidya_lab/exercises/chNN.py`` — the chapter's **exercise data**, public: constants, traces,
  the deployment, and ``GIVENS``, the numbers its exercises depend on. The chapter imports it as
  ``exN`` and its text and solutions may use anything here. A graded notebook has it.
* ``vidya_lab/exercises/key/chNN.py`` — the **answer key**: the functions that compute answers and
  mistakes, and the ``EXERCISES`` list. A graded notebook does NOT have it (the grader gives kernels
  a copy of the package without ``key/``), so no chapter cell may import from it (a test checks).
* ``chapters/NN_name.md`` — the exercise text in an ``{exercise-start}`` block, then the answer cell,
  then the worked solution in ``{solution-start} … {solution-end}`` (removed by ``release``).

Per-student numbers (givens)
============================
Declare each number once in ``chNN.py``, with the book's value as its default::

    GIVENS = {
        "busy_seed": Seed(BUSY_SEED, about="seed of your busy trace, ex1.busy_trace()"),
        "headroom": Pick(2.0, (1.5, 2.0, 2.5, 3.0), about="times faster than reading"),
        "words_per_min": Between(238.0, 180.0, 300.0, step=1.0, unit="words/min"),
    }

``Seed`` draws a random seed, ``Pick`` one of a few values, ``Between`` a number on a grid. Choose
ranges in which every value keeps the exercise meaningful (a "busy but sustainable" load must stay
sustainable for every draw) and the answers of two students apart by more than ``rel_tol``. Helpers
take the student's value with ``given(CHAPTER, "busy_seed", BUSY_SEED)`` when called without an
argument, so the chapter's text and solution run unchanged on the student's own data. The answer
and every mistake are functions of the mapping ``g`` of the exercise's givens, and the exercise lists
the ones it uses::

    Exercise(id="1.4", prompt="largest TPOT (s) that streams headroom× as fast as your student reads",
             givens={k: GIVENS[k] for k in ("words_per_min", "headroom")},
             answer=lambda g: 60 / (g["words_per_min"] * TOKENS_PER_WORD * g["headroom"]),
             mistakes=(Mistake(lambda g: ..., "the hint for that slip"),), unit="s")

The answer cell shows the student their numbers, then holds the placeholder and the check::

    g = ex1.my_givens("1.4")  # answer for these numbers (your own, if your instructor issued them)
    answer_1_4 = ...  # your answer, in seconds per token
    check("1.4", answer_1_4)

and the solution uses ``g`` (or the helpers) instead of the book's constants. ``release`` refuses an
exercise with givens whose answer cell does not call ``my_givens``.

One exercise of each kind
=========================
``kind="number"`` (the default)
    ``answer=lambda g: …`` returns a float; right within ``rel_tol`` (1 % by default). Give each
    common wrong path a ``Mistake`` (its value and the hint); unit slips (×1e3, ×1e9, GB↔GiB, %) are
    recognised for every number without a Mistake.
``kind="integer"``
    exact; for counts (GPUs, replicas, steps). Mistakes as above.
``kind="choice"``
    ``answer=lambda g: "memory"`` and ``choices=("compute", "memory", "network")``; compared without
    case or surrounding spaces; an answer outside the choices is told the choices.
``kind="bool"``
    ``answer=lambda g: True``; only a real ``bool`` is right.
``kind="function"``
    the student writes a function; ``reference=`` the package's own implementation (a plain ``def``
    at the top level of a module, or a method of a top-level class), ``cases=`` a few public
    argument tuples, ``answer_name=`` the function's name. ``check`` tries the public cases; the
    grader adds the instructor's cases and fresh perturbed ones, and calls the student's function in
    a kernel where the reference's body is ``raise`` (the chapter's other cells may call the
    reference freely: they run in the first kernel, where it exists). Its answer cell is a stub::

        tpot_target = ...  # replace with: def tpot_target(words_per_min, tokens_per_word, headroom): ...
        check("1.6", tpot_target)

Every exercise: ``id`` "chapter.number" (numbered per chapter from 1), a one-line ``prompt``, a
``unit``, ``points`` (1 by default), a ``hint`` for wrong answers no Mistake explains, and its
``level``: ``"compute"`` (by hand, then checked), ``"explain"`` (a choice, or a number only the right
reasoning gives) or ``"design"`` (choose under a new constraint and justify with a computed number).
A chapter has at least six, at all three levels, at least one of them a design exercise; the
notebook titles each "Exercise N.k" (tests/test_course_structure.py checks).

Tests to add (``tests/test_exercises_chNN.py``)
===============================================
The right answer computed by hand from the chapter's data (not by calling the key); each mistake
gets its own hint (``test_exercises_core`` checks that for every exercise at the book's numbers, and
``test_exercises_givens`` that, for every exercise with givens, a student is right for their own
numbers and wrong with a classmate's or the book's answer);
``make page PAGE=chapters/NN_…`` builds the chapter with the solutions checked.
"""
