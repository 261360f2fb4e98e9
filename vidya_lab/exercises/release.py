"""Release the chapters to students: ``.ipynb`` notebooks without the solutions, one set per student.

``vidya-lab release OUTDIR`` reads every ``chapters/NN_*.md`` (MyST-Markdown notebooks paired with
jupytext), removes each solution (:func:`~vidya_lab.exercises.release_text.strip_solutions`), and
writes one ``NN_name.ipynb`` per chapter. The answer cells (``answer_2_1 = ...`` and
``check("2.1", answer_2_1)``) stay as they are: they are the placeholders students fill in and the
names the grader reads back.

With ``--roster ROSTER --secret-file SECRET`` it writes ``OUTDIR/<student id>/NN_name.ipynb`` for
every student instead: each notebook starts with a cell that records that student's own numbers
(``use_givens(...)``, drawn from the class secret and the id, see
:mod:`vidya_lab.exercises.givens`) and names the student in its metadata. The secret file is
created (64 random hex digits, readable by its owner only) if it does not exist yet; keep it, the
grader needs it. ``solutions_dir`` receives the complete notebooks (per student too), for the
instructor only.

Next to the notebooks it writes what Binder and an LMS need (:mod:`.release_files`). Each notebook
carries ``metadata["vidya_lab"] = {"chapter": N, "exercises": [...], "student": ...}`` so the grader
knows which chapter and student a submission is, whatever the file was renamed to. The book's own
cells (tagged ``remove-cell`` in the chapter: glue for the prose, the book's figures) carry
``metadata["vidya_lab"] = {"role": "book-only", "source_sha256": ...}``: the grader skips such a
cell while it is unchanged and nothing graded reads what it binds (:mod:`.cellgraph`).
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vidya_lab._validate import atomic_write_text, check_output_dir

from .cellgraph import BOOK_ROLE, source_digest
from .core import Exercise
from .givens import chapter_spec, draw_givens, new_secret, read_secret
from .release_files import default_package_spec, manifest, pins_root, write_class_files
from .release_text import (
    chapter_problems,
    markdown_leaks,
    solution_dependencies,
    strip_solutions,
)

__all__ = ["ReleasedChapter", "chapter_files", "chapter_problems", "personalise", "release",
           "repo_chapters_dir", "solution_dependencies", "strip_solutions"]

_CHAPTER_FILE = re.compile(r"^(?P<num>\d{2})_[A-Za-z0-9_]+\.md$")
GIVENS_CELL = ("# Your own numbers for this chapter's exercises, from your instructor: keep this "
               "cell as it is.\nfrom vidya_lab.exercises import use_givens\n\n"
               "use_givens({student!r}, {chapter}, {values})")


@dataclass
class ReleasedChapter:
    """One released notebook (the first student's, with a roster): where it went, what it holds."""

    chapter: int
    source: Path
    notebook: Path
    title: str
    exercise_ids: list[str]
    problems: list[str] = field(default_factory=list)


def repo_chapters_dir() -> Path:
    """The ``chapters/`` folder of the checkout this package runs from, else ``./chapters``."""
    here = Path(__file__).resolve().parents[2] / "chapters"
    return here if here.is_dir() else Path.cwd() / "chapters"


def chapter_files(chapters_dir: Path) -> list[tuple[int, Path]]:
    """``(chapter number, path)`` for every ``NN_*.md`` in ``chapters_dir``, in order."""
    chapters_dir = Path(chapters_dir)
    if not chapters_dir.is_dir():
        raise FileNotFoundError(f"chapters folder not found: {chapters_dir}")
    found = [(int(m["num"]), p) for p in sorted(chapters_dir.iterdir())
             if (m := _CHAPTER_FILE.match(p.name))]
    if not found:
        raise FileNotFoundError(f"no chapter files (NN_name.md) in {chapters_dir}")
    return found


_MYST_NB_IMPORT = re.compile(r"^from myst_nb import glue$", re.M)


def _to_notebook(text: str, chapter: int, exercises: Sequence[Exercise]):
    import jupytext

    nb = jupytext.reads(text, fmt="md:myst")
    nb.metadata.pop("jupytext", None)
    nb.metadata.setdefault("kernelspec", {"display_name": "Python 3", "language": "python",
                                          "name": "python3"})
    nb.metadata.setdefault("language_info", {"name": "python"})
    from vidya_lab import __version__

    nb.metadata["vidya_lab"] = {"chapter": chapter, "exercises": [ex.id for ex in exercises],
                                "version": __version__}
    for cell in nb.cells:  # the book's own cells (glue, figures): the grader may skip them
        if cell.cell_type == "code":  # a handout's environment has no myst_nb: glue from the package
            cell.source = _MYST_NB_IMPORT.sub("from vidya_lab.pages import glue", cell.source)
        if cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", []):
            cell.metadata["vidya_lab"] = {"role": BOOK_ROLE,
                                          "source_sha256": source_digest(cell.source)}
    return nb


def personalise(nb, chapter: int, student: str | None, values: dict):
    """A copy of ``nb`` that records ``values`` (a student's givens) in a first code cell and names
    ``student`` in its metadata; ``nb`` unchanged. Without values, the copy is ``nb`` as it is."""
    import nbformat

    out = copy.deepcopy(nb)
    if student is not None:
        out.metadata["vidya_lab"]["student"] = student
        out.metadata["vidya_lab"]["givens_issued"] = bool(values)
    if values:
        cell = nbformat.v4.new_code_cell(GIVENS_CELL.format(student=student, chapter=chapter,
                                                            values=json.dumps(values)))
        cell.metadata["vidya_lab"] = {"role": "givens"}
        first = next((i for i, c in enumerate(out.cells) if c.cell_type == "code"), len(out.cells))
        out.cells.insert(first, cell)
    return out


def _write_notebook(nb, path: Path) -> None:
    import nbformat

    nbformat.validator.normalize(nb)  # adds missing cell ids etc.
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, nbformat.writes(nb) + "\n")


def _title(text: str, fallback: str) -> str:
    m = re.search(r"^# (.+)$", text, re.M)
    return m[1].strip() if m else fallback


def _secret_for(secret_file, roster) -> bytes | None:
    if roster is None:
        return None
    if secret_file is None:
        raise ValueError("--roster needs --secret-file: the class secret the students' own numbers "
                         "are drawn from (a new one is written there if the file does not exist)")
    p = Path(secret_file)
    if not p.exists():
        from vidya_lab._validate import check_output_file

        check_output_file("--secret-file", p, overwrite=False)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(new_secret() + "\n")
        print(f"vidya-lab release: wrote a new class secret to {p}; keep it (the grader needs "
              "it) where students cannot read it", file=sys.stderr)
    return read_secret(p)


def _check_outputs(outdir, solutions_dir) -> tuple[Path, Path | None]:
    out = check_output_dir("OUTDIR", outdir)
    sol = check_output_dir("--solutions", solutions_dir) if solutions_dir else None
    if sol is not None and (sol.resolve() == out.resolve() or out.resolve() in sol.resolve().parents):
        raise ValueError("solutions_dir must not be inside OUTDIR: students would receive the "
                         f"solutions (got {sol})")
    return out, sol


def release(outdir: str | Path, chapters_dir: str | Path | None = None,
            exercises_for: Callable[[int], list[Exercise]] | None = None,
            solutions_dir: str | Path | None = None, package_spec: str | None = None,
            roster: Sequence[str] | None = None,
            secret_file: str | Path | None = None,
            only: Sequence[int] | None = None) -> list[ReleasedChapter]:
    """Write the student notebooks and the Binder/LMS files into ``outdir``.

    Parameters
    ----------
    outdir : folder to write into (created; files of the same name are replaced).
    chapters_dir : where the ``NN_*.md`` chapters are; default: the checkout's ``chapters/``.
    exercises_for : ``chapter -> list[Exercise]``; default: the package's answer key.
    solutions_dir : if given, the complete notebooks (with solutions) are written there too.
    package_spec : the requirement line that installs vidya-lab on Binder.
    roster : student ids: one folder of notebooks each, with that student's own numbers.
    secret_file : the class secret for ``roster`` (created if missing).
    only : chapter numbers to release (default: every chapter in ``chapters_dir``).

    Returns
    -------
    One :class:`ReleasedChapter` per chapter, with any ``problems`` found (also printed on stderr).
    """
    from .plan import registry_exercises_for

    out, sol = _check_outputs(outdir, solutions_dir)
    chapters_dir = Path(chapters_dir) if chapters_dir else repo_chapters_dir()
    files = chapter_files(chapters_dir)
    if only is not None:
        wanted = set(only)
        known = {ch for ch, _ in files}
        if not wanted or not wanted <= known:
            raise ValueError(f"only must name chapters in {chapters_dir}: {sorted(known)}, got "
                             f"{sorted(wanted - known) or 'none'}")
        files = [(ch, p) for ch, p in files if ch in wanted]
    exercises_for = exercises_for or registry_exercises_for(None)
    secret = _secret_for(secret_file, roster)
    students = list(roster) if roster is not None else [None]
    released = [_release_chapter(ch, path, list(exercises_for(ch)), out, sol, students, secret)
                for ch, path in files]
    repo_root = pins_root(chapters_dir.resolve().parent)
    write_class_files(out, repo_root, package_spec or default_package_spec(repo_root),
                      manifest(released, exercises_for))
    return released


def _release_chapter(chapter: int, path: Path, exercises: list[Exercise], out: Path,
                     sol: Path | None, students: list, secret: bytes | None) -> ReleasedChapter:
    text = path.read_text(encoding="utf-8")
    nb = _to_notebook(strip_solutions(text), chapter, exercises)
    full = _to_notebook(text, chapter, exercises)
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    problems = chapter_problems(sources, exercises, chapter, text) + markdown_leaks(nb)
    problems += solution_dependencies([c.source for c in full.cells if c.cell_type == "code"],
                                      sources, exercises)
    spec = chapter_spec(exercises)
    if secret is not None and exercises and not spec:
        print(f"vidya-lab release: note: {path.name}: no exercise has per-student numbers, so "
              "every student's answers are the book's", file=sys.stderr)
    first = None
    for student in students:
        values = (draw_givens(spec, secret, student, chapter) if secret is not None
                  else {n: g.default for n, g in spec.items()})
        where = out / student if student else out
        target = where / (path.stem + ".ipynb")
        _write_notebook(personalise(nb, chapter, student, values), target)
        if sol is not None:
            _write_notebook(personalise(full, chapter, student, values),
                            (sol / student if student else sol) / (path.stem + ".ipynb"))
        first = first or target
    for p in problems:
        print(f"vidya-lab release: {path.name}: {p}", file=sys.stderr)
    return ReleasedChapter(chapter, path, first, _title(text, path.stem),
                           [ex.id for ex in exercises], problems)
