"""Per-student numbers ("givens"): each student answers for their own, so an answer cannot be copied.

An exercise declares the numbers its answer depends on, each with the book's value as its default::

    BUSY_SEED = Seed(101, about="seed of your busy trace")
    HEADROOM = Pick(2.0, (1.5, 2.0, 2.5, 3.0), about="times faster than reading")
    WPM = Between(238, 180, 300, step=1, unit="words/min", about="reading speed")

    Exercise(id="1.4", ..., givens={"words_per_min": WPM, "headroom": HEADROOM},
             answer=lambda g: 60 / (g["words_per_min"] * TOKENS_PER_WORD * g["headroom"]))

Where the numbers come from:

* in the book (and for any reader without an instructor): every default, the book's own numbers;
* in a class: ``vidya-lab release --roster ROSTER --secret-file SECRET`` draws each student's numbers
  from a per-class secret and the student's id (:func:`draw_givens`, an HMAC-SHA256: the same secret
  and id give the same numbers, a classmate gets others, and nobody can tell them without the
  secret) and writes them into that student's notebook as a ``use_givens(...)`` cell;
  ``vidya-lab grade --secret-file SECRET`` draws them again, in the grader's own process, from the
  student's id: what the notebook's cell says is never trusted.

In the kernel, :func:`use_givens` records the student's numbers, :func:`my_givens` prints them (the
answer cell of every exercise with givens calls it), ``check`` judges against them, and a chapter's
helpers (``ex1.busy_trace()``) read them with :func:`given`, so the chapter's own solution code works
unchanged on the student's numbers.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Given(ABC):
    """One number (or string) an exercise depends on; ``default`` is the book's value."""

    default: Any
    about: str = field(default="", kw_only=True)
    unit: str = field(default="", kw_only=True)

    @abstractmethod
    def pick(self, n: int) -> Any:
        """The value drawn for the non-negative integer ``n`` (a deterministic mapping)."""

    def allows(self, value: Any) -> bool:
        """Whether ``value`` is one this given can take (the default always is)."""
        return value == self.default

    def describe(self, value: Any) -> str:
        unit = f" {self.unit}" if self.unit else ""
        about = f" ({self.about})" if self.about else ""
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        return f"{shown}{unit}{about}"


@dataclass(frozen=True)
class Seed(Given):
    """A random seed: an integer in [1, 2**31 − 1)."""

    def pick(self, n: int) -> int:
        return 1 + n % (2**31 - 2)

    def allows(self, value: Any) -> bool:
        return type(value) is int and 1 <= value < 2**31


@dataclass(frozen=True)
class Pick(Given):
    """One of a few ``options`` (numbers or strings)."""

    options: tuple = ()

    def __post_init__(self) -> None:
        if not self.options:
            raise ValueError("Pick needs options to choose from")

    def pick(self, n: int) -> Any:
        return self.options[n % len(self.options)]

    def allows(self, value: Any) -> bool:
        return value == self.default or any(type(value) is type(o) and value == o for o in self.options)


@dataclass(frozen=True)
class Between(Given):
    """A number on the grid ``low, low + step, …, high`` (an integer grid if all three are ints)."""

    low: float = 0.0
    high: float = 1.0
    step: float = 1.0

    def __post_init__(self) -> None:
        if not (self.step > 0 and self.high >= self.low):
            raise ValueError(f"Between needs low <= high and step > 0, got {self.low}, {self.high}, "
                             f"{self.step}")

    @property
    def _ints(self) -> bool:
        return all(type(x) is int for x in (self.low, self.high, self.step))

    def pick(self, n: int) -> float | int:
        steps = int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1
        value = self.low + (n % steps) * self.step
        if self._ints:
            return int(value)
        decimals = max(0, -int(math.floor(math.log10(self.step))) + 1)
        return round(float(value), decimals)

    def allows(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return value == self.default or self.low - 1e-9 <= value <= self.high + 1e-9


def check_student_id(student: object) -> str:
    """A student id as used in file names and the CSV: 1–64 of ``A-Z a-z 0-9 . _ @ + -``."""
    if not isinstance(student, str) or not _STUDENT_ID.match(student):
        raise ValueError("a student id must be 1 to 64 letters, digits or . _ @ + - (starting "
                         f"with a letter or digit), got {student!r}")
    return student


def derive(secret: bytes, student: str, chapter: int, name: str) -> int:
    """A 64-bit integer from the class secret and (student, chapter, given name): HMAC-SHA256."""
    msg = f"vidya-lab givens v1|{chapter}|{name}|{student}".encode()
    return int.from_bytes(hmac.new(secret, msg, hashlib.sha256).digest()[:8], "big")


def draw_givens(spec: Mapping[str, Given], secret: bytes, student: str, chapter: int) -> dict:
    """The student's own value of every given in ``spec`` (each drawn on its own, so adding a given
    to a chapter changes no other)."""
    check_student_id(student)
    return {name: g.pick(derive(secret, student, chapter, name)) for name, g in spec.items()}


def chapter_spec(exercises: Sequence) -> dict[str, Given]:
    """Every given the exercises of one chapter use; a name used twice must mean the same given."""
    spec: dict[str, Given] = {}
    for ex in exercises:
        for name, g in ex.givens.items():
            if name in spec and spec[name] != g:
                raise ValueError(f"exercise {ex.id}: given {name!r} differs from the one another "
                                 "exercise of the chapter declares")
            spec[name] = g
    return spec


# ----------------------------------------------------------------------------- in the kernel

_STATE: dict[str, Any] = {"student": None, "chapters": {}}


def use_givens(student: str | None, chapter: int, values: Mapping[str, Any]) -> None:
    """Record the student's own numbers for ``chapter`` (the released notebook's first cell calls it)."""
    if student is not None:
        check_student_id(student)
    if type(chapter) is not int or not 0 < chapter < 100:
        raise ValueError(f"chapter must be an integer in 1..99, got {chapter!r}")
    clean = {}
    for name, value in dict(values).items():
        if not _NAME.match(str(name)) or not (value is None or type(value) in (int, float, str, bool)):
            raise ValueError(f"givens must map names to numbers or strings, got {name!r}: {value!r}")
        clean[name] = value
    _STATE["student"] = student
    _STATE["chapters"][chapter] = clean


def current_givens(chapter: int) -> dict[str, Any]:
    """The numbers :func:`use_givens` recorded for ``chapter`` ({} when none: the book's own)."""
    return dict(_STATE["chapters"].get(chapter, {}))


def given(chapter: int, name: str, default: Any) -> Any:
    """One number a chapter helper needs: the student's own if issued, else the book's ``default``."""
    return _STATE["chapters"].get(chapter, {}).get(name, default)


def my_givens(exercise_id: str) -> dict[str, Any]:
    """Print, and return, the numbers exercise ``exercise_id`` asks you to use. Never raises."""
    try:
        chapter = int(str(exercise_id).split(".")[0])
    except ValueError:
        print(f"❌ {exercise_id!r} is not an exercise id like '1.4'")
        return {}
    issued = current_givens(chapter)
    spec: dict[str, Given] = {}
    try:
        from .registry import get_exercise

        spec = get_exercise(exercise_id).givens
    except Exception:  # while grading the answer key is not installed: show what was issued
        pass
    values = {n: issued.get(n, g.default) for n, g in spec.items()} if spec else issued
    whose = "your own numbers" if issued else "the book's numbers"
    if not values:
        print(f"exercise {exercise_id}: no numbers to give; use the ones in the text")
        return {}
    shown = "; ".join(f"{n} = {spec[n].describe(v) if n in spec else v}" for n, v in values.items())
    print(f"exercise {exercise_id}, {whose}: {shown}")
    return values


def read_secret(path) -> bytes:
    """The class secret from ``path`` (a text file of at least 16 characters, at most 4 KiB)."""
    from vidya_lab._validate import check_input_file

    p = check_input_file("--secret-file", path, max_bytes=4096)
    text = p.read_bytes().strip()
    if len(text) < 16:
        raise ValueError(f"--secret-file: {p} holds {len(text)} characters; a class secret needs "
                         "at least 16 (`vidya-lab release --roster ...` writes one)")
    return text


def new_secret() -> str:
    """A fresh class secret: 64 hex digits from the operating system's random source."""
    import secrets

    return secrets.token_hex(32)
