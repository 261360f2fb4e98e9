"""The class list, and which student a submission belongs to.

A roster is a CSV with an ``id`` column (1–64 of ``A-Z a-z 0-9 . _ @ + -``; other columns, a name
or an e-mail, are kept for the instructor and ignored here). ``release --roster`` writes one folder of
notebooks per id; ``grade --roster`` checks the ids and tells a submission's student from where it
sits, not only from what its notebook claims:

1. a folder on the submission's path named exactly like a roster id (``alice/01_…ipynb``), or a file
   name whose first part, cut at ``_ - . space``, is one (``alice_01_…ipynb``, as LMS exports do);
2. else the id ``release`` wrote into the notebook's metadata, if it is on the roster.

A notebook that claims another student than its path says is graded as its path's student, and the
row is flagged; two rows of one student are flagged on both. Without a roster, the metadata's id is
used as it is.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from pathlib import PurePath

from vidya_lab._validate import check_input_file

from .givens import check_student_id

MAX_ROSTER_BYTES = 4 * 2**20


def read_roster(path) -> list[str]:
    """The student ids of a roster CSV, in file order; ``ValueError`` naming a bad row."""
    p = check_input_file("--roster", path, max_bytes=MAX_ROSTER_BYTES)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"--roster: {p} is not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "id" not in [f.strip().lower() for f in reader.fieldnames]:
        raise ValueError(f"--roster: {p} needs a header row with an 'id' column")
    key = next(f for f in reader.fieldnames if f.strip().lower() == "id")
    ids = []
    for line, row in enumerate(reader, start=2):
        raw = (row.get(key) or "").strip()
        try:
            ids.append(check_student_id(raw))
        except ValueError as exc:
            raise ValueError(f"--roster: {p} line {line}: {exc}") from None
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    if dupes:
        raise ValueError(f"--roster: {p} lists {dupes[0]!r} twice")
    if not ids:
        raise ValueError(f"--roster: {p} lists no student")
    return ids


def student_from_path(rel: str, roster: set[str]) -> str | None:
    """The roster id a submission's path names (a folder, or the first part of the file name)."""
    parts = PurePath(rel).parts
    hits = [p for p in parts[:-1] if p in roster]
    first = re.split(r"[_\-. ]", parts[-1], maxsplit=1)[0] if parts else ""
    if first in roster:
        hits.append(first)
    return hits[-1] if len(set(hits)) >= 1 else None


def identify(rel: str, claimed: str | None, roster: set[str] | None) -> tuple[str | None, str]:
    """``(student id or None, flag)`` for a submission at ``rel`` whose notebook claims ``claimed``."""
    if roster is None:
        return claimed, ""
    by_path = student_from_path(rel, roster)
    if by_path is not None:
        flag = f"notebook says student {claimed}" if claimed and claimed != by_path else ""
        return by_path, flag
    if claimed in roster:
        return claimed, ""
    if claimed:
        return None, f"student {claimed} is not on the roster"
    return None, "no student id (not in the path, not in the notebook)"


def duplicate_flags(students: dict[str, str | None]) -> dict[str, str]:
    """``{file: flag}`` for every submission that shares its student with another."""
    by: dict[str, list[str]] = {}
    for file, sid in students.items():
        if sid:
            by.setdefault(sid, []).append(file)
    flags = {}
    for sid, files in by.items():
        if len(files) > 1:
            for f in files:
                others = [o for o in files if o != f]
                flags[f] = f"student {sid} also handed in {others[0]}" + (
                    f" (+{len(others) - 1} more)" if len(others) > 1 else "")
    return flags
