"""What a grading run needs before the first kernel starts: the registry, the grading cases, the spec.

* :func:`load_registry` — the package's answer key (chapters 1–6) or an ``--registry`` module's
  ``EXERCISES``; a missing or wrong module is a ``ValueError`` before any work.
* :func:`make_plan` — for each function exercise, the grading cases (public, the instructor's, and
  fresh ones drawn from a secret random source) with the reference's outputs, computed here; and the
  spec the workers send to kernels: answer names and case inputs only, never an expected value.
* :meth:`Plan.expected` — a numeric exercise's answer for one student's givens, computed here, once.
"""

from __future__ import annotations

import functools
import importlib
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import registry as _registry
from .core import Exercise, solve
from .givens import Given, chapter_spec
from .hidden import encode_args, grading_cases


@dataclass
class Registry:
    """Every exercise the grader knows, and the modules that hold them (the answer key)."""

    exercises: list[Exercise]
    key_modules: list[str]
    warnings: list[str] = field(default_factory=list)

    def chapter(self, chapter: int) -> list[Exercise]:
        return [ex for ex in self.exercises if ex.chapter == chapter]

    @property
    def chapters(self) -> list[int]:
        return sorted({ex.chapter for ex in self.exercises})

    def givens_spec(self, chapter: int) -> dict[str, Given]:
        return chapter_spec(self.chapter(chapter))


def _module_exercises(module: str) -> list[Exercise]:
    if not isinstance(module, str) or not module.strip() or any(c in module for c in "/\\ "):
        raise ValueError(f"--registry must be a module name like 'mycourse.key', got {module!r}")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ValueError(f"--registry: no module named {exc.name or module!r} (it must be "
                         "importable, e.g. from a folder on PYTHONPATH)") from None
    except Exception as exc:
        raise ValueError(f"--registry {module}: importing it failed ({type(exc).__name__}: "
                         f"{exc})") from None
    exercises = getattr(mod, "EXERCISES", None)
    if not isinstance(exercises, list | tuple) or not exercises:
        raise ValueError(f"--registry {module}: the module has no EXERCISES list")
    bad = [type(e).__name__ for e in exercises if not isinstance(e, Exercise)]
    if bad:
        raise ValueError(f"--registry {module}: EXERCISES must hold Exercise objects, got {bad[0]}")
    return list(exercises)


def load_registry(module: str | None = None) -> Registry:
    """The package's answer key (chapters 1–6, whichever exist), or the ``EXERCISES`` of ``module``.

    A package chapter whose key fails to import is skipped with a warning, so a chapter being written
    does not stop the others from being released or graded.
    """
    if module is not None:
        exercises = _module_exercises(module)
        reg = Registry(exercises, [module])
    else:
        exercises, warnings = [], []
        for ch in range(1, 7):
            try:
                exercises += _registry.chapter_exercises(ch)
            except Exception as exc:
                warnings.append(f"chapter {ch}: exercises not loaded ({type(exc).__name__}: {exc})")
        reg = Registry(exercises, [], warnings)
    ids = [ex.id for ex in reg.exercises]
    if len(ids) != len(set(ids)):
        raise ValueError("the registry lists an exercise id twice")
    for ch in reg.chapters:
        reg.givens_spec(ch)  # a given declared two ways is an error now, not mid-grading
    return reg


def registry_exercises_for(module: str | None) -> Callable[[int], list[Exercise]]:
    """``chapter -> exercises`` for release (see :func:`load_registry`)."""
    import sys

    reg = load_registry(module)
    for w in reg.warnings:
        print(f"vidya-lab: {w}", file=sys.stderr)
    return reg.chapter


def _unwrap(obj: Any) -> Any:
    for _ in range(5):
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif isinstance(obj, types.MethodType):
            obj = obj.__func__
        elif getattr(obj, "__wrapped__", None) is not None:
            obj = obj.__wrapped__
        else:
            break
    return obj


def reference_location(func: Callable) -> tuple[str, str] | None:
    """``(module, qualname)`` of a reference implementation, or None for a lambda/closure."""
    target = _unwrap(func)
    module, qualname = getattr(target, "__module__", ""), getattr(target, "__qualname__", "")
    if not module or not qualname or "<" in qualname:
        return None
    return module, qualname


@dataclass
class FunctionPlan:
    """The cases a function exercise is graded on, with the expected outputs (grader side only)."""

    exercise: Exercise
    public: list[tuple]
    hidden: list[tuple]
    expected: list[Any]
    problem: str = ""

    @property
    def cases(self) -> list[tuple]:
        return self.public + self.hidden


@dataclass
class Plan:
    """Everything the grader needs: function cases, the spec for workers, answers per givens."""

    registry: Registry
    functions: dict[str, FunctionPlan]
    spec: dict
    references: list[tuple[str, str]]
    warnings: list[str]
    _answers: dict = field(default_factory=dict, repr=False)

    def expected(self, ex: Exercise, givens: dict) -> Any:
        """The answer of ``ex`` for ``givens``, computed in this process (cached)."""
        key = (ex.id, tuple(sorted(ex.resolve_givens(givens).items())))
        if key not in self._answers:
            try:
                self._answers[key] = ("ok", solve(ex, givens))
            except Exception as exc:
                self._answers[key] = ("failed", f"{type(exc).__name__}: {exc}")
        return self._answers[key]


def _function_plan(ex: Exercise, rng: np.random.Generator, n_random: int,
                   extra: list[tuple]) -> FunctionPlan:
    try:
        reference = ex.reference
        public, hidden = grading_cases(reference, ex.cases, rng, n_random, extra)
        expected = [reference(*args) for args in public + hidden]
        problem = "" if public + hidden else "no usable grading case"
    except Exception as exc:
        public, hidden, expected = [], [], []
        problem = f"reference failed ({type(exc).__name__}: {exc})"
    if not problem and reference_location(ex.reference) is None:
        problem = "its reference is not a named function, so it cannot be switched off"
    return FunctionPlan(ex, public, hidden, expected, problem)


def make_plan(registry: Registry, rng: np.random.Generator, n_random: int = 5,
              extra_cases: dict[str, list[tuple]] | None = None) -> Plan:
    """Grading cases and the JSON spec workers send kernels (answer names and case inputs)."""
    extra_cases = extra_cases or {}
    functions, warnings, references = {}, list(registry.warnings), []
    chapters: dict[str, dict] = {}
    for ex in registry.exercises:
        entry = chapters.setdefault(str(ex.chapter), {"values": [], "functions": []})
        if ex.kind != "function":
            entry["values"].append({"id": ex.id, "name": ex.answer_name})
            continue
        fp = _function_plan(ex, rng, n_random, list(extra_cases.get(ex.id, ())))
        if fp.problem:
            warnings.append(f"exercise {ex.id}: {fp.problem}; it scores 0 for everyone")
        else:
            references.append(reference_location(ex.reference))
        functions[ex.id] = fp
        entry["functions"].append({"id": ex.id, "name": ex.answer_name,
                                   "cases": [encode_args(tuple(c)) for c in fp.cases]})
    unknown = sorted(set(extra_cases) - set(functions))
    if unknown:
        warnings.append(f"--cases names exercises that are not function exercises: {unknown}")
    return Plan(registry, functions, {"chapters": chapters}, list(dict.fromkeys(references)),
                warnings)
