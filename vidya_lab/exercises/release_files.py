"""What a release writes next to the notebooks: Binder's requirements, the LMS manifest, a README."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from vidya_lab._validate import atomic_write_text

from .core import Exercise

#: Build-only requirements a student's Binder does not need (the rest of requirements.txt is kept).
_BOOK_ONLY = ("jupyter-book", "sphinx", "myst-nb", "sphinx-book-theme", "sphinx-exercise",
              "sphinxcontrib-bibtex", "jupyter-cache")

_STUDENT_README = """# vidya-lab: exercise notebooks

One notebook per chapter. Open it in JupyterLab (or on Binder: this folder's `requirements.txt` is
what Binder installs), read, run the cells in order and answer each exercise by replacing the `...`
in its answer cell:

```python
answer_2_1 = ...  # your answer
check("2.1", answer_2_1)
```

`check` tells you at once whether your answer is right and, if not, hints at the likely slip. Where
an exercise has numbers of your own, its answer cell prints them (`my_givens("1.4")`): answer for
those, not for the book's. Keep the first cell that records them, and keep the variable names
(`answer_2_1`, or the function name an exercise asks for): the grader reads them. Before you hand
in, restart the kernel and run all cells, so that the notebook works from top to bottom. Hand in the
`.ipynb` file.

Exercises in this release:

{table}
"""


def binder_requirements(repo_root: Path | None, package_spec: str) -> str:
    """The ``requirements.txt`` for a Binder built from the release folder."""
    lines = ["# What Binder installs for the vidya-lab student notebooks (vidya-lab release).", ""]
    pins: list[str] = []
    src = repo_root / "requirements.txt" if repo_root else None
    if src and src.is_file():
        for raw in src.read_text().splitlines():
            line = raw.strip()
            # a local folder (./jupyter-config: the checkout's JupyterLab settings) is not a pin;
            # the handout's vidya-lab, installed not editable, carries those settings itself
            if not line or line.startswith(("#", "-", ".", "/")):
                continue
            name = re.split(r"[<>=!~ \[;@]", line, maxsplit=1)[0].lower()
            if name in _BOOK_ONLY:
                continue
            pins.append(line)
    else:  # no checkout to read pins from: what this environment runs, pinned exactly
        pins += installed_pins(_STUDENT_STACK)
    return "\n".join(lines + pins + [package_spec, ""])


#: What a handout's kernel and JupyterLab need when no requirements.txt can be read.
_STUDENT_STACK = ("jupyterlab", "jupyterlab-myst", "jupytext", "ipykernel", "ipywidgets", "numpy",
                  "matplotlib", "simpy", "pandas")


def installed_pins(names: Sequence[str]) -> list[str]:
    """``name==version`` for each of ``names`` installed here (the ones that are not: left out)."""
    import importlib.metadata as md

    pins = []
    for name in names:
        try:
            pins.append(f"{name}=={md.version(name)}")
        except md.PackageNotFoundError:
            continue
    return pins


def package_checkout() -> Path | None:
    """The checkout this package runs from (its requirements.txt and _config.yml), if it is one."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "requirements.txt").is_file() and (root / "pyproject.toml").is_file() \
        else None


def pins_root(repo_root: Path | None) -> Path | None:
    """Where a release reads its pins and package source from: the chapters' own checkout, else
    (chapters outside any checkout) the checkout the package runs from, else none."""
    if repo_root is not None and (repo_root / "requirements.txt").is_file():
        return repo_root
    return package_checkout()


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


def manifest(released: Sequence, exercises_for: Callable[[int], list[Exercise]]) -> dict:
    """Chapters, exercise ids, prompts and points (no answers, no givens), for an LMS."""
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
                           "points": ex.points, "answer_name": ex.answer_name,
                           "per_student": bool(ex.givens)} for ex in exs],
        })
    return {"vidya_lab_version": __version__, "notebooks": notebooks,
            "total_points": sum(nb["points"] for nb in notebooks)}


def write_class_files(outdir: Path, repo_root: Path | None, package_spec: str, info: dict) -> None:
    """``requirements.txt``, ``runtime.txt``, ``manifest.json`` and ``README.md`` in ``outdir``."""
    atomic_write_text(outdir / "requirements.txt", binder_requirements(repo_root, package_spec))
    runtime = repo_root / "runtime.txt" if repo_root else None
    atomic_write_text(outdir / "runtime.txt",
                      runtime.read_text() if runtime and runtime.is_file() else "python-3.11\n")
    atomic_write_text(outdir / "manifest.json", json.dumps(info, indent=2) + "\n")
    rows = ["| notebook | exercises | points |", "|---|---|---|"]
    for entry in info["notebooks"]:
        ids = ", ".join(e["id"] for e in entry["exercises"]) or "none"
        rows.append(f"| `{entry['file']}` | {ids} | {entry['points']} |")
    atomic_write_text(outdir / "README.md", _STUDENT_README.replace("{table}", "\n".join(rows)))
