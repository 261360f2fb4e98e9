"""The book's JupyterLite site: its inputs at the start of each HTML build, and the launch button.

1. At `builder-inited` (HTML builds only) `tools/lite_build.assemble()` writes `_build/lite/`: the
   Pyodide runtime, the served wheels (vidya_lab built from this tree, simpy, ipywidgets, the
   kernel's own) with their lock file, and every notebook page of the book as an .ipynb. At
   `build-finished`, jupyterlite-sphinx runs `jupyter lite build` with lite/jupyter_lite_config.json
   (which points at those folders) into `_build/html/lite/`.
2. The theme's JupyterLite launch button (`launch_buttons.jupyterlite_url` in _config.yml) links to
   `<that URL>?path=<page>.ipynb` verbatim, so a relative URL would only work from the book's root.
   We make it relative to each page, so the book works from any folder of any host (a fork's
   GitHub Pages site lives under /<repository>/).
3. jupyterlite-sphinx adds to every page a Google Fonts stylesheet (Vibur) and its own CSS and JS,
   all for its directives (embedded iframes, "try examples"), which the book does not use. We drop
   them: a page must ask no other host for anything (tests/test_browser.py).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from sphinx.util import logging

ROOT = Path(__file__).resolve().parents[2]
LITE_APP = "lite/lab/index.html"  # what launch_buttons.jupyterlite_url must say
logger = logging.getLogger(__name__)


def _lite_build():
    spec = importlib.util.spec_from_file_location("lite_build", ROOT / "tools" / "lite_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assemble_lite(app) -> None:
    if app.builder.format != "html":
        return
    started = time.perf_counter()
    lite = _lite_build()
    lock = lite.assemble(_toc_notebooks(app))
    served = sum("://" not in p["file_name"] for p in lock["packages"].values())
    logger.info(f"[vidya_lite] _build/lite: Pyodide {lite.PYODIDE_VERSION}, {served} wheels served "
                f"by the book ({time.perf_counter() - started:.1f} s)")


def _toc_notebooks(app) -> list[Path]:
    """Notebook pages named in _toc.yml (found_docs is not known yet at builder-inited)."""
    import yaml

    toc = yaml.safe_load((Path(app.srcdir) / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", [])
                             for c in part.get("chapters", [])]
    pages = []
    for name in files:
        path = Path(app.srcdir) / f"{name}.md"
        if path.exists() and "\nkernelspec:" in path.read_text().split("\n---", 1)[0]:
            pages.append(path)
    return pages


def relative_launch_button(app, pagename, templatename, context, doctree) -> None:
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []) if isinstance(group, dict) else []:
            url = button.get("url", "")
            if button.get("text") == "JupyterLite" and url.startswith(LITE_APP + "?"):
                query = url[len(LITE_APP):]
                button["url"] = context["pathto"](LITE_APP, 1) + query


UNUSED_ASSETS = ("https://fonts.googleapis.com/css?family=Vibur", "jupyterlite_sphinx.css",
                 "jupyterlite_sphinx.js")


def drop_unused_assets(app, pagename, templatename, context, doctree) -> None:
    for key in ("css_files", "script_files"):
        if key in context:
            context[key] = [a for a in context[key]
                            if str(getattr(a, "filename", a) or "") not in UNUSED_ASSETS]


def setup(app):
    app.connect("builder-inited", assemble_lite)
    # after the theme's add_launch_buttons (priority 501) has built the button
    app.connect("html-page-context", relative_launch_button, priority=600)
    app.connect("html-page-context", drop_unused_assets, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
