"""Drop executed-notebook caches that were made with another version of the package.

Jupyter Book's execution cache (jupyter-cache) keys a notebook on its own code cells only, so a
change in ``vidya_lab`` would leave every chapter showing the numbers of the old code. Before each
build the Makefile runs this script: it hashes the package's sources and data (and the pinned
requirements) and, for every ``_build/**/.jupyter_cache`` whose recorded hash differs, deletes that
build's execution cache and Sphinx environment (``.doctrees``, ``jupyter_execute``), so only a build
with the same code reuses executed outputs.

Usage: ``python tools/stale_cache.py [BUILD_DIR]`` (default ``_build``).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP = "vidya_lab.sha256"


def package_hash() -> str:
    h = hashlib.sha256()
    files = sorted(p for p in (ROOT / "vidya_lab").rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    files.append(ROOT / "requirements.txt")
    for p in files:
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def main(build_dir: str = "_build") -> int:
    build = (ROOT / build_dir).resolve()
    current = package_hash()
    dropped = 0
    for cache in sorted(build.rglob(".jupyter_cache")) if build.exists() else []:
        stamp = cache / STAMP
        if stamp.exists() and stamp.read_text().strip() == current:
            continue
        if stamp.exists() or any(cache.iterdir()):
            # Sphinx would not even re-read an unchanged page: drop its environment too
            for name in (".jupyter_cache", ".doctrees", "jupyter_execute"):
                shutil.rmtree(cache.parent / name, ignore_errors=True)
            dropped += 1
        cache.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current + "\n")
    # a cache the next build creates gets its stamp on the following run; record one now so a
    # fresh build directory is marked with the code it is about to execute
    main_cache = build / ".jupyter_cache"
    if not main_cache.exists():
        main_cache.mkdir(parents=True, exist_ok=True)
        (main_cache / STAMP).write_text(current + "\n")
    if dropped:
        print(f"stale_cache: dropped {dropped} execution cache(s) made with other package code")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
