"""Issue 20 for chapter 6's package: a student reads each file in one sitting (≤ 400 lines, never
> 500; functions ≤ 80 lines, measured with ``ast``), every public name is importable from
``vidya_lab.autoscaling``, and the lower floors never import the higher ones."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vidya_lab.autoscaling as a

PACKAGE = Path(a.__file__).parent
FILES = sorted(PACKAGE.glob("*.py"))
#: The reading order of the chapter's "Read the code" (the package docstring's table).
READING_ORDER = ("cold_start", "replica", "policies", "autoscaler", "replicas", "waiting",
                 "simulate", "fluid", "fidelity", "metrics", "run_day", "routing", "regions")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_file_is_read_in_one_sitting(path):
    lines = path.read_text().count("\n")
    assert lines <= 400, f"{path.name} has {lines} lines"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            assert n <= 80, f"{path.name}:{node.name} has {n} lines"


def test_the_reading_order_names_every_idea_and_the_docstring_lists_it():
    names = {p.stem for p in FILES} - {"__init__"}
    assert set(READING_ORDER) <= names
    doc = a.__doc__
    positions = [doc.index(f"``{name}``") for name in READING_ORDER]
    assert positions == sorted(positions)


def test_every_public_name_is_importable_from_the_package():
    for name in a.__all__:
        assert hasattr(a, name), name
    # the names the chapter, the widget, the exercises, the planner and the CLI use
    for name in ("ColdStart", "COLD_START_SOURCES", "mitigated", "pool_start_s", "replica_model",
                 "smallest_tp", "day_profile", "day_workload", "simulate_day", "simulate_fleet",
                 "simulate_fluid", "make_policy", "erlang_replicas", "replicas_for_rate",
                 "compare_fidelities", "TARGET_UTILISATION", "DAYS", "POLICIES", "ROUTERS",
                 "SECONDS_PER_HOUR", "Fleet", "FluidRun", "Predictive", "tutor_slo"):
        assert name in a.__all__, name


def imports_of(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                "vidya_lab.autoscaling."):
            out.add(node.module.rsplit(".", 1)[1])
    return out


def test_lower_floors_never_import_higher_ones():
    floors = ["day", "cold_start", "replica", "policies", "autoscaler", "fleet", "replicas",
              "waiting", "run_state", "simulate", "fluid", "fidelity", "metrics", "run_day",
              "routing", "regions"]
    for path in FILES:
        if path.stem == "__init__":
            continue
        mine = floors.index(path.stem)
        for other in imports_of(path):
            assert floors.index(other) < mine, f"{path.stem} imports {other}"
