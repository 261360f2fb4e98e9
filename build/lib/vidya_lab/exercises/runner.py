"""Grade ONE submission in sandboxed kernels and report what happened (``python -m`` this module).

This is the worker ``vidya-lab grade`` starts once per submission, as its own process, so that
nothing a notebook does can take the grading run down with it. The request comes on standard input
(a JSON object, then EOF); the report goes to standard output as one line ``VIDYA-RESULT <token>
<json>``, where the token is a random string from the request (standard error is a log the grader
never parses, so nothing written there can change a row). The worker makes itself non-dumpable (no
process of the account can read its memory or file descriptors) and a child subreaper (every process
a kernel starts, detached or not, stays below it and is killed with it).

It never scores. It runs the notebook top to bottom in a first kernel (the package copy without the
answer key), leaving out only the book's own cells that nothing graded can read
(:func:`~vidya_lab.exercises.cellgraph.cells_to_run`), reads the answer variables back as JSON,
and stops that kernel and everything it started. For function exercises it starts a second kernel,
whose package copy has the reference implementations' bodies replaced by ``raise``, runs again
only the cells the student's function needs (:func:`~vidya_lab.exercises.cellgraph.function_cells`),
and calls the function on the grading cases. All within ``budget_s`` (``--notebook-timeout``):
reading, kernels, cells and answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

from . import procs
from .cellgraph import cells_to_run, function_cells
from .kernel import KernelSession, is_kernel_process
from .kernel_code import FUNCTION, VALUES, kernel_code, valid_encoded
from .notebook import detect_chapter, read_submission, red_flags, student_of
from .sandbox import KernelDirs

MAX_REPORT_BYTES = 4 * 2**20        # the kernel's JSON report is read up to this size
ASK_S = 20.0                        # the most one request to a kernel may take
RESULT_TAG = "VIDYA-RESULT"


class Budget:
    """The seconds left of one submission's ``--notebook-timeout``."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self, reserve: float = 0.0) -> float:
        return self.end - reserve - time.monotonic()


def _session(req: dict, name: str, template: str, n_cells: int) -> KernelSession:
    dirs = KernelDirs(Path(req["job_dir"]) / name)
    shutil.copytree(template, dirs.pkg)
    (dirs.base / "report").mkdir(mode=0o700)
    return KernelSession(dirs, level=req["level"], originals=req["originals"],
                         python=req["python"], n_cells=n_cells, timeout_s=req["timeout_s"],
                         memory_limit_bytes=int(req.get("memory_limit_bytes") or 0),
                         kernel_name=req.get("kernel", "python3"))


async def _run_notebook(req: dict, nb, entry: dict, budget: Budget, reserve: float) -> dict:
    """First kernel: every cell but the book's own that nothing graded reads, then the answers."""
    out: dict = {"values": None, "values_problem": None}
    names = [e["name"] for e in entry["values"]] + [f["name"] for f in entry["functions"]]
    todo = cells_to_run(nb.cells, names)
    ks = _session(req, "k1", req["template_values"], len(nb.cells))
    try:
        await ks.start(min(60.0, max(1.0, budget.left(reserve))))
        for i in todo:
            cell = nb.cells[i]
            left = budget.left(reserve)
            if left < 1:
                ks.events.append(f"time limit reached at cell {i + 1}")
                break
            if not await ks.run_cell(cell.source, i, min(req["timeout_s"], left)):
                break
        code = kernel_code(VALUES, path=str(ks.dirs.base / "report" / "values.json"),
                           names=[e["name"] for e in entry["values"]])
        values, problem = await ks.ask(code, ks.dirs.base / "report" / "values.json",
                                       max(1.0, min(ASK_S, budget.left())), MAX_REPORT_BYTES)
        if isinstance(values, dict):
            out["values"] = {str(k): v for k, v in values.items() if valid_encoded(v)}
        else:
            out["values_problem"] = problem or "report malformed"
    finally:
        await ks.stop()
    out.update(events=ks.events, errors=ks.errors, leftovers=ks.leftovers)
    return out


async def _grade_functions(req: dict, nb, entry: dict, budget: Budget) -> dict:
    """Second kernel: the reference is gone; the cells the functions need, then the calls."""
    sources = [c.source if c.cell_type == "code" else None for c in nb.cells]
    always = {i for i, c in enumerate(nb.cells)
              if (c.get("metadata", {}).get("vidya_lab") or {}).get("role") == "givens"}
    todo = sorted({i for fx in entry["functions"] for i in function_cells(sources, fx["name"], always)})
    results: dict = {}
    if budget.left() < 5:
        return {fx["id"]: {"state": "unreadable", "problem": "out of time"} for fx in entry["functions"]}
    ks = _session(req, "k2", req["template_functions"], len(nb.cells))
    try:
        await ks.start(min(60.0, max(1.0, budget.left())))
        for i in todo:
            left = budget.left(ASK_S * len(entry["functions"]))
            if left < 1 or not await ks.run_cell(nb.cells[i].source, i, min(req["timeout_s"], left)):
                break
        for fx in entry["functions"]:
            path = ks.dirs.base / "report" / f"f{fx['id']}.json"
            code = kernel_code(FUNCTION, path=str(path), name=fx["name"], cases=fx["cases"])
            out, problem = await ks.ask(code, path, max(1.0, min(ASK_S, budget.left())),
                                        MAX_REPORT_BYTES)
            results[fx["id"]] = out if valid_encoded(out) else {
                "state": "unreadable", "problem": problem or "malformed"}
    finally:
        await ks.stop()
    return {"functions": results, "leftovers": ks.leftovers,
            "function_errors": ks.errors[:5], "function_events": ks.events[:5]}


def _strays() -> int:
    """Kill whatever is still below this worker; count the processes a notebook left (not a
    sandbox wrapper still exiting: those are given a moment to go)."""
    stray = [p for p in procs.descendants(os.getpid()) if not is_kernel_process(p)]
    if stray:
        time.sleep(0.3)
        alive = set(procs.descendants(os.getpid()))
        stray = [p for p in stray if p in alive and procs.cmdline(p)]
    procs.kill_tree(os.getpid())
    return len(stray)


def _reserve(entry: dict) -> float:
    """Seconds kept back from the cells for reading answers and grading functions."""
    n_fx = len(entry["functions"])
    return ASK_S + (30.0 + (ASK_S + 5.0) * n_fx if n_fx else 0.0)


async def grade_one(req: dict) -> dict:
    """Everything about one submission except its score (see the module doc)."""
    t0 = time.monotonic()
    budget = Budget(float(req["budget_s"]))
    # nbclient leaves an output-polling task behind when a cell times out; its "exception was
    # never retrieved" report is noise in the worker's log, not a grading problem.
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: None)
    result = {"chapter": None, "invalid": None, "events": [], "errors": [], "values": None,
              "values_problem": None, "functions": {}, "leftovers": 0, "flags": [],
              "student": None, "givens_issued": False, "elapsed_s": 0.0}
    try:
        with open(req["notebook"], "rb") as f:
            nb = read_submission(f.read(64 * 2**20 + 1))
    except (ValueError, OSError) as exc:
        result["invalid"] = str(exc)
        return result
    chapters = req["spec"]["chapters"]
    ch = req.get("chapter") or detect_chapter(nb, Path(req.get("name", "x.ipynb")), chapters)
    meta = nb.metadata.get("vidya_lab") if isinstance(nb.metadata.get("vidya_lab"), dict) else {}
    result.update(chapter=ch, student=student_of(nb), flags=red_flags(nb),
                  givens_issued=bool(meta.get("givens_issued")))
    if ch is None or str(ch) not in chapters:
        result["unknown_chapter" if ch is None else "no_exercises"] = True
        return result
    entry = chapters[str(ch)]
    result.update(await _run_notebook(req, nb, entry, budget, _reserve(entry)))
    if entry["functions"]:
        fx = await _grade_functions(req, nb, entry, budget)
        result["leftovers"] += fx.pop("leftovers", 0)
        result.update(fx)
    result["leftovers"] += _strays()
    result["elapsed_s"] = round(time.monotonic() - t0, 2)
    return result


def limit_memory(limit_bytes: int | None) -> None:
    """Cap the address space of this process and what it starts (a backstop for one process; the
    kernel's watchdog covers the sum over its processes)."""
    if not limit_bytes:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    except (ImportError, ValueError, OSError):  # not on this platform: the docs say so
        pass


def main() -> int:
    procs.set_not_dumpable()
    procs.set_subreaper(True)
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to the log, not into the report
    req = json.loads(sys.stdin.buffer.read(256 * 2**20).decode("utf-8"))
    sys.stdin.close()
    limit_memory(int(req.get("memory_limit_bytes") or 0))
    try:
        result = asyncio.run(grade_one(req))
    except Exception as exc:  # the worker's own failure: still one honest report
        result = {"crash": f"grader worker failed ({type(exc).__name__}: {str(exc)[:80]})"}
    finally:
        procs.kill_tree(os.getpid())
    report.write(f"{RESULT_TAG} {req['token']} {json.dumps(result)}\n")
    report.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
