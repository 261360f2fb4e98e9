"""The grading cases of function exercises: public ones, the instructor's own, and fresh random ones.

What "hidden" can honestly mean here: the package is installed in the student's kernel, so anything
shipped inside it (a case list, a seed) a student can read. The grader therefore does not rely on
cases stored in the package. It grades a student's function on

* the exercise's public ``cases`` (the ones ``check`` already tries),
* cases from an instructor's file (``vidya-lab grade --cases FILE``), kept wherever students cannot
  read it, and
* cases drawn afresh at grading time from the public ones: every number is perturbed (integers to
  a value between half and twice theirs, reals scaled by a factor in [0.5, 2]) with 128 random bits
  from the operating system, drawn when grading starts and never printed or written anywhere a
  kernel could read them. A case is kept only if the reference implementation accepts it and returns
  a finite answer.

The student's function sees these inputs only when it is called, in a second kernel after the
notebook has run, and without the reference implementation; the expected outputs are computed only
in the grader's process.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

MAX_CASE_FILE_BYTES = 16 * 2**20


def encode_args(value: Any) -> Any:
    """``value`` as JSON primitives (tuples marked so the kernel rebuilds them); ``TypeError`` else."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, np.generic):
        return encode_args(value.item())
    if isinstance(value, tuple):
        return {"__tuple__": [encode_args(v) for v in value]}
    if isinstance(value, list):
        return [encode_args(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value) and set(value) != {"__tuple__"}:
        return {k: encode_args(v) for k, v in value.items()}
    raise TypeError(f"a grading case argument must be a number, string, bool, list, tuple or "
                    f"dict, got {type(value).__name__}")


def perturb(value: Any, rng: np.random.Generator) -> Any:
    """A nearby value of the same type: ints in [v/2, 2v] (sign kept, 0 kept), reals × U(0.5, 2)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | np.integer):
        v = int(value)
        if v == 0:
            return 0
        lo, hi = max(1, abs(v) // 2), 2 * abs(v)
        return int(math.copysign(int(rng.integers(lo, hi + 1)), v))
    if isinstance(value, float | np.floating):
        return float(value) * float(rng.uniform(0.5, 2.0))
    if isinstance(value, tuple):
        return tuple(perturb(v, rng) for v in value)
    if isinstance(value, list):
        return [perturb(v, rng) for v in value]
    if isinstance(value, dict):
        return {k: perturb(v, rng) for k, v in value.items()}
    return value


def usable_output(value: Any) -> bool:
    """A reference output the grader can compare: a finite number, a bool or a string."""
    if isinstance(value, bool | str):
        return True
    try:
        return isinstance(value, int | float | np.integer | np.floating) and math.isfinite(float(value))
    except (OverflowError, ValueError):
        return False


def load_case_file(path: str | Path) -> dict[str, list[tuple]]:
    """Read ``{"2.3": [[arg, ...], ...], ...}``: an instructor's own grading cases (``-``: stdin)."""
    if str(path) == "-":  # from stdin: nothing left on disk for a notebook to read
        text, path = sys.stdin.read(MAX_CASE_FILE_BYTES + 1), Path("-")
    else:
        from vidya_lab._validate import check_input_file

        path = check_input_file("--cases", path, max_bytes=MAX_CASE_FILE_BYTES)
        text = path.read_text(encoding="utf-8", errors="replace")
    if len(text) > MAX_CASE_FILE_BYTES:
        raise ValueError(f"--cases: more than {MAX_CASE_FILE_BYTES:,} characters")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--cases {path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict) or not all(
            isinstance(v, list) and all(isinstance(c, list) for c in v) for v in data.values()):
        raise ValueError(f"--cases {path}: expected an object mapping exercise ids to lists of "
                         "argument lists, e.g. {\"2.3\": [[80, 8, 128, 2]]}")
    return {str(k): [tuple(c) for c in v] for k, v in data.items()}


def grading_cases(reference: Callable, public: Sequence[tuple], rng: np.random.Generator,
                  n_random: int = 5, extra: Sequence[tuple] = ()) -> tuple[list[tuple], list[tuple]]:
    """``(public, hidden)`` cases, each kept only if JSON-encodable and the reference answers it.

    ``hidden`` holds ``extra`` (an instructor's cases) then up to ``n_random`` perturbations of the
    public cases, drawn with ``rng``.
    """
    def ok(args: tuple) -> bool:
        try:
            encode_args(tuple(args))
            return usable_output(reference(*args))
        except Exception:
            return False

    pub = [tuple(c) for c in public if ok(tuple(c))]
    hidden = [tuple(c) for c in extra if ok(tuple(c))]
    if pub and n_random > 0:
        drawn, attempts = 0, 0
        while drawn < n_random and attempts < 20 * n_random:
            attempts += 1
            base = pub[int(rng.integers(len(pub)))]
            case = tuple(perturb(list(base), rng))
            if case != base and ok(case):
                hidden.append(case)
                drawn += 1
    return pub, hidden
