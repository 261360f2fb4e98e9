"""The book's JupyterLite site: its inputs (tools/lite_build.py), the light widget, and the built site.

Unit tests run without a build: the lock file rewriting, a wheel's lock entry, the Lite notebooks,
the browser stand-ins of vidya_lab._browser and the light widget of chapter 3 against hand-derived
numbers. The `built_book` tests check what `make book` leaves in _build/html/lite: the Pyodide
runtime and every served wheel present with the sha256 the lock file states, no source maps, every
notebook page reachable from its launch button, and the site's size (goal: the book grows < 60 MB).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

from vidya_lab import _browser, catalog
from vidya_lab import parallelism as par
from vidya_lab.widgets import lite_ch03

SIZE_GOAL_BYTES = 60e6  # the book may grow by less than 60 MB (1e6 bytes each)


def _lite_build():
    spec = importlib.util.spec_from_file_location("lite_build", ROOT / "tools" / "lite_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lite = _lite_build()


def _wheel(tmp_path: Path, name: str, version: str, requires: list[str], top: str) -> Path:
    path = tmp_path / f"{name}-{version}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{top}/__init__.py", "")
        zf.writestr(f"{name}-{version}.dist-info/METADATA", meta)
    return path


PYODIDE_LOCK = {
    "info": {"python": "3.14.2"},
    "packages": {
        "numpy": {"name": "numpy", "version": "2.4.6", "file_name": "numpy-2.4.6-cp314.whl",
                  "sha256": "aa", "depends": [], "imports": ["numpy"], "package_type": "package"},
        "traitlets": {"name": "traitlets", "version": "5.14.3", "sha256": "bb", "depends": [],
                      "file_name": "traitlets-5.14.3-py3-none-any.whl", "imports": ["traitlets"],
                      "package_type": "package"},
    },
}


def test_lock_serves_our_wheels_and_points_the_rest_at_the_cdn(tmp_path):
    ours = _wheel(tmp_path, "tiny_pkg", "1.0", ["numpy>=1", "traitlets", "pytest; extra == 'test'",
                                                 "widgetsnbextension~=4.0"], "tiny_pkg")
    theirs = _wheel(tmp_path, "traitlets", "5.14.3", [], "traitlets")
    lock = lite.build_lock(PYODIDE_LOCK, [ours, theirs])
    pk = lock["packages"]
    assert pk["numpy"]["file_name"] == lite.PYODIDE_CDN + "numpy-2.4.6-cp314.whl"
    assert pk["numpy"]["sha256"] == "aa"  # the CDN's file, the CDN's hash
    assert pk["traitlets"]["file_name"] == theirs.name  # served by the book ...
    assert pk["traitlets"]["sha256"] == hashlib.sha256(theirs.read_bytes()).hexdigest()
    assert pk["tiny-pkg"]["depends"] == ["numpy", "traitlets"]  # extras and front ends left out
    assert pk["tiny-pkg"]["imports"] == ["tiny_pkg"]
    assert PYODIDE_LOCK["packages"]["numpy"]["file_name"] == "numpy-2.4.6-cp314.whl"  # not mutated


def test_lock_refuses_a_version_pyodide_does_not_list(tmp_path):
    with pytest.raises(SystemExit, match="lists traitlets 5.14.3"):
        lite.build_lock(PYODIDE_LOCK, [_wheel(tmp_path, "traitlets", "5.0", [], "traitlets")])


def test_lock_refuses_a_dependency_nobody_serves(tmp_path):
    wheel = _wheel(tmp_path, "needy", "1.0", ["not-served-anywhere"], "needy")
    with pytest.raises(SystemExit, match="not-served-anywhere"):
        lite.build_lock(PYODIDE_LOCK, [wheel])


def test_pins_are_hash_checked_and_kernel_versions_match_pyodide():
    pins = lite._pinned_wheels()
    lines = [x for x in lite.WHEELS_TXT.read_text().splitlines() if x and not x.startswith("#")]
    assert len(lines) == len(pins) and all(re.search(r"--hash=sha256:[0-9a-f]{64}$", x) for x in lines)
    names = {n for n, _ in pins}
    assert {"micropip", "ipython", "jedi", "comm", "simpy", "ipywidgets"} <= names
    reqs = (ROOT / "requirements.txt").read_text()
    for name in ("simpy", "ipywidgets"):  # the browser computes with the versions Binder pins
        version = dict(pins)[name]
        assert f"{name}=={version}" in reqs, name


def test_lite_notebooks_start_with_the_browser_cell(tmp_path):
    chapter = ROOT / "chapters" / "03_does_not_fit.md"
    (written,) = lite.write_contents(tmp_path, [chapter])
    nb = json.loads(written.read_text())
    assert written.relative_to(tmp_path).as_posix() == "chapters/03_does_not_fit.ipynb"
    assert nb["metadata"]["kernelspec"]["name"] == "python"  # the Pyodide kernel's name
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "jupyterlite-setup" in code[0]["metadata"]["tags"]
    assert "_browser.setup_notebook()" in "".join(code[0]["source"])
    assert all(not c.get("outputs") for c in code)  # the reader runs them
    # a cell that fails (a CDN package out of reach) does not stop Run All: JupyterLab's own tag
    assert all("raises-exception" in c["metadata"]["tags"] for c in code)
    notes = [c for c in nb["cells"] if "jupyterlite-network" in c["metadata"].get("tags", [])]
    assert len(notes) == 1 and "cdn.jsdelivr.net" in "".join(notes[0]["source"])
    assert nb["cells"].index(notes[0]) < nb["cells"].index(code[0])  # said before anything runs


def test_browser_helpers_do_nothing_outside_the_browser(monkeypatch):
    assert _browser.IN_BROWSER is (sys.platform == "emscripten")
    assert _browser.lighter(600, 60) == (60 if _browser.IN_BROWSER else 600)
    assert _browser.setup_notebook() is _browser.IN_BROWSER
    monkeypatch.delitem(sys.modules, "myst_nb", raising=False)
    assert _browser.setup_notebook(force=True) is True
    assert sys.modules["myst_nb"].glue("x", 1, display=False) is None
    with pytest.raises(TypeError, match="name must be a str"):
        _browser.glue(3, 1)


def test_light_widget_numbers_come_from_the_parallelism_math():
    m = catalog.get_model("llama-3.3-70b")
    one = lite_ch03.compute_view("llama-3.3-70b", "h100-sxm", tp=1, pp=1, precision="bf16")
    # one GPU holds every parameter, two bytes each in bf16
    assert one["weights_bytes_per_gpu"] == pytest.approx(2 * m.total_params())
    assert not one["weights_fit"]  # 141 GB of weights on an 80 GB H100
    assert one["tp_comm_s_per_decode_step"] == 0.0 and one["pipeline_bubble"] == 0.0
    four = lite_ch03.compute_view("llama-3.3-70b", "h100-sxm", tp=4, pp=1, precision="bf16")
    assert four["weights_fit"] and four["weights_bytes_per_gpu"] < one["weights_bytes_per_gpu"] / 3.9
    assert four["kv_heads_per_gpu"] == m.n_kv_heads // 4
    pp4 = lite_ch03.compute_view("llama-3.3-70b", "h100-sxm", tp=1, pp=4, precision="fp8")
    assert pp4["pipeline_bubble"] == pytest.approx(3 / (lite_ch03.MICROBATCHES + 3))
    assert pp4["weights_bytes_per_gpu"] == pytest.approx(par.weight_params_per_gpu(m, 1, 4))


def test_light_widget_says_why_a_layout_is_impossible():
    import ipywidgets as w

    out = w.HTML()
    lite_ch03.update(out, "llama-3.3-70b", "h100-sxm", 3, 1, "bf16", 8)
    assert "tp must divide" in out.value
    with pytest.raises(ValueError, match="batch"):
        lite_ch03.compute_view(batch=0)


def test_light_widget_follows_its_controls():
    box = lite_ch03.build()
    out = box.children[-1]
    first = out.value
    tp = box.children[1]
    tp.value = 8
    assert out.value != first and "8 TP" in out.value


# ------------------------------------------------------------------------------ the built site
@pytest.mark.book
def test_site_is_inside_the_book_and_configured_for_the_local_runtime(built_book):
    site = built_book / "lite"
    assert (site / "lab" / "index.html").exists()
    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.mjs"
    for name in lite.RUNTIME_FILES:
        assert (site / "static" / "pyodide" / name).stat().st_size > 0, name
    extensions = {p.parent.relative_to(site / "extensions").as_posix()
                  for p in (site / "extensions").glob("**/package.json")}
    assert "@jupyter-widgets/jupyterlab-manager" in extensions
    assert "@jupyterlite/pyodide-kernel-extension" in extensions


@pytest.mark.book
def test_every_served_wheel_matches_its_lock_entry(built_book):
    folder = built_book / "lite" / "static" / "pyodide"
    lock = json.loads((folder / "pyodide-lock.json").read_text())
    local = {k: p for k, p in lock["packages"].items() if "://" not in p["file_name"]}
    assert {"vidya-lab", "simpy", "ipywidgets", "micropip", "ipython"} <= set(local)
    for key, entry in local.items():
        data = (folder / entry["file_name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], key
    assert all(p["file_name"].startswith(lite.PYODIDE_CDN)
               for k, p in lock["packages"].items() if k not in local)
    with zipfile.ZipFile(folder / local["vidya-lab"]["file_name"]) as zf:  # this tree's package
        assert "vidya_lab/widgets/lite_ch03.py" in zf.namelist()


@pytest.mark.book
def test_no_source_maps_and_the_size_goal(built_book):
    site = built_book / "lite"
    maps = [p for p in site.rglob("*.map")]
    assert not maps, f"source maps in the Lite site: {maps[:5]}"
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    assert size < SIZE_GOAL_BYTES, f"the Lite site is {size / 1e6:.1f} MB (goal < 60 MB)"


@pytest.mark.book
def test_every_notebook_page_launches_its_own_notebook(built_book):
    pages = [p for p in (ROOT / "chapters").glob("[0-9][0-9]_*.md")]
    for page in pages:
        html = (built_book / "chapters" / f"{page.stem}.html").read_text()
        match = re.search(r'href="([^"]*lite/lab/index\.html\?path=([^"]+))"', html)
        assert match, f"{page.stem}.html has no JupyterLite launch button"
        assert match.group(1).startswith("../lite/"), match.group(1)  # relative to the page
        assert (built_book / "lite" / "files" / match.group(2)).exists(), match.group(2)


def test_browser_test_tells_cdn_failures_from_other_failures():
    from test_lite_browser import _names, cdn_cause

    modules = {"numpy", "pandas"}
    assert cdn_cause({"ename": "<class 'ModuleNotFoundError'>", "evalue": "No module named 'numpy'"},
                     "import numpy as np", modules, set())
    assert cdn_cause({"ename": "ModuleNotFoundError", "evalue": "No module named 'simpy'"},
                     "import simpy", modules, set()) is None  # the book serves simpy: a real bug
    bound, read = _names("%matplotlib inline\nimport pandas as pd\nrows = {}\nfor r in x: pass")
    assert bound == {"pd", "rows", "r"} and "x" in read
    tainted = bound
    assert cdn_cause({"ename": "KeyError", "evalue": "0"}, "rows[0]", modules, tainted)
    assert cdn_cause({"ename": "NameError", "evalue": "name 'y' is not defined"}, "y + 1",
                     modules, tainted) is None
