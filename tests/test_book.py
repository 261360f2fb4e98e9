"""The strict book build: every page executes and Sphinx reports zero warnings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.book


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


def test_toc_lists_the_six_chapters_in_order():
    chapters = [f for f in toc_files() if f.startswith("chapters/")]
    assert [Path(f).name[:2] for f in chapters] == ["01", "02", "03", "04", "05", "06"]
    for f in toc_files():
        assert (ROOT / f"{f}.md").exists(), f


def test_no_page_is_a_placeholder():
    for f in toc_files():
        text = (ROOT / f"{f}.md").read_text().lower()
        assert "coming soon" not in text, f"{f} is still a placeholder"


def test_chapters_are_jupytext_notebooks():
    for f in toc_files():
        if f.startswith("chapters/"):
            head = (ROOT / f"{f}.md").read_text().split("---")[1]
            meta = yaml.safe_load(head)
            assert meta["jupytext"]["text_representation"]["format_name"] == "myst", f
            assert meta["kernelspec"]["name"] == "python3", f


def sphinx_warnings(log: str) -> list[str]:
    # The kernel's own stderr banner ("[IPKernelApp] WARNING | Kernel is running over TCP ...") is not
    # a Sphinx warning; everything else that says WARNING or ERROR is.
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in log.splitlines()]
    return [line for line in lines
            if re.search(r"\b(WARNING|ERROR|CRITICAL)\b", line) and "[IPKernelApp]" not in line]


def test_strict_build_passes_with_zero_warnings(built_book):
    # built_book (conftest.py) fails on a non-zero exit, which -W makes of any warning; this test
    # also reads the log, so a warning that Sphinx did not count is still caught.
    log = (ROOT / "_build" / "test-build.log").read_text()
    assert sphinx_warnings(log) == []
    assert (built_book / "index.html").exists()


def test_every_page_executed_without_error(built_book):
    reports = built_book / "reports"
    failed = sorted(p.name for p in reports.glob("**/*.err.log")) if reports.exists() else []
    assert failed == []
    for f in toc_files():
        page = built_book / f"{f}.html"
        assert page.exists(), f
        assert "Traceback (most recent call last)" not in page.read_text(errors="replace"), f
