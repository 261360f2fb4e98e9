"""Speed of the layout search: the capstone planner calls it once per GPU type (and precision).

Run: ``.venv/bin/python benchmarks/bench_layouts.py [--record]``. Prints milliseconds per
``layouts.search_layouts`` call for Tanvi's model and exam peak on each candidate GPU type (bf16 and
fp8; the default search space of up to 32 GPUs per replica), for the slowest case, and for one
``evaluate_layout``; each the best of 5 repeats after a warm-up. Goal (issue 5 / the capstone): well
under a second per GPU type; we aim for < 100 ms. ``--record`` writes
benchmarks/results/bench_layouts.json with the goals.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

from vidya_lab import layouts
from vidya_lab.scenario import TANVI

TARGET = dict(peak_rps=TANVI.exam_peak_rps, isl=TANVI.prompt_tokens_mean,
              osl=TANVI.answer_tokens_mean, ttft_target_s=TANVI.ttft_target_s,
              tpot_target_s=TANVI.tpot_target_s)


def best_per_call(fn, number: int, repeat: int = 5) -> float:
    """Best-of-``repeat`` seconds per call of ``fn`` over ``number`` calls."""
    fn()  # warm-up
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> dict:
    results = {}
    for gpu in TANVI.candidate_gpu_ids:
        for precision in ("bf16", "fp8"):
            t = best_per_call(lambda g=gpu, p=precision: layouts.search_layouts(
                TANVI.model_id, g, precision=p, **TARGET), 5)
            results[f"search_layouts {gpu} {precision} (ms/call)"] = t * 1e3
    results["search_layouts 405B bf16 h100-sxm (ms/call)"] = best_per_call(
        lambda: layouts.search_layouts("llama-3.1-405b", "h100-sxm", **TARGET), 5) * 1e3
    results["slowest search_layouts (ms/call)"] = max(results.values())
    results["all 6 GPU types x 2 precisions (ms)"] = sum(
        v for k, v in results.items() if k.startswith("search_layouts") and "405B" not in k)
    results["evaluate_layout 70B tp4 (ms/call)"] = best_per_call(
        lambda: layouts.evaluate_layout(TANVI.model_id, "h100-sxm", 4, 1, **TARGET), 50) * 1e3
    for name, value in results.items():
        print(f"{name:<52}{value:10.2f}")
    return results


#: Goals: (figure prefix, op, limit, unit).
GOALS = (("search_layouts", "<", 100.0, "ms/call"), ("slowest search_layouts", "<", 100.0, "ms/call"),
         ("evaluate_layout", "<", 5.0, "ms/call"))


if __name__ == "__main__":
    figures = main()
    if "--record" in sys.argv[1:]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _record import record_figures

        print("recorded", record_figures("bench_layouts", figures, GOALS))
