"""Traces on disk: one CSV row per request, read with errors that name the row, written atomically.

The file needs a header with at least :data:`TRACE_COLUMNS`; optional columns ``outcome``
(``finished``/``rejected``/``timed_out``, default finished), ``admitted_s`` and ``klass``. Times in
seconds on one clock; for rejected or timed-out rows, empty times are allowed. Each row is judged by
the same rule as every other timeline (:func:`vidya_lab.slo.consistency.row_problem`), and a bad
row is reported by its number and its line: ``"TRACE.csv row 3 (line 4): first_token_s (1.0) is
before arrival_s (2.0)"`` (rows count data rows from 1; lines count the file's lines, header
included).

:func:`write_trace_csv` writes what :func:`read_trace_csv` reads back exactly (``repr`` of each
float), to a path checked before any work and replaced atomically, never a file descriptor.
"""

from __future__ import annotations

import csv
import io
import math
import os

import numpy as np

from vidya_lab._validate import atomic_write_text, check_instance, check_output_file
from vidya_lab.slo.consistency import (
    FINISHED,
    MAX_OUTPUT_TOKENS_PER_REQUEST,
    OUTCOMES,
    plain,
    row_problem,
)
from vidya_lab.slo.timelines import Timelines, as_timelines

#: Columns a trace CSV must have (more are allowed; ``outcome``, ``admitted_s`` and ``klass``
#: are read when present).
TRACE_COLUMNS: tuple[str, ...] = ("request_id", "arrival_s", "first_token_s", "finish_s",
                                  "output_tokens")

#: The columns of one parsed row, in order (what :func:`_parse_row` returns).
_FIELDS = ("request_id", "arrival_s", "admitted_s", "first_token_s", "finish_s", "output_tokens",
           "outcome", "klass")


def read_trace_csv(path) -> Timelines:
    """Read a trace CSV into :class:`~vidya_lab.slo.Timelines`, with errors that name the row.

    See the module docstring for the format.

    Raises
    ------
    ValueError : ``"TRACE.csv row 3 (line 4): first_token_s (1.0) is before arrival_s (2.0)"``;
        also for a directory, an empty file, a missing column, a non-UTF-8 or unreadable CSV.
    FileNotFoundError : no such file.
    TypeError : ``path`` is not a path (a file descriptor number is refused).
    """
    check_instance("path", path, (str, os.PathLike), "file path (str or os.PathLike)")
    if not os.fspath(path).strip():  # "" is no file (never a silent default)
        raise ValueError(f"path must be a non-empty path to a trace CSV, got {path!r}")
    name = str(path)
    try:
        handle = open(path, newline="", encoding="utf-8-sig")
    except IsADirectoryError:
        raise ValueError(f"{name}: is a directory, not a CSV file") from None
    with handle:
        try:
            columns = [[] for _ in _FIELDS]
            reader = csv.reader(handle)
            index, width = _read_header(reader, name)
            row = 0
            for fields in reader:
                if not any(x.strip() for x in fields):
                    continue  # blank line
                row += 1
                where = f"{name} row {row} (line {reader.line_num})"
                for column, value in zip(columns, _parse_row(fields, index, width, where), strict=True):
                    column.append(value)
        except csv.Error as exc:
            raise ValueError(f"{name}: not a readable CSV file ({exc})") from None
        except UnicodeDecodeError:
            raise ValueError(f"{name}: not a UTF-8 text file") from None
    ids, a, s, f, c, n, oc, kl = columns
    if not ids:
        raise ValueError(f"{name}: no data rows after the header")
    _check_unique(ids, name)
    return Timelines.from_arrays(arrival_s=a, first_token_s=f, finish_s=c,
                                 output_tokens=np.asarray(n, dtype=np.int64), admitted_s=s,
                                 outcome=np.asarray(oc, dtype=np.int8),
                                 request_id=np.asarray(ids, dtype=str), klass=kl)


def _read_header(reader, name: str) -> tuple[dict[str, int], int]:
    """(column name → position, number of columns), after checking the header has every column
    of :data:`TRACE_COLUMNS`."""
    header = next(reader, None)
    if header is None or not any(h.strip() for h in header):
        raise ValueError(f"{name}: empty file (expected a header with {','.join(TRACE_COLUMNS)})")
    cols = [h.strip() for h in header]
    missing = [c for c in TRACE_COLUMNS if c not in cols]
    if missing:
        raise ValueError(f"{name} line 1: missing column(s) {', '.join(missing)}; the header "
                         f"needs {','.join(TRACE_COLUMNS)}")
    return {c: i for i, c in enumerate(cols)}, len(cols)


def _parse_row(fields: list[str], index: dict[str, int], width: int, where: str) -> tuple:
    """One data row as the values of :data:`_FIELDS`, checked like every timeline."""
    if len(fields) != width:
        raise ValueError(f"{where}: has {len(fields)} fields, the header has {width}")

    def get(col: str) -> str:
        return fields[index[col]].strip() if col in index else ""

    outcome = get("outcome") or "finished"
    if outcome not in OUTCOMES:
        raise ValueError(f"{where}: outcome must be one of {', '.join(OUTCOMES)}; got {outcome!r}")
    code = OUTCOMES.index(outcome)
    done = code == FINISHED
    rid = get("request_id")
    if rid == "":
        raise ValueError(f"{where}: request_id is empty")
    arrival = _parse_time(get("arrival_s"), "arrival_s", where, optional=False)
    first = _parse_time(get("first_token_s"), "first_token_s", where, optional=not done)
    finish = _parse_time(get("finish_s"), "finish_s", where, optional=not done)
    admitted = _parse_time(get("admitted_s"), "admitted_s", where, optional=True)
    tok_text = get("output_tokens")
    tokens = 0 if tok_text == "" and not done else _parse_tokens(tok_text, where)
    problem = row_problem(arrival, admitted, first, finish, tokens, code)
    if problem:
        raise ValueError(f"{where}: {problem}")
    return rid, arrival, admitted, first, finish, tokens, code, get("klass")


def _parse_time(text: str, column: str, where: str, *, optional: bool) -> float:
    text = text.strip()
    if text == "" or text.lower() in ("nan", "none", "null"):
        if optional:
            return math.nan
        raise ValueError(f"{where}: {column} is empty (or NaN); a finished request needs it")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: {column} is not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{where}: {column} must be finite, got {text!r}")
    return value


def _parse_tokens(text: str, where: str) -> int:
    """A token count: a whole number up to MAX_OUTPUT_TOKENS_PER_REQUEST (``1e30`` refused)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: output_tokens is not a number: {text!r}") from None
    if not math.isfinite(value) or value != math.floor(value):
        raise ValueError(f"{where}: output_tokens must be a whole number, got {text!r}")
    if value > MAX_OUTPUT_TOKENS_PER_REQUEST:   # a negative count is named by row_problem
        raise ValueError(f"{where}: output_tokens must be at most "
                         f"{MAX_OUTPUT_TOKENS_PER_REQUEST:,}, got {text!r}")
    return int(value)


def _check_unique(ids: list[str], name: str) -> None:
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for i, rid in enumerate(ids):
            if rid in seen:
                raise ValueError(f"{name} row {i + 1}: duplicate request_id {rid!r}")
            seen.add(rid)


def write_trace_csv(timelines, path) -> None:
    """Write timelines as a trace CSV that :func:`read_trace_csv` and ``vidya-lab slo`` read.

    Columns: :data:`TRACE_COLUMNS`, then ``outcome``, ``admitted_s`` and ``klass``; times in seconds
    with full precision, empty where not recorded. ``path`` is checked before anything is written
    (a file path, not a directory or a file descriptor; its folder writable), and the file is
    replaced atomically: a reader never sees half a trace.
    """
    t = as_timelines(timelines)
    target = check_output_file("path", path)

    def cell(x: float) -> str:
        return "" if math.isnan(x) else repr(float(x))

    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow([*TRACE_COLUMNS, "outcome", "admitted_s", "klass"])
    for i in range(len(t)):
        w.writerow([plain(t.request_id[i]), cell(t.arrival_s[i]), cell(t.first_token_s[i]),
                    cell(t.finish_s[i]), int(t.output_tokens[i]), OUTCOMES[int(t.outcome[i])],
                    cell(t.admitted_s[i]), str(t.klass[i])])
    atomic_write_text(target, buf.getvalue())
