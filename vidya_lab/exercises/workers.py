"""Run the workers: one process per submission, ``jobs`` at a time, each with a hard deadline.

A worker (:mod:`vidya_lab.exercises.runner`) gets its request on standard input and answers with
one tagged line on standard output, carrying a random token of this run: a report without the token,
or anything on standard error, is not a report. A worker that outlives ``--notebook-timeout`` plus a
short grace is killed with its whole process tree; a worker that crashes fails only its own row, and
one that fails for a reason outside its notebook is retried once, then reported as a grader fault.
While the run lasts the grader is a child subreaper: processes orphaned by a dead worker come back
to it, and are killed and counted (never a process that was already its child before the run).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from . import procs
from .runner import RESULT_TAG

WORKER_GRACE_S = 20.0   # beyond --notebook-timeout: stopping kernels and killing what they left
MAX_REPORT_BYTES = 32 * 2**20


@dataclass
class WorkerConfig:
    """What every worker of a run is told, apart from its notebook."""

    spec: dict
    level: str
    python: str
    kernel: str
    timeout_s: float
    budget_s: float
    memory_limit_bytes: int
    chapter: int | None
    template_values: str
    template_functions: str
    originals: dict[str, str | None]


class Pool:
    """Workers of one run, with the bookkeeping to kill all of them and their orphans."""

    def __init__(self, config: WorkerConfig, run_dir: Path, jobs: int,
                 prepare: Callable[[], None] = lambda: None):
        self.config, self.run_dir, self.jobs, self.prepare = config, run_dir, jobs, prepare
        self.live: set[int] = set()
        self.lock = threading.Lock()
        self.preexisting = set(procs.children(os.getpid()))

    def _request(self, name: str, notebook: Path, job_dir: Path, token: str) -> bytes:
        c = self.config
        req = {"token": token, "notebook": str(notebook), "name": name, "job_dir": str(job_dir),
               "spec": c.spec, "level": c.level, "python": c.python, "kernel": c.kernel,
               "timeout_s": c.timeout_s, "budget_s": c.budget_s,
               "memory_limit_bytes": c.memory_limit_bytes, "chapter": c.chapter,
               "template_values": c.template_values, "template_functions": c.template_functions,
               "originals": c.originals}
        return json.dumps(req).encode("utf-8")

    def run_one(self, k: int, name: str, data: bytes) -> dict:
        """Grade one notebook's bytes in a fresh worker, and once more in another if the first
        failed for a reason outside the notebook (:func:`grader_side`); always returns a report
        dict. A second such failure is a grader fault (``"grader_fault": True``): the row is
        flagged for the instructor to regrade, never scored 0."""
        first = self._attempt(f"job{k}", name, data)
        if not grader_side(first):
            return first
        second = self._attempt(f"job{k}-retry", name, data)
        if not grader_side(second):
            return second
        return {**second, "grader_fault": True,
                "crash": f"grader fault, twice: {second['crash']} (first: {first['crash']})"}

    def _attempt(self, job: str, name: str, data: bytes) -> dict:
        job_dir = self.run_dir / job
        try:
            with self.lock:
                self.prepare()  # the package copies, again if a notebook deleted them
            job_dir.mkdir(mode=0o700, parents=True)
            notebook = job_dir / "submission.ipynb"
            notebook.write_bytes(data)
        except OSError as exc:
            return {"crash": f"could not prepare this notebook's folder ({exc.strerror or exc})"}
        token = secrets.token_hex(16)
        with open(job_dir / "worker.log", "wb") as log, self.lock:
            try:
                proc = subprocess.Popen([sys.executable, "-m", "vidya_lab.exercises.runner"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                        cwd=job_dir, start_new_session=True)
            except OSError as exc:
                return {"crash": f"could not start a grader worker ({exc.strerror or exc})"}
            self.live.add(proc.pid)
        try:
            out, _ = proc.communicate(self._request(name, notebook, job_dir, token),
                                      timeout=self.config.budget_s + WORKER_GRACE_S)
        except subprocess.TimeoutExpired:
            out = None
        leftover = procs.kill_tree(proc.pid, include_root=True)
        proc.wait()
        with self.lock:
            self.live.discard(proc.pid)
        if out is None:
            return {"crash": "grading time limit exceeded (--notebook-timeout)"}
        report = _report(out[:MAX_REPORT_BYTES], token)
        if report is None:
            how = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
                   else f"exit status {proc.returncode}")
            return {"crash": f"grader worker failed ({how}, no report)"}
        before = report.get("leftovers")
        report["leftovers"] = (before if type(before) is int and before >= 0 else 0) + leftover
        return report

    def orphans(self) -> int:
        """Kill processes re-parented to the grader by a dead worker; how many there were."""
        n = 0
        with self.lock:
            for pid in procs.children(os.getpid()):
                if pid not in self.live and pid not in self.preexisting:
                    n += 1 + procs.kill_tree(pid, include_root=True)
        return n

    def run(self, items: Iterable[tuple[int, str, bytes | None, str]],
            on_result: Callable[[str, dict], None]) -> None:
        """Grade ``(k, rel, data, name)`` items; ``data`` None: ``name`` is why it is not graded."""
        with procs.subreaper(), ThreadPoolExecutor(max_workers=self.jobs) as ex:
            futures = {}
            try:
                for k, rel, data, name in items:
                    if data is None:
                        on_result(rel, {"crash": name})
                        continue
                    futures[ex.submit(self.run_one, k, name, data)] = rel
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        try:
                            report = fut.result()
                        except Exception as exc:  # a grader bug: this row only
                            report = {"crash": f"grader error ({type(exc).__name__})"}
                        stray = self.orphans()
                        if stray and isinstance(report, dict):
                            report["leftovers"] = int(report.get("leftovers") or 0) + stray
                        on_result(futures[fut], report)
            finally:
                for f in futures:
                    f.cancel()
                with self.lock:
                    live = list(self.live)
                for pid in live:  # interrupted (Ctrl-C): leave no worker or kernel behind
                    procs.kill_tree(pid, include_root=True)
                self.orphans()


#: How the crash of a worker that failed for a reason of its own (not the notebook's) begins: its
#: folder could not be made, it could not start, it failed inside (a file it needed was gone) or
#: ended without a report. A notebook's endless loop (the time limit) is not one.
GRADER_SIDE = ("could not prepare", "could not start a grader worker", "grader worker failed",
               "grader worker sent no report", "grader error")


def grader_side(report: dict) -> bool:
    """Whether ``report`` is a failure of the grader's worker rather than of the notebook."""
    crash = report.get("crash") if isinstance(report, dict) else None
    return isinstance(crash, str) and crash.startswith(GRADER_SIDE)


def _report(out: bytes, token: str) -> dict | None:
    prefix = f"{RESULT_TAG} {token} ".encode()
    for line in reversed(out.splitlines()):
        if line.startswith(prefix):
            try:
                value = json.loads(line[len(prefix):].decode("utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                return None
            return value if isinstance(value, dict) else None
    return None
