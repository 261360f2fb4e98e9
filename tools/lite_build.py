"""Assemble what the book's JupyterLite site serves to the reader's in-browser (Pyodide) kernel.

    python tools/lite_build.py            # fetch what is missing (cached), assemble _build/lite/
    python tools/lite_build.py --fetch    # only download what the cache lacks (`make lite-assets`)
    python tools/lite_build.py --check    # exit 1 when the cache lacks a pinned download

`make book` runs it before the Sphinx build; book/_ext/vidya_lite.py runs the same `assemble()` inside
every build (so a plain `jupyter-book build .` works too); jupyterlite-sphinx then builds the site
into _build/html/lite/ from lite/jupyter_lite_config.json, which points at what this script made:

* `_build/lite/pyodide/pyodide/`: the Pyodide runtime (pyodide.mjs, pyodide.asm.*, python_stdlib.zip) from the
  npm `pyodide` package (pinned, sha512-checked), the wheels of lite/wheels.txt (from PyPI, pinned,
  sha256-checked by pip), a wheel of vidya_lab built from this tree, and a `pyodide-lock.json`: the
  npm package's lock file with those wheels served from the book and every other package (numpy,
  pandas, matplotlib, …) from the Pyodide CDN by absolute URL. Written with the standard library:
  `pyodide-lock` (which needs Python >= 3.12) is not used, so the build runs on Python 3.11.
* `_build/lite/contents/chapters/*.ipynb`: the chapters as notebooks (jupytext), each with one cell
  for the browser after its title (`vidya_lab._browser.setup_notebook()`).

Downloads are cached in `_lite_cache/` (kept by `make clean`), so a rebuild needs no network.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import fetch_js_assets as npm  # noqa: E402 (the npm download and integrity check, shared)

CACHE = ROOT / "_lite_cache"
OUT = ROOT / "_build" / "lite"
WHEELS_TXT = ROOT / "lite" / "wheels.txt"
# jupyterlite-pyodide-kernel copies `PyodideAddon.pyodide_url` (../_build/lite/pyodide) into its cache
# as .../pyodide/pyodide and serves the folder `pyodide` inside it: hence the doubled name.
RUNTIME_DIR = OUT / "pyodide" / "pyodide"

PYODIDE_VERSION = "314.0.6"  # what jupyterlite-pyodide-kernel 0.8.6 is built for (its constants.py)
PYODIDE_INTEGRITY = ("sha512-BKDTJyIqFxC4BExLqeRS3f5xvXZIjOt8C3zGLN/Cc7tFxSwvKVhVkchQQ2AGLOtR4YrVOIFx"
                     "bV8poyDOOmWwxQ==")
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
# The runtime the kernel loads (an ES module worker): no pyodide.js, no source maps, no typings.
RUNTIME_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
# Requirements of a served wheel that the in-browser kernel does not import: the widgets' browser
# side, which the Lite site carries as the @jupyter-widgets/jupyterlab-manager labextension.
FRONTEND_ONLY = {"widgetsnbextension", "jupyterlab-widgets"}
# The Pyodide kernel's name in JupyterLite (the chapters say python3, which JupyterLite lacks).
LITE_KERNELSPEC = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
PACKAGE_SOURCES = ("pyproject.toml", "README.md", "vidya_lab", "jupyter-config")  # all the wheel reads


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


# ---------------------------------------------------------------------------------------- fetching
def _pyodide_tarball() -> Path:
    return CACHE / f"pyodide-{PYODIDE_VERSION}.tgz"


def _pinned_wheels() -> list[tuple[str, str]]:
    """(name, version) of every line of lite/wheels.txt."""
    pins = []
    for line in WHEELS_TXT.read_text().splitlines():
        spec = line.split("#")[0].split("--hash")[0].strip()
        if spec:
            name, _, version = spec.partition("==")
            pins.append((canonical(name), version))
    return pins


def _cached_wheel(name: str, version: str) -> Path | None:
    for whl in (CACHE / "wheels").glob("*.whl"):
        parts = whl.name.split("-")
        if canonical(parts[0]) == name and parts[1] == version:
            return whl
    return None


def missing() -> list[str]:
    """What the cache still lacks, in words ([] when everything pinned is there)."""
    gaps = [] if _pyodide_tarball().exists() else [f"pyodide {PYODIDE_VERSION} (npm)"]
    return gaps + [f"{n}=={v}" for n, v in _pinned_wheels() if _cached_wheel(n, v) is None]


def fetch() -> None:
    """Download what `missing()` names: the npm tarball (sha512-checked), the wheels (sha256, pip)."""
    CACHE.mkdir(exist_ok=True)
    if not _pyodide_tarball().exists():
        with tempfile.TemporaryDirectory() as tmp:
            data = npm._download("pyodide", PYODIDE_VERSION, Path(tmp))
        npm._check_integrity(data, PYODIDE_INTEGRITY, f"pyodide@{PYODIDE_VERSION}")
        _pyodide_tarball().write_bytes(data)
    if any(_cached_wheel(n, v) is None for n, v in _pinned_wheels()):
        # pure-Python wheels for Pyodide's Python 3.14: only wheels, no dependencies, hashes required
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "--ignore-requires-python", "--require-hashes",
                        "-r", str(WHEELS_TXT), "-d", str(CACHE / "wheels")], check=True)
    if missing():
        raise SystemExit(f"still missing after download: {missing()}")


# ---------------------------------------------------------------------------------- the package wheel
def _source_digest() -> str:
    digest = hashlib.sha256()
    for top in PACKAGE_SOURCES:
        paths = [ROOT / top] if (ROOT / top).is_file() else sorted((ROOT / top).rglob("*"))
        for path in paths:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def package_wheel() -> Path:
    """A wheel of vidya_lab built from this tree (in a copy, so no build/ lands in the tree)."""
    folder = CACHE / "vidya_lab" / _source_digest()
    built = sorted(folder.glob("vidya_lab-*.whl"))
    if built:
        return built[0]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for top in PACKAGE_SOURCES:
            if (ROOT / top).is_dir():
                shutil.copytree(ROOT / top, src / top,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(ROOT / top, src / top)
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                                "-w", str(Path(tmp) / "dist"), str(src)],
                               capture_output=True, text=True)
        if built.returncode != 0:  # setuptools' chatter only when it failed
            raise SystemExit(f"building the vidya_lab wheel failed:\n{built.stdout}{built.stderr}")
        wheel = next((Path(tmp) / "dist").glob("vidya_lab-*.whl"))
        if folder.parent.exists():
            shutil.rmtree(folder.parent)  # one cached build: the current tree's
        folder.mkdir(parents=True)
        return Path(shutil.copy2(wheel, folder / wheel.name))


# ---------------------------------------------------------------------------------- the lock file
def wheel_entry(wheel: Path) -> dict:
    """A pyodide-lock.json entry for a pure-Python wheel: name, version, imports, requirements."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(zf.read(meta_name).decode())
        top_txt = next((n for n in names if n.endswith(".dist-info/top_level.txt")), None)
        if top_txt:
            imports = zf.read(top_txt).decode().split()
        else:
            imports = sorted({n.split("/")[0].removesuffix(".py") for n in names
                              if ".dist-info" not in n.split("/")[0] and
                              (n.endswith(".py") or "/" in n)})
    requires = []
    for text in meta.get_all("Requires-Dist") or []:
        head = text.split(";")[0]
        if ";" in text and "extra" in text.split(";", 1)[1]:
            continue  # an optional extra: not installed
        name = head.strip().split("[")[0]
        for stop in "<>=!~( ":
            name = name.split(stop)[0]
        requires.append(canonical(name))
    return {"name": meta["Name"], "version": meta["Version"], "file_name": wheel.name,
            "install_dir": "site", "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
            "package_type": "package", "imports": [i for i in imports if i.isidentifier()],
            "depends": requires, "unvendored_tests": False}


def build_lock(pyodide_lock: dict, wheels: list[Path]) -> dict:
    """Pyodide's lock with `wheels` served from beside it and every other file from the CDN."""
    lock = json.loads(json.dumps(pyodide_lock))
    packages = lock["packages"]
    for entry in packages.values():
        if "://" not in entry["file_name"]:
            entry["file_name"] = PYODIDE_CDN + entry["file_name"]
    new = {}
    for wheel in wheels:
        entry = wheel_entry(wheel)
        key = canonical(entry["name"])
        known = packages.get(key)
        if known is not None:  # one of Pyodide's own: same version, Pyodide's dependency list
            if known["version"] != entry["version"]:
                raise SystemExit(f"{wheel.name}: Pyodide {PYODIDE_VERSION} lists {key} "
                                 f"{known['version']}; pin that version in {WHEELS_TXT.name}")
            known.update(file_name=entry["file_name"], sha256=entry["sha256"])
        else:
            new[key] = entry
    packages.update(new)
    for key, entry in new.items():
        unknown = [d for d in entry["depends"] if d not in packages and d not in FRONTEND_ONLY]
        if unknown:
            raise SystemExit(f"{key} needs {unknown}, which neither the book nor Pyodide serves")
        entry["depends"] = [d for d in entry["depends"] if d in packages]
    return lock


# ---------------------------------------------------------------------------------- assembling
def _write_runtime(dest: Path) -> dict:
    with tarfile.open(_pyodide_tarball(), mode="r:gz") as tar:
        for name in RUNTIME_FILES:
            (dest / name).write_bytes(tar.extractfile(f"package/{name}").read())
        return json.loads(tar.extractfile("package/pyodide-lock.json").read())


def write_pyodide(dest: Path) -> dict:
    """Fill `dest` with the runtime, the served wheels and the rewritten lock; return the lock."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    pyodide_lock = _write_runtime(dest)
    wheels = [_cached_wheel(n, v) for n, v in _pinned_wheels()] + [package_wheel()]
    for wheel in wheels:
        shutil.copy2(wheel, dest / wheel.name)
    lock = build_lock(pyodide_lock, wheels)
    (dest / "pyodide-lock.json").write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
    return lock


#: What the in-browser page says first: what it fetches, and what happens when it cannot.
NETWORK_NOTE = (
    "**Running in your browser.** This site serves Python (Pyodide), `vidya_lab`, simpy and the "
    "widgets itself; numpy, pandas, matplotlib and Pyodide's other packages come from the Pyodide "
    f"CDN ({PYODIDE_CDN}), so the first run needs the network. Offline, a cell that needs one of "
    "them stops with `ModuleNotFoundError`; *Run All* goes on past it, and every cell that does "
    "not need it still runs."
)


def write_contents(dest: Path, chapters: list[Path]) -> list[Path]:
    """Each chapter as a notebook for JupyterLite, with the browser's set-up cell after its title."""
    import jupytext
    import nbformat

    setup = nbformat.v4.new_code_cell(
        "# In the browser (JupyterLite) only: see vidya_lab/_browser.py\n"
        "from vidya_lab import _browser\n\n_browser.setup_notebook()",
        metadata={"tags": ["jupyterlite-setup", "raises-exception"]})
    network = nbformat.v4.new_markdown_cell(NETWORK_NOTE, metadata={"tags": ["jupyterlite-network"]})
    written = []
    for chapter in chapters:
        nb = jupytext.read(chapter)
        for cell in nb.cells:  # Run All goes on past a failing cell (JupyterLab's own tag)
            if cell.cell_type == "code":
                tags = cell.metadata.setdefault("tags", [])
                if "raises-exception" not in tags:
                    tags.append("raises-exception")
        first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), 0)
        nb.cells.insert(first_code, nbformat.from_dict(json.loads(json.dumps(setup))))
        nb.cells.insert(first_code, nbformat.from_dict(json.loads(json.dumps(network))))
        nb.metadata.pop("jupytext", None)  # a plain notebook in the browser, not a paired text file
        nb.metadata["kernelspec"] = LITE_KERNELSPEC  # else JupyterLite asks for a kernel (no python3)
        target = dest / chapter.parent.name / f"{chapter.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    return written


def assemble(chapters: list[Path] | None = None) -> dict:
    """Fetch what is missing, then write _build/lite/{pyodide,contents}; return the lock written."""
    if missing():
        fetch()
    lock = write_pyodide(RUNTIME_DIR)
    chapters = chapters or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md"))
    write_contents(OUT / "contents", chapters)
    return lock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report what the cache lacks")
    parser.add_argument("--fetch", action="store_true", help="only download what the cache lacks")
    args = parser.parse_args(argv)
    if args.fetch:
        if missing():
            fetch()
        print(f"{CACHE.name}/: holds every pinned download")
        return 0
    if args.check:
        gaps = missing()
        print(f"{CACHE.name}/: " + (f"missing {gaps}" if gaps else "holds every pinned download"))
        return 1 if gaps else 0
    lock = assemble()
    served = sorted(k for k, p in lock["packages"].items() if "://" not in p["file_name"])
    print(f"{RUNTIME_DIR.relative_to(ROOT)}: Pyodide {PYODIDE_VERSION}, serving {', '.join(served)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
