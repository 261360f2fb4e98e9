"""Start an IPython kernel whose connection key never touches the disk (``python -m`` this module).

The grader's worker writes the connection information (socket paths and the HMAC key that signs
every message) into this process's standard input and closes it; this module reads it, makes the
process non-dumpable (so another process of the account cannot read its memory, environment or file
descriptors) and one that dies with the worker, and starts ``ipykernel`` configured from it, with writing the usual connection file
switched off. No ``kernel-*.json`` holding the key exists for a classmate's notebook to find and use
to drive this kernel; ``JPY_PARENT_PID`` is dropped because in a PID namespace the parent's number
means nothing (the sandbox ends the kernel with its parent instead).

With ``--confine`` (the ``unshare`` isolation, whose kernel would otherwise see every file of the
account), it first makes the whole file system read-only in its own mount namespace except its own
folder (and a fresh ``/dev/shm``), then drops every capability, so no code it runs can undo that: a
classmate's notebook can no longer delete the grader's working folders (``/tmp/vg-*``), another
kernel's, the submissions or the CSV. If the kernel cannot confine itself it says so on standard
error and exits, rather than run a notebook with the account's files in reach.

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


# <linux/mount.h>, <sys/mount.h>, <linux/prctl.h>
_MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC = 1, 32, 4096, 16384
_AT_RECURSIVE, _MOUNT_ATTR_RDONLY = 0x8000, 0x1
_SYS_MOUNT_SETATTR = {"x86_64": 442, "aarch64": 442}
_PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 24, 38


def confine(own: str) -> None:
    """Make every mount read-only except ``own`` (kept writable) and a fresh ``/dev/shm``, then drop
    all capabilities (bounding set, permitted, effective) and set no-new-privileges. Needs a mount
    namespace this process is root of (``unshare --user --map-root-user --mount``); ``OSError`` if a
    step fails."""
    import ctypes
    import platform

    libc = ctypes.CDLL(None, use_errno=True)

    def check(rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def enc(x):
        return None if x is None else os.fsencode(x)

    def mount(src, target, fstype, flags, data=None) -> int:
        return libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))

    own = os.path.realpath(own)
    check(mount(None, "/", None, _MS_REC | (1 << 18)), "make / private")     # MS_PRIVATE
    check(mount(own, own, None, _MS_BIND | _MS_REC), f"bind {own}")
    shm_ok = os.path.isdir("/dev/shm") and mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=64m") == 0
    nr = _SYS_MOUNT_SETATTR.get(platform.machine())

    class _Attr(ctypes.Structure):
        _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                    ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]

    keep = {own} | ({"/dev/shm"} if shm_ok else set())
    done = False
    if nr is not None:
        ro, rw = _Attr(_MOUNT_ATTR_RDONLY, 0, 0, 0), _Attr(0, _MOUNT_ATTR_RDONLY, 0, 0)
        AT_FDCWD = -100
        if libc.syscall(nr, AT_FDCWD, b"/", _AT_RECURSIVE, ctypes.byref(ro), ctypes.sizeof(ro)) == 0:
            for path in keep:
                check(libc.syscall(nr, AT_FDCWD, os.fsencode(path), _AT_RECURSIVE, ctypes.byref(rw),
                                   ctypes.sizeof(rw)), f"keep {path} writable")
            done = True
    if not done:  # an older kernel: remount every mount point read-only, one at a time
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            points = [line.split()[4].encode().decode("unicode_escape") for line in f]
        for point in sorted(set(points), key=len):
            if any(point == k or point.startswith(k.rstrip("/") + "/") for k in keep):
                continue
            if mount(None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY) != 0 \
                    and point in ("/", "/tmp", os.path.dirname(own)):
                check(-1, f"remount {point} read-only")
    probe = os.path.join(os.path.dirname(own), ".vidya-confine-probe")
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError:
        pass
    else:
        os.unlink(probe)
        raise OSError(f"{os.path.dirname(own)} is still writable")
    for cap in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL
            check(-1, f"drop capability {cap}")
    check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "set no-new-privileges")

    class _Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()                     # two empty cap sets (64-bit capabilities)
    check(libc.capset(ctypes.byref(_Header(0x20080522, 0)), data), "drop capabilities")


def main() -> None:
    _not_dumpable()
    if "--confine" in sys.argv[2:]:
        try:
            confine(sys.argv[1])
        except OSError as exc:
            sys.stderr.write(f"vidya-lab: the kernel could not confine itself ({exc})\n")
            sys.exit(70)
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
