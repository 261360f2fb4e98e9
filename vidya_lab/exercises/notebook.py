"""Reading a submission honestly: bounded parsing, which chapter and student it is, what it defines.

* :func:`read_submission` refuses, with a reason for the row, anything that is not a Jupyter
  notebook: more than :data:`MAX_NOTEBOOK_BYTES`, not UTF-8, not JSON, no ``nbformat`` version (a
  JSON file without one is not read as version 1), more than :data:`MAX_CELLS` cells or
  :data:`MAX_SOURCE_CHARS` of code (checked on the raw JSON, before any schema validation), or
  failing nbformat's validation.
* :func:`detect_chapter` and :func:`student_of` read the release metadata (and fall back on the
  file name and the answer names).
* :func:`function_cells` picks the cells a function exercise's answer needs (the cell that defines
  it and, transitively, every cell that defines a name those cells read), to run them again in the
  kernel where the reference implementation does not exist.
* :func:`red_flags` names code an instructor may want to look at (it changes no score).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from pathlib import Path

MAX_NOTEBOOK_BYTES = 64 * 2**20     # a bigger file is not a notebook a student wrote
MAX_CELLS = 2000                    # the longest chapter has about 80
MAX_SOURCE_CHARS = 4 * 2**20        # code and text of all cells together

_DYNAMIC_MAGICS = re.compile(r"run_line_magic\(\s*['\"](run|load|store|autoreload)['\"]")
_RED_FLAGS = (
    (r"__code__|co_code|\.replace\(\s*co_|types\.(CodeType|FunctionType)", "rebuilds code objects"),
    (r"\bmarshal\b|\bdill\b|\bcloudpickle\b", "serialises code"),
    (r"importlib\.reload|\breload\(", "reloads modules"),
    (r"/proc/|\bctypes\b|\bsys\.setprofile|\bsys\.settrace|\bgc\.get_(objects|referrers|referents)",
     "inspects the interpreter or other processes"),
    (r"\bos\.(kill|killpg|setsid|fork|setpgrp|daemon)|\bsignal\.SIGKILL|\bdaemon\s*=\s*True",
     "signals or detaches processes"),
    (r"exercises\.key|exercises import[^\n]*\bsolve\b|get_exercise\(|connection_file|"
     r"jupyter_runtime|kernel-[\w-]*\.json",
     "reaches for the answer key or kernels"),
    (r"\.ipynb['\"]|scores\.csv|_feedback\b", "touches notebooks or grading files"),
)


def read_submission(data: bytes):
    """The notebook in ``data`` as an nbformat v4 node; ``ValueError`` says why it is not one."""
    import nbformat

    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"file too large ({len(data) / 2**20:.0f} MiB; the limit is "
                         f"{MAX_NOTEBOOK_BYTES // 2**20} MiB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        raise ValueError(f"not valid JSON{f' (line {line})' if line else ''}") from None
    if not isinstance(raw, dict) or type(raw.get("nbformat")) is not int:
        raise ValueError("not a Jupyter notebook (no nbformat version)")
    if raw["nbformat"] not in (3, 4):
        raise ValueError(f"nbformat {raw['nbformat']} is not supported (4, or 3 converted)")
    cells = raw.get("cells") if raw["nbformat"] == 4 else [
        c for ws in raw.get("worksheets") or [] if isinstance(ws, dict)
        for c in ws.get("cells") or []]
    if not isinstance(cells, list):
        raise ValueError("no list of cells")
    if len(cells) > MAX_CELLS:
        raise ValueError(f"{len(cells):,} cells (the limit is {MAX_CELLS:,})")
    chars = 0
    for cell in cells:
        src = cell.get("source", cell.get("input", "")) if isinstance(cell, dict) else None
        if isinstance(src, list):
            src = "".join(s for s in src if isinstance(s, str))
        if not isinstance(src, str):
            raise ValueError("a cell without a type or source")
        chars += len(src)
    if chars > MAX_SOURCE_CHARS:
        raise ValueError(f"{chars:,} characters of cell source (the limit is {MAX_SOURCE_CHARS:,})")
    try:
        with warnings.catch_warnings():  # a missing cell id is fixed here, not reported
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
            nbformat.validate(nb)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"not a valid notebook ({first[:80]})") from None
    for cell in nb.cells:
        if not isinstance(cell.get("cell_type"), str) or not isinstance(cell.get("source"), str):
            raise ValueError("a cell without a type or source")
    return nb


def detect_chapter(nb, path: Path, chapters: dict) -> int | None:
    """Which chapter a submission is: release metadata, else the file name, else its answer cells.

    The chapter from the metadata is returned even if it has no exercises (the grader says so);
    ``None`` when nothing tells.
    """
    meta = nb.metadata.get("vidya_lab") if hasattr(nb, "metadata") else None
    if isinstance(meta, dict):
        ch = meta.get("chapter")
        if type(ch) is int and 0 < ch < 100:
            return ch
    for m in re.finditer(r"(?:^|[^0-9])(\d{2})_", path.name):
        if str(int(m[1])) in chapters:
            return int(m[1])
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    best, hits = None, 0
    for ch, entry in chapters.items():
        names = [e["name"] for e in entry["values"]] + [f["name"] for f in entry["functions"]]
        n = sum(1 for name in names if re.search(rf"\b{re.escape(name)}\b", code))
        if n > hits:
            best, hits = int(ch), n
    return best


def student_of(nb) -> str | None:
    """The student id the release wrote into the notebook's metadata (None if absent or odd)."""
    from .givens import check_student_id

    meta = nb.metadata.get("vidya_lab") if hasattr(nb, "metadata") else None
    student = meta.get("student") if isinstance(meta, dict) else None
    try:
        return check_student_id(student) if student is not None else None
    except ValueError:
        return None


def red_flags(nb) -> list[str]:
    """What in the notebook's code an instructor may want to read, with the first cell of each."""
    found = []
    for pattern, what in _RED_FLAGS:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and re.search(pattern, cell.source):
                found.append(f"{what} (cell {i + 1})")
                break
    return found


def _python(source: str) -> str | None:
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:
        return None


_DYNAMIC_CALLS = ("exec", "eval", "globals", "setattr", "__import__", "vars")


def _names_of(node) -> tuple[set[str], set[str], bool]:
    """(names a statement binds, names it reads, whether it may bind names no parser can see).

    Inside a function or lambda only its free names count as read (its parameters and locals are
    not the notebook's names), but a name it declares ``global`` is bound."""
    binds, reads, dynamic = set(), set(), False
    todo = [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if not isinstance(sub, ast.Lambda):
                binds.add(sub.name)
                todo.extend(sub.decorator_list)
                todo.extend(x for x in (sub.returns,) if x is not None)
            todo.extend(d for d in sub.args.defaults + sub.args.kw_defaults if d is not None)
            inner_b, inner_r, inner_d = set(), set(), False
            for stmt in (sub.body if isinstance(sub.body, list) else [sub.body]):
                b, r, d = _names_of(stmt)
                inner_b |= b
                inner_r |= r
                inner_d = inner_d or d
            args = sub.args
            params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
            declared = {n for stmt in ast.walk(sub) if isinstance(stmt, ast.Global)
                        for n in stmt.names}
            binds |= declared
            reads |= inner_r - ((inner_b | params) - declared)
            dynamic = dynamic or inner_d
            continue
        if isinstance(sub, ast.Name):
            (reads if isinstance(sub.ctx, ast.Load) else binds).add(sub.id)
        elif isinstance(sub, ast.ClassDef):
            binds.add(sub.name)
        elif isinstance(sub, ast.Import | ast.ImportFrom):
            for alias in sub.names:
                dynamic = dynamic or alias.name == "*"
                binds.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(sub, ast.Global | ast.Nonlocal):
            binds.update(sub.names)
        elif (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
              and sub.func.id in _DYNAMIC_CALLS):
            dynamic = True
        todo.extend(ast.iter_child_nodes(sub))
    return binds, reads, dynamic


def cell_statements(source: str) -> list[tuple[set[str], set[str], bool]] | None:
    """Per top-level statement of a cell: (binds, reads, dynamic); None if it does not parse."""
    code = _python(source)
    try:
        tree = ast.parse(code) if code is not None else None
    except (SyntaxError, ValueError, RecursionError):
        return None
    if tree is None:
        return None
    out = [_names_of(node) for node in tree.body]
    if _DYNAMIC_MAGICS.search(code):
        out.append((set(), set(), True))
    return out


def _needs(stmts, needed: set[str]) -> tuple[bool, set[str]]:
    """Whether a cell binds a needed name (or may), and what its statements up to the last one that
    does read: what comes after that statement cannot stop the needed names from being defined."""
    if stmts is None:
        return True, set()
    last = max((i for i, (b, _, d) in enumerate(stmts) if d or b & needed), default=-1)
    reads = set().union(*(r for _, r, _ in stmts[:last + 1])) if last >= 0 else set()
    return last >= 0, reads


def function_cells(sources: list[str | None], name: str, always: set[int] = frozenset()) -> list[int]:
    """Indices of the code cells (``None`` marks a non-code cell) a function ``name`` needs, in
    notebook order; every code cell if no cell visibly defines ``name``."""
    info = {i: cell_statements(s) for i, s in enumerate(sources) if s is not None and s.strip()}
    if not any(st and any(name in b for b, _, _ in st) for st in info.values()):
        return sorted(info)
    chosen, needed = set(always) & set(info), {name}
    while True:
        grown = set(needed)
        for i, stmts in info.items():
            hit, reads = _needs(stmts, needed)
            if hit or i in chosen:
                chosen.add(i)
                grown |= reads
        if grown == needed:
            return sorted(chosen)
        needed = grown
