"""The book's own JavaScript (tools/fetch_js_assets.py, `make assets`) and how _config.yml uses it.

No browser needed: the pins refuse a tampered tarball, and every script the configuration names
exists in a folder the build copies, outside a root _static/ (JB1 would add it to every page).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import tarfile

import pytest
import yaml
from conftest import ROOT

spec = importlib.util.spec_from_file_location("fetch_js_assets", ROOT / "tools" / "fetch_js_assets.py")
fetch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fetch)

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]


def _sri(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def test_a_tarball_that_does_not_match_its_pin_is_refused():
    data = b"not the tarball that was pinned"
    fetch._check_integrity(data, _sri(data), "demo")  # the right digest passes
    with pytest.raises(SystemExit, match="integrity mismatch"):
        fetch._check_integrity(data + b"!", _sri(data), "demo")


def test_unpack_keeps_only_the_listed_files_and_strips_the_prefix(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, body in [("package/dist/embed-amd.js", b"js"), ("package/dist/a.woff2", b"f"),
                           ("package/dist/embed.js.map", b"map"), ("package/src/x.ts", b"ts")]:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    package = {"folder": "hm", "keep": ["dist/embed-amd.js", "dist/*.woff2"], "strip": "dist/"}
    assert fetch._unpack(buffer.getvalue(), package, tmp_path) == 2
    assert sorted(p.name for p in (tmp_path / "hm").iterdir()) == ["a.woff2", "embed-amd.js"]


def test_every_pin_is_a_sha512_integrity():
    for package in fetch.PACKAGES:
        assert package["integrity"].startswith("sha512-"), package["name"]
        assert len(base64.b64decode(package["integrity"][7:])) == 64, package["name"]


def _static_folders() -> list:
    folders = [ROOT / p for p in CONFIG["html_static_path"]]
    return folders + [ROOT / "book" / "_ext" / "static"]  # added by book/_ext/vidya_book_html.py


def test_the_configured_scripts_exist_in_a_static_folder():
    if not fetch.is_current():
        pytest.fail("_book_js/ is missing or stale: run `make assets`")
    wanted = [CONFIG["mathjax_path"], *CONFIG["nb_ipywidgets_js"]]
    for script in wanted:
        assert "://" not in script, f"{script} would load from another host"
        assert any((folder / script).is_file() for folder in _static_folders()), (
            f"{script} is in no static folder: {[str(f) for f in _static_folders()]}")


def test_there_is_no_root_static_folder():
    """When a root _static/ exists, JB1 adds every .js of *every* html_static_path folder to every
    page: all of MathJax's 80 files and the widget manager (widgets would render twice)."""
    assert "_static" not in CONFIG["html_static_path"]
    assert not (ROOT / "_static").exists(), (
        "a root _static/ makes JB1 load every .js under _book_js/ on every page; put CSS/JS in "
        "book/_ext/static/ (html_static_path, not scanned) and register it explicitly")
