"""Release the chapters to students: ``.ipynb`` notebooks without the solutions.

``vidya-lab release OUTDIR`` reads every ``chapters/NN_*.md`` (MyST-Markdown notebooks paired with
jupytext), removes each ``{solution-start} … {solution-end}`` block (and the one-piece ``{solution}``
directive), turns the sphinx-exercise markers into plain headings a notebook shows well, and writes one
``NN_name.ipynb`` per chapter. The answer cells (``answer_2_1 = ...`` and ``check("2.1", answer_2_1)``)
stay as they are: they are the placeholders students fill in and the names the grader reads back.

Next to the notebooks it writes what Binder and a learning-management system need: ``requirements.txt``
(the pinned runtime plus the package), ``runtime.txt``, ``manifest.json`` (chapters, exercise ids,
points; no answers) and a short ``README.md`` for students. ``solutions_dir`` (optional) receives the
complete notebooks, for the instructor only.

Each released notebook carries ``metadata["vidya_lab"] = {"chapter": N, "exercises": [...]}`` so the
grader knows which chapter a submission is, whatever the student renamed the file to.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .core import Exercise

#: A fenced directive opening line: ```{name} or :::{name}, any fence length ≥ 3.
_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[a-z-]+)\}(?P<arg>.*)$")
_CHAPTER_FILE = re.compile(r"^(?P<num>\d{2})_[A-Za-z0-9_]+\.md$")
_LABEL = re.compile(r"^:label:\s*(?P<label>\S+)\s*$")
_LABEL_NUMBER = re.compile(r"(\d+)[-_.](\d+)$")

#: Build-only requirements a student's Binder does not need (the rest of requirements.txt is kept).
_BOOK_ONLY = ("jupyter-book", "sphinx", "myst-nb", "sphinx-book-theme", "sphinx-exercise",
              "sphinxcontrib-bibtex", "jupyter-cache")


@dataclass
class ReleasedChapter:
    """One released notebook: where it went and what it holds."""

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
    found = []
    for path in sorted(chapters_dir.iterdir()):
        m = _CHAPTER_FILE.match(path.name)
        if m:
            found.append((int(m["num"]), path))
    if not found:
        raise FileNotFoundError(f"no chapter files (NN_name.md) in {chapters_dir}")
    return found


def strip_solutions(text: str) -> str:
    """Remove every solution from a MyST-Markdown chapter and make the exercise markers plain.

    Removes ``{solution-start} … {solution-end}`` (gated form, which may span code cells) and the
    one-piece ``{solution}`` directive. ``{exercise-start}`` with ``:label: ex-2-1`` becomes a
    "**Exercise 2.1**" line and ``{exercise-end}`` a rule, since a plain notebook does not render
    sphinx-exercise directives. Everything else is kept byte for byte.
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    n = len(lines)

    def block_end(start: int, fence: str) -> int:
        """Index just past the line closing the directive that opens at ``start``."""
        j = start + 1
        while j < n and lines[j].rstrip("\n").rstrip() != fence:
            j += 1
        return min(j + 1, n)

    while i < n:
        m = _FENCE_OPEN.match(lines[i].rstrip("\n"))
        if not m:
            out.append(lines[i])
            i += 1
            continue
        name, fence = m["name"], m["fence"]
        if name == "solution-start":
            # skip to the end of the matching {solution-end} directive (its closing fence line)
            j = block_end(i, fence)
            while j < n:
                mm = _FENCE_OPEN.match(lines[j].rstrip("\n"))
                if mm and mm["name"] == "solution-end":
                    j = block_end(j, mm["fence"])
                    break
                j += 1
            i = j
            _drop_extra_blank(out, lines, i)
        elif name == "solution":
            i = block_end(i, fence)
            _drop_extra_blank(out, lines, i)
        elif name == "exercise-start":
            j = block_end(i, fence)
            label = ""
            for line in lines[i + 1:j - 1]:
                lm = _LABEL.match(line.strip())
                if lm:
                    label = lm["label"]
            num = _LABEL_NUMBER.search(label)
            title = f"Exercise {num[1]}.{num[2]}" if num else "Exercise"
            out.append(f"**{title}**\n\n")
            i = j
        elif name == "exercise-end":
            out.append("\n---\n")
            i = block_end(i, fence)
        else:
            out.append(lines[i])
            i += 1
    return "".join(out)


def _drop_extra_blank(out: list[str], lines: list[str], i: int) -> None:
    """After removing a block, avoid leaving two blank lines where it was."""
    if out and not out[-1].strip() and i < len(lines) and not lines[i].strip():
        out.pop()


def _answer_defined(source: str, name: str) -> bool:
    return re.search(rf"^\s*(def\s+{re.escape(name)}\s*\(|{re.escape(name)}\s*=)", source, re.M) is not None


def _placeholder(source: str, name: str) -> bool:
    return re.search(rf"^\s*{re.escape(name)}\s*=\s*\.\.\.", source, re.M) is not None


def chapter_problems(student_sources: Sequence[str], exercises: Sequence[Exercise],
                     chapter: int, full_text: str) -> list[str]:
    """What is wrong with a released chapter: missing or pre-filled answer cells, leaked solutions."""
    problems = []
    code = "\n".join(student_sources)
    for ex in exercises:
        if not _answer_defined(code, ex.answer_name):
            problems.append(f"exercise {ex.id}: no cell defines {ex.answer_name}")
        elif ex.kind != "function" and not _placeholder(code, ex.answer_name):
            problems.append(f"exercise {ex.id}: the answer cell does not hold the "
                            f"`{ex.answer_name} = ...` placeholder")
    registered = {ex.id for ex in exercises}
    for used in sorted(set(re.findall(r"check\(\s*[\"'](\d+\.\d+)[\"']", full_text))):
        if int(used.split(".")[0]) == chapter and used not in registered:
            problems.append(f"exercise {used}: checked in the chapter but not registered")
    if re.search(r"\{solution", "\n".join(student_sources)):
        problems.append("a solution directive survived the release")
    return problems


def _names(sources: Sequence[str]) -> tuple[set[str], set[str]]:
    """(names assigned, names read) in code cells that parse as Python (magics are skipped)."""
    import ast

    stored, loaded = set(), set()
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (stored if isinstance(node.ctx, ast.Store) else loaded).add(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                stored.add(node.name)
            elif isinstance(node, ast.arg):  # parameters (scopes are not tracked: no false alarm)
                stored.add(node.arg)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                stored.add(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    stored.add((alias.asname or alias.name).split(".")[0])
    return stored, loaded


def solution_dependencies(full_sources: Sequence[str], student_sources: Sequence[str],
                          exercises: Sequence[Exercise]) -> list[str]:
    """Names only a solution defines that the released notebook still reads (a NameError to be)."""
    removed = list(full_sources)
    for src in student_sources:
        if src in removed:
            removed.remove(src)
    only_in_solutions = _names(removed)[0] - _names(student_sources)[0]
    only_in_solutions -= {ex.answer_name for ex in exercises}
    used = _names(student_sources)[1] & only_in_solutions
    return [f"`{name}` is defined only in a solution but used by a released cell: students "
            "will get a NameError" for name in sorted(used)]


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
    return nb


def _title(text: str, fallback: str) -> str:
    m = re.search(r"^# (.+)$", text, re.M)
    return m[1].strip() if m else fallback


def _write_notebook(nb, path: Path) -> None:
    import nbformat

    nbformat.validator.normalize(nb)  # adds missing cell ids etc.
    nbformat.write(nb, str(path))


def binder_requirements(repo_root: Path | None, package_spec: str) -> str:
    """The ``requirements.txt`` for a Binder built from the release folder."""
    lines = ["# What Binder installs for the vidya-lab student notebooks (written by vidya-lab release).",
             ""]
    pins: list[str] = []
    src = repo_root / "requirements.txt" if repo_root else None
    if src and src.is_file():
        for raw in src.read_text().splitlines():
            line = raw.strip()
            if not line or line.startswith("#") or line.startswith("-"):
                continue
            name = re.split(r"[<>=!~ \[;@]", line, maxsplit=1)[0].lower()
            if name in _BOOK_ONLY:
                continue
            pins.append(line)
    else:
        pins += ["jupyterlab", "ipykernel", "ipywidgets", "numpy", "matplotlib", "simpy", "pandas"]
    return "\n".join(lines + pins + [package_spec, ""])


def default_package_spec(repo_root: Path | None) -> str:
    """``vidya-lab @ git+URL@branch`` from ``_config.yml``'s repository, else ``vidya-lab==VERSION``."""
    from vidya_lab import __version__

    cfg = repo_root / "_config.yml" if repo_root else None
    if cfg and cfg.is_file():
        text = cfg.read_text()
        url = re.search(r"^repository:\s*\n(?:\s+.*\n)*?\s+url:\s*(\S+)", text, re.M)
        branch = re.search(r"^repository:\s*\n(?:\s+.*\n)*?\s+branch:\s*(\S+)", text, re.M)
        if url:
            return f"vidya-lab @ git+{url[1]}@{branch[1] if branch else 'main'}"
    return f"vidya-lab=={__version__}"


_STUDENT_README = """# vidya-lab: exercise notebooks

One notebook per chapter. Open it in JupyterLab (or on Binder: this folder's `requirements.txt` is what
Binder installs), read, run the cells in order and answer each exercise by replacing the `...` in its
answer cell:

```python
answer_2_1 = ...  # your answer
check("2.1", answer_2_1)
```

`check` tells you at once whether your answer is right and, if not, hints at the likely slip. Keep the
variable names (`answer_2_1`, or the function name an exercise asks for): the grader reads them. Before
you hand in, restart the kernel and run all cells, so that the notebook works from top to bottom. Hand
in the `.ipynb` file.

Exercises in this release:

{table}
"""


def release(outdir: str | Path, chapters_dir: str | Path | None = None,
            exercises_for=None, solutions_dir: str | Path | None = None,
            package_spec: str | None = None) -> list[ReleasedChapter]:
    """Write the student notebooks and the Binder/LMS files into ``outdir``.

    Parameters
    ----------
    outdir : folder to write into (created; files of the same name are replaced).
    chapters_dir : where the ``NN_*.md`` chapters are; default: the checkout's ``chapters/``.
    exercises_for : ``chapter -> list[Exercise]``; default: the package registry.
    solutions_dir : if given, the complete notebooks (with solutions) are written there too.
    package_spec : the requirement line that installs vidya-lab on Binder.

    Returns
    -------
    One :class:`ReleasedChapter` per chapter, with any ``problems`` found (also printed on stderr).
    """
    from .grader import registry_exercises_for

    chapters_dir = Path(chapters_dir) if chapters_dir else repo_chapters_dir()
    exercises_for = exercises_for or registry_exercises_for(None)
    outdir = Path(outdir)
    files = chapter_files(chapters_dir)
    outdir.mkdir(parents=True, exist_ok=True)
    sol = Path(solutions_dir) if solutions_dir else None
    if sol is not None:
        if sol.resolve() == outdir.resolve() or outdir.resolve() in sol.resolve().parents:
            raise ValueError("solutions_dir must not be inside OUTDIR: students would receive the "
                             f"solutions (got {sol})")
        sol.mkdir(parents=True, exist_ok=True)

    released = []
    for chapter, path in files:
        text = path.read_text(encoding="utf-8")
        exercises = list(exercises_for(chapter))
        student_text = strip_solutions(text)
        nb = _to_notebook(student_text, chapter, exercises)
        target = outdir / (path.stem + ".ipynb")
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
        full = _to_notebook(text, chapter, exercises)
        problems = chapter_problems(sources, exercises, chapter, text)
        problems += _markdown_leaks(nb)
        problems += solution_dependencies([c.source for c in full.cells if c.cell_type == "code"],
                                          sources, exercises)
        _write_notebook(nb, target)
        if sol is not None:
            _write_notebook(full, sol / (path.stem + ".ipynb"))
        rc = ReleasedChapter(chapter, path, target, _title(text, path.stem),
                             [ex.id for ex in exercises], problems)
        for p in problems:
            print(f"vidya-lab release: {path.name}: {p}", file=sys.stderr)
        released.append(rc)

    repo_root = chapters_dir.resolve().parent
    spec = package_spec or default_package_spec(repo_root)
    (outdir / "requirements.txt").write_text(binder_requirements(repo_root, spec))
    runtime = repo_root / "runtime.txt"
    (outdir / "runtime.txt").write_text(
        runtime.read_text() if runtime.is_file() else "python-3.11\n")
    manifest = _manifest(released, exercises_for)
    (outdir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    rows = ["| notebook | exercises | points |", "|---|---|---|"]
    for entry in manifest["notebooks"]:
        ids = ", ".join(e["id"] for e in entry["exercises"]) or "none"
        rows.append(f"| `{entry['file']}` | {ids} | {entry['points']} |")
    (outdir / "README.md").write_text(_STUDENT_README.replace("{table}", "\n".join(rows)))
    return released


def _markdown_leaks(nb) -> list[str]:
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return ["a solution directive survived the release"] if "{solution" in text else []


def _manifest(released: Sequence[ReleasedChapter], exercises_for) -> dict:
    from vidya_lab import __version__

    notebooks = []
    for rc in released:
        exs = list(exercises_for(rc.chapter))
        notebooks.append({
            "file": rc.notebook.name,
            "chapter": rc.chapter,
            "title": rc.title,
            "points": sum(ex.points for ex in exs),
            "exercises": [{"id": ex.id, "prompt": ex.prompt, "kind": ex.kind, "unit": ex.unit,
                           "points": ex.points, "answer_name": ex.answer_name} for ex in exs],
        })
    return {"vidya_lab_version": __version__, "notebooks": notebooks,
            "total_points": sum(nb["points"] for nb in notebooks)}
