"""``vidya-lab release``: solutions removed, placeholders kept, Binder/LMS files written.

Uses the fixture chapter and registry in tests/fixtures/grading (chapter 7, not in the book), so the
tests do not depend on the chapters being written; one test releases the real chapters.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from vidya_lab.cli import main
from vidya_lab.exercises.givens import chapter_spec, draw_givens
from vidya_lab.exercises.plan import load_registry, registry_exercises_for
from vidya_lab.exercises.release import (
    chapter_files,
    chapter_problems,
    release,
    repo_chapters_dir,
    solution_dependencies,
    strip_solutions,
)

FIXTURES = Path(__file__).parent / "fixtures" / "grading"
CHAPTERS = FIXTURES / "chapters"


@pytest.fixture()
def fixture_registry(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    return registry_exercises_for("fixture_key")


GATED = """intro

```{exercise-start}
:label: ex-3-2
```
Question?

```{code-cell} ipython3
answer_3_2 = ...
check("3.2", answer_3_2)
```

```{exercise-end}
```

```{solution-start} ex-3-2
:class: dropdown
```
The secret reasoning.

```{code-cell} ipython3
answer_3_2 = 42
```

```{solution-end}
```

after
"""


def test_gated_solution_removed_with_its_code_cells_and_the_rest_kept():
    out = strip_solutions(GATED)
    assert "secret" not in out and "answer_3_2 = 42" not in out and "solution" not in out
    assert out.startswith("intro\n") and out.rstrip().endswith("after")
    assert "answer_3_2 = ...\ncheck(\"3.2\", answer_3_2)" in out
    # the sphinx-exercise markers become plain Markdown a notebook renders
    assert "**Exercise 3.2**" in out and "exercise-start" not in out and "exercise-end" not in out


def test_one_piece_solution_with_longer_and_colon_fences():
    text = ("a\n\n````{solution} ex-1-1\n:class: dropdown\nsecret 1\n```python\nx = 1\n```\n````\n\n"
            "b\n\n:::{solution-start} ex-1-2\nsecret 2\n:::\n\n:::{solution-end}\n:::\n\nc\n")
    out = strip_solutions(text)
    assert "secret" not in out and "x = 1" not in out
    assert [ln for ln in out.splitlines() if ln.strip()] == ["a", "b", "c"]


def test_unterminated_solution_hides_everything_after_it_rather_than_leak():
    text = "keep\n\n```{solution-start} ex-1-1\n```\nsecret\n\nmore secret\n"
    assert "secret" not in strip_solutions(text)
    assert strip_solutions(text).startswith("keep")


def test_text_without_directives_is_unchanged():
    text = "# Title\n\nSome prose with `code` and a fence:\n\n```python\nx = 1\n```\n"
    assert strip_solutions(text) == text


def test_release_of_fixture_chapter(tmp_path, fixture_registry):
    out, sol = tmp_path / "release", tmp_path / "solutions"
    released = release(out, chapters_dir=CHAPTERS, exercises_for=fixture_registry,
                       solutions_dir=sol, package_spec="vidya-lab==0.1.0")
    assert [r.chapter for r in released] == [7]
    assert released[0].problems == []
    nb_text = (out / "07_fixture.ipynb").read_text()
    assert "SECRET-SOLUTION-TEXT" not in nb_text and "solution" not in nb_text.lower()
    assert "SECRET-SOLUTION-TEXT" in (sol / "07_fixture.ipynb").read_text()
    nb = nbformat.read(str(out / "07_fixture.ipynb"), as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["vidya_lab"]["chapter"] == 7
    assert nb.metadata["vidya_lab"]["exercises"] == ["7.1", "7.2", "7.3"]
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert sum(bool(re.search(r"^answer_7_1 = \.\.\.", c, re.M)) for c in code) == 1
    assert sum(bool(re.search(r"^answer_7_2 = \.\.\.", c, re.M)) for c in code) == 1
    # the function exercise keeps its stub only, not the solution's body
    defs = [c for c in code if c.startswith("def kv_bytes_per_token")]
    assert len(defs) == 1 and "return" not in defs[0]
    # what Binder and an LMS need, without the answers
    assert (out / "runtime.txt").read_text().startswith("python-3")
    assert "vidya-lab==0.1.0" in (out / "requirements.txt").read_text().splitlines()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["total_points"] == 4
    assert [e["id"] for e in manifest["notebooks"][0]["exercises"]] == ["7.1", "7.2", "7.3"]
    assert "327680" not in (out / "manifest.json").read_text()
    assert manifest["notebooks"][0]["exercises"][0]["per_student"] is True
    assert "07_fixture.ipynb" in (out / "README.md").read_text()
    # without a roster every reader gets the book's numbers, recorded in the first code cell
    assert code[0].endswith('use_givens(None, 7, {"n_layers": 80, "n_kv_heads": 8})')
    assert "student" not in nb.metadata["vidya_lab"]


def test_solutions_inside_the_release_folder_are_refused(tmp_path, fixture_registry):
    with pytest.raises(ValueError, match="solutions_dir"):
        release(tmp_path / "r", chapters_dir=CHAPTERS, exercises_for=fixture_registry,
                solutions_dir=tmp_path / "r" / "sol")


def test_problems_are_reported():
    reg_exs = load_registry(None).exercises  # any real exercise will do, or the fixture below
    if not reg_exs:
        pytest.skip("no registered exercises yet")
    ex = reg_exs[0]
    missing = chapter_problems(["x = 1"], [ex], ex.chapter, "")
    assert any(ex.answer_name in p for p in missing)
    if ex.kind != "function":
        filled = chapter_problems([f"{ex.answer_name} = 3.0"], [ex], ex.chapter, "")
        assert any("placeholder" in p for p in filled)
    unregistered = chapter_problems([], [], 9, 'check("9.9", answer_9_9)')
    assert unregistered == ["exercise 9.9: checked in the chapter but not registered"]


def test_cli_release(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(FIXTURES))
    rc = main(["release", str(tmp_path / "out"), "--chapters", str(CHAPTERS),
               "--registry", "fixture_key", "--json"])
    assert rc == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["exercises"] == ["7.1", "7.2", "7.3"] and listed[0]["problems"] == []


def test_cli_release_bad_chapters_folder(tmp_path, capsys):
    assert main(["release", str(tmp_path / "out"), "--chapters", str(tmp_path / "nope")]) == 2
    assert "chapters folder not found" in capsys.readouterr().err


def test_release_of_the_real_chapters(tmp_path):
    """Every chapter is released; each registered exercise is a placeholder and no solution leaks."""
    files = chapter_files(repo_chapters_dir())
    released = release(tmp_path, exercises_for=registry_exercises_for(None))
    assert [r.chapter for r in released] == [ch for ch, _ in files]
    for r in released:
        text = r.notebook.read_text()
        if "exercise-start" in r.source.read_text():  # a chapter not yet showing its exercises
            assert r.problems == [], (r.source.name, r.problems)  # is being written: skip it
        assert "solution-start" not in text and "{solution}" not in text


def test_a_name_only_a_solution_defines_is_reported():
    full = ["import numpy as np", "answer_1_1 = ...", "ratio = 2.0\nanswer_1_1 = ratio * 3",
            "print(ratio, np.pi, answer_1_1)"]
    student = [full[0], full[1], full[3]]
    assert solution_dependencies(full, student, []) == [
        "`ratio` is defined only in a solution but used by a released cell: students will get "
        "a NameError"]
    # a name the released cells define themselves, and the answer variable, are fine
    assert solution_dependencies(full + ["ratio = 1"], student + ["ratio = 1"], []) == []


STUDENTS = ("alice", "bob", "chen", "dara", "eli", "farah")


def test_release_per_student(tmp_path, fixture_registry, capsys):
    secret = tmp_path / "class.secret"
    released = release(tmp_path / "out", chapters_dir=CHAPTERS, exercises_for=fixture_registry,
                       solutions_dir=tmp_path / "sol", roster=STUDENTS, secret_file=secret)
    assert released[0].problems == []
    assert "wrote a new class secret" in capsys.readouterr().err
    assert secret.stat().st_mode & 0o077 == 0  # readable by its owner only
    spec = chapter_spec(fixture_registry(7))
    seen = []
    for student in STUDENTS:
        for folder in ("out", "sol"):
            nb = nbformat.read(str(tmp_path / folder / student / "07_fixture.ipynb"), as_version=4)
            assert nb.metadata["vidya_lab"]["student"] == student
            assert nb.metadata["vidya_lab"]["givens_issued"] is True
            first = next(c for c in nb.cells if c.cell_type == "code")
            assert first.metadata["vidya_lab"]["role"] == "givens"
            values = json.loads(re.search(r"use_givens\('\w+', 7, (\{.*\})\)", first.source)[1])
            assert values == draw_givens(spec, secret.read_bytes().strip(), student, 7)
        seen.append(values)
    # the secret is new each run, and two students may draw the same one of the fixture's 40
    # combinations of numbers; six all alike is a chance of (1/40)**5
    assert len({json.dumps(v, sort_keys=True) for v in seen}) > 1, seen
    assert not (tmp_path / "out" / "07_fixture.ipynb").exists()
    # the same secret again: the same numbers (a re-release changes nothing)
    release(tmp_path / "again", chapters_dir=CHAPTERS, exercises_for=fixture_registry,
            roster=["alice"], secret_file=secret)
    again = nbformat.read(str(tmp_path / "again" / "alice" / "07_fixture.ipynb"), as_version=4)
    assert json.dumps(seen[0]) in next(c for c in again.cells if c.cell_type == "code").source


def test_a_roster_needs_a_secret(tmp_path, fixture_registry):
    with pytest.raises(ValueError, match="--secret-file"):
        release(tmp_path / "out", chapters_dir=CHAPTERS, exercises_for=fixture_registry,
                roster=["alice"])


def test_an_exercise_with_givens_must_show_them():
    ex = next(e for e in load_registry(None).exercises if e.givens)
    problems = chapter_problems([f"{ex.answer_name} = ..."], [ex], ex.chapter, "")
    assert any("my_givens" in p for p in problems)
    shown = chapter_problems([f'my_givens("{ex.id}")\n{ex.answer_name} = ...'], [ex],
                             ex.chapter, "")
    assert not any("my_givens" in p for p in shown)


def test_release_of_chosen_chapters_only(tmp_path, fixture_registry, capsys):
    released = release(tmp_path / "one", chapters_dir=CHAPTERS, exercises_for=fixture_registry,
                       only=[7])
    assert [r.chapter for r in released] == [7]
    with pytest.raises(ValueError, match=r"only must name chapters in .*\[7\], got \[3\]"):
        release(tmp_path / "bad", chapters_dir=CHAPTERS, exercises_for=fixture_registry, only=[3])
    assert not (tmp_path / "bad").exists() or not list((tmp_path / "bad").glob("*.ipynb"))
    capsys.readouterr()
    assert main(["release", str(tmp_path / "cli"), "--chapters", str(CHAPTERS),
                 "--chapter", "9"]) == 2
    assert "only must name chapters" in capsys.readouterr().err


def test_release_outside_the_checkout_pins_exactly_and_names_an_installable_package(
        tmp_path, fixture_registry):
    """Chapters copied out of any checkout: the handout's requirements are the checkout's exact
    pins (no book-only ones) and vidya-lab from the repository, not a version no registry has."""
    import shutil

    outside = tmp_path / "course" / "chapters"
    shutil.copytree(CHAPTERS, outside)
    out = tmp_path / "handout"
    release(out, chapters_dir=outside, exercises_for=fixture_registry)
    lines = [ln for ln in (out / "requirements.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    package = [ln for ln in lines if ln.startswith("vidya-lab")]
    assert package == ["vidya-lab @ git+https://github.com/vidya-lab/vidya-lab@main"], package
    pins = [ln for ln in lines if not ln.startswith("vidya-lab")]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][^ ]*", p) for p in pins), pins
    names = {p.split("==")[0].lower() for p in pins}
    assert {"jupyterlab", "jupyterlab-myst", "ipykernel", "numpy"} <= names
    assert not names & {"jupyter-book", "myst-nb", "sphinx"}


@pytest.mark.slow
def test_a_released_handout_runs_top_to_bottom_without_myst_nb(tmp_path, monkeypatch):
    """A handout's own environment has no myst-nb (its requirements leave the book's tools out):
    every code cell of a released chapter still runs, none raising. myst_nb is made unimportable
    the way the issue reproduced it, a module on the kernel's path that raises on import."""
    from nbclient import NotebookClient

    blocker = tmp_path / "no_myst_nb"
    blocker.mkdir()
    (blocker / "myst_nb.py").write_text("raise ModuleNotFoundError(\"No module named 'myst_nb'\")\n")
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(blocker), str(root)]))
    first = chapter_files(repo_chapters_dir())[0][0]
    (released,) = release(tmp_path / "out", exercises_for=registry_exercises_for(None), only=[first])
    nb = nbformat.read(str(released.notebook), as_version=4)
    assert not any("from myst_nb" in c.source for c in nb.cells if c.cell_type == "code")
    NotebookClient(nb, timeout=180, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(released.notebook.parent)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    errors = [(i, o["ename"], o["evalue"]) for i, c in enumerate(code)
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{released.notebook.name}: {len(errors)} of {len(code)} cells fail: {errors[:3]}"
