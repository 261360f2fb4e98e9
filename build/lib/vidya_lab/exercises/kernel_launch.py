"""Start an IPython kernel whose connection key never touches the disk (``python -m`` this module).

The grader's worker writes the connection information (socket paths and the HMAC key that signs
every message) into this process's standard input and closes it; this module reads it, makes the
process non-dumpable (so another process of the account cannot read its memory, environment or file
descriptors) and one that dies with the worker, and starts ``ipykernel`` configured from it, with writing the usual connection file
switched off. No ``kernel-*.json`` holding the key exists for a classmate's notebook to find and use
to drive this kernel; ``JPY_PARENT_PID`` is dropped because in a PID namespace the parent's number
means nothing (the sandbox ends the kernel with its parent instead).

Runs before any student code, in the kernel process itself; keeps to the standard library until
``ipykernel`` is imported.
"""

from __future__ import annotations

import json
import os
import sys

PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


def _not_dumpable() -> None:
    """Non-dumpable, and killed with the worker that started it (where the OS offers both)."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux: nothing to do
        pass


def main() -> None:
    _not_dumpable()
    info = json.loads(sys.stdin.buffer.read(1 << 16).decode("utf-8"))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.environ.pop("JPY_PARENT_PID", None)

    from ipykernel.kernelapp import IPKernelApp
    from traitlets.config import Config

    c = Config()
    for port in PORTS:
        setattr(c.IPKernelApp, port, int(info[port]))
    c.IPKernelApp.ip = str(info["ip"])
    c.IPKernelApp.transport = str(info["transport"])
    c.IPKernelApp.connection_file = os.path.join(os.environ.get("JUPYTER_RUNTIME_DIR", "."),
                                                 "no-connection-file.json")
    c.Session.key = str(info["key"]).encode("ascii")
    c.Session.signature_scheme = str(info["signature_scheme"])
    # the grader reads answers, not pictures: a figure is never rendered (about 0.2 s each)
    c.InlineBackend.figure_formats = set()
    app = IPKernelApp.instance(config=c)
    app.write_connection_file = lambda **kwargs: None
    app.initialize([])
    app.start()


if __name__ == "__main__":
    main()
