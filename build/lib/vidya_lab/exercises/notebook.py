"""Reading a submission honestly: bounded parsing, which chapter and student it is, what to look at.

* :func:`read_submission` refuses, with a reason for the row, anything that is not a Jupyter
  notebook: more than :data:`MAX_NOTEBOOK_BYTES`, not UTF-8, not JSON, no ``nbformat`` version (a
  JSON file without one is not read as version 1), more than :data:`MAX_CELLS` cells or
  :data:`MAX_SOURCE_CHARS` of code (checked on the raw JSON, before any schema validation), or
  failing nbformat's validation.
* :func:`detect_chapter` and :func:`student_of` read the release metadata (and fall back on the
  file name and the answer names).
* :func:`red_flags` names code an instructor may want to look at (it changes no score).

Which of its cells a grade runs is :mod:`.cellgraph`.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

MAX_NOTEBOOK_BYTES = 64 * 2**20     # a bigger file is not a notebook a student wrote
MAX_CELLS = 2000                    # the longest chapter has about 80
MAX_SOURCE_CHARS = 4 * 2**20        # code and text of all cells together

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
