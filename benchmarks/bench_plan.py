"""Speed of the capstone planner: ``vidya_lab.plan.plan()`` on Tanvi's scenario.

Run: ``.venv/bin/python benchmarks/bench_plan.py [--record]``. Prints the wall time of the layout
search over every candidate GPU type (the calculator), of one simulated exam day of the chosen fleet
(the confirmation) and of the whole default plan (search, confirmation and both risk simulations).
Goal (issue 10): the whole plan within a minute on this machine. ``--record`` writes
benchmarks/results/bench_plan.json.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from vidya_lab import plan


def main() -> dict:
    t = time.perf_counter()
    plan.candidates()
    search = time.perf_counter() - t
    t = time.perf_counter()
    result = plan.plan(risks=False)
    confirm = time.perf_counter() - t
    t = time.perf_counter()
    plan.plan()
    whole = time.perf_counter() - t
    figures = {
        "layout search, every GPU type x precision (s)": search,
        f"plan without risks ({len(result['confirmed'])} simulated day(s)) (s)": confirm,
        "whole default plan, risks included (s)": whole,
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
