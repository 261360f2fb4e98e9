"""Shared fixtures: the strict book build (built once per session) and a real Chromium.

`make test` runs the suite on the machine's cores with pytest-xdist (``-n auto --dist
loadgroup``): :func:`pytest_collection_modifyitems` keeps each file's tests on one worker (its
module fixtures are built once) and every file that reads the book build on the same one, so the
book is built once per run however many workers there are (and `built_book` holds a file lock
while it builds, in case another worker ever asks too). Without ``-n`` everything runs in one
process, as before.

`built_book` builds the book exactly as CI does (`jupyter-book build . -W -n --keep-going` from the
repository root with the .venv's jupyter-book) and returns the Path of `_build/html`; a failed build
fails every test that asks for it, with the end of the build log.

`chromium` finds Debian's chromium (playwright's own browser downloads do not work here). Without it,
browser tests skip with a message saying how to enable them; with CI=true they fail instead.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD_HTML = ROOT / "_build" / "html"
#: As `make book`: long simulations kept in _build/.vidya_cache (vidya_lab._cache).
BOOK_ENV = {"VIDYA_LAB_CACHE": str(ROOT / "_build" / ".vidya_cache")}
BUILD_TIMEOUT_S = 1200  # a stalled kernel must fail the session, not hang it

ENABLE_BROWSER_HELP = (
    "Browser tests need Chromium and the playwright package: on Debian/Ubuntu run "
    "`apt-get install -y chromium` as root, `sudo` before it otherwise (or set CHROMIUM=/path/to/chromium) and "
    "`make test` (playwright comes with requirements-dev.txt)."
)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


#: The test files that read the strict book build (`built_book`): one xdist worker runs them all.
BOOK_FILES = frozenset({"test_book.py", "test_browser.py", "test_lite.py", "test_lite_browser.py"})


def pytest_collection_modifyitems(config, items):
    """Group the tests for pytest-xdist's ``--dist loadgroup`` (see the module docstring): by file,
    and the files of :data:`BOOK_FILES` together. Harmless without xdist."""
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group("the book build" if name in BOOK_FILES else name))


def venv_tool(name: str) -> str:
    """The .venv's copy of a console script, else the one beside this interpreter, else PATH."""
    for candidate in (ROOT / ".venv" / "bin" / name, Path(sys.executable).parent / name):
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: run `make test` (it creates .venv/)")
    return found


def toc_documents() -> list[str]:
    """Every document of _toc.yml, in reading order (e.g. 'book/intro', 'chapters/01_...')."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    docs: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                docs.append(str(Path(node["file"]).with_suffix("")))
            for key in ("root",):
                if key in node:
                    docs.append(str(Path(node[key]).with_suffix("")))
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)

    walk(toc)
    return docs


def chapter_documents() -> list[str]:
    return [d for d in toc_documents() if d.startswith("chapters/")]


def _ensure_js_assets() -> None:
    """The book serves its own MathJax/require.js/widget manager (see tools/fetch_js_assets.py)."""
    script = ROOT / "tools" / "fetch_js_assets.py"
    check = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    if check.returncode != 0:
        fetched = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        if fetched.returncode != 0:
            pytest.fail("could not fetch the book's JavaScript (`make assets`):\n"
                        + fetched.stdout[-2000:] + fetched.stderr[-2000:])


@pytest.fixture(scope="session")
def built_book() -> Path:
    """Build the book strictly once per session; return the Path to _build/html."""
    _ensure_js_assets()
    cmd = [venv_tool("jupyter-book"), "build", ".", "-W", "-n", "--keep-going"]
    log = ROOT / "_build" / "test-build.log"
    log.parent.mkdir(exist_ok=True)
    with open(ROOT / "_build" / ".test-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)       # one build at a time, whichever worker asks
        try:
            return _build(cmd, log)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build(cmd: list[str], log: Path) -> Path:
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S, env=dict(os.environ, **BOOK_ENV))
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"")
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        log.write_text(out)
        pytest.fail(f"`{' '.join(cmd)}` ran past {BUILD_TIMEOUT_S} s; log tail:\n{out[-4000:]}")
    output = proc.stdout + proc.stderr
    log.write_text(output)
    if proc.returncode != 0:
        pytest.fail(f"`{' '.join(cmd)}` exited {proc.returncode} (full log: {log}); "
                    f"log tail:\n{output[-4000:]}")
    return BUILD_HTML


def find_chromium() -> str | None:
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _skip_or_fail(reason: str):
    if in_ci():
        pytest.fail(f"CI=true and {reason}. {ENABLE_BROWSER_HELP}")
    pytest.skip(f"{reason}. {ENABLE_BROWSER_HELP}")


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        _skip_or_fail("no Chromium found (looked for CHROMIUM, chromium, chromium-browser, "
                      "google-chrome)")
    return path


@pytest.fixture(scope="session")
def playwright_browser(chromium_path):
    """One headless Chromium for the session, driven by playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("the playwright package is not installed")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium_path,
            headless=True,
            # --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (signature from the base class)
        pass


@pytest.fixture(scope="session")
def book_url(built_book):
    """Serve _build/html on 127.0.0.1 (a random free port) as a reader's web host would."""
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
