# Two commands do all the set-up: `make book` (build the book) and `make test` (the whole suite).
# Both create .venv/ from nothing with the Python 3.11 on PATH.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
BOOK_FLAGS := -W -n --keep-going

.PHONY: book test lab lint spell linkcheck bench clean
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

book: $(VENV)/.book-deps
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)
	@echo "The book: $(CURDIR)/_build/html/index.html"

test: $(VENV)/.test-deps
	$(BIN)/ruff check vidya_lab tests benchmarks
	$(BIN)/pytest

lab: $(VENV)/.book-deps
	$(BIN)/jupyter lab --notebook-dir=chapters

lint: $(VENV)/.test-deps
	$(BIN)/ruff check vidya_lab tests benchmarks

clean:
	rm -rf _build
