"""Which cells of a submission a grade has to run: names bound and read, read statically.

A cell's code is parsed (IPython magics translated first), never run, and each top-level
statement gives the names it binds and the names it reads. Two questions are answered from that:

* :func:`function_cells`: the cells a function exercise's answer needs (the cell that defines it
  and, transitively, every cell that defines a name those cells read), to run them again in the
  kernel where the reference implementation does not exist.
* :func:`cells_to_run`: the cells the first kernel runs. Every cell, except the book's own cells
  that no answer can depend on: a cell the release marked *book-only* (the chapter's
  ``remove-cell`` cells: glue for the prose, the book's figures), still byte for byte as released,
  that binds no name a later cell reads, no answer and no function a later cell defines reads. A
  student's cell always runs, and so does every cell before one whose names cannot be read (``exec``,
  ``globals()``, ``%run``, a cell that does not parse).

Both err on the side of running: a name is "read" if it may be read (inside a function, at any
later call), "bound" by a cell if any statement may bind it. What the static view cannot see is a
cell changing an object in place (``runs.append(x)``) or a file; so only the book's cells, whose
code is ours and unchanged, are ever skipped, and ``tests/test_grader_chapters.py`` grades every
chapter's solutions this way for full marks.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field

BOOK_ROLE = "book-only"             # metadata["vidya_lab"]["role"] of a released book-only cell

_DYNAMIC_CALLS = ("exec", "eval", "globals", "setattr", "__import__", "vars")
_DYNAMIC_MAGICS = re.compile(r"run_line_magic\(\s*['\"](run|load|store|autoreload)['\"]")
_COMPREHENSIONS = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
_DEFINITE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class Names:
    """What one statement (or expression) binds and reads in the notebook's namespace."""

    binds: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)   # every name it may read, ``late`` included
    late: set[str] = field(default_factory=set)    # read only when a function it defines is called
    dynamic: bool = False                          # may bind names no parser can see

    def add(self, other: Names, *, late: bool = False, local: set[str] = frozenset()) -> None:
        self.binds |= other.binds - local
        self.reads |= other.reads - local
        self.late |= (other.reads if late else other.late) - local
        self.dynamic = self.dynamic or other.dynamic


def _function(sub) -> Names:
    """A ``def`` or ``lambda``: its name, defaults and decorators now, its body's free names late."""
    out, body = Names(), Names()
    if not isinstance(sub, ast.Lambda):
        out.binds.add(sub.name)
        for x in sub.decorator_list + [r for r in (sub.returns,) if r is not None]:
            out.add(names_of(x))
    for d in sub.args.defaults + sub.args.kw_defaults:
        if d is not None:
            out.add(names_of(d))
    for stmt in sub.body if isinstance(sub.body, list) else [sub.body]:
        body.add(names_of(stmt))
    args = sub.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared = {n for node in ast.walk(sub) if isinstance(node, ast.Global) for n in node.names}
    out.binds |= declared
    out.add(Names(reads=body.reads, dynamic=body.dynamic), late=True,
            local=(body.binds | params) - declared)
    return out


def _comprehension(sub) -> Names:
    """A comprehension's loop variables are its own (Python 3); its first iterable is read outside."""
    out = names_of(sub.generators[0].iter)
    inner, local = Names(), set()
    for i, gen in enumerate(sub.generators):
        local |= names_of(gen.target).binds
        for part in ([gen.iter] if i else []) + list(gen.ifs):
            inner.add(names_of(part))
    for part in (sub.key, sub.value) if isinstance(sub, ast.DictComp) else (sub.elt,):
        inner.add(names_of(part))
    walrus = {n.target.id for n in ast.walk(sub) if isinstance(n, ast.NamedExpr)}
    out.add(inner, local=local - walrus)
    return out


def names_of(node) -> Names:
    """The :class:`Names` of one statement or expression ``node`` (a stack, not recursion, for
    expressions: only a nested function or comprehension, a scope of its own, recurses)."""
    out, todo = Names(), [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            out.add(_function(sub))
            continue
        if isinstance(sub, _COMPREHENSIONS):
            out.add(_comprehension(sub))
            continue
        if isinstance(sub, ast.Name):
            (out.reads if isinstance(sub.ctx, ast.Load) else out.binds).add(sub.id)
        elif isinstance(sub, ast.ClassDef):
            out.binds.add(sub.name)
        elif isinstance(sub, ast.Import | ast.ImportFrom):
            for alias in sub.names:
                out.dynamic = out.dynamic or alias.name == "*"
                out.binds.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(sub, ast.Global | ast.Nonlocal):
            out.binds.update(sub.names)
        elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
            out.reads.add(sub.target.id)  # ``x += 1`` reads x first (its target says Store)
        elif (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
              and sub.func.id in _DYNAMIC_CALLS):
            out.dynamic = True
        todo.extend(ast.iter_child_nodes(sub))
    return out


def _parse(source: str) -> tuple[ast.Module | None, bool]:
    """The cell as Python (IPython magics translated) and whether a magic may bind unseen names;
    ``(None, True)`` if it does not parse."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        code = TransformerManager().transform_cell(source)
        return ast.parse(code), bool(_DYNAMIC_MAGICS.search(code))
    except Exception:  # does not parse, or magics IPython cannot translate
        return None, True


def _read(source: str) -> tuple[ast.Module, list[Names]] | None:
    """The cell's tree and the :class:`Names` of each top-level statement (a translated magic that
    may bind unseen names adds a dynamic one); None if it cannot be read."""
    tree, magic = _parse(source)
    if tree is None:
        return None
    try:
        stmts = [names_of(node) for node in tree.body]
    except RecursionError:  # functions nested deeper than Python recurses
        return None
    return tree, stmts + ([Names(dynamic=True)] if magic else [])


def cell_statements(source: str) -> list[Names] | None:
    """The :class:`Names` of each top-level statement of a cell; None if it does not parse."""
    read = _read(source)
    return read[1] if read is not None else None


def _free(stmts: list, bound: set[str], names: list[Names] | None = None) -> set[str]:
    """Names a statement list may read before it binds them itself (``bound``: already bound;
    ``names``: the statements' :class:`Names`, if already known)."""
    bound, free = set(bound), set()
    for k, node in enumerate(stmts):
        if isinstance(node, ast.For | ast.AsyncFor):
            free |= names_of(node.iter).reads - bound
            target = names_of(node.target)
            free |= (target.reads - bound) | _free(node.body, bound | target.binds)
            free |= _free(node.orelse, bound)
            continue
        if isinstance(node, ast.With | ast.AsyncWith):
            inside = set(bound)
            for item in node.items:
                free |= names_of(item.context_expr).reads - inside
                if item.optional_vars is not None:
                    inside |= names_of(item.optional_vars).binds
            free |= _free(node.body, inside)
            continue
        n = names[k] if names is not None else names_of(node)
        free |= n.reads - bound
        if isinstance(node, _DEFINITE):
            bound |= n.binds
    return free


@dataclass
class CellInfo:
    """One code cell as :func:`cells_to_run` sees it."""

    binds: set[str]
    free: set[str]          # read before the cell binds them (at run time, or late)
    late: set[str]
    opaque: bool            # does not parse or may bind unseen names: nothing before it is skipped
    book: bool              # a released book-only cell, unchanged


def source_digest(source: str) -> str:
    """What the release records of a book-only cell, to tell it unchanged (SHA-256, hex)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def is_book_cell(cell) -> bool:
    """A code cell the release marked book-only and nobody has changed since."""
    meta = cell.get("metadata", {}).get("vidya_lab")
    return (isinstance(meta, dict) and meta.get("role") == BOOK_ROLE
            and meta.get("source_sha256") == source_digest(cell.get("source", "")))


def _info(cell) -> CellInfo:
    read = _read(cell.source)
    try:
        free = _free(read[0].body, set(), read[1]) if read is not None else None
    except RecursionError:  # functions nested deeper than Python recurses
        free = None
    if free is None:
        return CellInfo(set(), set(), set(), True, False)
    whole = Names()
    for n in read[1]:
        whole.add(n)
    return CellInfo(whole.binds, free | whole.late, whole.late, whole.dynamic, is_book_cell(cell))


def cells_to_run(cells, answer_names) -> list[int]:
    """Indices of the code cells the first kernel runs, in order (see the module doc)."""
    code = [(i, c) for i, c in enumerate(cells) if c.cell_type == "code" and c.source.strip()]
    info = {i: _info(c) for i, c in code}
    late = set().union(*(x.late for x in info.values()))
    live, run = set(answer_names) | late, []
    for i, _ in reversed(code):
        x = info[i]
        if x.book and not x.opaque and not (x.binds & live):
            continue
        run.append(i)
        if x.opaque:
            return sorted(run + [j for j, _ in code if j < i])
        live |= x.free
    return sorted(run)


def _needs(stmts, needed: set[str]) -> tuple[bool, set[str]]:
    """Whether a cell binds a needed name (or may), and what its statements up to the last one that
    does read: what comes after that statement cannot stop the needed names from being defined."""
    if stmts is None:
        return True, set()
    last = max((i for i, s in enumerate(stmts) if s.dynamic or s.binds & needed), default=-1)
    reads = set().union(*(s.reads for s in stmts[:last + 1])) if last >= 0 else set()
    return last >= 0, reads


def function_cells(sources: list[str | None], name: str, always: set[int] = frozenset()) -> list[int]:
    """Indices of the code cells (``None`` marks a non-code cell) a function ``name`` needs, in
    notebook order; every code cell if no cell visibly defines ``name``."""
    info = {i: cell_statements(s) for i, s in enumerate(sources) if s is not None and s.strip()}
    if not any(st and any(name in s.binds for s in st) for st in info.values()):
        return sorted(info)
    chosen, needed = set(always) & set(info), {name}
    while True:
        grown = set(needed)
        for i, stmts in info.items():
            hit, reads = _needs(stmts, needed)
            if hit or i in chosen:
                chosen.add(i)
                grown |= reads
        if grown == needed:
            return sorted(chosen)
        needed = grown
