"""Exercises: the reader's inline ``check``, per-student numbers, and (for instructors) release and
grading. How to write an exercise of each kind: see :mod:`vidya_lab.exercises.guide`."""

from .core import Exercise, Mistake, Verdict, judge, solve
from .givens import Between, Pick, Seed, my_givens, use_givens
from .registry import all_exercises, chapter_exercises, check, get_exercise

__all__ = [
    "Between",
    "Exercise",
    "Mistake",
    "Pick",
    "Seed",
    "Verdict",
    "all_exercises",
    "chapter_exercises",
    "check",
    "get_exercise",
    "judge",
    "my_givens",
    "solve",
    "use_givens",
]
