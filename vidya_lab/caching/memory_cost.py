"""What the cache costs: the KV memory it holds is memory running sequences cannot use.

A dedicated cache of ``cache_bytes`` per GPU takes blocks from the KV pool, so fewer sequences run at
once; if it holds the prefix every sequence starts with, running sequences *share* those blocks
instead of each holding a copy, which gives room back, and their prefill skips the cached tokens.
:func:`saturated_throughput_with_cache` weighs the three through the cost model, and
:func:`break_even_cache_bytes` finds the size beyond which the cache costs more than it wins.
"""

from __future__ import annotations

import math

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.caching.deployment import cache_capacity_blocks


def concurrency_with_cache(r: sizing.Replica, cache_bytes: float, context_tokens: int,
                           shared_tokens: int = 0) -> dict:
    """Sequences that fit at once when ``cache_bytes`` per GPU are set aside for a prefix cache.

    Without a cache each sequence holds ceil(context / B) blocks of the KV pool. A dedicated cache
    takes ``cache_blocks`` from the pool; if it holds the ``shared_tokens`` every sequence starts with,
    running sequences *share* those full blocks instead of each holding a copy, so each needs only
    ceil(context / B) − shared blocks of its own. Returns ``sequences_without``, ``sequences_with``,
    ``cache_blocks``, ``shared_blocks`` and ``sequences_lost`` (negative: the cache *adds* room).
    """
    sizing._as_replica(r)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    s = v.check_int("shared_tokens", shared_tokens, minimum=0, maximum=ctx)
    cache_blocks = cache_capacity_blocks(r, cache_bytes)
    b = r.block_tokens
    per_seq = math.ceil(ctx / b)
    without = r.kv_blocks // per_seq
    pool = max(0, r.kv_blocks - cache_blocks)
    shared = min(s // b, cache_blocks)
    with_ = pool // max(1, per_seq - shared)
    return {"sequences_without": without, "sequences_with": with_, "cache_blocks": cache_blocks,
            "shared_blocks": shared, "sequences_lost": without - with_}


class _NoRoom(ValueError):
    """The replica's KV memory (after the cache) holds not one sequence."""


def saturated_throughput_with_cache(r: sizing.Replica, isl: int, osl: int, cache_bytes: float = 0.0,
                                    cached_tokens: int = 0, *, share_blocks: bool = True,
                                    skip_cached_prefill: bool = True) -> dict:
    """Saturated output tokens/s of a replica that sets ``cache_bytes`` per GPU aside for a prefix
    cache whose first ``cached_tokens`` of every prompt (shared by all) it holds.

    Batch = min(:func:`concurrency_with_cache` sequences of isl + osl tokens, ``max_num_seqs``). Each
    iteration every sequence gains a token and batch/osl new prompts are prefilled, each computing only
    its isl − cached uncached tokens with the cached ones as prior context; decoders attend to
    isl + osl/2 tokens: the steady cycle of :func:`vidya_lab.sizing.cycle` with only the uncached
    prefill (the one saturation model). With no cache it equals
    ``sizing.saturated_throughput``. Returns ``batch``, ``step_s``, ``output_tokens_per_s``,
    ``cache_blocks``, ``limited_by``. A replica whose weights do not fit, or whose KV memory (after
    the cache) holds not one sequence of isl + osl tokens, is a ``ValueError`` naming ``r`` (not an
    infinite step time).

    ``share_blocks=False`` (running sequences each hold their own copy of the prefix) and
    ``skip_cached_prefill=False`` (the prefix is prefilled anyway) switch one effect off at a time,
    to show what each is worth.
    """
    sizing._as_replica(r)
    isl = v.check_int("isl", isl, minimum=1)
    osl = v.check_int("osl", osl, minimum=1)
    k = v.check_cached_tokens(cached_tokens, isl)
    share_blocks = v.check_bool("share_blocks", share_blocks)
    skip_cached_prefill = v.check_bool("skip_cached_prefill", skip_cached_prefill)
    conc = concurrency_with_cache(r, cache_bytes, isl + osl, k if share_blocks else 0)
    # the cache holds only whole blocks of the prefix it has room for
    k_held = min(k // r.block_tokens, cache_capacity_blocks(r, cache_bytes)) * r.block_tokens
    if not skip_cached_prefill:
        k_held = 0
    kv_limit = conc["sequences_with"]
    batch = min(kv_limit, r.max_num_seqs)
    where = f"{r.model.id} on tp={r.tp} x pp={r.pp} {r.gpu.id} ({r.precision})"
    if not r.weights_fit:
        raise ValueError(f"r: the weights of {where} do not fit in its memory, so it serves nothing; "
                         "choose more GPUs per replica or a lower precision")
    if batch < 1:
        why = (f"cache_bytes={cache_bytes:g} leaves" if conc["cache_blocks"] else f"{where} has")
        raise _NoRoom(f"r: {why} no KV room for one sequence of isl + osl = {isl + osl} tokens; "
                         "choose a smaller cache, shorter requests or more GPUs per replica")
    cyc = sizing.cycle(r, batch, isl, osl, cached_tokens=k_held)
    limited = ("token budget" if cyc["budget_limited"]
               else "memory" if kv_limit < r.max_num_seqs else "engine cap")
    return {"batch": int(cyc["batch"]) if cyc["budget_limited"] else batch, "step_s": cyc["step_s"],
            "output_tokens_per_s": cyc["output_tokens_per_s"], "cache_blocks": conc["cache_blocks"],
            "limited_by": limited}


def break_even_cache_bytes(r: sizing.Replica, isl: int, osl: int, cached_tokens: int,
                           tol_bytes: float = 1e6) -> float:
    """Largest dedicated cache (bytes per GPU) whose saturated throughput is still at least the
    no-cache throughput, by bisection on :func:`saturated_throughput_with_cache`.

    Beyond it the memory the cache holds costs more running sequences than its hits and sharing win.
    Returns ``r.kv_budget_bytes`` if even the whole budget does not fall below.
    """
    sizing._as_replica(r)
    tol = v.check_real("tol_bytes", tol_bytes, minimum=1.0)
    base = saturated_throughput_with_cache(r, isl, osl)["output_tokens_per_s"]

    def ok(c: float) -> bool:
        try:
            got = saturated_throughput_with_cache(r, isl, osl, c, cached_tokens)
        except _NoRoom:                        # a cache this large leaves room for no sequence
            return False
        return got["output_tokens_per_s"] >= base

    lo, hi = 0.0, r.kv_budget_bytes
    if ok(hi):
        return hi
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo
