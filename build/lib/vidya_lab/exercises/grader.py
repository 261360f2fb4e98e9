"""Grade a class: every notebook in its own sandboxed kernels, scored here, one CSV row each.

``vidya-lab grade SUBMISSIONS_DIR --out scores.csv`` does, in order:

1. **checks everything before any work** (one line and exit status 2 on a mistake): the output CSV
   and feedback folder are writable, the submissions folder, ``--registry``, ``--kernel``,
   ``--secret-file``, ``--roster``, ``--cases`` and ``--isolation`` are usable;
2. **copies** every submission once into a private folder (:mod:`.submissions`; symbolic links are
   refused, ``.IPYNB`` counts) and builds the package copies the kernels import (:mod:`.sandbox`);
3. **runs** one worker per notebook, ``jobs`` at a time (:mod:`.workers`, :mod:`.runner`): the
   notebook in a kernel without the answer key, function exercises in a second kernel without the
   reference implementations, every process they start killed and counted;
4. **scores** each report here (:mod:`.scoring`) for the student's own numbers (drawn again from
   ``--secret-file`` and the student's id, never read from the notebook), and rewrites the CSV and
   that student's feedback file atomically after every notebook (:mod:`.classfiles`).

Whatever one submission does or is called, every other row is written; a row that failed says why.
"""

from __future__ import annotations

import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vidya_lab._validate import check_int, check_output_dir, check_output_file, check_real

from .classfiles import FeedbackNames, display_path, feedback_text, fmt_points, write_csv
from .givens import draw_givens, read_secret
from .hidden import load_case_file
from .plan import Plan, load_registry, make_plan
from .roster import duplicate_flags, identify, read_roster
from .sandbox import build_template, probe, short_temp_root
from .scoring import Submission, clean_result, not_graded, score_submission
from .submissions import find_submissions, snapshot
from .workers import Pool, WorkerConfig


def kernel_python(kernel: str) -> str:
    """The Python of Jupyter kernel ``kernel`` (an IPython kernel); ``ValueError`` otherwise."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(kernel)
    except NoSuchKernel:
        raise ValueError(f"--kernel: no Jupyter kernel named {kernel!r}") from None
    argv = list(spec.argv)
    if not argv or not any("ipykernel" in a for a in argv):
        raise ValueError(f"--kernel {kernel}: only IPython (ipykernel) kernels can be graded")
    return argv[0]


@dataclass
class Setup:
    """Everything checked and read before the first notebook runs."""

    root: Path
    out: Path
    feedback: Path
    plan: Plan
    found: object
    level: str
    python: str
    secret: bytes | None
    roster: set[str] | None
    notes: list[str] = field(default_factory=list)


def _setup(submissions_dir, out_csv, feedback_dir, *, timeout_s, budget_s, jobs, n_random, seed,
           cases_file, registry, chapter, kernel, isolation, secret_file, roster_file) -> Setup:
    check_real("--timeout", timeout_s, minimum=1, maximum=86400)
    check_real("--notebook-timeout", budget_s, minimum=10, maximum=7 * 86400)
    check_int("--jobs", jobs, minimum=1, maximum=256)
    check_int("--hidden-cases", n_random, minimum=0, maximum=1000)
    out = check_output_file("--out", out_csv)
    fdir = Path(feedback_dir) if feedback_dir else out.with_name(out.stem + "_feedback")
    check_output_dir("--feedback", fdir)
    found = find_submissions(submissions_dir)
    reg = load_registry(registry)
    if not reg.exercises:
        raise ValueError("no exercises are registered: nothing to grade")
    if chapter is not None and chapter not in reg.chapters:
        raise ValueError(f"--chapter must be one with exercises ({reg.chapters}), got {chapter}")
    python = kernel_python(kernel)
    secret = read_secret(secret_file) if secret_file else None
    roster = set(read_roster(roster_file)) if roster_file else None
    extra = load_case_file(cases_file) if cases_file else {}
    level, note = probe(isolation)
    rng = np.random.default_rng(secrets.randbits(128) if seed is None else int(seed))
    plan = make_plan(reg, rng, n_random, extra)
    notes = plan.warnings + ([note] if note else [])
    if found.ignored:
        notes.append(f"ignored {len(found.ignored)} file(s) that are not .ipynb notebooks "
                     f"(e.g. {display_path(found.ignored[0])})")
    return Setup(Path(submissions_dir), out, fdir, plan, found, level, python, secret, roster,
                 notes)


def _givens_for(s: Setup, chapter: int | None, student: str | None, report: dict):
    """``(givens, problem)`` for one row: the student's own numbers, drawn here from the secret."""
    spec = s.plan.registry.givens_spec(chapter) if chapter is not None else {}
    if not spec:
        return None, ""
    if s.secret is None:
        if report.get("givens_issued"):
            return None, ("your own numbers were issued, but the grader was not given the class "
                          "secret (--secret-file); your instructor will look at it")
        return None, ""
    if not student:
        return None, ("the grader could not tell which student handed this in, so it cannot know "
                      "your numbers; your instructor will look at it")
    return draw_givens(spec, s.secret, student, chapter), ""


def _score(s: Setup, rel: str, report: dict) -> Submission:
    file = display_path(rel)
    try:
        result = clean_result(report)
        student, flag = identify(rel, result.get("student"), s.roster)
        givens, problem = _givens_for(s, result.get("chapter"), student, result)
        sub = score_submission(s.plan, file, result, givens, problem)
        sub.student = student or result.get("student") or ""
        if flag:
            sub.flags.insert(0, flag)
    except Exception as exc:  # a grader bug or a hostile report: this row only
        sub = not_graded(file, f"grader error while scoring ({type(exc).__name__})")
    sub.isolation = s.level
    return sub


def _templates(s: Setup, run_dir: Path) -> tuple[dict, dict[str, str | None]]:
    """Build (or, if a notebook deleted them, rebuild) the two package copies the kernels import."""
    common = dict(key_modules=s.plan.registry.key_modules, references=s.plan.references)
    roots = {"values": run_dir / "tmpl-values", "functions": run_dir / "tmpl-functions"}
    originals: dict[str, str | None] = {}
    for name, root in roots.items():
        if (root / "vidya_lab" / "__init__.py").is_file():
            continue
        shutil.rmtree(root, ignore_errors=True)
        tmpl = build_template(root, block_references=name == "functions", **common)
        s.notes += [w for w in tmpl.warnings if w not in s.notes]
        originals = {k: (str(v) if v else None) for k, v in tmpl.originals.items()}
    return {k: str(v) for k, v in roots.items()}, originals


def grade(submissions_dir: str | Path, out_csv: str | Path, *, timeout_s: float = 60,
          jobs: int = 1, budget_s: float = 600, feedback_dir: str | Path | None = None,
          seed: int | None = None, n_random: int = 5, cases_file: str | Path | None = None,
          registry: str | None = None, chapter: int | None = None, kernel: str = "python3",
          memory_limit_bytes: int = 4 * 2**30, isolation: str = "auto",
          secret_file: str | Path | None = None, roster_file: str | Path | None = None,
          progress=sys.stderr) -> list[Submission]:
    """Grade every notebook in ``submissions_dir``; write the CSV and the feedback files.

    Parameters
    ----------
    timeout_s : per-cell time limit, seconds.
    jobs : notebooks graded at the same time.
    budget_s : seconds one notebook may cost in all (reading it, its kernels, cells and answers).
    feedback_dir : default: ``<csv name>_feedback/`` next to the CSV.
    seed : seed of the random grading cases, for tests only (default: a fresh secret one; a
        ``--seed`` given on a command line is visible to every process of the account).
    n_random : random grading cases per function exercise.
    cases_file : an instructor's JSON of extra grading cases, ``{"2.3": [[...], ...]}``.
    registry : a module whose ``EXERCISES`` replace the package's answer key.
    chapter : grade every submission as this chapter (instead of detecting it).
    kernel : the Jupyter kernel (an IPython kernel) whose Python runs the notebooks.
    memory_limit_bytes : memory of one notebook's kernel and every process it starts (0: none).
    isolation : ``auto`` (the strongest available), ``bubblewrap``, ``unshare`` or ``process``.
    secret_file : the class secret the students' own numbers were drawn from at release.
    roster_file : the class list (CSV with an ``id`` column), to tell each notebook's student.
    """
    s = _setup(submissions_dir, out_csv, feedback_dir, timeout_s=timeout_s, budget_s=budget_s,
               jobs=jobs, n_random=n_random, seed=seed, cases_file=cases_file, registry=registry,
               chapter=chapter, kernel=kernel, isolation=isolation, secret_file=secret_file,
               roster_file=roster_file)
    check_int("--memory-limit", memory_limit_bytes, minimum=0, maximum=2**50)

    def say(msg: str) -> None:
        if progress is not None:
            print(msg, file=progress, flush=True)

    for note in s.notes:
        say(f"vidya-lab grade: warning: {note}")
    rels = s.found.notebooks + s.found.links
    say(f"vidya-lab grade: {len(rels)} notebooks, {jobs} at a time, {timeout_s:g} s per cell, "
        f"{budget_s:g} s per notebook; isolation: {s.level}")
    run_dir = short_temp_root()
    try:
        return _run(s, rels, run_dir, say, jobs=jobs, timeout_s=timeout_s, budget_s=budget_s,
                    chapter=chapter, kernel=kernel, memory_limit_bytes=memory_limit_bytes)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _run(s: Setup, rels: list[str], run_dir: Path, say, *, jobs, timeout_s, budget_s, chapter,
         kernel, memory_limit_bytes) -> list[Submission]:
    roots, originals = _templates(s, run_dir)
    config = WorkerConfig(spec=s.plan.spec, level=s.level, python=s.python, kernel=kernel,
                          timeout_s=float(timeout_s), budget_s=float(budget_s),
                          memory_limit_bytes=int(memory_limit_bytes), chapter=chapter,
                          template_values=roots["values"], template_functions=roots["functions"],
                          originals=originals)
    snap = snapshot(s.root, s.found.notebooks, run_dir / "in")
    rows = {rel: not_graded(display_path(rel)) for rel in rels}
    ids = {ch: [ex.id for ex in s.plan.registry.chapter(ch)] for ch in s.plan.registry.chapters}
    names, t0 = FeedbackNames(), time.monotonic()
    s.feedback.mkdir(parents=True, exist_ok=True)
    write_csv(s.out, list(rows.values()), ids)

    def on_result(rel: str, report: dict) -> None:
        sub = rows[rel] = _score(s, rel, report)
        write_csv(s.out, list(rows.values()), ids)
        _write_feedback(s.feedback, [rel], [sub], names, say)
        done = sum(1 for r in rows.values() if not r.status.startswith("not graded"))
        say(f"[{done}/{len(rels)}] {sub.file}: {fmt_points(sub.total)}/{sub.max_points} "
            f"{sub.status} ({time.monotonic() - t0:.0f} s)")

    def items():
        for k, rel in enumerate(rels):
            if rel in s.found.links:
                yield k, rel, None, "refused: a symbolic link (not followed)"
            elif rel in snap.problems:
                yield k, rel, None, snap.problems[rel]
            else:
                try:
                    yield k, rel, snap.read(rel), Path(rel).name
                except (OSError, ValueError) as exc:
                    yield k, rel, None, str(exc)

    Pool(config, run_dir, jobs, prepare=lambda: _templates(s, run_dir)).run(items(), on_result)
    flags = duplicate_flags({rel: rows[rel].student or None for rel in rels})
    for rel, flag in flags.items():
        rows[rel].flags.append(flag)
    ordered = [rows[rel] for rel in rels]
    write_csv(s.out, ordered, ids)
    _write_feedback(s.feedback, rels, ordered, names, say)
    say(f"vidya-lab grade: wrote {s.out} and {len(ordered)} feedback files in {s.feedback}")
    return ordered


def _write_feedback(folder: Path, rels, subs, names: FeedbackNames, say) -> None:
    from vidya_lab._validate import atomic_write_text

    failed = 0
    for rel, sub in zip(rels, subs, strict=True):
        try:
            atomic_write_text(folder / names(rel), feedback_text(sub))
        except OSError:
            failed += 1
    if failed:
        say(f"vidya-lab grade: warning: {failed} feedback file(s) could not be written in {folder}")
