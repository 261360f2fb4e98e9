# Two commands do all the set-up: `make book` (build the book) and `make test` (the whole suite).
# Both create .venv/ from nothing with the Python 3.11 on PATH.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
BOOK_FLAGS := -W -n --keep-going

.PHONY: book test lab lint spell linkcheck bench clean page assets lite-assets fuzz
.DEFAULT_GOAL := book

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# One stamp per requirements file: re-installs only when a pin changes.
$(VENV)/.book-deps: requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.test-deps: requirements-dev.txt $(VENV)/.book-deps
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	touch $@

# The book's own copies of MathJax, require.js and the ipywidgets HTML manager (pinned npm tarballs,
# integrity-checked; see tools/fetch_js_assets.py): the built HTML needs no CDN.
JS_ASSETS := _book_js/.stamp.json
$(JS_ASSETS): tools/fetch_js_assets.py
	$(PYTHON) tools/fetch_js_assets.py
	touch $@

assets: $(JS_ASSETS)

# What the book's JupyterLite site serves (tools/lite_build.py): the Pyodide runtime from npm and the
# wheels of lite/wheels.txt from PyPI, pinned and checked, cached in _lite_cache/. The Sphinx build
# (book/_ext/vidya_lite.py) assembles _build/lite/ from them and jupyterlite-sphinx builds
# _build/html/lite/.
lite-assets: $(VENV)/.book-deps
	$(BIN)/python tools/lite_build.py --fetch

book: $(VENV)/.book-deps $(JS_ASSETS) lite-assets
	$(BIN)/python tools/stale_cache.py
	VIDYA_LAB_CACHE=$(CURDIR)/_build/.vidya_cache $(BIN)/jupyter-book build . $(BOOK_FLAGS)
	@echo "The book: $(CURDIR)/_build/html/index.html"

# The suite runs on every core (pytest-xdist; at most 4 workers): each test file on one worker, the
# files that read the book build together (tests/conftest.py), so the book is built once. pytest
# prints its 30 slowest tests at the end (benchmarks/bench_build.py records them).
PYTEST_WORKERS ?= -n auto --maxprocesses=4 --dist loadgroup
test: $(VENV)/.test-deps $(JS_ASSETS) lite-assets
	$(BIN)/python tools/stale_cache.py
	$(BIN)/ruff check vidya_lab tests benchmarks tools
	$(BIN)/pytest $(PYTEST_WORKERS) --durations=30

# Every public callable and sub-command under adversarial input (tests/test_boundaries_fuzz.py),
# the long profile: random examples, many more of them (`make test` runs a small fixed set).
fuzz: $(VENV)/.test-deps
	VIDYA_FUZZ=long $(BIN)/pytest tests/test_boundaries_fuzz.py -q --durations=15

lab: $(VENV)/.book-deps
	$(BIN)/jupyter lab --notebook-dir=chapters

lint: $(VENV)/.test-deps
	$(BIN)/ruff check vidya_lab tests benchmarks tools

clean:
	rm -rf _build .jupyterlite.doit.db

# Spelling of the prose and code (codespell; project words in .codespell-words.txt, see .codespellrc).
spell: $(VENV)/.test-deps
	$(BIN)/codespell

# External links of the built book (needs internet, so not part of `make test`).
linkcheck: $(VENV)/.book-deps $(JS_ASSETS)
	$(BIN)/jupyter-book build . --builder linkcheck

# Speed figures (slow: builds the book from scratch and runs `make test`); results go to
# benchmarks/results/*.json and the book's speed page.
bench: $(VENV)/.test-deps $(JS_ASSETS)
	$(BIN)/python benchmarks/bench_widgets.py --record
	$(BIN)/python benchmarks/bench_build.py --record

# Build one page strictly, alone (as the root, with the references page for citations),
# into _build/page/<name> (for working on a chapter):
#   make page PAGE=chapters/01_is_it_working
page: $(VENV)/.book-deps $(JS_ASSETS)
	@test -n "$(PAGE)" || { echo "usage: make page PAGE=chapters/01_is_it_working"; exit 2; }
	@mkdir -p _build/page
	@printf 'format: jb-book\nroot: %s\nchapters:\n  - file: book/references\n' "$(PAGE)" > _build/page/$(notdir $(PAGE)).toc.yml
	$(BIN)/python tools/stale_cache.py
	VIDYA_LAB_CACHE=$(CURDIR)/_build/.vidya_cache $(BIN)/jupyter-book build . --toc _build/page/$(notdir $(PAGE)).toc.yml --path-output _build/page/$(notdir $(PAGE)) $(BOOK_FLAGS)
