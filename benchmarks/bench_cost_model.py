"""Speed of the cost model: the simulator calls it once per engine step, the book many times.

Run: ``.venv/bin/python benchmarks/bench_cost_model.py [--record]``. Prints microseconds per call of the
iteration-time fast path (``Replica.step_time_s``), of the friendly form
(``sizing.iteration_time_s`` with a 64-sequence batch) and milliseconds per ``sizing.estimate`` call,
each the best of 5 repeats after import and warm-up. Goals (issue 4): a few µs per iteration, well
under 1 ms per estimate. ``--record`` writes benchmarks/results/bench_cost_model.json with the goals.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

from vidya_lab import sizing
from vidya_lab.sizing import Replica


def best_per_call(fn, number: int, repeat: int = 5) -> float:
    """Best-of-``repeat`` seconds per call of ``fn`` over ``number`` calls."""
    fn()  # warm-up: caches and cached properties
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> dict:
    dense = Replica("llama-3.1-70b", "h100-sxm", tp=4)
    moe = Replica("mixtral-8x7b", "h100-sxm", tp=2)
    chunks = [(512, 1024)]
    contexts = list(range(1000, 1064))
    results = {
        "step_time_s dense (us/call)": best_per_call(
            lambda: dense.step_time_s(512, 786_688, 1536, 1, 64, 65_000), 200_000) * 1e6,
        "step_time_s moe (us/call)": best_per_call(
            lambda: moe.step_time_s(512, 786_688, 1536, 1, 64, 65_000), 200_000) * 1e6,
        "iteration_time_s, 1 chunk + 64 decodes (us/call)": best_per_call(
            lambda: sizing.iteration_time_s(dense, chunks, contexts), 20_000) * 1e6,
        "estimate 70B tp4 (ms/call)": best_per_call(
            lambda: sizing.estimate("llama-3.1-70b", "h100-sxm", gpus=8, tp=4, isl=3000, osl=300,
                                    batch=16), 500) * 1e3,
        "Replica construction + first step (us/call)": best_per_call(
            lambda: Replica("llama-3.1-8b", "h100-sxm").step_time_s(100, 5050, 100, 1, 0, 0),
            5_000) * 1e6,
    }
    for name, value in results.items():
        print(f"{name:<52}{value:10.2f}")
    return results


#: Goals of issue 4: (figure prefix, op, limit, unit).
GOALS = (("step_time_s", "<", 5.0, "us/call"), ("iteration_time_s", "<", 20.0, "us/call"),
         ("estimate", "<", 1.0, "ms/call"))


if __name__ == "__main__":
    figures = main()
    if "--record" in sys.argv[1:]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _record import record_figures

        print("recorded", record_figures("bench_cost_model", figures, GOALS))
