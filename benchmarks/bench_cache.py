"""Speed of the prefix cache: blocks per second it hashes and handles, requests per second replayed.

Run: ``.venv/bin/python benchmarks/bench_cache.py [--record]``. On Tanvi's multi-turn traffic
(1,000 requests, about 4,300 prompt tokens each) it reports, best of 3 after a warm-up, in CPU time
of this process (``time.process_time``: the machine is shared, and wall time would measure the others):

* chained block hashing (``caching.block_hashes``), blocks/s;
* the cache alone (admit + release of every request, hashes precomputed), blocks/s handled, where a
  block handled is one prompt or answer block of one request, at a cache of 10 GB per GPU (evicting)
  and at the replica's whole KV budget;
* the whole replay (``caching.simulate``: cache, TTFT through the cost model, FLOPs), requests/s;
* ``vidya-lab cache --requests 200000`` (the documented cap) run in a child process: its peak
  resident memory (``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``, MiB) and its CPU time.
  ``--quick`` skips it (it takes about a minute).

Goals: at least one million blocks/s through the cache, so the book's sweeps and the widget stay
interactive; the cap's peak memory under 2 GB (issue 16; it was 7.4 GB, 7,449 MiB measured at
commit 3ee2943, when a trace held every prompt in full). ``--record`` writes
benchmarks/results/bench_cache.json with the goals.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from vidya_lab import caching

REQUESTS = 1000
GOAL_BLOCKS_PER_S = 1e6
GOAL_CAP_PEAK_MIB = 2e9 / 2**20  # 2 GB


def _best(fn, repeat: int = 3) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _replay_cache_only(trace: caching.PromptTrace, hashes: list, r, cache_bytes: float) -> None:
    b = r.block_tokens
    cache = caching.PrefixCache(caching.cache_capacity_blocks(r, cache_bytes), b)
    prompt = trace.prompt_tokens
    running = []
    for i in range(len(trace)):
        p = int(prompt[i])
        _, handle = cache.admit(hashes[i], (p - 1) // b, p // b)
        running.append((i, handle))
        if len(running) > 60:  # about the in-flight batch of the evening peak
            j, h = running.pop(0)
            cache.release(h, hashes[j])
    for j, h in running:
        cache.release(h, hashes[j])


def cap_run() -> dict:
    """Peak RSS (MiB) and CPU time (s) of ``vidya-lab cache`` at its documented cap, in a child."""
    argv = [sys.executable, "-m", "vidya_lab", "cache", "--requests",
            str(caching.MAX_TRACE_REQUESTS), "--json"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:])} failed: {proc.stderr.strip()}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # ru_maxrss is KiB on Linux
    return {f"cache --requests {caching.MAX_TRACE_REQUESTS} peak memory (MiB)": usage.ru_maxrss / 1024,
            f"cache --requests {caching.MAX_TRACE_REQUESTS} CPU time (s)": usage.ru_utime + usage.ru_stime}


def main(quick: bool = False) -> dict:
    r = caching.default_replica()
    trace = caching.tutor_trace(REQUESTS, seed=4, turns_mean=4)
    b = r.block_tokens
    seqs = [np.concatenate([p, a]).tolist() for p, a in zip(trace.prompts, trace.answers, strict=True)]
    blocks = sum(len(s) // b for s in seqs)
    t_hash = _best(lambda: [caching.block_hashes(s, b) for s in seqs])
    keys = list(trace.sequence_hashes(b))  # each request's keys, joined once before timing
    t_small = _best(lambda: _replay_cache_only(trace, keys, r, 10e9))
    t_full = _best(lambda: _replay_cache_only(trace, keys, r, r.kv_budget_bytes))
    t_sim = _best(lambda: caching.simulate(trace, r, cache_bytes=10e9))
    results = {
        "block hashing (blocks/s)": blocks / t_hash,
        "cache admit+release, 10 GB per GPU, evicting (blocks/s)": blocks / t_small,
        "cache admit+release, whole KV budget (blocks/s)": blocks / t_full,
        "simulate, 1000 multi-turn requests (requests/s)": REQUESTS / t_sim,
    }
    if not quick:
        results.update(cap_run())
    for name, value in results.items():
        print(f"{name:<60}{value:14,.0f}")
    return results


if __name__ == "__main__":
    figures = main(quick="--quick" in sys.argv[1:])
    if "--record" in sys.argv[1:]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _record import record_figures

        goals = [("cache admit+release", ">=", GOAL_BLOCKS_PER_S, "blocks/s"),
                 ("cache --requests", "<", GOAL_CAP_PEAK_MIB, "MiB")]
        print("recorded", record_figures("bench_cache", figures, goals))
