"""The class's results on disk: the CSV and one feedback file per submission, both written atomically.

The CSV is rewritten in full (to a temporary file, then renamed over the old one) every time a
notebook is graded, starting before the first: if the run is stopped, even killed, the CSV still has
a row for every submission, the ones not graded saying so. Every text cell is made safe to open in a
spreadsheet: a cell that starts with ``= + - @`` (or a tab or carriage return) is prefixed with
``'`` so it is shown, not evaluated; control characters become ``?``; a file name that is not valid
UTF-8 (a Latin-1 byte, say) is written with ``\\xNN`` escapes. Feedback file names are the
submission's path, made safe: ASCII letters, digits and ``. _ -``, at most 100 characters, and
unique (a short hash of the path is added when the plain name would be unsafe, long, or taken).
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from collections.abc import Sequence
from pathlib import Path

from vidya_lab._validate import atomic_write_text

from .scoring import Submission

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
EXTRA_COLUMNS = ("student", "isolation", "killed_processes", "flags")


def display_path(rel: str) -> str:
    """A relative path as text: undecodable bytes (surrogate escapes) shown as ``\\xNN``."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def safe_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: no formula, no control character."""
    text = _CONTROL.sub("?", str(value)).replace("\n", " ")
    return "'" + text if text.startswith(_FORMULA_START) else text


def fmt_points(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def csv_text(subs: Sequence[Submission], exercise_ids: dict[int, list[str]]) -> str:
    """The whole CSV: one row per submission, exercise columns for every chapter that appears."""
    chapters = sorted({s.chapter for s in subs if s.chapter is not None} & set(exercise_ids))
    ids = [i for ch in chapters for i in exercise_ids[ch]]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["file", "chapter", *ids, "total", "max", "status", *EXTRA_COLUMNS])
    for s in subs:
        pts = {sc.id: sc.points for sc in s.scores}
        w.writerow([safe_cell(s.file), "" if s.chapter is None else s.chapter,
                    *[fmt_points(pts[i]) if i in pts else "" for i in ids],
                    "" if s.grader_fault else fmt_points(s.total),
                    "" if s.grader_fault else s.max_points, safe_cell(s.status),
                    safe_cell(s.student), s.isolation, s.killed_processes,
                    safe_cell("; ".join(s.flags))])
    return buf.getvalue()


def write_csv(path: Path, subs: Sequence[Submission], exercise_ids: dict[int, list[str]]) -> None:
    atomic_write_text(path, csv_text(subs, exercise_ids))


def feedback_text(s: Submission) -> str:
    mark = {"right": "right", "wrong": "wrong", "unanswered": "not answered"}
    lines = [f"vidya-lab feedback for {s.file}",
             f"chapter {s.chapter if s.chapter is not None else '?'}: " + (
                 "not scored: the grader failed on this notebook; your instructor will grade it "
                 "again" if s.grader_fault else f"{fmt_points(s.total)} of {s.max_points} points"),
             f"how the notebook ran: {s.status}", ""]
    for sc in s.scores:
        lines.append(f"exercise {sc.id}: {mark[sc.verdict.status]}, "
                     f"{fmt_points(sc.points)}/{sc.max_points} — {sc.verdict.message}")
    if s.errors:
        lines += ["", "errors raised by your cells (cells are counted from 1, text cells included):"]
        for e in s.errors[:10]:
            lines.append(f"  cell {e.get('cell')}: {e.get('ename')}: {e.get('evalue')}")
    if s.status.startswith("invalid notebook"):
        lines += ["", "The file could not be read as a Jupyter notebook: open it in Jupyter, "
                      "save it again and hand in the .ipynb file."]
    return _CONTROL.sub("?", "\n".join(lines)) + "\n"


class FeedbackNames:
    """Unique, safe feedback file names, one per submission path."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._of: dict[str, str] = {}

    def __call__(self, rel: str) -> str:
        if rel in self._of:
            return self._of[rel]
        stem = re.sub(r"\.ipynb$", "", rel, flags=re.I).replace(os.sep, "__").replace("/", "__")
        name = stem + ".txt"
        if not _SAFE_NAME.match(name) or name.lower() in self._used:
            digest = hashlib.sha1(os.fsencode(rel)).hexdigest()[:10]
            clean = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._-")[:80] or "submission"
            name = f"{clean}-{digest}.txt"
        self._used.add(name.lower())
        self._of[rel] = name
        return name
