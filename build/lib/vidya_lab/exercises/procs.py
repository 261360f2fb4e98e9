"""The processes a notebook starts: find every one, however it detached, and kill them all.

A kernel can start processes that call ``setsid`` or fork twice to leave its process group. They
cannot leave the *tree* of their ancestors: the grader and each worker make themselves a "child
subreaper" (Linux ``PR_SET_CHILD_SUBREAPER``), so an orphan is re-parented to the nearest of them
instead of to init, and :func:`descendants` finds it by walking ``/proc`` parent links. Killing is
done with SIGSTOP first (so nothing forks while the tree is collected) and then SIGKILL, repeated
until nothing is left. :func:`tree_rss_bytes` sums the resident memory of a tree, for a memory limit
that covers a kernel's children. Without ``/proc`` (not Linux) these degrade to the process group.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterable, Iterator

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
HAS_PROC = os.path.isdir("/proc/self/task")


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def set_subreaper(on: bool = True) -> bool:
    """Make orphaned descendants of this process its children (Linux); False where not supported."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0)


@contextlib.contextmanager
def subreaper() -> Iterator[bool]:
    """:func:`set_subreaper` for the duration of a block."""
    ok = set_subreaper(True)
    try:
        yield ok
    finally:
        if ok:
            set_subreaper(False)


def set_not_dumpable() -> bool:
    """Keep other processes of this account out of this one's memory, environment and file
    descriptors (``PR_SET_DUMPABLE`` 0: ``/proc/PID/mem``, ``fd``, ``environ`` become root's)."""
    return _prctl(PR_SET_DUMPABLE, 0)


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of ``pid``, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return int(fields[1]), fields[0].decode()
    except (IndexError, ValueError):
        return None


def _all_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def descendants(root: int, *, include_zombies: bool = False) -> list[int]:
    """Every process below ``root`` (not ``root`` itself), parents before children."""
    if not HAS_PROC:
        return []
    children: dict[int, list[int]] = {}
    zombies = set()
    for pid in _all_pids():
        st = _stat(pid)
        if st is None:
            continue
        children.setdefault(st[0], []).append(pid)
        if st[1] in ("Z", "X"):
            zombies.add(pid)
    out, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop(0)
        if pid == root or pid in out:
            continue
        if include_zombies or pid not in zombies:
            out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def children(pid: int) -> list[int]:
    """The live (not zombie) direct children of ``pid``."""
    out = []
    for child in _all_pids():
        st = _stat(child)
        if st and st[0] == pid and st[1] not in ("Z", "X"):
            out.append(child)
    return out


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(root: int, *, include_root: bool = False, keep: Iterable[int] = (),
              rounds: int = 50) -> int:
    """Kill every process below ``root`` (and ``root`` too if asked), except ``keep``.

    Returns how many distinct processes were killed. The tree is frozen with SIGSTOP round by round
    until no new process appears, then killed with SIGKILL; repeated, so a process forked in between
    is caught on the next round.
    """
    keep = set(keep)
    killed: set[int] = set()
    for _ in range(rounds):
        found = [p for p in descendants(root) if p not in keep]
        if include_root and _stat(root) is not None and _stat(root)[1] not in ("Z", "X"):
            found.append(root)
        if not found:
            break
        frozen: set[int] = set()
        while True:  # freeze until the tree stops growing
            new = [p for p in found if p not in frozen]
            if not new:
                break
            _signal(new, signal.SIGSTOP)
            frozen.update(new)
            found = [p for p in descendants(root) if p not in keep] + (
                [root] if include_root and root not in keep else [])
            found = [p for p in found if _stat(p) is not None]
        _signal(frozen, signal.SIGKILL)
        killed.update(frozen)
        time.sleep(0.01)
    reap_zombies()
    return len(killed - {root})


def reap_zombies() -> None:
    """Collect the exit status of this process's dead children that nobody waits for (orphans it
    adopted as a subreaper), so they do not linger as zombies. Children with a live Popen are
    collected by their owners."""
    if not HAS_PROC:
        return
    me = os.getpid()
    for pid in _all_pids():
        st = _stat(pid)
        if st and st[0] == me and st[1] == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def tree_rss_bytes(root: int, *, include_root: bool = True) -> int:
    """Resident memory of ``root`` and every process below it, bytes (shared pages counted in
    each process that maps them, so an upper bound)."""
    total = 0
    for pid in ([root] if include_root else []) + descendants(root):
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    return total


def cmdline(pid: int) -> str:
    """The command line of ``pid`` (arguments joined by spaces), '' if unreadable."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""
