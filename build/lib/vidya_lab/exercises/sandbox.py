"""Where a submission's kernel runs: its own folders, its own copy of the package, and a sandbox.

Every kernel gets a folder of its own (``home``, ``tmp``, ``run`` for its sockets, ``work`` for its
working directory, ``pkg`` for the package it imports) and an environment built from nothing, so no
startup file, cache or secret of the grader's account reaches it. Three levels of isolation, the
strongest the machine offers being used (``--isolation auto``) and named in every CSV row:

``bubblewrap``
    ``bwrap`` (Debian package ``bubblewrap``, no service needed) runs the kernel in new user, PID,
    network, IPC and UTS namespaces, with a file system that holds only the system folders and the
    Python installation (read-only), the kernel's own folder, and its package copy mounted read-only
    over the package's real location. It sees no other process (it cannot signal the grader or a
    classmate's kernel), no network, and no file of the account: not the submissions, not the
    checkout, not the instructor's secret or case files, not the CSV.
``unshare``
    ``unshare`` (util-linux) gives new user, PID, network and IPC namespaces: no other process and no
    network, but the account's files stay visible.
``process``
    no namespace: private folders and environment, its own package copy first on ``sys.path``, its
    own session, every process it starts killed with it; the account's files and processes stay
    reachable (see the book's "For instructors" page for what that allows).

The package copies (:func:`build_template`) are made once per run: ``vidya_lab`` (and the module of
an ``--registry``) with the answer key replaced by a stub that refuses to import, and, for the kernel
that grades function exercises, with each reference implementation's body replaced by ``raise``.
"""

from __future__ import annotations

import ast
import compileall
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

LEVELS = ("bubblewrap", "unshare", "process")
KEY_STUB = ('raise ImportError("vidya-lab: the answer key is not available while a notebook is '
            'being graded")\n')
REFERENCE_OFF = ("vidya-lab grade: the package's reference implementation is switched off while "
                 "your function is graded; write the computation yourself")
LAUNCHER = "vidya_lab.exercises.kernel_launch"
#: The longest folder a kernel's sockets can live in (a Unix socket path has at most 107 bytes).
MAX_SOCKET_DIR = 80


# ----------------------------------------------------------------------------- the package copies

def module_location(name: str) -> Path | None:
    """The file (a module) or folder (a package) the top-level module ``name`` is imported from."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        locations = list(spec.submodule_search_locations)
        return Path(locations[0]) if locations else None
    return Path(spec.origin) if spec.origin and spec.origin not in ("built-in", "frozen") else None


def stub_function(source: str, qualname: str, message: str = REFERENCE_OFF) -> str | None:
    """``source`` with every top-level definition of ``qualname`` (a function, or ``Class.method``)
    reduced to ``raise RuntimeError(message)``; None if no such definition is there."""
    tree = ast.parse(source)
    parts = qualname.split(".")
    found = False
    scopes = [tree.body]
    for part in parts[:-1]:
        scopes = [n.body for body in scopes for n in body
                  if isinstance(n, ast.ClassDef) and n.name == part]
    for body in scopes:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == parts[-1]:
                node.body = [ast.Raise(exc=ast.Call(func=ast.Name("RuntimeError", ast.Load()),
                                                    args=[ast.Constant(message)], keywords=[]),
                                       cause=None)]
                found = True
    if not found:
        return None
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _copy_top(name: str, dest: Path) -> Path:
    src = module_location(name)
    if src is None:
        raise ValueError(f"module {name!r} cannot be found, so it cannot be given to the kernels")
    target = dest / src.name
    if src.is_dir():
        shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        shutil.copy2(src, target)
    return target


def _module_file(root: Path, top: str, module: str) -> Path | None:
    """The file of ``module`` inside the copy of its top-level package at ``root / top``."""
    rel = module.split(".")[1:]
    base = root / top
    if not rel:
        single = root / f"{top}.py"
        return single if single.is_file() else base / "__init__.py"
    for cand in (base.joinpath(*rel).with_suffix(".py"), base.joinpath(*rel, "__init__.py")):
        if cand.is_file():
            return cand
    return None


@dataclass
class Template:
    """A package copy for kernels: ``root`` holds one entry per top-level module."""

    root: Path
    originals: dict[str, Path] = field(default_factory=dict)  # top-level name -> real location
    warnings: list[str] = field(default_factory=list)


def build_template(root: Path, *, key_modules: Sequence[str], references: Sequence[tuple[str, str]],
                   block_references: bool) -> Template:
    """Copy ``vidya_lab`` and every module named in ``key_modules``/``references`` under ``root``;
    replace the key modules by stubs, and (if asked) stub every reference ``(module, qualname)``."""
    root.mkdir(parents=True)
    tmpl = Template(root)
    tops = ["vidya_lab"] + [m.split(".")[0] for m in key_modules] + [m.split(".")[0] for m, _ in references]
    for top in dict.fromkeys(tops):
        tmpl.originals[top] = module_location(top)
        _copy_top(top, root)
    key_pkg = root / "vidya_lab" / "exercises" / "key"
    if key_pkg.is_dir():
        shutil.rmtree(key_pkg)
        key_pkg.mkdir()
        (key_pkg / "__init__.py").write_text(KEY_STUB)
    for mod in key_modules:
        path = _module_file(root, mod.split(".")[0], mod)
        if path is not None:
            if path.name == "__init__.py":
                shutil.rmtree(path.parent)
                path.parent.mkdir()
            path.write_text(KEY_STUB)
    if block_references:
        for mod, qualname in references:
            path = _module_file(root, mod.split(".")[0], mod)
            new = stub_function(path.read_text(encoding="utf-8"), qualname) if path else None
            if new is None:
                tmpl.warnings.append(f"{mod}.{qualname} is not a plain function definition: it "
                                     "cannot be switched off while functions are graded")
                continue
            path.write_text(new, encoding="utf-8")
    compileall.compile_dir(str(root), quiet=1, workers=1)
    return tmpl


# ----------------------------------------------------------------------------- the sandbox

def _system_binds() -> list[str]:
    args: list[str] = []
    for name in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir() and name != "opt":
            args += ["--ro-bind", str(p), str(p)]
    return args


def _python_paths() -> list[Path]:
    paths = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).resolve().parent,
             Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    return sorted((p for p in paths if p.exists() and not str(p).startswith("/usr")),
                  key=lambda p: len(p.parts))


def extra_python_paths() -> list[Path]:
    """The grader's own ``PYTHONPATH`` folders (an ``--registry`` module's home): kernels get them
    too, read-only."""
    return [Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).is_dir()]


@dataclass
class KernelDirs:
    """The folders of one kernel, all below ``base``."""

    base: Path

    def __post_init__(self) -> None:
        for sub in ("home", "tmp", "run", "work"):
            (self.base / sub).mkdir(parents=True, exist_ok=True, mode=0o700)

    home = property(lambda self: self.base / "home")
    tmp = property(lambda self: self.base / "tmp")
    run = property(lambda self: self.base / "run")
    work = property(lambda self: self.base / "work")
    pkg = property(lambda self: self.base / "pkg")


def kernel_env(dirs: KernelDirs) -> dict[str, str]:
    """The kernel's whole environment (nothing inherited but ``PATH``, ``LANG`` and ``TZ``)."""
    paths = [str(dirs.pkg)] + [str(p) for p in extra_python_paths()]
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(dirs.home), "TMPDIR": str(dirs.tmp), "TEMP": str(dirs.tmp), "TMP": str(dirs.tmp),
        "JUPYTER_RUNTIME_DIR": str(dirs.run), "JUPYTER_CONFIG_DIR": str(dirs.home / ".jupyter"),
        "JUPYTER_DATA_DIR": str(dirs.home / ".local/share/jupyter"),
        "IPYTHONDIR": str(dirs.home / ".ipython"), "MPLCONFIGDIR": str(dirs.home / ".matplotlib"),
        "XDG_CACHE_HOME": str(dirs.home / ".cache"), "XDG_CONFIG_HOME": str(dirs.home / ".config"),
        "PYTHONPATH": os.pathsep.join(paths), "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    if os.environ.get("TZ"):
        env["TZ"] = os.environ["TZ"]
    return env


def kernel_command(level: str, dirs: KernelDirs, originals: dict[str, Path | None],
                   python: str | None = None) -> list[str]:
    """The command that starts the kernel launcher at isolation ``level``."""
    # the kernel's folder as an (unused) argument: a test or an instructor can tell its processes
    cmd = [python or sys.executable, "-m", LAUNCHER, str(dirs.base)]
    if level == "process":
        return cmd
    if level == "unshare":
        return ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child",
                "--mount-proc", "--net", "--ipc", "--uts", "--"] + cmd
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    args += _system_binds()
    for p in _python_paths():
        args += ["--ro-bind", str(p), str(p)]
    for p in extra_python_paths():
        args += ["--ro-bind", str(p), str(p)]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    args += ["--bind", str(dirs.base), str(dirs.base), "--ro-bind", str(dirs.pkg), str(dirs.pkg)]
    for top, original in originals.items():  # the copy, read-only, wherever the original lives
        original = Path(original) if original else None
        copy = dirs.pkg / (original.name if original else top)
        if original is not None and copy.exists():
            args += ["--ro-bind", str(copy), str(original)]
    args += ["--chdir", str(dirs.work), "--"]
    return args + cmd


def probe(requested: str = "auto", timeout_s: float = 30.0) -> tuple[str, str]:
    """``(level, note)``: the isolation to use. ``auto`` takes the strongest that starts Python
    here; a named level that cannot start is an error (``ValueError``)."""
    if requested not in ("auto", *LEVELS):
        raise ValueError(f"--isolation must be one of auto, {', '.join(LEVELS)}, got {requested!r}")
    order = LEVELS if requested == "auto" else (requested,)
    notes = []
    for level in order:
        if level == "process":
            return level, "; ".join(notes)
        ok, why = _try(level, timeout_s)
        if ok:
            return level, "; ".join(notes)
        notes.append(f"{level} unavailable ({why})")
    raise ValueError(f"--isolation {requested}: {notes[-1]}")


def _try(level: str, timeout_s: float) -> tuple[bool, str]:
    import tempfile

    tool = "bwrap" if level == "bubblewrap" else "unshare"
    if shutil.which(tool) is None:
        return False, f"no {tool} on PATH"
    with tempfile.TemporaryDirectory(prefix="vg-probe-") as tmp:
        dirs = KernelDirs(Path(tmp))
        dirs.pkg.mkdir()
        cmd = kernel_command(level, dirs, {})[:-3] + ["-c", "import json, sys"]
        try:
            out = subprocess.run(cmd, capture_output=True, timeout=timeout_s, env=kernel_env(dirs),
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, type(exc).__name__
        if out.returncode != 0:
            last = (out.stderr.decode("utf-8", "replace").strip().splitlines() or ["?"])[-1]
            return False, last[:120]
    return True, ""


def short_temp_root() -> Path:
    """A folder for the run's files, short enough for socket paths (``TMPDIR``, else ``/tmp``)."""
    import tempfile

    base = Path(tempfile.gettempdir())
    if len(str(base)) > MAX_SOCKET_DIR - 40:
        base = Path("/tmp")
    return Path(tempfile.mkdtemp(prefix="vg-", dir=base))
