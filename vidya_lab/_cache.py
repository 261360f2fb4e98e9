"""Results of long simulations kept on disk, keyed by everything that produced them.

Off unless the environment variable ``VIDYA_LAB_CACHE`` names a folder (``make book`` sets it to
``_build/.vidya_cache``, so the book re-runs a simulation only when its inputs change, and pages
that run the same day share it). A result is stored under a hash of:

* the call's name and every argument, as content: numbers by their exact ``repr``, numpy arrays by
  dtype, shape and bytes, frozen dataclasses field by field (:func:`_feed`);
* the source of the whole package (every file under ``vidya_lab/``), and the Python and numpy
  versions: any change to the code that computes it is a new key.

An argument the hash cannot read as content (a function, an open generator) means no caching: the
call just runs. Results of another version of the package are removed when a new one is stored.
A stored result is returned as it was stored (pickle), so a run with the cache
equals a run without it (``tests/test_cache.py``). Delete the folder to clear it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import pickle
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

ENV = "VIDYA_LAB_CACHE"
_PACKAGE = Path(__file__).resolve().parent
#: The name of a stored result: source digest, call, key (nothing else in the folder is touched).
_OURS = re.compile(r"[0-9a-f]{12}-\w+-[0-9a-f]{40}\.pkl")


class _NoKey(Exception):
    """An argument that cannot be hashed as content."""


def folder() -> Path | None:
    """The cache folder (from ``VIDYA_LAB_CACHE``), or ``None`` when caching is off."""
    where = os.environ.get(ENV, "").strip()
    return Path(where) if where else None


@functools.cache
def source_digest() -> str:
    """A hash of every file of the package (paths and bytes), Python's and numpy's versions."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{sys.version_info[:3]}|{np.__version__}|".encode())
    for p in sorted(_PACKAGE.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"):
            h.update(str(p.relative_to(_PACKAGE)).encode() + b"\0")
            h.update(p.read_bytes())
    return h.hexdigest()


def _feed(h, x) -> None:
    """Feed ``x``'s content to the hash ``h`` (type-tagged, so ``1`` and ``1.0`` differ)."""
    if x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(x).__name__}:{x!r};".encode())
    elif isinstance(x, enum.Enum):
        h.update(f"enum:{type(x).__qualname__}.{x.name};".encode())
    elif isinstance(x, np.ndarray):
        if x.dtype.hasobject:
            raise _NoKey("an object array")
        h.update(f"nd:{x.dtype.str}:{x.shape};".encode())
        h.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, np.generic):
        h.update(f"np:{x.dtype.str}:{x.item()!r};".encode())
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        if not type(x).__dataclass_params__.frozen:
            raise _NoKey(f"a mutable {type(x).__name__}")
        h.update(f"dc:{type(x).__module__}.{type(x).__qualname__}(".encode())
        for f in dataclasses.fields(x):
            h.update(f.name.encode() + b"=")
            _feed(h, getattr(x, f.name))
        h.update(b")")
    elif isinstance(x, (tuple, list)):
        h.update(f"{type(x).__name__}[{len(x)}](".encode())
        for item in x:
            _feed(h, item)
        h.update(b")")
    elif isinstance(x, dict):
        h.update(f"dict[{len(x)}](".encode())
        for k in sorted(x, key=repr):
            _feed(h, k)
            _feed(h, x[k])
        h.update(b")")
    else:
        raise _NoKey(type(x).__name__)


def key(name: str, arguments: dict) -> str | None:
    """The cache key of the call ``name(**arguments)``, or ``None`` if an argument has no content
    hash."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{name}|{source_digest()}|".encode())
    try:
        _feed(h, arguments)
    except _NoKey:
        return None
    return h.hexdigest()


def _prune(where: Path) -> None:
    """Remove results of other versions of the package (each day is ~100 MB: without this the
    folder would grow with every edit)."""
    mine = source_digest()[:12]
    for p in where.glob("*.pkl"):
        if _OURS.fullmatch(p.name) and not p.name.startswith(mine + "-"):
            p.unlink(missing_ok=True)


def call(name: str, fn, arguments: dict):
    """``fn(**arguments)``, from the cache folder when this very call was stored there (caching
    on), else computed and stored."""
    where = folder()
    k = None if where is None else key(name, arguments)
    if k is None:
        return fn(**arguments)
    path = where / f"{source_digest()[:12]}-{name}-{k}.pkl"
    try:
        with path.open("rb") as fh:
            return pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError):
        pass
    result = fn(**arguments)
    try:
        where.mkdir(parents=True, exist_ok=True)
        _prune(where)
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
    except OSError:
        return result  # a read-only disk: the result is still right, just not kept
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # whole or not at all, even with several builds at once
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        Path(tmp).unlink(missing_ok=True)  # a full disk, or a result pickle cannot keep
    return result
    return result
