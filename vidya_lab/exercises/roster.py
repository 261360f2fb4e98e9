"""The class list, and which student a submission belongs to.

A roster is a CSV with an ``id`` column (1–64 of ``A-Z a-z 0-9 . _ @ + -``; other columns, a name
or an e-mail, are kept for the instructor and ignored here). ``release --roster`` writes one folder of
notebooks per id; ``grade --roster`` checks the ids and tells a submission's student from where it
sits, by one rule (stated for instructors in ``book/instructors.md``):

1. the nearest folder on the submission's path named exactly like a roster id (``alice/01_…ipynb``,
   as ``release`` writes them) is the student;
2. a file in no such folder whose name's first part, cut at ``_ - . space``, is a roster id
   (``alice_01_…ipynb``, as LMS exports name them) is that student;
3. anything else is credited to nobody: its own row, flagged, its per-student exercises ungraded.

The id ``release`` wrote into the notebook's metadata, and a file-name prefix inside a roster
folder, are never obeyed: where they disagree with the rule the row is flagged. Two rows of one
student are flagged on both. Without a roster, the metadata's id is used as it is.
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
    """The roster id a submission's path names: its nearest folder named like a roster id, else
    (a flat LMS export) the first part of the file name; None if neither is on the roster."""
    _check_path_args(rel, roster)
    folder, prefix = _path_ids(rel, roster)
    return folder or prefix


def _path_ids(rel, roster: set[str]) -> tuple[str | None, str | None]:
    """``(nearest roster folder, roster id the file name starts with)`` of ``rel`` (None: none)."""
    parts = PurePath(rel).parts
    folders = [p for p in parts[:-1] if p in roster]
    first = re.split(r"[_\-. ]", parts[-1], maxsplit=1)[0] if parts else ""
    return (folders[-1] if folders else None), (first if first in roster else None)


def _check_path_args(rel, roster) -> None:
    if not isinstance(rel, str | PurePath):
        raise TypeError(f"rel must be the submission's path relative to the class folder (str), "
                        f"got {type(rel).__name__}")
    if not isinstance(rel, PurePath) and not rel.strip():
        raise ValueError("rel must be a non-empty path")
    if not isinstance(roster, set | frozenset) or not all(isinstance(i, str) for i in roster):
        raise TypeError(f"roster must be a set of student id strings, got {type(roster).__name__}")


def identify(rel: str, claimed: str | None, roster: set[str] | None) -> tuple[str | None, str]:
    """``(student id or None, flag)`` for a submission at ``rel`` whose notebook claims ``claimed``,
    by the one rule of the module doc: the path decides, what disagrees is flagged, never obeyed."""
    if roster is None:
        return claimed, ""
    _check_path_args(rel, roster)
    folder, prefix = _path_ids(rel, roster)
    sid = folder or prefix
    if sid is None:
        said = f"; the notebook says student {claimed}" if claimed else ""
        return None, f"in no roster folder: credited to nobody{said}"
    notes = []
    if folder and prefix and prefix != folder:
        notes.append(f"file name says student {prefix}")
    if claimed and claimed != sid:
        notes.append(f"notebook says student {claimed}")
    return sid, "; ".join(notes)


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
