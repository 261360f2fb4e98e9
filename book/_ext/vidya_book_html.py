"""Small fixes to the book's HTML, found by the real-browser tests (tests/test_browser.py).

1. Sphinx 7.4 re-adds scripts that extensions register after the builder starts, so every page got
   sphinx-thebe's inline `const THEBE_JS_URL = ...` twice: a SyntaxError in every reader's console.
   (once registered with no file name, None, once re-added as "").
   We drop exact duplicates from each page's script list (same file or same inline body, same
   attributes), keeping the first.
2. It puts `static/` on the static path: `vidya/widget-manager-setup.js` runs before require.js and
   the ipywidgets HTML manager on pages that show widgets (see `nb_ipywidgets_js` in _config.yml).
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"


def _script_key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    return (str(getattr(script, "filename", script) or ""),
            tuple(sorted((k, str(v)) for k, v in attributes.items() if k != "priority")))


def drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def add_static_path(app, config) -> None:
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("config-inited", add_static_path)
    # after every other handler, so the list is final
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
