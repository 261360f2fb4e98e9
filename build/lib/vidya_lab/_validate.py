"""Argument checks for the public boundary of every module: the one validation layer.

Each raises a ``ValueError``/``TypeError`` that names the parameter, the allowed range and the value
received, so a reader sees ``ValueError: batch must be an integer >= 1, got 0`` instead of a traceback
from deep inside numpy or simpy. A value is checked once, where it enters; internals trust it.

What is here
------------
* numbers: :func:`check_int`, :func:`check_real` (finite; integers beyond float range are refused by
  name, not by an ``OverflowError``), :func:`check_fraction`, :func:`check_reals` (a 1-D array of
  finite numbers, with a length bound so a huge input cannot exhaust memory);
* other kinds: :func:`check_bool` (a real ``bool``: ``"False"`` is not false), :func:`check_choice`,
  :func:`check_str`, :func:`check_instance` (a wrong object type becomes a ``TypeError`` that names
  the parameter, not an ``AttributeError`` later), :func:`check_instances` (a list of them),
  :func:`check_labels`;
* sizes that bound time and memory: :func:`check_work` refuses work above a stated limit up front,
  with the limit in the message;
* paths: :func:`check_input_file`, :func:`check_output_file`, :func:`check_output_dir` (checked
  before the work starts, never a silent default for a falsy path, never a file descriptor), and
  :func:`atomic_write_text` / :func:`atomic_write_bytes` (write a temporary file beside the target,
  then rename it over: a reader never sees half a file).
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from numbers import Integral, Real
from pathlib import Path


def _is_bool(value: object) -> bool:
    if isinstance(value, bool):
        return True
    # numpy.bool_ is not a Python bool but must not pass as a number either; if numpy was never
    # imported no value can be one (and the check costs no import: the in-browser kernel may lack it)
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, np.bool_)


def _show(value: object, limit: int = 60) -> str:
    """A short repr for messages: an integer of 400 digits is shown by its size, not in full."""
    if isinstance(value, Integral) and not _is_bool(value):
        digits = len(str(abs(int(value)))) if abs(int(value)) < 10**4300 else 4300
        if digits > 20:
            return f"an integer of {digits} digits"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- numbers

def check_int(name: str, value: object, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as ``int`` if it is an integer within ``[minimum, maximum]``."""
    if _is_bool(value) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {_show(value)} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_show(value)}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {_show(value)}")
    return value


def check_cached_tokens(value: object, prompt_tokens: int, prompt_name: str = "isl") -> int:
    """Return ``value`` (``cached_tokens``: tokens of a prompt found in the prefix cache) as
    ``int`` if ``0 <= value <= prompt_tokens - 1``: a hit never covers the prompt's last token,
    whose forward pass yields the first output token (a 1-token prompt has nothing to cache).
    ``prompt_name`` is the caller's name for the prompt length, which the message names too."""
    k = check_int("cached_tokens", value, minimum=0)
    if k > prompt_tokens - 1:
        raise ValueError(f"cached_tokens must be an integer <= {prompt_name} - 1 = "
                         f"{prompt_tokens - 1} (the prompt's last token is always computed), "
                         f"got {_show(k)}")
    return k


def check_real(name: str, value: object, *, minimum: float | None = None,
               maximum: float | None = None, min_inclusive: bool = True,
               max_inclusive: bool = True) -> float:
    """Return ``value`` as a finite ``float`` within the stated bounds."""
    if _is_bool(value) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {_show(value)} ({type(value).__name__})")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number (within float range), "
                         f"got {_show(value)}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None:
        if value < minimum or (not min_inclusive and value == minimum):
            op = ">=" if min_inclusive else ">"
            raise ValueError(f"{name} must be {op} {minimum}, got {value}")
    if maximum is not None:
        if value > maximum or (not max_inclusive and value == maximum):
            op = "<=" if max_inclusive else "<"
            raise ValueError(f"{name} must be {op} {maximum}, got {value}")
    return value


def check_fraction(name: str, value: object, *, allow_zero: bool = True,
                   allow_one: bool = True) -> float:
    """Return ``value`` as a float in [0, 1] (ends included as asked)."""
    return check_real(name, value, minimum=0.0, maximum=1.0,
                      min_inclusive=allow_zero, max_inclusive=allow_one)


def check_reals(name: str, values: object, *, minimum: float | None = None,
                maximum: float | None = None, min_inclusive: bool = True,
                max_length: int = 10_000_000, allow_empty: bool = True):
    """Return ``values`` as a 1-D float numpy array of finite numbers within the bounds.

    Refuses a string, a mapping, booleans, a nested sequence, NaN/inf, integers beyond float range,
    and more than ``max_length`` entries (the bound that keeps memory in check), each by name.
    """
    import numpy as np

    if isinstance(values, (str, bytes, dict)) or _is_bool(values):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    if isinstance(values, np.ndarray):
        arr = values
    else:
        try:
            n = len(values)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(f"{name} must be a sequence of numbers, got "
                            f"{type(values).__name__}") from None
        if n > max_length:
            raise ValueError(f"{name} may hold at most {max_length:,} values, got {n:,}")
        try:
            arr = np.asarray(values)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"{name} must be a flat sequence of numbers ({exc})") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size > max_length:
        raise ValueError(f"{name} may hold at most {max_length:,} values, got {arr.size:,}")
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if arr.dtype == bool:
        raise TypeError(f"{name} must hold numbers, not booleans")
    if arr.dtype.kind not in "iuf":
        if arr.dtype.kind == "O":  # Python ints beyond int64, or mixed objects: check one by one
            arr = np.array([check_real(f"{name}[{i}]", x) for i, x in enumerate(arr)], dtype=float)
        else:
            raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    arr = arr.astype(float, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}] must be finite, got {arr[i]}")
    if minimum is not None and arr.size:
        low = arr < minimum if min_inclusive else arr <= minimum
        if low.any():
            i = int(np.flatnonzero(low)[0])
            op = ">=" if min_inclusive else ">"
            raise ValueError(f"{name} must be {op} {minimum} everywhere; {name}[{i}] = {arr[i]}")
    if maximum is not None and arr.size and (arr > maximum).any():
        i = int(np.flatnonzero(arr > maximum)[0])
        raise ValueError(f"{name} must be <= {maximum} everywhere; {name}[{i}] = {arr[i]}")
    return arr


# ----------------------------------------------------------------------------- other kinds

def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is a ``bool`` (numpy's included); anything else is a ``TypeError``:
    ``"False"`` or ``0`` would otherwise be read by their truthiness."""
    if not _is_bool(value):
        raise TypeError(f"{name} must be True or False, got {_show(value)} ({type(value).__name__})")
    return bool(value)


def check_choice(name: str, value: object, choices) -> str:
    """Return ``value`` if it is one of ``choices``; else list them in the error."""
    choices = tuple(choices)
    try:
        ok = value in choices
    except (TypeError, ValueError):  # unhashable, oddly comparing, or an array (elementwise ==)
        ok = False
    if not ok:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {_show(value)}")
    return value  # type: ignore[return-value]


def check_str(name: str, value: object, *, allow_empty: bool = False, max_length: int = 10_000) -> str:
    """Return ``value`` if it is a string (non-empty unless allowed, at most ``max_length``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {_show(value)} ({type(value).__name__})")
    if not allow_empty and not value.strip():
        raise ValueError(f"{name} must not be empty")
    if len(value) > max_length:
        raise ValueError(f"{name} may be at most {max_length} characters, got {len(value)}")
    return value


def check_instance(name: str, value: object, cls, what: str | None = None):
    """Return ``value`` if it is an instance of ``cls`` (a class or a tuple of classes).

    The message names the parameter and what was expected, e.g. ``replica must be a
    sizing.Replica, got dict``, rather than an ``AttributeError`` deep inside.
    """
    if not isinstance(value, cls):
        if what is None:
            classes = cls if isinstance(cls, tuple) else (cls,)
            what = " or ".join(c.__name__ for c in classes)
        raise TypeError(f"{name} must be a {what}, got {type(value).__name__}")
    return value


def check_labels(name: str, value, n: int):
    """One string label per request as a numpy array: ``None`` → all "", a str → all that str."""
    import numpy as np

    if value is None:
        return np.full(n, "", dtype=str)
    if isinstance(value, str):
        return np.full(n, value)
    labels = np.asarray(value, dtype=str)
    if labels.shape != (n,):
        raise ValueError(f"{name} must have one label per request ({n}), got {labels.shape}")
    return labels


# ----------------------------------------------------------------------------- work bounds

def check_work(name: str, amount: float, limit: float, *, unit: str = "", hint: str = "") -> float:
    """Refuse work whose size ``amount`` (events, arrivals, replicas × steps, bytes ...) exceeds
    ``limit`` before any of it is done.

    Every documented limit goes through here, so the message always states it:
    ``"requests x duration needs 3.1e+09 arrival events; the limit is 5e+07 (shorten the day)"``.
    """
    if not math.isfinite(amount) or amount > limit:
        shown = "an unbounded amount" if not math.isfinite(amount) else f"{amount:.3g}"
        msg = f"{name} needs {shown}{' ' + unit if unit else ''}; the limit is {limit:.3g}"
        raise ValueError(msg + (f" ({hint})" if hint else ""))
    return amount


# ----------------------------------------------------------------------------- paths

def _as_path(name: str, path: object) -> Path:
    if _is_bool(path) or isinstance(path, Integral):
        raise TypeError(f"{name} must be a file path, got {_show(path)} (a file descriptor or "
                        f"number is not accepted)")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path, got {type(path).__name__}")
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise ValueError(f"{name} must be a non-empty path, got {path!r}")
    if "\x00" in text:
        raise ValueError(f"{name} must not contain a NUL byte")
    return Path(text)


def check_input_file(name: str, path: object, *, max_bytes: int | None = None) -> Path:
    """Return ``path`` as a :class:`Path` to an existing, readable regular file (at most
    ``max_bytes`` if given); else a ``FileNotFoundError``/``ValueError`` naming it."""
    p = _as_path(name, path)
    if not p.exists():
        raise FileNotFoundError(f"{name}: no such file: {p}")
    if not p.is_file():
        raise ValueError(f"{name} must be a regular file, got {p} (a directory or device)")
    if not os.access(p, os.R_OK):
        raise ValueError(f"{name}: cannot read {p} (permission denied)")
    if max_bytes is not None and p.stat().st_size > max_bytes:
        raise ValueError(f"{name}: {p} is {p.stat().st_size:,} bytes; the limit is {max_bytes:,}")
    return p


def check_output_file(name: str, path: object, *, overwrite: bool = True) -> Path:
    """Return ``path`` as a :class:`Path` that can be written, checked before any work is done:
    not empty, not a directory, its folder exists and is writable, and (unless ``overwrite``) no
    file there yet."""
    p = _as_path(name, path)
    if p.is_dir():
        raise ValueError(f"{name} must be a file path, but {p} is a directory")
    if p.exists():
        if not overwrite:
            raise ValueError(f"{name}: {p} already exists (choose another path or remove it)")
        if not p.is_file():
            raise ValueError(f"{name} must be a regular file, got {p}")
        if not os.access(p, os.W_OK):
            raise ValueError(f"{name}: cannot write {p} (permission denied)")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{name}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: cannot write in the folder {parent} (permission denied)")
    return p


def check_output_dir(name: str, path: object, *, must_be_empty: bool = False) -> Path:
    """Return ``path`` as a :class:`Path` to a folder that exists or can be created, and is writable;
    not an existing file; empty when ``must_be_empty``."""
    p = _as_path(name, path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{name} must be a folder, but {p} is a file")
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise ValueError(f"{name}: cannot write in {p} (permission denied)")
        if must_be_empty and any(p.iterdir()):
            raise ValueError(f"{name}: {p} is not empty (choose a new folder or empty it)")
        return p
    anchor = p.parent
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    if not anchor.is_dir() or not os.access(anchor, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: cannot create {p} (no writable folder above it)")
    return p


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, flushed and
    synced, then renamed over the target. On any error the target is unchanged and the temporary
    file removed; the error (e.g. ``OSError`` for a full disk) propagates."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name[:40]}.", suffix=".tmp", dir=p.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write_bytes` for text (UTF-8 by default)."""
    return atomic_write_bytes(path, text.encode(encoding))


def check_instances(name: str, values: object, cls, what: str | None = None, *,
                    max_length: int = 1_000_000) -> list:
    """Return ``values`` as a list if it is a list, tuple or range of at most ``max_length``
    instances of ``cls``; the ``TypeError`` names the parameter, or its first entry of another type
    (``layouts[2] must be a layouts.Layout, got dict``)."""
    what = what or (cls.__name__ if not isinstance(cls, tuple) else " or ".join(
        c.__name__ for c in cls))
    if not isinstance(values, (list, tuple, range)):
        raise TypeError(f"{name} must be a list of {what}, got {type(values).__name__}")
    if len(values) > max_length:
        raise ValueError(f"{name} may hold at most {max_length:,} entries, got {len(values):,}")
    for i, value in enumerate(values):
        check_instance(f"{name}[{i}]", value, cls, what)
    return list(values)
