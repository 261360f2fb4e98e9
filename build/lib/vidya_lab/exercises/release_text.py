"""The text side of a release: solutions out, exercise markers plain, and the checks on what is left.

:func:`strip_solutions` removes every solution from a MyST-Markdown chapter; :func:`chapter_problems`
and :func:`solution_dependencies` say what would make a released chapter ungradable or broken (a
missing or pre-filled answer cell, a leaked solution, a name only a solution defines, an exercise
with per-student numbers whose answer cell does not show them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .core import Exercise

#: A fenced directive opening line: ```{name} or :::{name}, any fence length ≥ 3.
_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[a-z-]+)\}(?P<arg>.*)$")
_LABEL = re.compile(r"^:label:\s*(?P<label>\S+)\s*$")
_LABEL_NUMBER = re.compile(r"(\d+)[-_.](\d+)$")

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
        if ex.givens and not re.search(rf"my_givens\(\s*[\"']{re.escape(ex.id)}[\"']", code):
            problems.append(f"exercise {ex.id}: has per-student numbers but no released cell "
                            f"shows them (my_givens(\"{ex.id}\"))")
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


def markdown_leaks(nb) -> list[str]:
    """A solution directive left in a released notebook's text cells."""
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return ["a solution directive survived the release"] if "{solution" in text else []
