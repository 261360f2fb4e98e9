"""Points for one submission, computed in the grader's own process from what its worker reported.

Nothing the kernel or the worker says is trusted beyond JSON primitives: :func:`clean_result` keeps
each field of a report only if it has the expected type and size (a forged ``"elapsed_s": "soon"``
becomes 0, a number too large for a float is no number), and :func:`score_submission` turns any
failure into that row's status instead of an exception. The expected answers come from the grader's
own registry, for the student's own givens; "the check printed ✅" is never looked at.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .core import Exercise, Verdict, close, judge
from .plan import FunctionPlan, Plan

NOT_GRADED = "not graded: the grading run stopped before this notebook was graded"


@dataclass
class ExerciseScore:
    id: str
    points: float
    max_points: int
    verdict: Verdict


@dataclass
class Submission:
    """One graded notebook: its row of the CSV and its feedback."""

    file: str
    chapter: int | None
    scores: list[ExerciseScore]
    status: str
    errors: list[dict] = field(default_factory=list)
    elapsed_s: float = 0.0
    student: str = ""
    isolation: str = ""
    killed_processes: int = 0
    flags: list[str] = field(default_factory=list)
    #: the grader failed on this notebook (twice): no points are stated, the row is flagged
    grader_fault: bool = False

    @property
    def total(self) -> float:
        return sum(s.points for s in self.scores)

    @property
    def max_points(self) -> int:
        return sum(s.max_points for s in self.scores)


# ----------------------------------------------------------------------------- the report

def _text(x: Any, limit: int = 300) -> str:
    return x[:limit] if isinstance(x, str) else ""


def _count(x: Any, limit: int = 10**6) -> int:
    return x if type(x) is int and 0 <= x <= limit else 0


def clean_result(raw: Any) -> dict:
    """A worker's report with every field checked; anything malformed is dropped or zeroed."""
    if not isinstance(raw, dict):
        return {"crash": "grader worker sent no report"}
    out: dict[str, Any] = {}
    for key in ("crash", "invalid", "values_problem", "student"):
        if isinstance(raw.get(key), str):
            out[key] = _text(raw[key], 200)
    out["chapter"] = raw["chapter"] if type(raw.get("chapter")) is int else None
    for key in ("unknown_chapter", "no_exercises", "givens_issued", "grader_fault"):
        out[key] = raw.get(key) is True
    out["events"] = [_text(e, 80) for e in raw.get("events") or [] if isinstance(e, str)][:5] \
        if isinstance(raw.get("events"), list) else []
    out["flags"] = [_text(e, 80) for e in raw.get("flags") or [] if isinstance(e, str)][:8] \
        if isinstance(raw.get("flags"), list) else []
    errors = raw.get("errors") if isinstance(raw.get("errors"), list) else []
    out["errors"] = [{"cell": _count(e.get("cell")), "ename": _text(e.get("ename"), 100),
                      "evalue": _text(e.get("evalue"))} for e in errors[:20] if isinstance(e, dict)]
    for key in ("values", "functions"):
        val = raw.get(key)
        out[key] = {str(k)[:100]: v for k, v in val.items() if isinstance(v, dict)} \
            if isinstance(val, dict) else {}
    out["leftovers"] = _count(raw.get("leftovers"))
    el = raw.get("elapsed_s")
    out["elapsed_s"] = float(el) if type(el) in (int, float) and 0 <= el < 1e7 else 0.0
    return out


# ----------------------------------------------------------------------------- one answer

def _number(x: Any) -> float | None:
    if isinstance(x, bool) or type(x) not in (int, float):
        return None
    try:
        value = float(x)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _same(got: Any, want: Any, rel_tol: float) -> bool:
    """A JSON output against the grader's expected output: numbers within ``rel_tol``, else equal."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is bool and isinstance(want, bool) and got == bool(want)
    if isinstance(want, str):
        return isinstance(got, str) and got == want
    g = _number(got)
    return g is not None and close(g, float(want), rel_tol)


def _describe(enc: dict) -> str:
    if enc.get("state") == "value":
        return repr(enc.get("value"))[:80]
    if enc.get("state") == "raised":
        return f"raised {_text(enc.get('type'), 60) or '?'}: {_text(enc.get('message'), 200)}"
    return f"a {_text(enc.get('type'), 60) or '?'} (not a plain number, string or bool)"


def _unanswered(ex: Exercise, enc: Any) -> Verdict | None:
    if not isinstance(enc, dict):
        return Verdict("unanswered", f"{ex.answer_name} could not be read from your notebook")
    if enc.get("state") == "missing":
        return Verdict("unanswered", f"{ex.answer_name} is not defined in your notebook")
    if enc.get("state") == "unanswered":
        return Verdict("unanswered", "not answered yet")
    return None


def score_value(ex: Exercise, enc: Any, givens: Mapping[str, Any] | None = None,
                plan: Plan | None = None) -> Verdict:
    """Judge one encoded answer from the kernel, with the core rules and the student's givens."""
    early = _unanswered(ex, enc)
    if early is not None:
        return early
    value = enc.get("value")
    if enc.get("state") != "value" or not (value is None or type(value) in (bool, int, float, str)):
        return Verdict("wrong", f"{ex.answer_name} holds {_describe(enc)}: graded as wrong")
    if type(value) is int and _number(value) is None:
        return Verdict("wrong", f"{ex.answer_name} is an integer too large for any answer")
    if plan is not None:
        state, _ = plan.expected(ex, dict(givens or {}))
        if state != "ok":
            return Verdict("wrong", "this exercise could not be graded automatically; your "
                                    "instructor will look at it")
    return judge(ex, value, givens)


def score_function(fp: FunctionPlan, enc: Any) -> Verdict:
    """All cases right: right. The feedback names a failing public case, counts hidden ones."""
    ex = fp.exercise
    if fp.problem:
        return Verdict("wrong", "this exercise could not be graded automatically "
                                f"({fp.problem}); your instructor will look at it")
    early = _unanswered(ex, enc)
    if early is not None:
        return early
    state = enc.get("state")
    if state == "not callable":
        return Verdict("wrong", f"{ex.answer_name} is a {_text(enc.get('type'), 60) or '?'}, "
                                "not a function")
    if state == "unreadable":
        return Verdict("wrong", f"calling {ex.answer_name} on the grading cases failed "
                                f"({_text(enc.get('problem'), 60) or '?'}): an endless loop or a crash?")
    outputs = enc.get("outputs")
    if state != "called" or not isinstance(outputs, list) or len(outputs) != len(fp.cases):
        return Verdict("wrong", f"{ex.answer_name}: the kernel's report was malformed")
    if all(isinstance(o, dict) and o.get("state") == "value" and o.get("value") is None
           for o in outputs):
        return Verdict("unanswered", f"{ex.answer_name} returns None: not written yet?")
    first_public, hidden_wrong = "", 0
    for i, (args, want, got) in enumerate(zip(fp.cases, fp.expected, outputs, strict=True)):
        if isinstance(got, dict) and got.get("state") == "value" and _same(got.get("value"), want,
                                                                            ex.rel_tol):
            continue
        if i >= len(fp.public):
            hidden_wrong += 1
        elif not first_public:
            shown = _describe(got) if isinstance(got, dict) else "?"
            first_public = f"{ex.answer_name}{tuple(args)} gave {shown}, expected {want!r}"
    if not first_public and not hidden_wrong:
        return Verdict("right", f"{ex.answer_name} agrees on {len(fp.public)} public and "
                                f"{len(fp.hidden)} grading cases")
    parts = [first_public] if first_public else []
    if hidden_wrong:
        parts.append(f"wrong on {hidden_wrong} of {len(fp.hidden)} grading cases")
    return Verdict("wrong", "; ".join(parts) + f"; {ex.hint}")


# ----------------------------------------------------------------------------- one submission

def status_of(result: dict) -> str:
    """How the notebook ran, in words (see the book's table of statuses)."""
    events = list(result.get("events", []))
    cells = sorted({e["cell"] for e in result.get("errors", []) if e.get("cell", 0) > 0})
    stopped = {e for e in events if e.startswith(("timeout", "kernel died", "memory limit"))}
    error_cells = [c for c in cells if not any(t.endswith(f"cell {c}") for t in stopped)]
    if error_cells:
        word = "error in cell" if len(error_cells) == 1 else "errors in cells"
        events.insert(0, f"{word} {', '.join(map(str, error_cells[:6]))}")
    if result.get("values_problem"):
        events.append(f"answers unreadable ({result['values_problem']})")
    return "; ".join(events) if events else "ok"


def score_submission(plan: Plan, file: str, result: dict, givens: Mapping[str, Any] | None,
                     givens_problem: str = "") -> Submission:
    """Turn a cleaned worker report into points, in this process, for the student's ``givens``.

    ``givens_problem`` (the student could not be identified, say) makes every exercise that has
    givens score 0 with that reason; the others are graded as usual.
    """
    base = dict(elapsed_s=result.get("elapsed_s", 0.0), killed_processes=result.get("leftovers", 0),
                flags=result.get("flags", []), student=result.get("student") or "")
    if result.get("grader_fault"):
        base["flags"] = ["grader fault: not scored, regrade this file", *base["flags"]]
        return Submission(file, None, [], result["crash"][:120] if result.get("crash") else
                          "grader fault", grader_fault=True, **base)
    if result.get("crash"):
        return Submission(file, None, [], result["crash"][:120], **base)
    if result.get("invalid"):
        return Submission(file, None, [], f"invalid notebook: {result['invalid'][:100]}", **base)
    chapter = result.get("chapter")
    if chapter is None:
        return Submission(file, None, [], "unknown chapter (use --chapter)", **base)
    if result.get("no_exercises") or not plan.registry.chapter(chapter):
        return Submission(file, chapter, [], f"chapter {chapter} has no graded exercises", **base)
    scores = []
    for ex in plan.registry.chapter(chapter):
        try:
            if ex.kind == "function":
                verdict = score_function(plan.functions[ex.id], result["functions"].get(ex.id))
            elif ex.givens and givens_problem:
                verdict = Verdict("wrong", givens_problem)
            else:
                verdict = score_value(ex, result["values"].get(ex.answer_name), givens, plan)
        except Exception as exc:  # a bug or a hostile report: this exercise, this row only
            verdict = Verdict("wrong", f"could not be graded ({type(exc).__name__}); your "
                                       "instructor will look at it")
        scores.append(ExerciseScore(ex.id, ex.points if verdict.right else 0, ex.points, verdict))
    return Submission(file, chapter, scores, status_of(result), result.get("errors", []), **base)


def not_graded(file: str, why: str = NOT_GRADED) -> Submission:
    """The row of a notebook the run did not (or not yet) grade."""
    return Submission(file, None, [], why)
