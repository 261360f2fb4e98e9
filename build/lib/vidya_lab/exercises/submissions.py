"""Finding the submissions and taking the grader's own copy of each, before any kernel starts.

:func:`find_submissions` walks the folder without following a symbolic link (to a file or a folder:
a link is listed with a row saying it was refused, never read), matches ``.ipynb`` in any case
(``.IPYNB`` too), skips ``.ipynb_checkpoints`` and reports what else it ignored.
:func:`snapshot` reads every notebook once (``O_NOFOLLOW``, at most the size limit) into the
grader's memory (or, for a very large class, a private folder, with each copy's SHA-256): a notebook
that later rewrites a classmate's file changes nothing the grader reads, and a changed copy is caught
(:meth:`Snapshot.read`) instead of graded.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .notebook import MAX_NOTEBOOK_BYTES


@dataclass
class Found:
    """What is in the submissions folder: notebooks, refused links, and ignored other files."""

    notebooks: list[str] = field(default_factory=list)     # paths relative to the folder
    links: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def find_submissions(folder: str | Path) -> Found:
    """Every ``*.ipynb`` below ``folder`` (any case, checkpoints skipped), in a stable order."""
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"submissions folder not found: {folder}")
    if not root.is_dir():
        raise ValueError(f"the submissions folder must be a folder, got a file: {folder}")
    found = Found()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for d in list(dirnames):
            if d == ".ipynb_checkpoints":
                dirnames.remove(d)
            elif (here / d).is_symlink():
                dirnames.remove(d)
                if d.lower().endswith(".ipynb"):
                    found.links.append(str((here / d).relative_to(root)))
        for name in filenames:
            rel = str((here / name).relative_to(root))
            if not name.lower().endswith(".ipynb"):
                found.ignored.append(rel)
            elif (here / name).is_symlink():
                found.links.append(rel)
            else:
                found.notebooks.append(rel)
    found.notebooks.sort()
    found.links.sort()
    if not found.notebooks and not found.links:
        raise ValueError(f"no .ipynb files in {folder}")
    return found


def _read_nofollow(path: Path, limit: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)
    finally:
        os.close(fd)


#: Submissions are kept in the grader's memory up to this total, beyond it in its private folder.
IN_MEMORY_BYTES = 1 * 2**30


@dataclass
class Snapshot:
    """The grader's private copies of the submissions, with their hashes."""

    folder: Path
    data: dict[str, bytes] = field(default_factory=dict)
    copies: dict[str, Path] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)

    def read(self, rel: str) -> bytes:
        """The bytes of submission ``rel`` as first read; ``ValueError`` if the copy was altered."""
        if rel in self.data:
            return self.data[rel]
        try:
            data = self.copies[rel].read_bytes()
        except OSError:
            raise ValueError("the grader's copy of this notebook was removed during the run "
                             "(by another notebook?)") from None
        if hashlib.sha256(data).hexdigest() != self.digests[rel]:
            raise ValueError("the grader's copy of this notebook was changed during the run "
                             "(by another notebook?)")
        return data


def snapshot(root: str | Path, rels: list[str], into: Path) -> Snapshot:
    """Read each submission once (into memory, or ``into`` past :data:`IN_MEMORY_BYTES`);
    unreadable ones get a problem, not an exception."""
    snap = Snapshot(into)
    kept = 0
    for k, rel in enumerate(rels):
        try:
            data = _read_nofollow(Path(root) / rel, MAX_NOTEBOOK_BYTES)
        except (OSError, ValueError) as exc:
            snap.problems[rel] = f"could not be read ({getattr(exc, 'strerror', None) or exc})"
            continue
        if len(data) > MAX_NOTEBOOK_BYTES:
            snap.problems[rel] = (f"invalid notebook: file too large (over "
                                  f"{MAX_NOTEBOOK_BYTES // 2**20} MiB)")
            continue
        if kept + len(data) <= IN_MEMORY_BYTES:
            snap.data[rel] = data
            kept += len(data)
            continue
        into.mkdir(mode=0o700, parents=True, exist_ok=True)
        copy = into / f"s{k}.ipynb"
        copy.write_bytes(data)
        snap.copies[rel] = copy
        snap.digests[rel] = hashlib.sha256(data).hexdigest()
    return snap
