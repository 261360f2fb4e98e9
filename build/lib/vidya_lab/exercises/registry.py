"""The exercise registry (the answer key's ``EXERCISES`` lists) and the inline ``check``.

The answer key lives in ``vidya_lab/exercises/key/chNN.py``, one module per chapter, each with an
``EXERCISES`` list. It is a separate package on purpose: ``vidya-lab grade`` runs every notebook
with a copy of vidya_lab whose ``key`` package is replaced by one that refuses to import, so a
notebook being graded cannot look its answers up (``get_exercise("1.1")`` and ``check`` then say
so instead of answering).
"""

from __future__ import annotations

import importlib
from typing import Any

from .core import Exercise, judge
from .givens import current_givens

KEY_PACKAGE = "vidya_lab.exercises.key"


class KeyUnavailable(ImportError):
    """The answer key is not installed (a notebook being graded)."""


def chapter_exercises(chapter: int) -> list[Exercise]:
    """The exercises of one chapter, in order; [] for a chapter that has none yet."""
    name = f"{KEY_PACKAGE}.ch{int(chapter):02d}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return []
        raise
    except ImportError as exc:
        raise KeyUnavailable(str(exc)) from None
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
    """Print ✅/❌ and a hint for the reader's ``answer`` (for the reader's own numbers, if an
    instructor issued them). Never raises.

    Returns None on purpose: the check is the last line of an answer cell, and a returned bool would
    be echoed under the feedback. Code that needs the verdict calls :func:`judge`.
    """
    try:
        ex = get_exercise(exercise_id)
    except KeyUnavailable:
        print(f"⏳ exercise {exercise_id}: not checked here (your notebook is being graded)")
        return None
    except Exception as exc:
        print(f"❌ exercise {exercise_id}: {exc}")
        return None
    verdict = judge(ex, answer, current_givens(ex.chapter))
    mark = {"right": "✅", "wrong": "❌", "unanswered": "⏳"}[verdict.status]
    print(f"{mark} exercise {ex.id}: {verdict.message}")
    return None
