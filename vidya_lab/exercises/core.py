"""The exercise registry and the inline check every chapter uses.

An :class:`Exercise` is defined once, in ``vidya_lab/exercises/chNN.py``. Three things read it:

* :func:`check` — the reader's immediate feedback in the notebook: prints ✅ or ❌ with a hint,
  "not answered yet" for the ``...`` placeholder, and never raises (the book build keeps executing);
* ``vidya-lab release`` — knows the answer variable of each exercise;
* ``vidya-lab grade`` — reads each student's answer out of their kernel as JSON and compares it, in
  the grader's own process, with :meth:`Exercise.expected_value` and, for functions, hidden cases.

Hints point at the likely mistake: a :class:`Mistake` computes the value a reader who made that
mistake would get (a forgotten factor 2, query heads instead of KV heads, GB for GiB …); a unit slip
(factor 1e3, 1e6, 1e9 and their inverses) and GB↔GiB are recognised for every numeric exercise.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

GIB_PER_GB = 1e9 / 2**30

#: Factors that betray a unit slip, with the hint shown for each (answer / expected ≈ factor).
UNIT_SLIPS: tuple[tuple[float, str], ...] = (
    (1e3, "about 1000× too large: a unit slip (ms vs s, kB vs B, or K vs 1)?"),
    (1e-3, "about 1000× too small: a unit slip (s vs ms, B vs kB)?"),
    (1e6, "about a million times too large: a unit slip (µs vs s, MB vs B)?"),
    (1e-6, "about a million times too small: a unit slip (s vs µs, B vs MB)?"),
    (1e9, "about 1e9× too large: bytes vs GB?"),
    (1e-9, "about 1e9× too small: GB vs bytes?"),
    (GIB_PER_GB, "off by 7.4%: you gave GiB (2**30 bytes) where GB (1e9 bytes) was asked, or the reverse"),
    (1 / GIB_PER_GB, "off by 7.4%: you gave GB (1e9 bytes) where GiB (2**30 bytes) was asked, or the reverse"),
    (2**30, "about 2**30× too large: bytes vs GiB?"),
    (2**-30, "about 2**30× too small: GiB vs bytes?"),
    (100.0, "100× too large: a percentage where a fraction (0..1) was asked?"),
    (0.01, "100× too small: a fraction where a percentage was asked?"),
)


@dataclass(frozen=True)
class Mistake:
    """A common wrong path: ``value()`` is what a reader who took it would answer."""

    value: Callable[[], float]
    hint: str


@dataclass(frozen=True)
class Exercise:
    """One graded exercise.

    Parameters
    ----------
    id : "chapter.number", e.g. ``"2.1"``.
    prompt : one line saying what is asked (the notebook holds the full text).
    expected : a zero-argument function that computes the right answer from the package.
        For ``kind="function"`` it returns the reference function instead.
    kind : ``"number"`` (a float compared with ``rel_tol``), ``"integer"`` (exact),
        ``"choice"`` (a string compared case-insensitively), ``"bool"``, or ``"function"``
        (the reader writes a function, tested on ``cases``).
    unit : what the answer is in, shown in feedback ("bytes", "s", "tokens/s").
    rel_tol : relative tolerance for ``kind="number"``.
    mistakes : common wrong answers with the hint for each.
    hint : shown when the answer is wrong in none of the recognised ways.
    cases : for ``kind="function"``: public argument tuples the inline check tries.
        The grader has hidden cases of its own.
    answer_name : the notebook variable (or function) holding the answer;
        default ``answer_<chapter>_<number>``.
    points : marks for a right answer.
    """

    id: str
    prompt: str
    expected: Callable[[], Any]
    kind: str = "number"
    unit: str = ""
    rel_tol: float = 0.01
    mistakes: tuple[Mistake, ...] = ()
    hint: str = "re-read the question and check each factor and unit"
    cases: tuple[tuple, ...] = ()
    answer_name: str = ""
    points: int = 1
    choices: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if not self.answer_name:
            object.__setattr__(self, "answer_name", "answer_" + self.id.replace(".", "_"))

    @property
    def chapter(self) -> int:
        return int(self.id.split(".")[0])

    def expected_value(self) -> Any:
        return self.expected()


KINDS = {"number", "integer", "choice", "bool", "function"}


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one answer: ``status`` is 'right', 'wrong' or 'unanswered'."""

    status: str
    message: str

    @property
    def right(self) -> bool:
        return self.status == "right"


def _close(a: float, b: float, rel_tol: float) -> bool:
    if b == 0:
        return abs(a) <= rel_tol
    return abs(a - b) <= rel_tol * abs(b)


def _as_float(answer: Any) -> float | None:
    """A plain float from an int/float/numpy scalar; None for anything else (no __eq__ tricks)."""
    if isinstance(answer, bool):
        return None
    try:
        import numpy as np

        if isinstance(answer, np.generic) and np.issubdtype(type(answer), np.number):
            return float(answer)
    except Exception:  # pragma: no cover - numpy is a dependency
        pass
    if type(answer) in (int, float):
        return float(answer)
    return None


def judge_number(answer: Any, expected: float, ex: Exercise) -> Verdict:
    """Compare a numeric answer; recognise the exercise's mistakes and unit slips."""
    value = _as_float(answer)
    unit = f" {ex.unit}" if ex.unit else ""
    if value is None or not math.isfinite(value):
        return Verdict("wrong", f"expected a finite number{unit}, got {type(answer).__name__}")
    if ex.kind == "integer":
        if value == expected:
            return Verdict("right", f"{_fmt(value)}{unit}")
    elif _close(value, float(expected), ex.rel_tol):
        return Verdict("right", f"{_fmt(value)}{unit} (within {ex.rel_tol:.0%})")
    for mistake in ex.mistakes:
        try:
            wrong = float(mistake.value())
        except Exception:  # a broken mistake must not break the check
            continue
        if _close(value, wrong, max(ex.rel_tol, 1e-9)):
            return Verdict("wrong", mistake.hint)
    if expected != 0:
        ratio = value / float(expected)
        for factor, hint in UNIT_SLIPS:
            if _close(ratio, factor, max(ex.rel_tol, 0.005)):
                return Verdict("wrong", hint)
    return Verdict("wrong", ex.hint)


def judge_function(func: Any, reference: Callable, cases: Sequence[tuple], ex: Exercise) -> Verdict:
    """Call ``func`` on each case and compare with ``reference`` (numbers within ``rel_tol``)."""
    if not callable(func):
        return Verdict("wrong", f"expected a function named {ex.answer_name}, got {type(func).__name__}")
    for args in cases:
        want = reference(*args)
        try:
            got = func(*args)
        except Exception as exc:  # the reader's code may raise anything
            return Verdict("wrong", f"{ex.answer_name}{args} raised {type(exc).__name__}: {exc}")
        got_f = _as_float(got)
        if got_f is None or not _close(got_f, float(want), ex.rel_tol):
            return Verdict("wrong", f"{ex.answer_name}{args} returned {got!r}; {ex.hint}")
    return Verdict("right", f"{ex.answer_name} agrees on {len(cases)} cases")


def judge(ex: Exercise, answer: Any) -> Verdict:
    """Judge ``answer`` for ``ex`` in this process. Never raises."""
    try:
        if answer is Ellipsis:
            return Verdict("unanswered", "not answered yet: replace ... with your answer")
        if ex.kind == "function":
            return judge_function(answer, ex.expected_value(), ex.cases, ex)
        expected = ex.expected_value()
        if ex.kind in ("number", "integer"):
            return judge_number(answer, expected, ex)
        if ex.kind == "bool":
            if isinstance(answer, bool) and answer == bool(expected):
                return Verdict("right", str(answer))
            return Verdict("wrong", ex.hint)
        # choice
        if isinstance(answer, str) and answer.strip().lower() == str(expected).strip().lower():
            return Verdict("right", answer)
        if ex.choices and not (isinstance(answer, str) and answer.strip().lower()
                               in {c.lower() for c in ex.choices}):
            return Verdict("wrong", "answer with one of: " + ", ".join(repr(c) for c in ex.choices))
        return Verdict("wrong", ex.hint)
    except Exception as exc:  # never break the book build
        return Verdict("wrong", f"could not check this answer ({type(exc).__name__}: {exc})")


def _fmt(value: float) -> str:
    return f"{value:,.6g}" if abs(value) < 1e15 else f"{value:.4e}"


# ----------------------------------------------------------------------------- registry

def chapter_exercises(chapter: int) -> list[Exercise]:
    """The exercises of one chapter, in order; [] for a chapter that has none yet."""
    try:
        module = importlib.import_module(f"vidya_lab.exercises.ch{chapter:02d}")
    except ModuleNotFoundError as exc:
        if exc.name == f"vidya_lab.exercises.ch{chapter:02d}":
            return []
        raise
    return list(module.EXERCISES)


def all_exercises() -> list[Exercise]:
    """Every registered exercise, chapters 1 to 6 in order."""
    return [ex for ch in range(1, 7) for ex in chapter_exercises(ch)]


def get_exercise(exercise_id: str) -> Exercise:
    """Look an exercise up by id ("2.1"); a clear ``KeyError`` lists the known ids."""
    try:
        chapter = int(str(exercise_id).split(".")[0])
    except ValueError:
        raise KeyError(f"exercise id must look like '2.1', got {exercise_id!r}") from None
    for ex in chapter_exercises(chapter):
        if ex.id == exercise_id:
            return ex
    known = ", ".join(e.id for e in chapter_exercises(chapter)) or "none"
    raise KeyError(f"unknown exercise {exercise_id!r}; chapter {chapter} has: {known}")


def check(exercise_id: str, answer: Any) -> None:
    """Print ✅/❌ and a hint for the reader's ``answer``. Never raises.

    Returns None on purpose: the check is the last line of an answer cell, and a returned bool would
    be echoed under the feedback. Code that needs the verdict calls :func:`judge`.
    """
    try:
        ex = get_exercise(exercise_id)
    except Exception as exc:
        print(f"❌ exercise {exercise_id}: {exc}")
        return None
    verdict = judge(ex, answer)
    mark = {"right": "✅", "wrong": "❌", "unanswered": "⏳"}[verdict.status]
    print(f"{mark} exercise {ex.id}: {verdict.message}")
    return None
