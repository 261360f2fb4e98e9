"""Reading a benchmark's output file safely: a size bound, UTF-8, JSON or JSON lines, and errors
that name the file and what is wrong (``ValueError``, one line).

Every reader of :mod:`vidya_lab.traces` goes through :func:`load_document`, so a truncated JSON, a
binary file or a 10 GB upload gets the same clear message whichever tool wrote it.
"""

from __future__ import annotations

import json
import math
import os
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from vidya_lab._validate import check_input_file, check_int

#: The largest input file read, in bytes (256 MiB = 2**28 bytes). A parsed JSON document takes
#: several times its size in memory; a vLLM result with per-request lists for 100,000 requests
#: is about 50 MB.
MAX_TRACE_BYTES = 256 * 2**20

CSV, JSON, JSON_LINES = "csv", "json", "jsonl"


def read_text(path, max_bytes: int | None = None) -> tuple[str, str]:
    """``(name, text)`` of a trace file, checked: exists, a regular file, at most ``max_bytes``
    (default :data:`MAX_TRACE_BYTES`), UTF-8 (a byte-order mark is dropped)."""
    name = os.fspath(path) if isinstance(path, str | os.PathLike) else str(path)
    if isinstance(path, str | os.PathLike) and not name.strip():  # not the current directory
        raise ValueError(f"path must be a non-empty path to a trace file, got {path!r}")
    if isinstance(path, str | os.PathLike) and Path(path).is_dir():
        raise ValueError(f"{name}: is a directory, not a trace file")
    limit = MAX_TRACE_BYTES if max_bytes is None else check_int("max_bytes", max_bytes, minimum=1)
    try:
        p = check_input_file("trace", path, max_bytes=limit)
    except ValueError as exc:
        if Path(name).is_file() and Path(name).stat().st_size > limit:
            raise ValueError(f"{exc} (parsing takes several times a file's size in memory; to "
                             f"read it anyway pass --max-mib, or max_bytes=)") from None
        raise
    data = p.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not a UTF-8 text file") from None
    return name, text


def _decode_error(name: str, text: str, exc: json.JSONDecodeError, *, line: int | None = None,
                  last: bool = True) -> ValueError:
    """A one-line message: "truncated" when the text ends inside the value, else "malformed"."""
    at = (f"line {exc.lineno}, column {exc.colno}" if line is None
          else f"line {line}, column {exc.colno}")
    ended = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
    if ended and last:
        return ValueError(f"{name}: truncated JSON (the file ends at {at} while {exc.msg.lower()}; "
                          f"was it copied or written completely?)")
    return ValueError(f"{name}: malformed JSON at {at}: {exc.msg}")


def parse_json(name: str, text: str):
    """The JSON document in ``text``; truncation and syntax errors named with line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _decode_error(name, text, exc) from None
    except RecursionError:
        raise ValueError(f"{name}: JSON nested too deeply to be a benchmark output") from None


def parse_json_lines(name: str, text: str) -> list[tuple[int, dict]]:
    """``(line number, object)`` for each non-empty line of a JSON-lines file."""
    rows = []
    lines = text.splitlines()
    final = max((k for k, line in enumerate(lines, start=1) if line.strip()), default=0)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _decode_error(name, line, exc, line=number, last=number == final) from None
        except RecursionError:
            raise ValueError(f"{name} line {number}: JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{name} line {number}: each line must be a JSON object, got "
                             f"{type(obj).__name__}")
        rows.append((number, obj))
    return rows


def load_document(path, max_bytes: int | None = None) -> tuple[str, str, object]:
    """``(name, kind, content)``: kind :data:`CSV` (content = the text), :data:`JSON` (the parsed
    document) or :data:`JSON_LINES` (a list of ``(line number, object)``)."""
    name, text = read_text(path, max_bytes)
    head = text.lstrip()
    if not head:
        raise ValueError(f"{name}: empty file (expected a CSV trace or a benchmark's JSON output)")
    if head[0] not in "{[":
        return name, CSV, text
    try:
        return name, JSON, json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise _decode_error(name, text, exc) from None
    except RecursionError:
        raise ValueError(f"{name}: JSON nested too deeply to be a benchmark output") from None
    return name, JSON_LINES, parse_json_lines(name, text)


# ----------------------------------------------------------------------------- field checks

def number(value, where: str, *, minimum: float | None = None) -> float:
    """A finite JSON number (not a bool) as float, at least ``minimum``; else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{where} must be a number, got {_short(value)}")
    try:
        x = float(value)
    except OverflowError:
        raise ValueError(f"{where} is too large for a number of seconds or tokens") from None
    if not math.isfinite(x):
        raise ValueError(f"{where} must be finite, got {value!r}")
    if minimum is not None and x < minimum:
        raise ValueError(f"{where} must be >= {minimum:g}, got {value!r}")
    return x


def whole(value, where: str, *, minimum: int = 0) -> int:
    """A JSON integer (``3`` or ``3.0``, not a bool) at least ``minimum``; else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{where} must be a whole number, got {_short(value)}")
    if not isinstance(value, Integral):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"{where} must be a whole number, got {value!r}")
    n = int(value)
    if n < minimum:
        raise ValueError(f"{where} must be >= {minimum}, got {n}")
    return n


def numbers(values, where: str, *, minimum: float | None = None) -> np.ndarray:
    """A JSON list of finite numbers, as float64 (checked at numpy speed; the first bad entry is
    named)."""
    if not isinstance(values, list):
        raise ValueError(f"{where} must be a list of numbers, got {_short(values)}")
    if all(type(v) is float or type(v) is int for v in values):  # JSON gives exactly these
        try:
            arr = np.asarray(values, dtype=float)
        except OverflowError:
            arr = None
        if arr is not None and np.all(np.isfinite(arr)) and (minimum is None
                                                             or np.all(arr >= minimum)):
            return arr
    return np.asarray([number(v, f"{where}[{k}]", minimum=minimum) for k, v in enumerate(values)],
                      dtype=float)


def wholes(values, where: str, *, minimum: int = 0) -> list[int]:
    """A JSON list of whole numbers, each at least ``minimum`` (the first bad entry is named)."""
    if not isinstance(values, list):
        raise ValueError(f"{where} must be a list of whole numbers, got {_short(values)}")
    if all(type(v) is int for v in values) and (not values or min(values) >= minimum):
        return values
    return [whole(v, f"{where}[{k}]", minimum=minimum) for k, v in enumerate(values)]


def text_or_empty(value, where: str) -> str:
    """A JSON string, or ``""`` for null."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a string or null, got {_short(value)}")
    return value


def _short(value) -> str:
    text = json.dumps(value) if isinstance(value, str | list | dict) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
