"""What a busy replica delivers, and how many replicas a peak load needs.

A saturated replica holds B decoding sequences of isl-token prompts and osl-token answers. Every
iteration each of them gains a token; B/osl of them finish per iteration on average and as many
waiting prompts take their place, so over one *cycle* of osl iterations the replica must also
prefill B·isl prompt tokens. With chunked prefill (vLLM V1's only mode) an iteration carries the B
decodes and fills the rest of its token budget C with prompt chunks, so

    mixed iterations per cycle  n_mix = B·isl / (C − B)
    cycle time                  = n_mix · t_mixed + (osl − n_mix) · t_decode        (n_mix ≤ osl)
    output tokens/s             = B·osl / cycle,   mean TPOT = cycle / osl

When n_mix would exceed osl the budget, not memory, limits the batch: prefill cannot keep up, and
the batch settles where it can, B' = osl·C/(isl + osl), with every iteration mixed. Averaging the
two kinds of iteration (not the work: t(mean work) < mean t(work), since a step time is a maximum of
two straight lines) is what keeps this close to the iteration-level simulator of chapter 5.

Capacity — one definition for the whole book: the request rate one replica sustains while its
steady TPOT meets the target (:func:`capacity_rps`). Utilisation = offered request rate ÷
(replicas × capacity). A request's TPOT is the mean of its ~osl steps, so at a steady load it
varies little between requests; this module compares that steady MEAN with the target and leaves
the p99 to the simulators (chapters 5 and 6), which is why the capstone confirms every plan there.
"""

from __future__ import annotations

import functools
import math

from vidya_lab import _validate as v
from vidya_lab.sizing.latency import MAX_TOKENS, ttft_s
from vidya_lab.sizing.replica import Replica, _as_replica, max_concurrent_sequences

#: Largest request rate the sizing functions accept, requests/s (a million: far beyond any fleet).
MAX_REQUESTS_PER_S = 1e6


def _lengths(isl, osl) -> tuple[int, int]:
    return (v.check_int("isl", isl, minimum=1, maximum=MAX_TOKENS),
            v.check_int("osl", osl, minimum=1, maximum=MAX_TOKENS))


def cycle(r: Replica, batch: float, isl: int, osl: int, cached_tokens: int = 0) -> dict:
    """The steady cycle of a saturated replica holding ``batch`` decoding sequences (module formula).

    ``cached_tokens`` of every prompt are found in a prefix cache (chapter 4): only the u = isl −
    cached others are prefilled, attending to the cached ones as prior context.

    Returns ``batch`` (the batch it settles at: ``batch`` or the budget-limited B'),
    ``budget_limited`` (bool), ``mixed_fraction`` (share of iterations carrying prompt chunks),
    ``step_decode_s``, ``step_mixed_s``, ``step_s`` (mean iteration = mean TPOT) and
    ``output_tokens_per_s``; then ``chunk_tokens`` (prompt tokens a mixed iteration carries) and
    ``mixed_iterations`` (n_mix, of the cycle's osl iterations).
    """
    budget = _as_replica(r).max_batched_tokens
    batch = v.check_real("batch", batch, minimum=0.0, min_inclusive=False)
    isl, osl = _lengths(isl, osl)
    k = v.check_cached_tokens(cached_tokens, isl)
    u = isl - k                                   # prompt tokens each prefill computes
    b = min(float(batch), budget - 1.0)
    limited = False
    if b * u / (budget - b) > osl:  # prefill cannot keep up: the batch shrinks to B'
        b, limited = osl * budget / (u + osl), True
    chunk = min(budget - b, b * u / osl) if limited else budget - b
    n_mix = min(float(osl), b * u / chunk)
    c_eff = min(chunk, u)
    n_chunks = u / c_eff                          # chunks of one prompt
    per_prompt_pairs = u * k + u * (u + 1) / 2
    per_prompt_kv = k * n_chunks + u * (n_chunks + 1) / 2  # KV tokens its chunks read
    share = chunk / u                             # prompts' worth of prefill per mixed iteration
    ctx = isl + osl / 2.0                         # mean context of a decoding sequence
    t_dec = r.step_time_s(0, 0, 0, 0, b, b * ctx)
    t_mix = r.step_time_s(chunk, share * per_prompt_pairs, share * per_prompt_kv, share, b,
                          b * ctx)
    total = n_mix * t_mix + (osl - n_mix) * t_dec
    return {"batch": b, "budget_limited": limited, "mixed_fraction": n_mix / osl,
            "step_decode_s": t_dec, "step_mixed_s": t_mix, "step_s": total / osl,
            "output_tokens_per_s": b * osl / total, "chunk_tokens": chunk, "mixed_iterations": n_mix}


def steady_tpot_s(r: Replica, batch: float, isl: int, osl: int) -> float:
    """Mean TPOT of a saturated replica holding ``batch`` sequences of isl-token prompts and
    osl-token answers, seconds: the mean iteration of :func:`cycle`."""
    _as_replica(r)
    b = v.check_real("batch", batch, minimum=0.0, min_inclusive=False, maximum=r.max_num_seqs)
    isl, osl = _lengths(isl, osl)
    return cycle(r, b, isl, osl)["step_s"]


def _kv_limit(r: Replica, isl: int, osl: int, cached_tokens: int) -> int:
    """Sequences of isl + osl tokens whose KV fits; with ``cached_tokens`` of every prompt shared
    (one copy of the prefix's whole blocks for everyone, as a prefix cache keeps it)."""
    if isl + osl > r.model.max_context_tokens:
        return 0
    if cached_tokens == 0:
        return max_concurrent_sequences(r, isl + osl)
    shared = cached_tokens // r.block_tokens
    own = math.ceil((isl + osl) / r.block_tokens) - shared
    return max(0, r.kv_blocks - shared) // own


def saturated_throughput(r: Replica, isl: int, osl: int, cached_tokens: int = 0) -> dict:
    """Offline (saturated) output throughput of one replica with continuous batching.

    Batch = min(KV-limited sequences of isl+osl tokens, ``max_num_seqs``), then :func:`cycle`;
    ``cached_tokens`` of every prompt found in a prefix cache are neither prefilled nor stored per
    sequence.
    Returns ``batch``, ``limited_by`` ("memory", "engine cap" or "token budget"), ``step_s`` (mean
    iteration), ``output_tokens_per_s`` (per replica), ``tpot_s`` and ``mixed_fraction``. Zero
    throughput when not even one sequence fits.
    """
    _as_replica(r)
    isl, osl = _lengths(isl, osl)
    return dict(_saturated(r, isl, osl, v.check_cached_tokens(cached_tokens, isl)))


@functools.lru_cache(maxsize=8192)  # a pure function of a frozen replica: the layout search,
def _saturated(r: Replica, isl: int, osl: int, k: int) -> dict:  # and its widget, ask again
    kv_limit = _kv_limit(r, isl, osl, k)
    batch = min(kv_limit, r.max_num_seqs)
    if batch < 1 or not r.weights_fit:
        return {"batch": 0, "limited_by": "memory", "step_s": math.inf,
                "output_tokens_per_s": 0.0, "tpot_s": math.inf, "mixed_fraction": 0.0}
    cyc = cycle(r, batch, isl, osl, k)
    limited = ("token budget" if cyc["budget_limited"]
               else "memory" if kv_limit < r.max_num_seqs else "engine cap")
    return {"batch": int(cyc["batch"]) if cyc["budget_limited"] else batch, "limited_by": limited,
            "step_s": cyc["step_s"], "output_tokens_per_s": cyc["output_tokens_per_s"],
            "tpot_s": cyc["step_s"], "mixed_fraction": cyc["mixed_fraction"]}


def slo_batch(r: Replica, isl: int, osl: int, tpot_target_s: float | None,
              cached_tokens: int = 0) -> int:
    """The largest batch a replica may run at: saturated, and (if a target is given) with its steady
    mean TPOT at or under ``tpot_target_s`` (``cached_tokens`` of each prompt found in a prefix
    cache). 0 when nothing fits; a ``ValueError`` when even batch 1 misses the target."""
    _as_replica(r)
    isl, osl = _lengths(isl, osl)
    return _batch_within(r, isl, osl, tpot_target_s, v.check_cached_tokens(cached_tokens, isl),
                         "tpot_target_s")


def _batch_within(r: Replica, isl: int, osl: int, target_s, k: int, name: str) -> int:
    """:func:`slo_batch` of checked lengths; ``name`` is the caller's name for the target."""
    bmax = _saturated(r, isl, osl, k)["batch"]
    if bmax < 1 or target_s is None:
        return bmax
    slo = v.check_real(name, target_s, minimum=0.0, min_inclusive=False)
    batch = _largest_batch(r, isl, osl, slo, k)
    if batch < 1:
        raise ValueError(f"{name} = {slo:g} s is below the batch-1 step time "
                         f"{cycle(r, 1, isl, osl, k)['step_s']:.4g} s of this replica")
    return batch


@functools.lru_cache(maxsize=8192)  # as _saturated: the search and its widget ask again
def _largest_batch(r: Replica, isl: int, osl: int, slo: float, k: int) -> int:
    """The largest saturated batch whose steady TPOT is at most ``slo`` (0 if not even batch 1)."""
    lo, hi = 0, _saturated(r, isl, osl, k)["batch"]  # steady TPOT is monotone in batch
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cycle(r, mid, isl, osl, k)["step_s"] <= slo:
            lo = mid
        else:
            hi = mid - 1
    return lo


def capacity_rps(r: Replica, isl: int, osl: int, tpot_target_s: float | None = None,
                 cached_tokens: int = 0) -> float:
    """Capacity: requests/s one replica sustains at its :func:`slo_batch` (0 when nothing fits).

    Formula: output tokens/s of :func:`cycle` at that batch ÷ osl, with ``cached_tokens`` of every
    prompt found in a prefix cache. Utilisation everywhere in the book is offered requests/s ÷
    (replicas × this).
    """
    _as_replica(r)
    isl, osl = _lengths(isl, osl)
    k = v.check_cached_tokens(cached_tokens, isl)
    b = slo_batch(r, isl, osl, tpot_target_s, k)
    return 0.0 if b < 1 else cycle(r, b, isl, osl, k)["output_tokens_per_s"] / osl


def cost_per_hour_usd(r: Replica, replicas: int = 1) -> float:
    """Rental cost of ``replicas`` replicas for one hour, USD (catalog on-demand price × GPUs)."""
    _as_replica(r)
    n = v.check_int("replicas", replicas, minimum=1, maximum=1_000_000)
    return n * r.n_gpus * r.gpu.price_per_hour_usd


def cost_per_million_output_tokens(r: Replica, isl: int, osl: int) -> float:
    """USD per 1e6 output tokens at saturated throughput: price/hour ÷ (3600 · tokens/s) × 1e6."""
    tput = saturated_throughput(r, isl, osl)["output_tokens_per_s"]
    if tput <= 0:
        return math.inf
    return cost_per_hour_usd(r) / (3600.0 * tput) * 1e6


def gpus_for_peak_load(r: Replica, requests_per_s: float, isl: int, osl: int, *,
                       tpot_slo_s: float | None = None, utilisation: float = 0.8,
                       cached_tokens: int = 0) -> dict:
    """GPUs needed to serve a peak load at a utilisation (headroom kept for bursts).

    Each replica runs at :func:`slo_batch`; its capacity is :func:`capacity_rps`; replicas =
    ceil(λ / (capacity · utilisation)). Little's law gives the sequences in flight:
    L = λ · (TTFT + osl · TPOT). ``cached_tokens`` of every prompt are found in a prefix cache.

    Returns ``replicas``, ``gpus``, ``batch_per_replica``, ``tokens_per_s_per_replica``,
    ``capacity_rps_per_replica``, ``tpot_s`` (steady mean), ``ttft_s`` (idle floor),
    ``in_flight_sequences`` (Little), ``utilisation``, ``cost_per_hour_usd``,
    ``cost_per_million_output_tokens_usd``.
    """
    _as_replica(r)
    lam = v.check_real("requests_per_s", requests_per_s, minimum=0.0, min_inclusive=False,
                       maximum=MAX_REQUESTS_PER_S)
    isl, osl = _lengths(isl, osl)
    u = v.check_fraction("utilisation", utilisation, allow_zero=False)
    k = v.check_cached_tokens(cached_tokens, isl)
    if tpot_slo_s is not None:
        v.check_real("tpot_slo_s", tpot_slo_s, minimum=0.0, min_inclusive=False)
    batch = _batch_within(r, isl, osl, tpot_slo_s, k, "tpot_slo_s")
    if batch < 1:
        raise ValueError(f"{r.model.id} does not fit on {r.n_gpus} x {r.gpu.id} with "
                         f"{isl + osl}-token sequences; choose more GPUs per replica")
    cyc = cycle(r, batch, isl, osl, k)
    per_replica = cyc["output_tokens_per_s"]
    capacity = per_replica / osl
    replicas = math.ceil(lam / (capacity * u))
    v.check_work(f"requests_per_s = {lam:g}", replicas, 1_000_000,
                 unit=f"replicas of {r.n_gpus} x {r.gpu.id}",
                 hint="lower the peak request rate, or use a larger replica")
    ttft = ttft_s(r, isl, k)
    gpus = replicas * r.n_gpus
    hourly = cost_per_hour_usd(r, replicas)
    return {"replicas": replicas, "gpus": gpus, "batch_per_replica": batch,
            "tokens_per_s_per_replica": per_replica, "capacity_rps_per_replica": capacity,
            "tpot_s": cyc["step_s"], "ttft_s": ttft,
            "in_flight_sequences": lam * (ttft + osl * cyc["step_s"]), "utilisation": u,
            "cost_per_hour_usd": hourly,
            "cost_per_million_output_tokens_usd": hourly / (3600.0 * lam * osl) * 1e6}
