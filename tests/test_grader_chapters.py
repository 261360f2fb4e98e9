"""The real chapters, released per student and graded: each student's solution earns full marks,
the released notebook nothing, and a solution copied from a classmate only what is the same for all.

Grading runs with kernels are slow, so chapter 1 (per-student numbers and a function exercise) is
graded for real; for every chapter a static check makes sure its code uses only the chapter's public
exercise data, never the answer key that graded kernels do not have.
"""

from __future__ import annotations

import csv

import pytest

from vidya_lab.exercises import grader
from vidya_lab.exercises.plan import load_registry
from vidya_lab.exercises.release import release


def test_chapters_use_only_public_exercise_data():
    """A chapter's code may call ``exN.<name>`` of its data module, never the answer key."""
    import importlib
    import re

    from vidya_lab.exercises.release import chapter_files, repo_chapters_dir

    for chapter, path in chapter_files(repo_chapters_dir()):
        text = path.read_text()
        assert "exercises.key" not in text and "import solve" not in text, path.name
        module = importlib.import_module(f"vidya_lab.exercises.ch{chapter:02d}")
        for name in set(re.findall(rf"\bex{chapter}\.(\w+)", text)):
            assert hasattr(module, name), f"{path.name} uses ex{chapter}.{name}, not in its data"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chapters")
    reg = load_registry(None)
    secret, roster = tmp / "class.secret", tmp / "roster.csv"
    roster.write_text("id\nalice\nbob\n")
    secret.write_text("a fixed class secret, so the test draws the same numbers every run\n")
    released = release(tmp / "rel", solutions_dir=tmp / "sol", exercises_for=reg.chapter,
                       roster=["alice", "bob"], secret_file=secret)
    shown = [r for r in released if r.exercise_ids and "exercise-start" in r.source.read_text()]
    shown = [r for r in shown if any(ex.givens for ex in reg.chapter(r.chapter))][:1] or shown[:1]
    subs = tmp / "subs"
    for r in shown:
        name = r.notebook.name
        (subs / "alice").mkdir(parents=True, exist_ok=True)
        (subs / "bob").mkdir(parents=True, exist_ok=True)
        (subs / "alice" / f"solution_{name}").write_bytes((tmp / "sol" / "alice" / name).read_bytes())
        (subs / "bob" / f"student_{name}").write_bytes((tmp / "rel" / "bob" / name).read_bytes())
    first = shown[0].notebook.name
    (subs / "bob" / f"copied_{first}").write_bytes((tmp / "sol" / "alice" / first).read_bytes())
    subs_graded = grader.grade(subs, tmp / "s.csv", timeout_s=120, jobs=2, secret_file=secret,
                               roster_file=roster, progress=None)
    rows = {r["file"]: r for r in csv.DictReader((tmp / "s.csv").open())}
    return shown, subs_graded, rows, reg


@pytest.mark.slow
def test_solutions_full_marks_released_nothing(graded):
    shown, subs, _, _ = graded
    if not shown:
        pytest.skip("no chapter shows registered exercises yet")
    for s in subs:
        assert s.status == "ok", (s.file, s.status, s.errors)
        if "solution_" in s.file:
            assert s.total == s.max_points > 0, (s.file, [(x.id, x.verdict) for x in s.scores])
        elif "student_" in s.file:
            assert s.total == 0, s.file
        assert s.killed_processes == 0, s.file


@pytest.mark.slow
def test_a_copied_solution_earns_only_what_is_the_same_for_everyone(graded):
    shown, subs, rows, reg = graded
    copied = next(s for s in subs if "copied_" in s.file)
    assert copied.student == "bob" and copied.flags[0] == "notebook says student alice"
    per_student = {ex.id for ex in reg.chapter(copied.chapter) if ex.givens}
    assert per_student, "the first chapter has exercises with per-student numbers"
    for sc in copied.scores:
        assert (sc.points == 0) == (sc.id in per_student), (sc.id, sc.verdict)


@pytest.mark.slow
def test_every_chapters_solutions_earn_full_marks_with_the_book_cells_left_out(tmp_path):
    """The grader leaves out the book's own cells that nothing graded reads
    (:func:`~vidya_lab.exercises.cellgraph.cells_to_run`); what those cells do besides binding
    names (an object changed in place, a file written) no static view sees, so every chapter's
    solutions are graded that way here, and must keep every point. Chapter 1 is graded with
    per-student numbers by the fixture above; chapters 2 to 6 here, with the book's numbers."""
    import nbformat

    from vidya_lab.exercises.cellgraph import cells_to_run

    reg = load_registry(None)
    released = release(tmp_path / "rel", solutions_dir=tmp_path / "sol", exercises_for=reg.chapter)
    subs = tmp_path / "subs"
    subs.mkdir()
    left_out = {}
    for r in released:
        if r.chapter == 1 or not r.exercise_ids:
            continue
        nb = nbformat.read(tmp_path / "sol" / r.notebook.name, as_version=4)
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
        names = [ex.answer_name for ex in reg.chapter(r.chapter)]
        left_out[r.chapter] = len(code) - len(cells_to_run(nb.cells, names))
        (subs / r.notebook.name).write_bytes((tmp_path / "sol" / r.notebook.name).read_bytes())
    assert left_out and all(n > 0 for n in left_out.values()), left_out
    graded = grader.grade(subs, tmp_path / "s.csv", timeout_s=180, jobs=2, progress=None)
    assert sorted(s.chapter for s in graded) == sorted(left_out)
    for s in graded:
        assert s.status == "ok", (s.file, s.status, s.errors)
        assert s.total == s.max_points > 0, (s.file, [(x.id, x.verdict) for x in s.scores])
