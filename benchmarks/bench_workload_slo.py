"""Speed of workload generation and SLO metrics at fleet scale (results go in book/speed.md).

Run: ``.venv/bin/python benchmarks/bench_workload_slo.py``. Generates an exam-season day of Tanvi's
traffic (the student day curve at the scenario's normal peak, ×10), attaches lengths, and summarises
a million synthetic timelines — all as arrays, no Python object per request.
"""

from __future__ import annotations

import time

import numpy as np

from vidya_lab import slo, toyserver, workload
from vidya_lab.scenario import TANVI

RESULTS: dict[str, float] = {}


def timed(label, fn):
    t0 = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - t0
    RESULTS[f"{label} (s)"] = round(elapsed, 3)
    print(f"{label:<55s} {elapsed:7.2f} s")
    return out


def main() -> dict[str, float]:
    """Run every step; return ``{"step (s)": seconds}`` for ``benchmarks/_record.py``."""
    day = workload.student_day_profile(TANVI.normal_peak_rps, exam_season=True,
                                       exam_multiplier=TANVI.exam_multiplier)
    arrivals = timed("exam day arrivals (thinning, 24 h)", lambda: day.arrivals(seed=1))
    print(f"  {arrivals.size:,} arrivals (expected {day.expected_count():,.0f})")
    w = timed("attach lengths + shared prefix (make_workload)", lambda: workload.make_workload(
        arrivals, prompt_tokens=workload.LognormalLength(TANVI.question_tokens_mean, 100),
        output_tokens=workload.LognormalLength(TANVI.answer_tokens_mean, 250), seed=2,
        shared_prefix_tokens=TANVI.syllabus_prompt_tokens, shared_prefix_fraction=1.0))
    n = 1_000_000
    rng = np.random.default_rng(3)
    a = w.arrival_s[:n]
    f = a + rng.exponential(0.5, a.size)
    c = f + 0.04 * (w.output_tokens[:n] - 1)
    t = timed("Timelines.from_arrays (1e6, validated)", lambda: slo.Timelines.from_arrays(
        arrival_s=a, first_token_s=f, finish_s=c, output_tokens=w.output_tokens[:n]))
    timed("summarize + attainment (1e6)", lambda: slo.summarize(t, slo.SLO(ttft_s=2.0, tpot_s=0.1)))
    timed("bootstrap p99 CI (1e4 values, 2000 resamples)",
          lambda: slo.bootstrap_percentile_ci(slo.ttft_s(t)[:10_000], 99, seed=0))
    one_hour = toyserver.tutor_workload(1.5, 3600.0, seed=4)
    timed(f"toy server, {len(one_hour):,} requests (1 h at 1.5 req/s)",
          lambda: toyserver.simulate(one_hour, toyserver.ToyServer()))
    RESULTS["exam day arrivals (count)"] = int(arrivals.size)
    return dict(RESULTS)


if __name__ == "__main__":
    main()
