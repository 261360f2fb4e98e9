"""Issue 20: the package reads in sittings. No file of vidya_lab/ over 500 lines, no function over 80.

Measured with ``ast`` (a function's length is from its ``def`` to its last line, decorators
excluded; nested functions count on their own and inside their parent).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "vidya_lab"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
FILES = sorted(PACKAGE.rglob("*.py"))


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_file_and_function_sizes(path):
    source = path.read_text()
    lines = len(source.splitlines())
    assert lines <= MAX_FILE_LINES, f"{path.name}: {lines} lines (limit {MAX_FILE_LINES})"
    long = [(f.name, f.end_lineno - f.lineno + 1) for f in _functions(ast.parse(source))
            if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_measure_can_fail(tmp_path):
    """The measure itself: a generated 90-line function is caught."""
    body = "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(89))
    tree = ast.parse(body)
    assert [f.end_lineno - f.lineno + 1 for f in _functions(tree)] == [90]
