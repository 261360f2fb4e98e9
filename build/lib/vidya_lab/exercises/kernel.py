"""One sandboxed kernel for one submission: started, fed cells with a time limit, watched, stopped.

:class:`SandboxKernelManager` is jupyter_client's kernel manager with four changes: the kernel runs
under :func:`vidya_lab.exercises.sandbox.kernel_command` with the environment of
:func:`~vidya_lab.exercises.sandbox.kernel_env`; it talks over Unix sockets in the kernel's own
``run`` folder (``transport="ipc"``: works across a network namespace); no connection file is
written (the key goes to :mod:`vidya_lab.exercises.kernel_launch` through a pipe); and interrupts
are control messages, not signals, so they reach a kernel inside a PID namespace.

:class:`KernelSession` runs cells through nbclient keeping no outputs (output without end cannot fill
memory), only a short record of errors; a cell past its time is interrupted, and the kernel
restarted if it does not come back; a kernel that dies is restarted; a memory watchdog sums the
resident memory of the kernel and every process it started and kills them all past the limit. On
:meth:`KernelSession.stop` every process the kernel left behind is killed and counted.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from . import procs
from .sandbox import KernelDirs, kernel_command, kernel_env

MAX_ERRORS = 20                     # cell errors kept for the feedback
MAX_RESTARTS = 3                    # kernel restarts after a death or an uninterruptible cell
GRACE_S = 5.0                       # time an interrupted kernel gets to become responsive again
WATCH_S = 0.25                      # how often the memory watchdog looks


def is_kernel_process(pid: int) -> bool:
    """A sandbox wrapper or the kernel launcher itself, not a process a notebook started."""
    line = procs.cmdline(pid)
    return line.startswith(("bwrap", "unshare")) or "vidya_lab.exercises.kernel_launch" in line


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager that starts the kernel in the grader's sandbox (see the module doc)."""

    def __init__(self, *, dirs: KernelDirs, level: str, originals: dict, python: str, **kw):
        super().__init__(**kw)
        self.vidya_dirs, self.vidya_level = dirs, level
        self.vidya_originals, self.vidya_python = originals, python

    def write_connection_file(self, **kwargs) -> None:  # no file: the key goes through a pipe
        self.transport = "ipc"
        self.ip = str(self.vidya_dirs.run / "k")
        (self.shell_port, self.iopub_port, self.stdin_port, self.hb_port,
         self.control_port) = 1, 2, 3, 4, 5
        self.connection_file = str(self.vidya_dirs.run / "none.json")
        self._connection_file_written = True

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        return kernel_command(self.vidya_level, self.vidya_dirs, self.vidya_originals,
                              self.vidya_python)

    async def _async_launch_kernel(self, kernel_cmd, **kw) -> None:
        info = {k: (v.decode() if isinstance(v, bytes) else v)
                for k, v in self.get_connection_info().items()}
        read, write = os.pipe()
        os.write(write, json.dumps(info).encode())
        os.close(write)
        kw.update(stdin=read, env=kernel_env(self.vidya_dirs), cwd=str(self.vidya_dirs.work))
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            os.close(read)
        self.kernel_spec.interrupt_mode = "message"


def _client_class():
    from nbclient import NotebookClient

    class GradingClient(NotebookClient):
        """Keeps no outputs, only a short record of errors (cells counted from 1)."""

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


class KernelSession:
    """One kernel (restarted when it dies) for ``n_cells`` cells, with a per-cell time limit."""

    def __init__(self, dirs: KernelDirs, *, level: str, originals: dict, python: str,
                 n_cells: int, timeout_s: float, memory_limit_bytes: int = 0,
                 kernel_name: str = "python3"):
        import nbformat

        self.nbformat, self.dirs, self.level = nbformat, dirs, level
        self.originals, self.python, self.kernel_name = originals, python, kernel_name
        self.timeout_s, self.memory_limit_bytes = timeout_s, memory_limit_bytes
        self.events: list[str] = []
        self.restarts = 0
        self.leftovers = 0
        self.memory_exceeded = False
        self._watch: asyncio.Task | None = None
        scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("")
                                                  for _ in range(n_cells + 1)])
        self.scratch_index = n_cells
        self.client = _client_class()(
            scratch, timeout=timeout_s, kernel_name=kernel_name, allow_errors=True,
            interrupt_on_timeout=False, raise_on_iopub_timeout=False, iopub_timeout=1,
            startup_timeout=60, shutdown_kernel="immediate", record_timing=False,
            store_widget_state=False, resources={"metadata": {"path": str(dirs.work)}})
        self.client.vidya_errors = []
        self.client.vidya_scratch = n_cells

    @property
    def errors(self) -> list[dict]:
        return self.client.vidya_errors

    @property
    def root_pid(self) -> int | None:
        km = self.client.km
        return getattr(getattr(km, "provisioner", None), "pid", None) if km else None

    async def start(self, startup_timeout_s: float = 60.0) -> None:
        c = self.client
        c.startup_timeout = max(1, int(startup_timeout_s))
        c.km = SandboxKernelManager(dirs=self.dirs, level=self.level, originals=self.originals,
                                    python=self.python, kernel_name=self.kernel_name)
        await c.async_start_new_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.memory_limit_bytes:
            self._watch = asyncio.ensure_future(self._watchdog(self.root_pid))
        await c.async_start_new_kernel_client()

    async def _watchdog(self, root: int | None) -> None:
        while root:
            await asyncio.sleep(WATCH_S)
            if procs.tree_rss_bytes(root) > self.memory_limit_bytes:
                self.memory_exceeded = True
                procs.kill_tree(root, include_root=True)
                return

    def _kernel_chain(self, root: int) -> set[int]:
        """The sandbox wrappers and the kernel process itself (not the notebook's children)."""
        return {root} | {pid for pid in procs.descendants(root) if is_kernel_process(pid)}

    async def stop(self) -> None:
        c, root = self.client, self.root_pid
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if root:
            chain = self._kernel_chain(root)
            self.leftovers += procs.kill_tree(root, keep=chain)
        for step in ("stop_channels", "shutdown", "cleanup"):
            try:
                if step == "stop_channels" and c.kc is not None:
                    c.kc.stop_channels()
                elif step == "shutdown" and c.km is not None:
                    await asyncio.wait_for(c.km.shutdown_kernel(now=True), 15)
                elif step == "cleanup" and c.km is not None:
                    await c.km.cleanup_resources()
            except Exception:  # a kernel in any state must still be stopped
                pass
        if root:
            procs.kill_tree(root, include_root=True)
        for p in self.dirs.run.glob("k-*"):
            p.unlink(missing_ok=True)
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
        """Run ``source`` as cell ``index``: 'ok', 'timeout' or 'dead'."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        if self.client.kc is None:
            return "dead"
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

    async def run_cell(self, source: str, index: int, timeout_s: float) -> bool:
        """Run one cell of the notebook; record a timeout or a death. False: gave up."""
        status = await self.execute(source, index, timeout_s)
        if status == "ok":
            return True
        if status == "timeout":
            self.events.append(f"timeout in cell {index + 1}")
            ok = await self.recover()
        else:
            word = "memory limit exceeded" if self.memory_exceeded else "kernel died"
            self.memory_exceeded = False
            self.events.append(f"{word} in cell {index + 1}")
            ok = await self.restart()
        if not ok:
            self.events.append("gave up after repeated kernel restarts")
        return ok

    async def ask(self, code: str, path: Path, timeout_s: float, max_bytes: int):
        """Run a snippet that writes JSON to ``path``; (parsed JSON, None) or (None, why not)."""
        path.unlink(missing_ok=True)
        if self.client.kc is None:
            return None, "no kernel"
        status = await self.execute(code, self.scratch_index, timeout_s)
        if status != "ok":
            await (self.recover() if status == "timeout" else self.restart())
            return None, status
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as f:
                data = f.read(max_bytes + 1)
            if len(data) > max_bytes:
                return None, "report too large"
            return json.loads(data.decode("utf-8")), None
        except FileNotFoundError:
            return None, "no report"
        except Exception:
            return None, "report unreadable"
