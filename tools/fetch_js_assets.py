"""Fetch the book's JavaScript (MathJax 3, require.js, the ipywidgets HTML manager) for offline use.

The built book loads these three from the folder this script fills, never from a CDN, so the HTML in
`_build/html` works without internet (and the browser tests can prove it). Each package comes from
the npm registry as a pinned tarball whose sha512 integrity is checked before anything is unpacked.

    python tools/fetch_js_assets.py            # fills _book_js/ (what `make assets` runs)
    python tools/fetch_js_assets.py --check    # exit 1 if _book_js/ is missing or stale

`npm pack` does the download when npm is installed; otherwise the same tarball is read from the
registry's tarball URL with Python's standard library. Either way the integrity must match the pin.
Only the files a page needs are kept (about 8 MB); the licence of each package is copied beside it
and listed in `_book_js/offline/LICENSES.txt`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEST = ROOT / "_book_js"
# Everything below DEST/offline is copied to _build/html/_static/offline/ (html_static_path).
SUBDIR = "offline"

# name, version, sha512 integrity (from `npm view NAME@VERSION dist.integrity`), licence,
# the folder it goes to, and which files of the tarball's `package/` to keep.
PACKAGES = [
    {
        "name": "mathjax",
        "version": "3.2.2",
        "integrity": "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        "license": "Apache-2.0",
        "folder": "mathjax",
        # the combined TeX+MathML→CHTML component plus what it loads lazily (fonts, TeX
        # extensions, menu, a11y); the speech engine (es5/sre, 4 MB) is left out.
        "keep": ["LICENSE", "es5/tex-mml-chtml.js", "es5/input/", "es5/output/", "es5/ui/",
                 "es5/a11y/", "es5/adaptors/"],
        "strip": "es5/",
    },
    {
        "name": "requirejs",
        "version": "2.3.8",
        "integrity": "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        "license": "MIT",
        "folder": "require",
        "keep": ["require.js"],
        "strip": "",
    },
    {
        "name": "@jupyter-widgets/html-manager",
        "version": "1.0.15",
        "integrity": "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        "license": "BSD-3-Clause",
        "folder": "html-manager",
        # embed-amd.js finds its font files next to itself (webpack public path = its own URL)
        "keep": ["dist/embed-amd.js", "dist/embed.js.LICENSE.txt", "dist/*.woff", "dist/*.woff2",
                 "dist/*.ttf", "dist/*.eot", "dist/*.svg"],
        "strip": "dist/",
    },
]

STAMP = DEST / ".stamp.json"


def _pins() -> list[dict]:
    return [{k: p[k] for k in ("name", "version", "integrity")} for p in PACKAGES]


def _tarball_name(name: str, version: str) -> str:
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def _download(name: str, version: str, workdir: Path) -> bytes:
    """Return the registry tarball of name@version, through npm when it is installed."""
    npm = shutil.which("npm")
    if npm:
        subprocess.run([npm, "pack", "--silent", f"{name}@{version}"], cwd=workdir, check=True,
                       stdout=subprocess.DEVNULL)
        return (workdir / _tarball_name(name, version)).read_bytes()
    base = name.split("/")[-1]
    url = f"https://registry.npmjs.org/{name}/-/{base}-{version}.tgz"
    with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 (fixed https URL)
        return response.read()


def _check_integrity(data: bytes, integrity: str, what: str) -> None:
    algo, _, expected = integrity.partition("-")
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != expected:
        raise SystemExit(f"{what}: {algo} integrity mismatch (expected {expected}, got {got}); "
                         "refusing to unpack it")


def _wanted(member: str, keep: list[str]) -> bool:
    from fnmatch import fnmatch

    for pattern in keep:
        if pattern.endswith("/") and member.startswith(pattern):
            return True
        if fnmatch(member, pattern) and "/" not in member[len(pattern.split("*")[0]):]:
            return True
    return False


def _unpack(data: bytes, package: dict, out: Path) -> int:
    count = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.startswith("package/"):
                continue
            rel = member.name[len("package/"):]
            if ".." in Path(rel).parts or not _wanted(rel, package["keep"]):
                continue
            if package["strip"] and rel.startswith(package["strip"]):
                rel = rel[len(package["strip"]):]
            target = out / package["folder"] / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
            count += 1
    return count


def _licence_text(out: Path) -> str:
    lines = ["JavaScript that the vidya-lab book serves from its own folder instead of a CDN.",
             "Fetched from the npm registry by tools/fetch_js_assets.py; integrity checked.", ""]
    for p in PACKAGES:
        lines.append(f"{p['folder']}/: {p['name']} {p['version']} ({p['license']}), "
                     f"https://www.npmjs.com/package/{p['name']}/v/{p['version']}")
        lines.append(f"    tarball integrity {p['integrity']}")
    lines.append("")
    lines.append("require.js carries its MIT licence in its header comment; MathJax's Apache-2.0 text")
    lines.append("is mathjax/LICENSE; the HTML manager's bundled third-party notices are")
    lines.append("html-manager/embed.js.LICENSE.txt (the manager itself: BSD-3-Clause, Project Jupyter).")
    return "\n".join(lines) + "\n"


def is_current() -> bool:
    """True when DEST holds exactly the pinned packages."""
    try:
        return json.loads(STAMP.read_text()) == _pins()
    except (OSError, ValueError):
        return False


def fetch() -> None:
    staging = Path(tempfile.mkdtemp(prefix="book_js_", dir=ROOT))
    try:
        out = staging / SUBDIR
        out.mkdir()
        with tempfile.TemporaryDirectory() as tmp:
            for p in PACKAGES:
                data = _download(p["name"], p["version"], Path(tmp))
                _check_integrity(data, p["integrity"], f"{p['name']}@{p['version']}")
                n = _unpack(data, p, out)
                if n == 0:
                    raise SystemExit(f"{p['name']}@{p['version']}: no files kept; check 'keep'")
                print(f"  {p['name']}@{p['version']}: {n} files -> {DEST.name}/{SUBDIR}/{p['folder']}/")
        (out / "LICENSES.txt").write_text(_licence_text(out))
        (staging / STAMP.name).write_text(json.dumps(_pins()))
        if DEST.exists():
            shutil.rmtree(DEST)
        staging.rename(DEST)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that _book_js/ holds the pinned versions")
    args = parser.parse_args(argv)
    if args.check:
        ok = is_current()
        print(f"{DEST.name}/: {'up to date' if ok else 'missing or stale: run `make assets`'}")
        return 0 if ok else 1
    if is_current():
        print(f"{DEST.name}/ already holds the pinned JavaScript")
        return 0
    print(f"Fetching the book's JavaScript into {DEST.name}/ ...")
    fetch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
