"""Recorded speed figures: one JSON file per benchmark under benchmarks/results/.

The book's speed page (book/speed.md) reads every file here and shows the figures with when, where
and at which commit they were measured. A benchmark records with :func:`record`; a benchmark whose
``main()`` returns ``{"figure name (unit)": value}`` can be run and recorded without changes:

    .venv/bin/python benchmarks/_record.py bench_cost_model   # runs its main(), records the dict
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return out + ("+uncommitted" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> dict:
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(terse=True), "load_average_1min": load1}


def record(benchmark: str, command: str, rows: list[dict]) -> Path:
    """Write benchmarks/results/<benchmark>.json.

    rows: dicts with ``figure`` (what was measured), ``value`` (a number), ``unit`` and optionally
    ``goal`` (text, e.g. "< 100 ms") and ``met`` (bool).
    """
    for row in rows:
        if not isinstance(row.get("value"), (int, float)):
            raise TypeError(f"row {row.get('figure')!r}: value must be a number, got {row.get('value')!r}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {
        "benchmark": benchmark,
        "command": command,
        "measured_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "machine": machine(),
        "rows": rows,
    }
    path = RESULTS / f"{benchmark}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


_UNIT = re.compile(r"^(?P<figure>.*?)\s*\((?P<unit>[^()]*)\)\s*$")


def rows_from_mapping(results: dict) -> list[dict]:
    """{"estimate 70B tp4 (ms/call)": 0.06} -> [{"figure": "estimate 70B tp4", "unit": "ms/call", ...}]."""
    rows = []
    for name, value in results.items():
        match = _UNIT.match(name)
        figure, unit = (match["figure"], match["unit"]) if match else (name, "")
        rows.append({"figure": figure, "value": float(f"{float(value):.3g}"), "unit": unit})
    return rows


def record_figures(benchmark: str, figures: dict, goals=()) -> Path:
    """Record a benchmark's ``main()`` figures with their goals; the one way every script records.

    goals: ``(figure prefix, op, limit, unit)`` with op ``"<"`` or ``">="``: each row whose figure
    starts with the prefix and has that unit gets ``goal`` ("< 5 us/call") and ``met``.
    """
    rows = rows_from_mapping(figures)
    for row in rows:
        for prefix, op, limit, unit in goals:
            if row["figure"].startswith(prefix) and row["unit"] == unit:
                row["goal"] = f"{op} {limit:g} {unit}"
                row["met"] = bool(row["value"] < limit if op == "<" else row["value"] >= limit)
    return record(benchmark, f"python benchmarks/{benchmark}.py --record", rows)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python benchmarks/_record.py BENCH_MODULE   (e.g. bench_cost_model)",
              file=sys.stderr)
        return 2
    name = argv[0].removesuffix(".py").split("/")[-1]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    module = importlib.import_module(name)
    results = module.main()
    if not isinstance(results, dict) or not results:
        print(f"{name}.main() returned {type(results).__name__}, not a dict of figures",
              file=sys.stderr)
        return 2
    path = record(name, f"python benchmarks/{name}.py", rows_from_mapping(results))
    print(f"recorded {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
