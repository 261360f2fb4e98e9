"""What an exercise is, and how one answer is judged: :class:`Exercise`, :class:`Mistake`, :func:`judge`.

An exercise is defined once, in the answer key ``vidya_lab/exercises/key/chNN.py`` (see the package
docstring for how to write one of each kind). Three things read it:

* :func:`vidya_lab.exercises.check` — the reader's immediate feedback in the notebook;
* ``vidya-lab release`` — the answer variable of each exercise and the student's own numbers;
* ``vidya-lab grade`` — compares each student's answer, in the grader's own process, with
  :func:`solve` for that student's givens and, for functions, with hidden cases.

An exercise's answer is a function of its **givens** ``g`` (a mapping of the numbers the student was
given: the book's own by default, a student's own when the instructor issues them, see
:mod:`vidya_lab.exercises.givens`). Hints point at the likely mistake: a :class:`Mistake` computes the
value a reader who made that mistake would get, from the same givens; a unit slip (factor 1e3, 1e6,
1e9 and their inverses) and GB↔GiB are recognised for every numeric exercise.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .givens import Given

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
    (60.0, "about 60× too large: a unit slip (s vs min, or min vs h)?"),
    (1 / 60, "about 60× too small: a unit slip (min vs s, or h vs min)?"),
    (3600.0, "about 3600× too large: a unit slip (s vs h, or tokens/h vs tokens/s)?"),
    (1 / 3600, "about 3600× too small: a unit slip (h vs s, or tokens/s vs tokens/h)?"),
    (100.0, "100× too large: a percentage where a fraction (0..1) was asked?"),
    (0.01, "100× too small: a fraction where a percentage was asked?"),
)

KINDS = {"number", "integer", "choice", "bool", "function"}
#: What an exercise asks of the student (see :class:`Exercise`).
LEVELS = ("compute", "explain", "design")
_ID = re.compile(r"^[1-9][0-9]?\.[1-9][0-9]?$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Mistake:
    """A common wrong path: ``value(g)`` is what a reader who took it would answer, for givens ``g``."""

    value: Callable[[Mapping[str, Any]], float]
    hint: str


@dataclass(frozen=True)
class Exercise:
    """One graded exercise.

    Parameters
    ----------
    id : "chapter.number", e.g. ``"2.1"``.
    prompt : one line saying what is asked (the notebook holds the full text).
    answer : ``g -> the right answer`` for givens ``g`` (every kind except ``"function"``).
    kind : ``"number"`` (a float compared with ``rel_tol``), ``"integer"`` (exact),
        ``"choice"`` (a string compared case-insensitively), ``"bool"``, or ``"function"``
        (the reader writes a function, tested on ``cases`` and on hidden ones).
    unit : what the answer is in, shown in feedback ("bytes", "s", "tokens/s").
    rel_tol : relative tolerance for ``kind="number"`` (and for a function's outputs).
    mistakes : common wrong answers with the hint for each.
    hint : shown when the answer is wrong in none of the recognised ways.
    cases : for ``kind="function"``: public argument tuples the inline check tries.
    reference : for ``kind="function"``: the package's own implementation, a plain ``def`` at the
        top level of a module (or a method of a top-level class). The grader grades the student's
        function in a kernel where this function's code does not exist.
    answer_name : the notebook variable (or function) holding the answer;
        default ``answer_<chapter>_<number>``.
    points : marks for a right answer.
    choices : for ``kind="choice"``: the allowed answers.
    givens : the numbers this exercise depends on, ``{name: Given}`` (see
        :mod:`vidya_lab.exercises.givens`); empty: the same answer for everyone.
    level : what the exercise asks of the student (issue 17): ``"compute"`` (a number by hand,
        then checked), ``"explain"`` (a choice or a number only the right reasoning gives) or
        ``"design"`` (choose a layout, policy or setting under a new constraint and justify it
        with a computed number).
    """

    id: str
    prompt: str
    answer: Callable[[Mapping[str, Any]], Any] | None = None
    kind: str = "number"
    unit: str = ""
    rel_tol: float = 0.01
    mistakes: tuple[Mistake, ...] = ()
    hint: str = "re-read the question and check each factor and unit"
    cases: tuple[tuple, ...] = ()
    reference: Callable | None = None
    answer_name: str = ""
    points: int = 1
    choices: tuple[str, ...] = ()
    givens: Mapping[str, Given] = field(default_factory=dict)
    level: str = "compute"

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(f"id must look like '2.1' (chapter.number), got {self.id!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if self.level not in LEVELS:
            raise ValueError(f"exercise {self.id}: level must be one of {LEVELS}, got {self.level!r}")
        if self.kind == "function":
            if not callable(self.reference) or self.answer is not None:
                raise ValueError(f"exercise {self.id}: a function exercise gives reference= "
                                 "(the package's implementation), not answer=")
            if not self.cases:
                raise ValueError(f"exercise {self.id}: a function exercise needs public cases")
        elif not callable(self.answer):
            raise ValueError(f"exercise {self.id}: answer must be a function of the givens, "
                             "g -> the right answer")
        if type(self.points) is not int or self.points < 1:
            raise ValueError(f"exercise {self.id}: points must be an integer >= 1, got {self.points!r}")
        if not 0 <= self.rel_tol < 1:
            raise ValueError(f"exercise {self.id}: rel_tol must be in [0, 1), got {self.rel_tol}")
        for name, given in self.givens.items():
            if not _NAME.match(str(name)) or not isinstance(given, Given):
                raise ValueError(f"exercise {self.id}: givens must map identifiers to Given "
                                 f"objects (Seed, Pick, Between), got {name!r}: {given!r}")
        object.__setattr__(self, "givens", dict(self.givens))
        if not self.answer_name:
            object.__setattr__(self, "answer_name", "answer_" + self.id.replace(".", "_"))

    @property
    def chapter(self) -> int:
        return int(self.id.split(".")[0])

    def default_givens(self) -> dict[str, Any]:
        """The book's own numbers for this exercise."""
        return {name: given.default for name, given in self.givens.items()}

    def resolve_givens(self, givens: Mapping[str, Any] | None) -> dict[str, Any]:
        """This exercise's givens: the defaults, overridden by the entries of ``givens`` it uses."""
        g = self.default_givens()
        for name in g:
            if givens and name in givens:
                g[name] = givens[name]
        return g


def solve(ex: Exercise, givens: Mapping[str, Any] | None = None) -> Any:
    """The right answer of ``ex`` for ``givens`` (the reference function for a function exercise).

    For the grader and the tests: a notebook being graded cannot call it (the answer key is not
    installed in its kernel).
    """
    if ex.kind == "function":
        return ex.reference
    return ex.answer(ex.resolve_givens(givens))


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one answer: ``status`` is 'right', 'wrong' or 'unanswered'."""

    status: str
    message: str

    @property
    def right(self) -> bool:
        return self.status == "right"


def close(a: float, b: float, rel_tol: float) -> bool:
    """``a`` within ``rel_tol`` of ``b`` (absolute ``rel_tol`` when ``b`` is 0); False for inf/NaN."""
    try:
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        if b == 0:
            return abs(a) <= rel_tol
        return abs(a - b) <= rel_tol * abs(b)
    except (OverflowError, TypeError, ValueError):
        return False


def as_float(answer: Any) -> float | None:
    """A plain float from an int/float/numpy scalar; None for anything else (no __eq__ tricks)."""
    if isinstance(answer, bool):
        return None
    np = sys.modules.get("numpy")  # a numpy scalar exists only where numpy was imported; in the
    if np is not None:             # browser numpy may be absent, and a plain float still counts
        try:
            if isinstance(answer, np.generic) and np.issubdtype(type(answer), np.number):
                return float(answer)
        except Exception:  # a hostile scalar is no number
            return None
    if type(answer) in (int, float):
        try:
            return float(answer)
        except OverflowError:  # an int beyond float range
            return None
    return None


def judge_number(answer: Any, expected: float, ex: Exercise, g: Mapping[str, Any]) -> Verdict:
    """Compare a numeric answer; recognise the exercise's mistakes and unit slips."""
    value = as_float(answer)
    unit = f" {ex.unit}" if ex.unit else ""
    if value is None or not math.isfinite(value):
        return Verdict("wrong", f"expected a finite number{unit}, got {type(answer).__name__}")
    if ex.kind == "integer":
        if value == expected:
            return Verdict("right", f"{_fmt(value)}{unit}")
    elif close(value, float(expected), ex.rel_tol):
        return Verdict("right", f"{_fmt(value)}{unit} (within {ex.rel_tol:.0%})")
    for mistake in ex.mistakes:
        try:
            wrong = float(mistake.value(g))
        except Exception:  # a broken mistake must not break the check
            continue
        if close(value, wrong, max(ex.rel_tol, 1e-9)):
            return Verdict("wrong", mistake.hint)
    if expected != 0:
        ratio = value / float(expected)
        for factor, hint in UNIT_SLIPS:
            if close(ratio, factor, max(ex.rel_tol, 0.005)):
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
        got_f = as_float(got)
        if got_f is None or not close(got_f, float(want), ex.rel_tol):
            return Verdict("wrong", f"{ex.answer_name}{args} returned {got!r}; {ex.hint}")
    return Verdict("right", f"{ex.answer_name} agrees on {len(cases)} cases")


def judge_choice(answer: Any, expected: Any, ex: Exercise,
                 givens: Mapping[str, Any] | None = None) -> Verdict:
    """A string answer, compared case-insensitively (``kind="choice"``) or a strict bool; a wrong
    choice that a :class:`Mistake` names gets that mistake's hint."""
    if ex.kind == "bool":
        if isinstance(answer, bool) and answer == bool(expected):
            return Verdict("right", str(answer))
        return Verdict("wrong", ex.hint)
    if isinstance(answer, str) and answer.strip().lower() == str(expected).strip().lower():
        return Verdict("right", answer)
    if ex.choices and not (isinstance(answer, str) and answer.strip().lower()
                           in {c.lower() for c in ex.choices}):
        return Verdict("wrong", "answer with one of: " + ", ".join(repr(c) for c in ex.choices))
    for mistake in ex.mistakes:
        try:
            wrong = mistake.value(givens or {})
        except Exception:  # a broken mistake must not break the check
            continue
        if isinstance(answer, str) and isinstance(wrong, str) and \
                answer.strip().lower() == wrong.strip().lower():
            return Verdict("wrong", mistake.hint)
    return Verdict("wrong", ex.hint)


def judge(ex: Exercise, answer: Any, givens: Mapping[str, Any] | None = None) -> Verdict:
    """Judge ``answer`` for ``ex`` with ``givens`` (default: the book's), in this process. Never raises."""
    try:
        if answer is Ellipsis:
            return Verdict("unanswered", "not answered yet: replace ... with your answer")
        if ex.kind == "function":
            return judge_function(answer, ex.reference, ex.cases, ex)
        g = ex.resolve_givens(givens)
        expected = ex.answer(g)
        if ex.kind in ("number", "integer"):
            return judge_number(answer, expected, ex, g)
        return judge_choice(answer, expected, ex, g)
    except Exception as exc:  # never break the book build
        return Verdict("wrong", f"could not check this answer ({type(exc).__name__}: {exc})")


def _fmt(value: float) -> str:
    return f"{value:,.6g}" if abs(value) < 1e15 else f"{value:.4e}"
