"""Grade a class: run every submitted notebook in its own kernel, score it here, write a CSV.

``vidya-lab grade SUBMISSIONS_DIR --out scores.csv`` finds every ``*.ipynb`` below the folder and
hands each one to a worker process (:mod:`vidya_lab.exercises.runner`, up to ``jobs`` at a time). A
worker runs the notebook in a fresh kernel with a per-cell timeout (a timed-out cell is interrupted,
or the kernel restarted, and the rest still runs), then asks that kernel for the student's answers as
JSON, and for function exercises for the outputs of the student's function on the grading cases (with
the package's reference implementation switched off in the kernel). The worker is killed if it
outlives its budget; a worker that crashes only fails its own row.

Scoring happens here, in the grader's process, against this process's own registry: the expected
values and the outputs for the grading cases are computed here and compared with
:func:`vidya_lab.exercises.core.judge` rules. Nothing the kernel says is trusted beyond JSON
primitives, and "the check printed ✅" is never looked at.

Output: one CSV row per submission (``file``, ``chapter``, each exercise's points, ``total``, ``max``,
``status``) and one feedback text file per submission.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import core
from .core import Exercise, Mistake, Verdict
from .hidden import encode_args, grading_cases, load_case_file

#: Extra seconds a worker gets on top of its notebook budget (kernel start, collecting answers).
WORKER_SLACK_S = 120.0


# ----------------------------------------------------------------------------- the registry

@dataclass
class Registry:
    """Every exercise the grader knows, with the module whose ``EXERCISES`` list defines each."""

    exercises: list[Exercise]
    module_of: dict[str, str]
    warnings: list[str] = field(default_factory=list)

    def chapter(self, chapter: int) -> list[Exercise]:
        return [ex for ex in self.exercises if ex.chapter == chapter]

    @property
    def chapters(self) -> list[int]:
        return sorted({ex.chapter for ex in self.exercises})


def load_registry(module: str | None = None) -> Registry:
    """The package's registry (chapters 1–6, whichever exist), or the ``EXERCISES`` of ``module``.

    A chapter module that fails to import is skipped with a warning, so a chapter being written does
    not stop the others from being released or graded.
    """
    if module:
        mod = importlib.import_module(module)
        exercises = list(mod.EXERCISES)
        return Registry(exercises, {ex.id: module for ex in exercises})
    exercises, module_of, warnings = [], {}, []
    for ch in range(1, 7):
        try:
            found = core.chapter_exercises(ch)
        except Exception as exc:
            warnings.append(f"chapter {ch}: exercises not loaded ({type(exc).__name__}: {exc})")
            continue
        for ex in found:
            exercises.append(ex)
            module_of[ex.id] = f"vidya_lab.exercises.ch{ch:02d}"
    return Registry(exercises, module_of, warnings)


def registry_exercises_for(module: str | None) -> Callable[[int], list[Exercise]]:
    """``chapter -> exercises`` for release (see :func:`load_registry`)."""
    reg = load_registry(module)
    for w in reg.warnings:
        print(f"vidya-lab: {w}", file=sys.stderr)
    return reg.chapter


# ----------------------------------------------------------------------------- what to ask for

def _unwrap(obj: Any) -> Any:
    import functools
    import types

    for _ in range(5):
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif isinstance(obj, types.MethodType):
            obj = obj.__func__
        else:
            break
    return obj


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


def _frozen(ex: Exercise) -> Exercise:
    """``ex`` with its expected value and mistakes computed once (a class may be large)."""
    value = ex.expected_value()
    mistakes = []
    for m in ex.mistakes:
        try:
            v = m.value()
        except Exception:
            continue
        mistakes.append(Mistake(value=lambda v=v: v, hint=m.hint))
    return dataclasses.replace(ex, expected=lambda value=value: value, mistakes=tuple(mistakes))


@dataclass
class Plan:
    """Everything the grader needs: frozen exercises, function cases, and the spec for workers."""

    registry: Registry
    frozen: dict[str, Exercise]
    functions: dict[str, FunctionPlan]
    seed: int
    spec: dict
    warnings: list[str]


def make_plan(registry: Registry, seed: int, n_random: int = 5,
              extra_cases: dict[str, list[tuple]] | None = None) -> Plan:
    """Compute expected answers and grading cases here, and the JSON spec workers send kernels."""
    extra_cases = extra_cases or {}
    rng = np.random.default_rng(seed)
    frozen, functions, warnings = {}, {}, list(registry.warnings)
    chapters: dict[str, dict] = {}
    for ex in registry.exercises:
        entry = chapters.setdefault(str(ex.chapter), {"values": [], "functions": [],
                                                      "block_refs": [], "block_registry": []})
        if ex.kind != "function":
            try:
                frozen[ex.id] = _frozen(ex)
            except Exception as exc:
                warnings.append(f"exercise {ex.id}: expected value failed ({type(exc).__name__}: "
                                f"{exc}); it scores 0 for everyone")
            entry["values"].append({"id": ex.id, "name": ex.answer_name})
            continue
        try:
            reference = ex.expected_value()
            if not callable(reference):
                raise TypeError(f"expected() returned {type(reference).__name__}, not a function")
            public, hidden = grading_cases(reference, ex.cases, rng, n_random,
                                           extra_cases.get(ex.id, ()))
            expected = [reference(*args) for args in public + hidden]
            problem = "" if public + hidden else "no usable grading case"
        except Exception as exc:
            reference, public, hidden, expected = None, [], [], []
            problem = f"reference failed ({type(exc).__name__}: {exc})"
        if problem:
            warnings.append(f"exercise {ex.id}: {problem}; it scores 0 for everyone")
        functions[ex.id] = FunctionPlan(ex, public, hidden, expected, problem)
        entry["functions"].append({"id": ex.id, "name": ex.answer_name,
                                   "cases": [encode_args(tuple(c)) for c in public + hidden]})
        target = _unwrap(reference)
        qualname = getattr(target, "__qualname__", "")
        module = getattr(target, "__module__", "")
        if module and qualname and "<" not in qualname:
            entry["block_refs"].append({"module": module, "qualname": qualname})
        entry["block_registry"].append({"module": registry.module_of.get(ex.id, ""), "id": ex.id})
    return Plan(registry, frozen, functions, seed, {"chapters": chapters}, warnings)


# ----------------------------------------------------------------------------- scoring

@dataclass
class ExerciseScore:
    id: str
    points: float
    max_points: int
    verdict: Verdict


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x)


def _same(got: Any, want: Any, rel_tol: float) -> bool:
    """A JSON output against the grader's expected output: numbers within ``rel_tol``, else equal."""
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(got, bool) and isinstance(want, bool | np.bool_) and got == bool(want)
    if isinstance(want, str):
        return isinstance(got, str) and got == want
    g = _number(got)
    if g is None:
        return False
    w = float(want)
    return np.isfinite(g) and core._close(g, w, rel_tol)


def _describe(enc: dict) -> str:
    if enc.get("state") == "value":
        return repr(enc.get("value"))
    if enc.get("state") == "raised":
        return f"raised {enc.get('type', '?')}: {enc.get('message', '')}"
    return f"a {enc.get('type', '?')} (not a plain number, string or bool)"


def score_value(ex: Exercise, enc: Any) -> Verdict:
    """Judge one encoded answer from the kernel, with the core rules, in this process."""
    if not isinstance(enc, dict):
        return Verdict("unanswered", f"{ex.answer_name} could not be read from your notebook")
    state = enc.get("state")
    if state == "missing":
        return Verdict("unanswered", f"{ex.answer_name} is not defined in your notebook")
    if state == "unanswered":
        return core.judge(ex, Ellipsis)
    if state == "value":
        value = enc.get("value")
        if value is None or isinstance(value, bool | int | float | str):
            return core.judge(ex, value)
    return Verdict("wrong", f"{ex.answer_name} holds {_describe(enc)}: graded as wrong")


def score_function(fp: FunctionPlan, enc: Any) -> Verdict:
    """All cases right: right. The feedback names a failing public case, counts hidden ones."""
    ex = fp.exercise
    if fp.problem:
        return Verdict("wrong", "this exercise could not be graded automatically "
                                f"({fp.problem}); your instructor will look at it")
    if not isinstance(enc, dict):
        return Verdict("unanswered", f"{ex.answer_name} could not be read from your notebook")
    state = enc.get("state")
    if state == "missing":
        return Verdict("unanswered", f"{ex.answer_name} is not defined in your notebook")
    if state == "unanswered":
        return Verdict("unanswered", "not answered yet")
    if state == "not callable":
        return Verdict("wrong", f"{ex.answer_name} is a {enc.get('type', '?')}, not a function")
    if state == "unreadable":
        return Verdict("wrong", f"calling {ex.answer_name} on the grading cases failed "
                                f"({enc.get('problem', '?')}): an endless loop or a crash?")
    outputs = enc.get("outputs")
    if state != "called" or not isinstance(outputs, list) or len(outputs) != len(fp.cases):
        return Verdict("wrong", f"{ex.answer_name}: the kernel's report was malformed")
    if all(isinstance(o, dict) and o.get("state") == "value" and o.get("value") is None
           for o in outputs):
        return Verdict("unanswered", f"{ex.answer_name} returns None: not written yet?")
    first_public, hidden_wrong = "", 0
    for i, (args, want, got) in enumerate(zip(fp.cases, fp.expected, outputs, strict=True)):
        ok = (isinstance(got, dict) and got.get("state") == "value"
              and _same(got.get("value"), want, ex.rel_tol))
        if ok:
            continue
        if i < len(fp.public):
            if not first_public:
                shown = _describe(got) if isinstance(got, dict) else "?"
                first_public = f"{ex.answer_name}{tuple(args)} gave {shown}, expected {want!r}"
        else:
            hidden_wrong += 1
    if not first_public and not hidden_wrong:
        return Verdict("right", f"{ex.answer_name} agrees on {len(fp.public)} public and "
                                f"{len(fp.hidden)} grading cases")
    parts = [first_public] if first_public else []
    if hidden_wrong:
        parts.append(f"wrong on {hidden_wrong} of {len(fp.hidden)} grading cases")
    return Verdict("wrong", "; ".join(parts) + f"; {ex.hint}")


@dataclass
class Submission:
    """One graded notebook: its row of the CSV and its feedback."""

    file: str
    chapter: int | None
    scores: list[ExerciseScore]
    status: str
    errors: list[dict] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def total(self) -> float:
        return sum(s.points for s in self.scores)

    @property
    def max_points(self) -> int:
        return sum(s.max_points for s in self.scores)


def _status(result: dict) -> str:
    events = [str(e)[:80] for e in result.get("events", [])][:5]
    cells = sorted({e["cell"] for e in result.get("errors", []) if isinstance(e, dict)
                    and type(e.get("cell")) is int and e["cell"] > 0})
    timeouts = {e for e in events if e.startswith(("timeout", "kernel died"))}
    error_cells = [c for c in cells if not any(t.endswith(f"cell {c}") for t in timeouts)]
    if error_cells:
        word = "error in cell" if len(error_cells) == 1 else "errors in cells"
        events.insert(0, f"{word} {', '.join(map(str, error_cells[:6]))}")
    if result.get("values_problem"):
        events.append(f"answers unreadable ({result['values_problem']})")
    return "; ".join(events) if events else "ok"


def score_submission(plan: Plan, file: str, result: dict) -> Submission:
    """Turn a worker's report into points, in this process."""
    if result.get("crash"):
        return Submission(file, None, [], str(result["crash"])[:120])
    if result.get("invalid"):
        return Submission(file, None, [], f"invalid notebook: {str(result['invalid'])[:80]}")
    chapter = result.get("chapter")
    if type(chapter) is not int:
        return Submission(file, None, [], "unknown chapter (use --chapter)")
    if result.get("no_exercises") or not plan.registry.chapter(chapter):
        return Submission(file, chapter, [], f"chapter {chapter} has no graded exercises")
    values = result.get("values") if isinstance(result.get("values"), dict) else {}
    functions = result.get("functions") if isinstance(result.get("functions"), dict) else {}
    scores = []
    for ex in plan.registry.chapter(chapter):
        if ex.kind == "function":
            verdict = score_function(plan.functions[ex.id], functions.get(ex.id))
        elif ex.id in plan.frozen:
            verdict = score_value(plan.frozen[ex.id], values.get(ex.answer_name))
        else:
            verdict = Verdict("wrong", "this exercise could not be graded automatically; "
                                       "your instructor will look at it")
        scores.append(ExerciseScore(ex.id, ex.points if verdict.right else 0, ex.points, verdict))
    errors = [e for e in result.get("errors", []) if isinstance(e, dict)][:20]
    return Submission(file, chapter, scores, _status(result), errors,
                      float(result.get("elapsed_s", 0.0) or 0.0))


# ----------------------------------------------------------------------------- running the workers

def find_submissions(folder: str | Path) -> list[Path]:
    """Every ``*.ipynb`` below ``folder`` (checkpoints skipped), in a stable order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"submissions folder not found: {folder}")
    found = [p for p in folder.rglob("*.ipynb")
             if ".ipynb_checkpoints" not in p.parts and p.is_file()]
    if not found:
        raise ValueError(f"no .ipynb files in {folder}")
    return sorted(found)


@dataclass
class _Job:
    path: Path
    proc: subprocess.Popen
    result_file: Path
    pid_file: Path
    stderr_file: Path
    deadline: float


def _kill_group(pgid: Any) -> None:
    if type(pgid) is int and pgid > 1 and pgid != os.getpgid(0):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(job: _Job) -> None:
    """Make sure the worker and its kernel are gone."""
    try:
        info = json.loads(job.pid_file.read_text())
        _kill_group(info.get("pgid"))
    except (OSError, ValueError, AttributeError):
        pass
    if job.proc.poll() is None:
        _kill_group(job.proc.pid)
        try:
            job.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _tail(path: Path, n: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _finish(job: _Job, timed_out: bool) -> dict:
    _reap(job)
    if timed_out:
        return {"crash": "grading time limit exceeded"}
    try:
        data = job.result_file.read_text()
        result = json.loads(data)
        if isinstance(result, dict):
            return result
    except (OSError, ValueError):
        pass
    lines = [ln for ln in _tail(job.stderr_file).splitlines() if ln.strip()]
    last = lines[-1].strip() if lines else f"exit status {job.proc.returncode}"
    if "MemoryError" in last:
        return {"crash": "out of memory"}
    return {"crash": f"grader worker failed: {last[:90]}"}


def run_workers(paths: Sequence[Path], spec: dict, *, timeout_s: float, budget_s: float,
                jobs: int, kernel: str = "python3", memory_limit_bytes: int = 0,
                chapter: int | None = None,
                on_result: Callable[[Path, dict], None] | None = None) -> dict[Path, dict]:
    """Run one worker per notebook, ``jobs`` at a time; every notebook gets a result dict."""
    results: dict[Path, dict] = {}
    with tempfile.TemporaryDirectory(prefix="vidya-grade-") as tmp:
        tmp = Path(tmp)
        # The spec (grading-case inputs) goes to each worker through a pipe, not a file a
        # notebook running under the same account could read while it executes.
        spec_bytes = json.dumps(spec).encode("utf-8")
        pending = list(enumerate(paths))
        running: list[_Job] = []
        try:
            while pending or running:
                while pending and len(running) < jobs:
                    k, path = pending.pop(0)
                    job_dir = tmp / f"job{k}"
                    job_dir.mkdir()
                    cmd = [sys.executable, "-m", "vidya_lab.exercises.runner", "-",
                           str(path.resolve()), str(job_dir / "result.json"),
                           "--timeout", str(timeout_s), "--budget", str(budget_s),
                           "--kernel", kernel, "--pid-file", str(job_dir / "kernel.json"),
                           "--memory-limit", str(int(memory_limit_bytes))]
                    if chapter is not None:
                        cmd += ["--chapter", str(chapter)]
                    stderr = open(job_dir / "stderr.txt", "wb")
                    try:
                        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                                stdout=subprocess.DEVNULL, stderr=stderr,
                                                cwd=job_dir, start_new_session=True)
                    finally:
                        stderr.close()
                    try:
                        proc.stdin.write(spec_bytes)
                        proc.stdin.close()
                    except OSError:  # the worker died at once: its row will say so
                        pass
                    n_fx = sum(len(c["functions"]) for c in spec["chapters"].values())
                    allowance = budget_s + (3 + n_fx) * (min(timeout_s, 60) + 10) + WORKER_SLACK_S
                    running.append(_Job(path, proc, job_dir / "result.json",
                                        job_dir / "kernel.json", job_dir / "stderr.txt",
                                        time.monotonic() + allowance))
                still = []
                for job in running:
                    if job.proc.poll() is not None:
                        results[job.path] = _finish(job, timed_out=False)
                    elif time.monotonic() > job.deadline:
                        results[job.path] = _finish(job, timed_out=True)
                    else:
                        still.append(job)
                        continue
                    if on_result:
                        on_result(job.path, results[job.path])
                running = still
                time.sleep(0.05)
        finally:
            for job in running:  # interrupted (Ctrl-C): leave no worker or kernel behind
                _reap(job)
    return results


# ----------------------------------------------------------------------------- writing it down

def write_csv(subs: Sequence[Submission], registry: Registry, path: Path) -> list[str]:
    """One row per submission; exercise columns for every chapter that appears. Returns the header."""
    chapters = sorted({s.chapter for s in subs if s.chapter is not None})
    ids = [ex.id for ch in chapters for ex in registry.chapter(ch)]
    header = ["file", "chapter", *ids, "total", "max", "status"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for s in subs:
            pts = {sc.id: sc.points for sc in s.scores}
            w.writerow([s.file, "" if s.chapter is None else s.chapter,
                        *[_fmt_points(pts[i]) if i in pts else "" for i in ids],
                        _fmt_points(s.total), s.max_points, s.status])
    return header


def _fmt_points(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def feedback_text(s: Submission) -> str:
    mark = {"right": "right", "wrong": "wrong", "unanswered": "not answered"}
    lines = [f"vidya-lab feedback for {s.file}",
             f"chapter {s.chapter if s.chapter is not None else '?'}: "
             f"{_fmt_points(s.total)} of {s.max_points} points",
             f"how the notebook ran: {s.status}", ""]
    for sc in s.scores:
        lines.append(f"exercise {sc.id}: {mark[sc.verdict.status]}, "
                     f"{_fmt_points(sc.points)}/{sc.max_points} — {sc.verdict.message}")
    if s.errors:
        lines += ["", "errors raised by your cells (cells are counted from 1, text cells included):"]
        for e in s.errors[:10]:
            lines.append(f"  cell {e.get('cell')}: {e.get('ename')}: {e.get('evalue')}")
    if s.status.startswith("invalid notebook"):
        lines += ["", "The file could not be read as a Jupyter notebook: open it in Jupyter, "
                      "save it again and hand in the .ipynb file."]
    return "\n".join(lines) + "\n"


def _feedback_name(rel: str) -> str:
    return rel.replace(os.sep, "__").replace("/", "__").rsplit(".", 1)[0] + ".txt"


def grade(submissions_dir: str | Path, out_csv: str | Path, *, timeout_s: float = 60,
          jobs: int = 1, budget_s: float = 600, feedback_dir: str | Path | None = None,
          seed: int | None = None, n_random: int = 5, cases_file: str | Path | None = None,
          registry: str | None = None, chapter: int | None = None, kernel: str = "python3",
          memory_limit_bytes: int = 4 * 2**30, progress=sys.stderr) -> list[Submission]:
    """Grade every notebook in ``submissions_dir``; write the CSV and the feedback files.

    Parameters
    ----------
    timeout_s : per-cell time limit, seconds (also the limit for collecting answers).
    jobs : notebooks graded at the same time (one kernel each).
    budget_s : wall-clock seconds one notebook may spend running its cells.
    feedback_dir : default: ``<csv name>_feedback/`` next to the CSV.
    seed : for the random grading cases; default: drawn now and printed.
    n_random : random grading cases per function exercise.
    cases_file : an instructor's JSON of extra grading cases, ``{"2.3": [[...], ...]}``.
    registry : a module whose ``EXERCISES`` replace the package's registry.
    chapter : grade every submission as this chapter (instead of detecting it).
    memory_limit_bytes : address-space limit of each worker and its kernel (0: none).
    """
    from vidya_lab._validate import check_int, check_real

    check_real("timeout", timeout_s, minimum=1, maximum=86400)
    check_real("notebook_timeout", budget_s, minimum=1, maximum=7 * 86400)
    check_int("jobs", jobs, minimum=1, maximum=256)
    check_int("hidden_cases", n_random, minimum=0, maximum=1000)
    paths = find_submissions(submissions_dir)
    reg = load_registry(registry)
    if not reg.exercises:
        raise ValueError("no exercises are registered: nothing to grade")
    if chapter is not None and chapter not in reg.chapters:
        raise ValueError(f"chapter must be one with exercises ({reg.chapters}), got {chapter}")
    seed = secrets.randbits(32) if seed is None else int(seed)
    extra = load_case_file(cases_file) if cases_file else {}
    plan = make_plan(reg, seed, n_random, extra)

    def say(msg: str) -> None:
        if progress is not None:
            print(msg, file=progress, flush=True)

    for w in plan.warnings:
        say(f"vidya-lab grade: warning: {w}")
    say(f"vidya-lab grade: {len(paths)} notebooks, {jobs} at a time, {timeout_s:g} s per cell; "
        f"grading cases drawn with --seed {seed}")
    root = Path(submissions_dir)
    subs: dict[Path, Submission] = {}
    t0 = time.monotonic()

    def on_result(path: Path, result: dict) -> None:
        s = score_submission(plan, str(path.relative_to(root)), result)
        subs[path] = s
        say(f"[{len(subs)}/{len(paths)}] {s.file}: {_fmt_points(s.total)}/{s.max_points} "
            f"{s.status} ({time.monotonic() - t0:.0f} s)")

    run_workers(paths, plan.spec, timeout_s=timeout_s, budget_s=budget_s, jobs=jobs,
                kernel=kernel, memory_limit_bytes=memory_limit_bytes, chapter=chapter,
                on_result=on_result)
    ordered = [subs[p] for p in paths]
    out_csv = Path(out_csv)
    write_csv(ordered, reg, out_csv)
    fdir = Path(feedback_dir) if feedback_dir else out_csv.with_name(out_csv.stem + "_feedback")
    fdir.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    for s in ordered:
        name = _feedback_name(s.file)
        while name in used:  # "a/b.ipynb" and "a__b.ipynb" would share a name
            name = name[:-4] + "_.txt"
        used.add(name)
        (fdir / name).write_text(feedback_text(s), encoding="utf-8")
    say(f"vidya-lab grade: wrote {out_csv} and {len(ordered)} feedback files in {fdir}")
    return ordered
