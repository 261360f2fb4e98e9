"""Exercises: the registry, the reader's inline ``check`` and (for instructors) release and grading."""

from .core import (
    Exercise,
    Mistake,
    Verdict,
    all_exercises,
    chapter_exercises,
    check,
    get_exercise,
    judge,
)

__all__ = [
    "Exercise",
    "Mistake",
    "Verdict",
    "all_exercises",
    "chapter_exercises",
    "check",
    "get_exercise",
    "judge",
]
