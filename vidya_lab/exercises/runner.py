"""Run ONE submitted notebook in its own kernel and read the student's answers back as JSON.

This is the worker ``vidya-lab grade`` starts once per submission, as its own process
(``python -m vidya_lab.exercises.runner - NOTEBOOK RESULT``, the spec on stdin), so that nothing a notebook does
can take the grading run down with it. It never scores: it reports what happened (cell errors,
timeouts, kernel deaths) and the student's raw answers, and the grader compares them with the expected
answers in its own process.

What it trusts from the kernel: JSON primitives written to a file, and nothing else. Answers are
encoded in the kernel by exact type (``int``, ``float``, ``bool``, ``str``, ``None``, numpy scalars):
an object with a doctored ``__eq__`` or ``__float__`` is reported by its type name and scores nothing.
Before the student's functions are called on the grading cases, the package's reference
implementations are disabled inside the kernel (their ``__code__`` replaced by one that raises), so a
function that calls the reference, or a reference captured earlier, earns nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAX_NOTEBOOK_BYTES = 64 * 2**20     # a bigger file is not a notebook a student wrote
MAX_ANSWER_FILE_BYTES = 4 * 2**20   # the kernel's JSON report is read up to this size
MAX_STR_CHARS = 2000                # longer string answers are reported as too long
MAX_ERRORS = 20                     # cell errors kept for the feedback
MAX_RESTARTS = 3                    # kernel restarts after a death or an uninterruptible cell
GRACE_S = 5.0                       # time an interrupted kernel gets to become responsive again

#: Runs in the student's kernel. Encodes a value as JSON by exact type; never calls ``==`` on it.
_ENCODE = r'''
def _vidya_encode(v, _max_str=%(max_str)d):
    import sys as _sys
    try:
        if v is Ellipsis:
            return {"state": "unanswered"}
        t = type(v)
        if v is None or t is bool or t is float:
            return {"state": "value", "value": v}
        if t is int:
            if v.bit_length() > 256:
                return {"state": "unsupported", "type": "int (too large)"}
            return {"state": "value", "value": v}
        if t is str:
            if len(v) > _max_str:
                return {"state": "unsupported", "type": "str (too long)"}
            return {"state": "value", "value": v}
        _np = _sys.modules.get("numpy")
        if _np is not None and t.__module__ == "numpy" and (t.__bases__ and (
                issubclass(t, _np.generic) or t is _np.ndarray)):
            if t is _np.ndarray:
                if v.shape != ():
                    return {"state": "unsupported", "type": "numpy.ndarray"}
                v = v[()]
                t = type(v)
            if issubclass(t, (_np.bool_,)):
                return {"state": "value", "value": bool(v)}
            if issubclass(t, _np.integer):
                return _vidya_encode(int(v))
            if issubclass(t, _np.floating):
                return {"state": "value", "value": float(v)}
        name = getattr(t, "__qualname__", "?")
        return {"state": "unsupported", "type": name if type(name) is str else "?"}
    except BaseException as exc:  # a hostile object: report its type only
        return {"state": "unsupported", "type": "unreadable (" + type(exc).__name__ + ")"}
'''

_VALUES = _ENCODE + r'''
def _vidya_collect_values():
    import builtins as _b, json as _json
    _spec = _json.loads(%(spec)r)
    _ns = _b.globals()
    _out = {}
    for _name in _spec["names"]:
        _out[_name] = _vidya_encode(_ns[_name]) if _name in _ns else {"state": "missing"}
    with _b.open(_spec["path"], "w", encoding="utf-8") as _f:
        _f.write(_json.dumps(_out))
_vidya_collect_values()
del _vidya_collect_values, _vidya_encode
'''

#: Disables the package's reference implementations in the kernel (called once, before functions).
_BLOCK = r'''
def _vidya_block_references():
    import builtins as _b, functools as _ft, importlib as _il, json as _json, types as _ty
    _spec = _json.loads(%(spec)r)
    _msg = ("vidya-lab grade: the package's reference implementation is switched off while your "
            "function is graded; write the computation yourself")
    def _raiser(nfree):
        names = ["_v%%d" %% i for i in range(nfree)]
        src = "def _outer():\n" + "".join("    %%s = None\n" %% n for n in names)
        src += "    def _blocked(*args, **kwargs):\n"
        if names:
            src += "        (" + ", ".join(names) + ",)\n"
        src += "        raise RuntimeError(%%r)\n    return _blocked\n" %% _msg
        ns = {}
        exec(src, ns)
        return ns["_outer"]().__code__
    done = []
    seen = set()
    def _block(obj, depth=0):
        if obj is None or depth > 5:
            return
        if isinstance(obj, _ft.partial):
            return _block(obj.func, depth + 1)
        if isinstance(obj, _ty.MethodType):
            return _block(obj.__func__, depth + 1)
        if isinstance(obj, _ty.FunctionType) and id(obj) not in seen:
            seen.add(id(obj))
            _block(getattr(obj, "__wrapped__", None), depth + 1)
            try:
                obj.__code__ = _raiser(len(obj.__code__.co_freevars))
                done.append(obj.__module__ + "." + obj.__qualname__)
            except Exception:
                pass
    for item in _spec["refs"]:
        try:
            obj = _il.import_module(item["module"])
            for part in item["qualname"].split("."):
                obj = getattr(obj, part)
            _block(obj)
        except Exception:
            pass
    for item in _spec["registry"]:
        try:
            mod = _il.import_module(item["module"])
            for ex in getattr(mod, "EXERCISES", ()):
                if getattr(ex, "id", None) == item["id"]:
                    ref = ex.expected()
                    _block(ex.expected)
                    _block(ref)
        except Exception:
            pass
    with _b.open(_spec["path"], "w", encoding="utf-8") as _f:
        _f.write(_json.dumps(done))
_vidya_block_references()
del _vidya_block_references
'''

_FUNCTION = _ENCODE + r'''
def _vidya_call_function():
    import builtins as _b, json as _json
    _spec = _json.loads(%(spec)r)
    def _dec(x):
        if type(x) is list:
            return [_dec(i) for i in x]
        if type(x) is dict:
            if set(x) == {"__tuple__"}:
                return tuple(_dec(i) for i in x["__tuple__"])
            return {k: _dec(i) for k, i in x.items()}
        return x
    _ns = _b.globals()
    if _spec["name"] not in _ns:
        _out = {"state": "missing"}
    else:
        _f = _ns[_spec["name"]]
        if _f is Ellipsis:
            _out = {"state": "unanswered"}
        elif not _b.callable(_f):
            _out = {"state": "not callable", "type": _vidya_encode(_f).get("type", "value")}
        else:
            _outs = []
            for _args in _spec["cases"]:
                try:
                    _outs.append(_vidya_encode(_f(*_dec(_args))))
                except (Exception, SystemExit) as _exc:
                    _outs.append({"state": "raised", "type": type(_exc).__name__,
                                  "message": str(_exc)[:300]})
            _out = {"state": "called", "outputs": _outs}
    with _b.open(_spec["path"], "w", encoding="utf-8") as _f2:
        _f2.write(_json.dumps(_out))
_vidya_call_function()
del _vidya_call_function, _vidya_encode
'''


def kernel_code(template: str, **spec) -> str:
    """Fill a kernel-side template: the spec travels as a JSON string literal."""
    return template % {"spec": json.dumps(spec), "max_str": MAX_STR_CHARS}


# ----------------------------------------------------------------------------- reading the notebook

def read_submission(path: Path):
    """The notebook at ``path`` as an nbformat v4 node; ``ValueError`` says why it is not one."""
    import nbformat

    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"file too large ({size / 2**20:.0f} MiB)")
    text = path.read_bytes().decode("utf-8", errors="replace")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON (line {exc.lineno})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError("no list of cells")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as exc:
        raise ValueError(f"not a notebook ({type(exc).__name__})") from None
    for cell in nb.cells:
        if not isinstance(cell.get("cell_type"), str) or not isinstance(cell.get("source"), str):
            raise ValueError("a cell without a type or source")
    return nb


def detect_chapter(nb, path: Path, chapters: dict) -> int | None:
    """Which chapter a submission is: release metadata, else the file name, else its answer cells.

    The chapter from the metadata is returned even if it has no exercises (the grader says so);
    ``None`` when nothing tells.
    """
    meta = nb.metadata.get("vidya_lab") if hasattr(nb, "metadata") else None
    if isinstance(meta, dict):
        ch = meta.get("chapter")
        if type(ch) is int and 0 < ch < 100:
            return ch
    for m in re.finditer(r"(?:^|[^0-9])(\d{2})_", path.name):
        if str(int(m[1])) in chapters:
            return int(m[1])
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    best, hits = None, 0
    for ch, entry in chapters.items():
        names = [e["name"] for e in entry["values"]] + [f["name"] for f in entry["functions"]]
        n = sum(1 for name in names if re.search(rf"\b{re.escape(name)}\b", code))
        if n > hits:
            best, hits = int(ch), n
    return best


# ----------------------------------------------------------------------------- running it

def _client_class():
    from nbclient import NotebookClient

    class GradingClient(NotebookClient):
        """Keeps no outputs (huge output cannot fill memory), only a short record of errors."""

        def output(self, outs, msg, display_id, cell_index):
            if (msg.get("msg_type") == "error" and len(self.vidya_errors) < MAX_ERRORS
                    and cell_index < self.vidya_scratch):
                content = msg.get("content", {})
                self.vidya_errors.append({"cell": cell_index + 1,
                                          "ename": str(content.get("ename", ""))[:100],
                                          "evalue": str(content.get("evalue", ""))[:300]})
            return None

        def handle_comm_msg(self, outs, msg, cell_index):
            return None

    return GradingClient


class Run:
    """One notebook, one kernel (restarted when it dies), a per-cell timeout and a total budget."""

    def __init__(self, nb, workdir: Path, timeout_s: float, budget_s: float, kernel: str,
                 pid_file: Path | None):
        import nbformat

        self.nbformat = nbformat
        self.nb = nb
        self.workdir = workdir
        self.timeout_s = timeout_s
        self.budget_s = budget_s
        self.kernel = kernel
        self.pid_file = pid_file
        self.events: list[str] = []
        self.restarts = 0
        # nbclient writes each executed cell back into its notebook by index: give it a copy with
        # one spare cell at the end for the grader's own requests, so the student's cells stay put.
        scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("")
                                                  for _ in range(len(nb.cells) + 1)])
        self.scratch_index = len(nb.cells)
        self.client = _client_class()(
            scratch, timeout=timeout_s, kernel_name=kernel, allow_errors=True,
            interrupt_on_timeout=False, raise_on_iopub_timeout=False, iopub_timeout=1,
            startup_timeout=120, shutdown_kernel="immediate", record_timing=False,
            store_widget_state=False, resources={"metadata": {"path": str(workdir)}})
        self.client.vidya_errors = []
        self.client.vidya_scratch = self.scratch_index

    async def start(self) -> None:
        c = self.client
        c.km = c.create_kernel_manager()
        # the kernel's own stdout/stderr (os.write(1, ...) and the like) go nowhere: a notebook
        # cannot fill the grader's disk through them
        await c.async_start_new_kernel(cwd=str(self.workdir), stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        if self.pid_file is not None:  # before anything can hang: the grader kills by it
            prov = getattr(c.km, "provisioner", None)
            info = {"pid": getattr(prov, "pid", None), "pgid": getattr(prov, "pgid", None)}
            self.pid_file.write_text(json.dumps(info))
        await c.async_start_new_kernel_client()

    async def stop(self) -> None:
        c = self.client
        try:
            if c.kc is not None:
                c.kc.stop_channels()
        except Exception:
            pass
        try:
            if c.km is not None:
                await c.km.shutdown_kernel(now=True)
        except Exception:
            pass
        try:
            if c.km is not None:
                await c.km.cleanup_resources()
        except Exception:
            pass
        c.kc = None
        c.km = None

    async def restart(self) -> bool:
        await self.stop()
        if self.restarts >= MAX_RESTARTS:
            return False
        self.restarts += 1
        await self.start()
        return True

    async def execute(self, source: str, index: int, timeout_s: float) -> str:
        """Run ``source`` as cell ``index``; 'ok', 'timeout' or 'dead'."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        cell = self.nbformat.v4.new_code_cell(source)
        self.client.timeout = max(1, int(round(timeout_s)))
        try:
            await self.client.async_execute_cell(cell, index, store_history=False)
            return "ok"
        except CellTimeoutError:
            return "timeout"
        except DeadKernelError:
            return "dead"
        except Exception:  # a broken message stream counts as a dead kernel
            return "dead"

    async def recover(self) -> bool:
        """After a timeout: interrupt, and restart the kernel if it does not come back."""
        try:
            await self.client.km.interrupt_kernel()
        except Exception:
            pass
        if await self.execute("pass", self.scratch_index, GRACE_S) == "ok":
            return True
        return await self.restart()

    async def run_cells(self) -> None:
        start = time.monotonic()
        for i, cell in enumerate(self.nb.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            if time.monotonic() - start > self.budget_s:
                self.events.append(f"time limit reached at cell {i + 1}")
                return
            status = await self.execute(cell.source, i, self.timeout_s)
            if status == "timeout":
                self.events.append(f"timeout in cell {i + 1}")
                if not await self.recover():
                    self.events.append("gave up after repeated kernel restarts")
                    return
            elif status == "dead":
                self.events.append(f"kernel died in cell {i + 1}")
                if not await self.restart():
                    self.events.append("gave up after repeated kernel restarts")
                    return

    async def ask(self, template: str, path: Path, timeout_s: float, **spec):
        """Run a collection snippet; the parsed JSON it wrote, or a short reason it did not."""
        if path.exists():
            path.unlink()
        if self.client.kc is None:
            return None, "no kernel"
        status = await self.execute(kernel_code(template, path=str(path), **spec),
                                    self.scratch_index, timeout_s)
        if status != "ok":
            if status == "timeout":
                await self.recover()
            else:
                await self.restart()
            return None, status
        try:
            if not path.is_file() or path.is_symlink():
                return None, "no report"
            with open(path, "rb") as f:
                data = f.read(MAX_ANSWER_FILE_BYTES + 1)
            if len(data) > MAX_ANSWER_FILE_BYTES:
                return None, "report too large"
            return json.loads(data.decode("utf-8")), None
        except Exception:
            return None, "report unreadable"


def _valid_encoded(x) -> bool:
    return isinstance(x, dict) and isinstance(x.get("state"), str)


async def grade_one(nb_path: Path, spec: dict, timeout_s: float, budget_s: float,
                    kernel: str = "python3", pid_file: Path | None = None,
                    chapter: int | None = None) -> dict:
    """Execute one submission and return what happened plus the raw answers (see module doc)."""
    t0 = time.monotonic()
    # nbclient leaves an output-polling task behind when a cell times out; its "exception was
    # never retrieved" report is noise in the worker's log, not a grading problem.
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: None)
    result = {"chapter": None, "invalid": None, "events": [], "errors": [], "values": None,
              "values_problem": None, "functions": {}, "blocked": [], "elapsed_s": 0.0}
    try:
        nb = read_submission(nb_path)
    except (ValueError, OSError) as exc:
        result["invalid"] = str(exc)
        return result
    chapters = spec["chapters"]
    ch = chapter if chapter is not None else detect_chapter(nb, nb_path, chapters)
    if ch is None:
        result["unknown_chapter"] = True
        return result
    result["chapter"] = ch
    if str(ch) not in chapters:
        result["no_exercises"] = True
        return result
    entry = chapters[str(ch)]
    with tempfile.TemporaryDirectory(prefix="vidya-grade-") as tmp:
        tmp = Path(tmp)
        work = tmp / "work"
        work.mkdir()
        report = tmp / "report"
        report.mkdir()
        os.chmod(report, 0o700)
        run = Run(nb, work, timeout_s, budget_s, kernel, pid_file)
        try:
            await run.start()
            await run.run_cells()
            ask_timeout = min(timeout_s, 60)
            values, problem = await run.ask(_VALUES, report / "values.json", ask_timeout,
                                            names=[e["name"] for e in entry["values"]])
            if isinstance(values, dict):
                result["values"] = {k: v for k, v in values.items() if _valid_encoded(v)}
            else:
                result["values_problem"] = problem or "report malformed"
            if entry["functions"]:
                blocked, _ = await run.ask(_BLOCK, report / "blocked.json", ask_timeout,
                                           refs=entry["block_refs"],
                                           registry=entry["block_registry"])
                if isinstance(blocked, list):
                    result["blocked"] = [str(b)[:200] for b in blocked[:50]]
                for fx in entry["functions"]:
                    out, problem = await run.ask(_FUNCTION, report / f"f{fx['id']}.json",
                                                 ask_timeout, name=fx["name"], cases=fx["cases"])
                    if _valid_encoded(out):
                        result["functions"][fx["id"]] = out
                    else:
                        result["functions"][fx["id"]] = {"state": "unreadable",
                                                         "problem": problem or "malformed"}
        finally:
            await run.stop()
        result["events"] = run.events
        result["errors"] = run.client.vidya_errors
    result["elapsed_s"] = round(time.monotonic() - t0, 2)
    return result


def _limit_memory(limit_bytes: int | None) -> None:
    if not limit_bytes:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    except (ImportError, ValueError, OSError):  # not on this platform: the docs say so
        pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m vidya_lab.exercises.runner")
    p.add_argument("spec", help="JSON spec file, or - to read it from stdin")
    p.add_argument("notebook")
    p.add_argument("result")
    p.add_argument("--timeout", type=float, required=True)
    p.add_argument("--budget", type=float, required=True)
    p.add_argument("--kernel", default="python3")
    p.add_argument("--pid-file")
    p.add_argument("--chapter", type=int)
    p.add_argument("--memory-limit", type=int, default=0, help="bytes of address space; 0: none")
    a = p.parse_args(argv)
    spec = json.load(sys.stdin) if a.spec == "-" else json.loads(Path(a.spec).read_text())
    _limit_memory(a.memory_limit)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    result = asyncio.run(grade_one(Path(a.notebook), spec, a.timeout, a.budget, a.kernel,
                                   Path(a.pid_file) if a.pid_file else None, a.chapter))
    Path(a.result).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
