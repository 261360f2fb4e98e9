"""Replay a trace through a prefix cache: hit rates, prefill saved, TTFT with and without the cache.

Each request is admitted at its arrival (reuses its longest cached prefix, pins its blocks, stores
its new full prompt blocks) and finishes after its TTFT plus ``answer_tokens × tpot_s``; then the
blocks its answer filled are stored and its blocks unpinned. No queueing: TTFT here is the prefill of
the uncached suffix on an idle replica, through the cost model (chapter 5 adds the waiting). Only
the running requests' block keys are held at once, so a replay's memory is the trace's plus the
cache's, whatever its length.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing, slo
from vidya_lab.caching.deployment import cache_capacity_blocks, default_replica, replica_with_block
from vidya_lab.caching.prefix_cache import POLICIES, PrefixCache
from vidya_lab.caching.savings import prefill_flops_array, prefill_time
from vidya_lab.caching.trace import PromptTrace


def in_flight_tpot_s(r: sizing.Replica, rate_per_s: float, prompt_mean: float,
                     answer_mean: float) -> float:
    """Decode step time at the batch Little's law gives: B = λ·(TTFT + answer·TPOT(B)), seconds."""
    ttft = r.calibration.request_overhead_s + prefill_time(r, max(1, int(round(prompt_mean))), 0)
    ctx = max(1, int(round(prompt_mean + answer_mean / 2)))
    batch = 1
    for _ in range(50):
        tpot = sizing.decode_step_time_s(r, batch, ctx)
        nxt = min(r.max_num_seqs, max(1, math.ceil(rate_per_s * (ttft + answer_mean * tpot))))
        if nxt == batch:
            break
        batch = nxt
    return sizing.decode_step_time_s(r, batch, ctx)


@dataclass(frozen=True, eq=False)
class CacheResult:
    """Per-request outcome of replaying a trace through a prefix cache.

    Arrays (one entry per request, in arrival order): ``prompt_tokens``, ``hit_tokens`` (tokens
    reused from the cache), ``ttft_without_s`` and ``ttft_with_s`` (request overhead + prefill of the
    uncached suffix on an idle replica, through the cost model, seconds), ``flops_saved``; ``kind``
    as in the trace. ``summary`` holds the totals (see :func:`simulate`).
    """

    prompt_tokens: np.ndarray
    hit_tokens: np.ndarray
    ttft_without_s: np.ndarray
    ttft_with_s: np.ndarray
    flops_saved: np.ndarray
    kind: np.ndarray
    summary: dict


def _replay(trace: PromptTrace, r: sizing.Replica, cache: PrefixCache, tpot: float) -> np.ndarray:
    """Admit each request at its arrival and release it at its finish; the hit tokens of each."""
    b = r.block_tokens
    keys = trace.sequence_hashes(b)
    prompt, answer, arrival = trace.prompt_tokens, trace.answer_tokens, trace.arrival_s
    overhead = r.calibration.request_overhead_s
    hit = np.zeros(len(trace), dtype=np.int64)
    running: list[tuple[float, int, object, list]] = []  # (finish time, request, handle, keys)
    for i in range(len(trace)):
        t = float(arrival[i])
        while running and running[0][0] <= t:
            _, _, handle, done_keys = heapq.heappop(running)
            cache.release(handle, done_keys)
        p = int(prompt[i])
        own = keys[i]
        hit_blocks, handle = cache.admit(own, (p - 1) // b, p // b)
        hit[i] = hit_blocks * b
        ttft = overhead + prefill_time(r, p, int(hit[i]))
        heapq.heappush(running, (t + ttft + int(answer[i]) * tpot, i, handle, own))
    while running:
        _, _, handle, done_keys = heapq.heappop(running)
        cache.release(handle, done_keys)
    return hit


def _ttfts(r: sizing.Replica, prompt: np.ndarray, hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TTFT of each request on an idle replica without and with its cached prefix, seconds."""
    overhead = r.calibration.request_overhead_s
    without = np.asarray([overhead + prefill_time(r, int(p), 0) for p in prompt.tolist()])
    with_ = np.asarray([overhead + prefill_time(r, int(p), int(k))
                        for p, k in zip(prompt.tolist(), hit.tolist(), strict=True)])
    return without, with_


def simulate(trace: PromptTrace, r: sizing.Replica | None = None, *, cache_bytes: float | None = None,
             block_tokens: int | None = None, policy: str = "lru-leaf",
             tpot_s: float | None = None) -> CacheResult:
    """Replay ``trace`` through a prefix cache of ``cache_bytes`` per GPU on replica ``r``.

    Each request is admitted at its arrival and finishes after TTFT (prefill of the uncached suffix)
    plus ``answer_tokens × tpot_s``; ``tpot_s`` defaults to the decode step at the in-flight batch
    Little's law gives for the trace's rate (:func:`in_flight_tpot_s`).

    Parameters
    ----------
    trace : from :func:`vidya_lab.caching.tutor_trace` (or :meth:`PromptTrace.from_prompts`).
    r : the replica (default :func:`default_replica`).
    cache_bytes : cache budget per GPU, bytes (default: the replica's whole KV budget, as vLLM's
        automatic prefix caching, which keeps finished requests' blocks in the free KV pool).
    block_tokens : tokens per block (default the replica's, 16).
    policy : "lru-leaf" or "lru" (see :class:`PrefixCache`).
    tpot_s : decode time per output token, seconds (≥ 0).

    Returns
    -------
    :class:`CacheResult`; ``summary`` keys: ``requests``, ``token_hit_rate`` (hit tokens / prompt
    tokens), ``request_hit_rate`` (share of requests reusing at least one block),
    ``prefill_tokens_saved``, ``prefill_flops_saved``, ``cache_bytes_used`` (peak bytes per GPU the
    cached blocks occupied), ``cache_bytes_budget``, ``cache_blocks_capacity``, ``cache_blocks_peak``,
    ``sequences_displaced`` (running sequences of the trace's mean prompt + answer length that the
    peak cache blocks could have held instead: the concurrency the cache takes when it does not give
    way to running requests), ``block_tokens``, ``evictions``, ``blocks_not_stored``,
    ``ttft_s_p50_without``, ``ttft_s_p50_with``, ``ttft_s_mean_without``, ``ttft_s_mean_with``,
    ``tpot_s``, ``policy``.
    """
    v.check_instance("trace", trace, PromptTrace, "PromptTrace (see tutor_trace)")
    r = default_replica() if r is None else sizing._as_replica(r)
    r = replica_with_block(r, block_tokens)
    policy = v.check_choice("policy", policy, POLICIES)
    budget = r.kv_budget_bytes if cache_bytes is None else v.check_real("cache_bytes", cache_bytes,
                                                                         minimum=0.0)
    cache = PrefixCache(cache_capacity_blocks(r, budget), r.block_tokens, policy)
    prompt, answer = trace.prompt_tokens, trace.answer_tokens
    if tpot_s is None:
        n = len(trace)
        span = float(trace.arrival_s[-1] - trace.arrival_s[0]) if n > 1 else 0.0
        tpot = in_flight_tpot_s(r, (n - 1) / span if span > 0 else 1.0, float(prompt.mean()),
                                float(answer.mean()))
    else:
        tpot = v.check_real("tpot_s", tpot_s, minimum=0.0)
    hit = _replay(trace, r, cache, tpot)
    without, with_ = _ttfts(r, prompt, hit)
    flops = prefill_flops_array(r.model, prompt, 0 * prompt) - prefill_flops_array(r.model, prompt, hit)
    summary = _summary(r, cache, budget, prompt, answer, hit, without, with_, flops)
    summary.update({"tpot_s": tpot, "policy": policy})
    return CacheResult(prompt, hit, without, with_, flops, trace.kind, summary)


def _summary(r, cache: PrefixCache, budget: float, prompt, answer, hit, without, with_, flops) -> dict:
    b = r.block_tokens
    per_seq_blocks = max(1, math.ceil((float(prompt.mean()) + float(answer.mean())) / b))
    return {
        "requests": int(prompt.size),
        "token_hit_rate": float(hit.sum() / prompt.sum()),
        "request_hit_rate": float(np.mean(hit > 0)),
        "prefill_tokens_saved": int(hit.sum()),
        "prefill_flops_saved": float(flops.sum()),
        "cache_bytes_used": cache.peak_blocks * b * r.kv_bytes_per_token_per_gpu,
        "cache_bytes_budget": budget,
        "cache_blocks_capacity": cache.capacity_blocks,
        "cache_blocks_peak": cache.peak_blocks,
        "sequences_displaced": cache.peak_blocks // per_seq_blocks,
        "block_tokens": b,
        "evictions": cache.evictions,
        "blocks_not_stored": cache.blocks_not_stored,
        "ttft_s_p50_without": slo.percentile(without, 50),
        "ttft_s_p50_with": slo.percentile(with_, 50),
        "ttft_s_mean_without": float(without.mean()),
        "ttft_s_mean_with": float(with_.mean()),
    }


def best_case_token_hit_rate(n_requests: int, shared_prefix_tokens: int, unique_tokens: int,
                             block_tokens: int = 16) -> float:
    """Token hit rate of n identical-prefix requests with an unlimited cache.

    The first request misses everything; each later one reuses the shared prefix's full blocks:
    (n − 1)·floor(P / B)·B / (n·(P + U)) (with U ≥ 1, so the last-token rule never bites).
    """
    n = v.check_int("n_requests", n_requests, minimum=1)
    p = v.check_int("shared_prefix_tokens", shared_prefix_tokens, minimum=0)
    u = v.check_int("unique_tokens", unique_tokens, minimum=1)
    b = v.check_int("block_tokens", block_tokens, minimum=1)
    return (n - 1) * (p // b) * b / (n * (p + u))
