"""Speed of the capstone planner: ``vidya_lab.plan.plan()`` on Tanvi's scenario.

Run: ``.venv/bin/python benchmarks/bench_plan.py [--record]``. Prints the wall time of the whole
default plan in a fresh process (the candidate space with its per-school replays, the search's
simulated days and loss windows, the confirmation, the iteration-level window and the risks: issue
25), then of the layout search over every candidate GPU type (the calculator). Goal (issues 10 and
25): the whole plan within a minute on this machine. ``--record`` writes
benchmarks/results/bench_plan.json.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from vidya_lab import plan


def main() -> dict:
    t = time.perf_counter()
    result = plan.plan()  # first: nothing cached yet, as `vidya-lab plan` runs it
    whole = time.perf_counter() - t
    t = time.perf_counter()
    plan.candidates()
    search = time.perf_counter() - t
    figures = {
        "whole default plan, risks included (s)": whole,
        "simulated days and loss windows the search ran (count)": float(len(result["confirmed"])),
        "layout search, every GPU type x precision (s)": search,
    }
    for name, value in figures.items():
        print(f"{name:<60}{value:8.2f}")
    return figures


if __name__ == "__main__":
    figures = main()
    if "--record" in sys.argv[1:]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _record import record_figures

        print("recorded", record_figures("bench_plan", figures, [("whole default plan", "<", 60.0, "s")]))
