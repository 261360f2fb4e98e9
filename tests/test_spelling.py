"""Spelling of the prose, the package, the tests and the tools (codespell, `make spell`).

Configuration: .codespellrc (what is skipped); words that are right here but unknown to codespell:
.codespell-words.txt.
"""

from __future__ import annotations

import subprocess

from conftest import ROOT, venv_tool


def _codespell(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([venv_tool("codespell"), *args], cwd=ROOT, capture_output=True, text=True)


def test_the_repository_has_no_misspellings():
    result = _codespell()
    assert result.returncode == 0, (
        "codespell found misspellings (fix them, or add a word that is right here to "
        ".codespell-words.txt):\n" + result.stdout + result.stderr)


def test_the_spell_check_catches_a_misspelling(tmp_path):
    """The configuration does not silence codespell: a known misspelling is reported."""
    wrong = "t" + "eh"  # spelled out so that this file itself passes the check
    page = tmp_path / "page.md"
    page.write_text(f"The cost model is {wrong} heart of the book.\n")
    result = _codespell(str(page))
    assert result.returncode != 0 and f"{wrong} ==> the" in result.stdout


def test_project_words_are_lower_case_and_sorted():
    words = (ROOT / ".codespell-words.txt").read_text().split()
    assert words == sorted(set(words)) and all(w == w.lower() for w in words), words
