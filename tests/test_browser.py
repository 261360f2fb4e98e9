"""The published book in a real browser (Debian's Chromium driven by playwright).

The strict build (`built_book`) is served on 127.0.0.1 and every page of _toc.yml is opened once,
with every request to another host blocked: the book must work offline. Each page's visit is
recorded once (console messages, uncaught errors, failed and blocked requests, images, math, widgets,
a full-page screenshot under artifacts/screenshots/) and the tests below judge that record.

Enable: see conftest.ENABLE_BROWSER_HELP (Chromium + playwright); with CI=true they never skip.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
from conftest import ROOT, chapter_documents, toc_documents

pytestmark = [pytest.mark.browser, pytest.mark.book]

PAGES = toc_documents() + ["genindex", "search"]
CHAPTERS = chapter_documents()
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
PAGE_TIMEOUT_MS = 60_000
# Interactive controls a rendered ipywidget shows (noUi-target: the slider of ipywidgets 8).
CONTROL_SELECTOR = "input, select, button, textarea, .noUi-target"
# The output a widget shows: a figure, a table or text in an Output/HTML widget.
OUTPUT_SELECTOR = "img, svg, canvas, table, .widget-output, .widget-html-content"
FILENAME_ALT = re.compile(r"(^|/)[^ ]+\.(png|jpe?g|svg|gif|webp)$", re.IGNORECASE)

_VISIT_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const views = document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]').length;
  // the HTML manager renders on window load; wait (bounded) for one subarea per view
  for (let i = 0; i < 600 && document.querySelectorAll('.widget-subarea').length < views; i++) {
    await new Promise(r => setTimeout(r, 100));
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;  // widget labels typeset after the widgets render
  }
  const inWidget = el => !!el.closest('.widget-subarea, .jupyter-widgets');
  const main = document.querySelector('article.bd-article, main article, main') || document.body;
  // the theme's own chrome (launch-button logos, navigation) is not the page's content
  const chrome = '.bd-header-article, header, nav, footer, .bd-sidebar-primary';
  const images = Array.from(main.querySelectorAll('img'))
                      .filter(img => !img.closest(chrome)).map(img => ({
    src: (img.getAttribute('src') || '').slice(0, 120),
    alt: img.getAttribute('alt'),
    loaded: img.complete && img.naturalWidth > 0,
    inWidget: inWidget(img),
  }));
  const maths = Array.from(main.querySelectorAll('.math'));
  const subareas = Array.from(document.querySelectorAll('.widget-subarea')).map(el => {
    const box = el.getBoundingClientRect();
    return {
      controls: el.querySelectorAll(__CONTROLS__).length,
      outputs: Array.from(el.querySelectorAll(__OUTPUTS__)).filter(
        o => o.tagName !== 'DIV' || o.textContent.trim() || o.querySelector('img,svg,canvas,table')
      ).length,
      height: box.height,
    };
  });
  // tables as a reader sees them: wider than the content column, unless they scroll in a box
  // the content column: the article's content box (querySelector of a selector list returns the
  // first element in document order, which is <main>, wider than the column)
  const article = document.querySelector('article.bd-article') || main;
  const column = {right: article.getBoundingClientRect().right
                         - parseFloat(getComputedStyle(article).paddingRight)};
  const scrollsInside = el => {
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if ((ox === 'auto' || ox === 'scroll') && a.getBoundingClientRect().right <= column.right + 1) {
        return true;
      }
    }
    return false;
  };
  const tables = Array.from(article.querySelectorAll('table')).filter(t => t.offsetParent !== null)
                      .map(t => {
    const box = t.getBoundingClientRect();
    const firsts = Array.from(t.querySelectorAll('tbody tr')).map(
      tr => (tr.querySelector('th') || {}).textContent);
    return {
      head: (t.querySelector('caption, thead') || t).textContent.trim().replace(/\s+/g, ' ')
              .slice(0, 80),
      right: box.right, columnRight: column.right, scrolls: scrollsInside(t),
      // a pandas index left showing: row headers 0, 1, 2, …
      rowIndex: firsts.length > 1 && firsts.every((x, i) => x !== undefined && x.trim() === String(i)),
      // floats printed at pandas' full precision where an integer was meant (4.000000)
      padded: Array.from(t.querySelectorAll('td')).map(td => td.textContent.trim())
                   .filter(x => /^-?\d+\.0{6}$/.test(x)).slice(0, 3),
    };
  });
  return {
    tables: tables,
    title: document.title,
    views: views,
    subareas: subareas,
    images: images,
    mathNodes: maths.length,
    mathRendered: maths.filter(m => m.querySelector('mjx-container')).length,
    rawMath: maths.filter(m => !m.querySelector('mjx-container'))
                  .map(m => m.textContent.slice(0, 80)),
    scriptSrcs: Array.from(document.querySelectorAll('script[src]'))
                    .map(s => s.getAttribute('src').split('?')[0]),
  };
}
""".replace("__CONTROLS__", repr(CONTROL_SELECTOR)).replace("__OUTPUTS__", repr(OUTPUT_SELECTOR))

_visits: dict[str, dict] = {}


def _is_local(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in {"data", "blob", "about"} or parsed.hostname == "127.0.0.1"


def visit(browser, book_url: str, doc: str) -> dict:
    """Open one page once per session and record what a reader's browser saw."""
    if doc in _visits:
        return _visits[doc]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    record = {"console_errors": [], "page_errors": [], "failed": [], "blocked": []}

    def route(r):
        if _is_local(r.request.url):
            r.continue_()
        else:
            record["blocked"].append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()

    def on_console(msg):
        if msg.type == "error":
            location = (msg.location or {}).get("url", "")
            # the browser's own favicon probe: not something the book asks for
            if location.endswith("/favicon.ico"):
                return
            record["console_errors"].append(f"{msg.text} ({location})")

    def on_response(response):
        if response.status >= 400 and not response.url.endswith("/favicon.ico"):
            record["failed"].append(f"{response.status} {response.url}")

    page.on("console", on_console)
    page.on("pageerror", lambda err: record["page_errors"].append(str(err)))
    page.on("response", on_response)
    page.on("requestfailed",
            lambda req: _is_local(req.url) and record["failed"].append(f"failed {req.url}"))
    try:
        page.goto(f"{book_url}/{doc}.html", wait_until="load", timeout=PAGE_TIMEOUT_MS)
        record.update(page.evaluate(_VISIT_JS))
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / f"{doc.replace('/', '__')}.png"
        page.screenshot(path=str(shot), full_page=True, timeout=PAGE_TIMEOUT_MS)
        record["screenshot"] = shot
    finally:
        context.close()
    _visits[doc] = record
    return record


@pytest.fixture(scope="module")
def see(playwright_browser, book_url):
    return lambda doc: visit(playwright_browser, book_url, doc)


@pytest.mark.parametrize("doc", PAGES)
def test_page_loads_without_console_errors(see, doc):
    rec = see(doc)
    problems = ([f"uncaught: {e}" for e in rec["page_errors"]]
                + [f"console: {e}" for e in rec["console_errors"]]
                + [f"HTTP: {e}" for e in rec["failed"]])
    assert not problems, f"{doc}.html:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", PAGES)
def test_page_needs_no_other_host(see, doc):
    """Offline: MathJax, require.js and the widget manager come from the book itself."""
    rec = see(doc)
    assert not rec["blocked"], f"{doc}.html asked other hosts for: {rec['blocked']}"


@pytest.mark.parametrize("doc", PAGES)
def test_page_loads_each_script_once(see, doc):
    """A script loaded twice (e.g. JS copied under a root _static/) renders every widget twice."""
    srcs = see(doc)["scriptSrcs"]
    twice = sorted({s for s in srcs if srcs.count(s) > 1})
    assert not twice, f"{doc}.html loads these more than once: {twice}"


@pytest.mark.parametrize("doc", PAGES)
def test_figures_load_and_have_alt_text(see, doc):
    """Every image of the text is loaded and described by alt text, not by its file name.

    Images inside a widget's static snapshot are the widget's output (checked below); rendermime
    gives them no alt attribute, so they are not judged here.
    """
    bad = []
    for img in see(doc)["images"]:
        if img["inWidget"]:
            continue
        if not img["loaded"]:
            bad.append(f"not loaded: {img['src']}")
        alt = (img["alt"] or "").strip()
        if not alt or FILENAME_ALT.search(alt):
            bad.append(f"no alt text (alt={img['alt']!r}): {img['src']}")
    assert not bad, (f"{doc}.html:\n" + "\n".join(bad)
                     + "\nGive code-cell figures alt text with cell metadata "
                       "`mystnb: {image: {alt: ...}}` or use a {figure}/{glue:figure} with :alt:")


@pytest.mark.parametrize("doc", PAGES)
def test_math_is_rendered(see, doc):
    rec = see(doc)
    assert rec["mathRendered"] == rec["mathNodes"], (
        f"{doc}.html: {rec['mathNodes'] - rec['mathRendered']} of {rec['mathNodes']} formulas "
        f"left as raw TeX, e.g. {rec['rawMath'][:3]}")


def test_the_book_renders_math_somewhere(see):
    """MathJax is exercised at all: at least one page has typeset formulas."""
    rendered = {doc: see(doc)["mathRendered"] for doc in PAGES}
    assert any(rendered.values()), f"no page has typeset math: {rendered}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_has_a_figure(see, chapter):
    figures = [img for img in see(chapter)["images"] if not img["inWidget"]]
    assert figures, f"{chapter}.html shows no figure outside its widget"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_widget_is_rendered(see, chapter):
    """The chapter's widget appears once per view, with its controls and its output."""
    rec = see(chapter)
    assert rec["views"] >= 1, (f"{chapter}.html embeds no widget view: the chapter must display its "
                               "widget (vidya_lab.widgets) in an executed cell")
    subareas = rec["subareas"]
    assert len(subareas) == rec["views"], (
        f"{chapter}.html: {rec['views']} widget views but {len(subareas)} rendered areas")
    assert any(s["controls"] > 0 for s in subareas), f"{chapter}.html: widget has no controls"
    assert any(s["outputs"] > 0 for s in subareas), f"{chapter}.html: widget shows no output"
    assert all(s["height"] > 20 for s in subareas), f"{chapter}.html: a widget area is empty"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_screenshot_saved(see, chapter):
    shot: Path = see(chapter)["screenshot"]
    assert shot.exists() and shot.stat().st_size > 10_000, f"no usable screenshot at {shot}"


@pytest.mark.parametrize("doc", PAGES)
def test_tables_fit_the_column_at_1280px(see, doc):
    """Issue 17: no table is wider than the content column at 1280 px (a narrower screen scrolls a
    wide table inside its own box; at 1280 px none needs to)."""
    wide = [t for t in see(doc)["tables"] if t["right"] > t["columnRight"] + 1]
    assert not wide, "\n".join(
        f"{t['head']!r}: right edge {t['right']:.0f} px > column {t['columnRight']:.0f} px"
        + (" (scrolls in its box)" if t["scrolls"] else " (cut off)") for t in wide)


@pytest.mark.parametrize("doc", PAGES)
def test_tables_show_no_pandas_index_or_padded_floats(see, doc):
    tables = see(doc)["tables"]
    assert not [t["head"] for t in tables if t["rowIndex"]], "a pandas row index is shown"
    assert not [(t["head"], t["padded"]) for t in tables if t["padded"]], \
        "a whole number is printed as a float with six zeros"
