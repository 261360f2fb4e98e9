"""Disaggregated prefill and decode: when it pays, on one workload, from the one cost model.

A **colocated** replica (the rest of this package) prefills and decodes on the same GPUs: prompt
chunks share iterations with the running decodes, so a step that carries a full token budget of
prompt work is a long gap between two tokens for every student, and the budget is the dial
between that gap and the replica's capacity (:func:`colocated_pool`, :func:`stall_free_budget`).

A **disaggregated** deployment (DistServe, Splitwise, Mooncake, NVIDIA Dynamo) runs two pools: a
prefill pool computes each prompt's KV cache and first token, sends the KV to a decode pool over a
link, and the decode pool only decodes. Each pool is sized for its own target:

* **decode pool** (:func:`decode_pool`): a decode-only iteration of ``b`` sequences at the mean
  context ``isl + osl/2`` takes ``t_d(b)`` (THE cost model). A request's TPOT is
  ``t_d(b) + transfer/(osl − 1)`` (the KV transfer delays its second token once). The pool runs at
  the largest ``b`` whose TPOT meets the target and whose KV fits; one replica then finishes
  ``b / (osl · t_d(b))`` requests/s (Little's law), and ``ceil(λ / that)`` replicas carry ``λ``.
* **prefill pool** (:func:`prefill_pool`): one prompt at a time, each for ``S`` seconds (its
  uncached tokens through the cost model); the pool is an M/M/c queue, and it gets the fewest
  replicas ``c`` with ``P(wait > T − overhead − S) ≤ 1 − percentile/100`` (Erlang C's tail), so the
  TTFT target holds at that percentile. Taking prompts one at a time is conservative: a prefill
  engine packs several short prompts into one step.
* **the transfer** (:func:`kv_transfer_s`): each GPU of the prefill replica sends its shard of the
  prompt's KV, ``kv bytes per token per GPU × tokens``, over its own lane of the link, in
  ``latency + bytes / bandwidth``; on a link one node shares (:data:`SHARED_BY_NODE`) all shards go
  through the one NIC. With a prefix cache on both sides only the uncached tokens move (the decode
  replica already holds the shared prefix, as Mooncake's and Dynamo's KV-aware routing arrange).

:func:`when_it_pays` puts the three side by side (GPUs, dollars per hour, the longest gap between two
tokens). The sizing rules are those of :mod:`vidya_lab.sizing` (one definition of capacity); nothing
here re-derives a step time.
"""

from __future__ import annotations

import math

from vidya_lab import _validate as v
from vidya_lab import catalog, queueing, sizing
from vidya_lab.caching.savings import prefill_time_with_cache_s
from vidya_lab.sizing.replica import MAX_BATCHED_TOKENS, MAX_CONTEXT_TOKENS

#: Links whose bandwidth a whole node shares (one NIC per node, :data:`vidya_lab.catalog.LINKS`):
#: every GPU's KV shard goes through the same NIC.
SHARED_BY_NODE: tuple[str, ...] = ("ethernet-100g",)
#: Token budgets :func:`stall_free_budget` chooses from (powers of two, as engines are tuned).
BUDGET_CHOICES: tuple[int, ...] = (256, 512, 1024, 2048, 4096, 8192, 16384)
#: Largest request rate accepted, requests/s.
MAX_RATE_PER_S = 1e5


def _lengths(isl, osl, cached_tokens) -> tuple[int, int, int]:
    isl = v.check_int("isl", isl, minimum=1, maximum=MAX_CONTEXT_TOKENS)
    osl = v.check_int("osl", osl, minimum=2, maximum=MAX_CONTEXT_TOKENS)
    k = v.check_cached_tokens(cached_tokens, isl)
    return isl, osl, k


def _rate(rate_per_s) -> float:
    return v.check_real("rate_per_s", rate_per_s, minimum=0.0, min_inclusive=False,
                        maximum=MAX_RATE_PER_S)


def _utilisation(value) -> float:
    return v.check_real("utilisation", value, minimum=0.05, maximum=1.0)


def _target(name: str, value) -> float:
    return v.check_real(name, value, minimum=0.0, min_inclusive=False, maximum=3600.0)


def kv_transfer_s(replica: sizing.Replica, tokens: int, link: str | catalog.Link) -> float:
    """Seconds to send the KV of ``tokens`` prompt tokens from a prefill replica to a decode one.

    Formula: ``p2p latency + kv_bytes_per_token_per_gpu × tokens / bytes_per_s`` (each GPU sends its
    shard over its own lane, in parallel); on a link of :data:`SHARED_BY_NODE`, the shards of all
    ``tp × pp`` GPUs share it: ``× n_gpus``. ``link``: a :data:`vidya_lab.catalog.LINKS` id.
    """
    sizing._as_replica(replica)
    n = v.check_int("tokens", tokens, minimum=0, maximum=MAX_CONTEXT_TOKENS)
    lk = catalog.get_link(link)
    if n == 0:
        return 0.0
    lanes_sharing = replica.n_gpus if lk.id in SHARED_BY_NODE else 1
    return lk.p2p_time_s(replica.kv_bytes_per_token_per_gpu * n * lanes_sharing)


def sequences_that_fit(replica: sizing.Replica, isl: int, osl: int, cached_tokens: int = 0) -> int:
    """Sequences of ``isl + osl`` tokens whose KV fits in the replica's pool at once.

    Blocks of ``B`` tokens: each sequence holds ``ceil((isl + osl)/B) − s`` of its own, where the
    ``s = cached // B`` whole blocks of a shared prefix are held once for all (the rule of
    :func:`vidya_lab.sizing.saturated_throughput`): ``(kv_blocks − s) // own``.
    """
    sizing._as_replica(replica)
    isl, osl, k = _lengths(isl, osl, cached_tokens)
    b = replica.block_tokens
    shared = k // b
    own = math.ceil((isl + osl) / b) - shared
    return max(0, replica.kv_blocks - shared) // own


def decode_step_s(replica: sizing.Replica, batch: int, context_tokens: float) -> float:
    """One decode-only iteration of ``batch`` sequences attending to ``context_tokens`` each, s."""
    return replica.step_time_s(0, 0, 0, 0, batch, batch * context_tokens)


def decode_pool(replica: sizing.Replica, isl: int, osl: int, tpot_target_s: float,
                cached_tokens: int = 0, transfer_s: float = 0.0) -> dict:
    """One decode-only replica at its largest batch meeting the TPOT target (module docstring).

    Returns ``batch``, ``limited_by`` ("TPOT target", "memory" or "engine cap"), ``step_s``
    (``t_d(batch)``), ``tpot_s`` (``step + transfer/(osl − 1)``) and ``capacity_rps``
    (``batch / (osl · step)``). A ``ValueError`` if no sequence fits or batch 1 misses the target.
    """
    sizing._as_replica(replica)
    isl, osl, k = _lengths(isl, osl, cached_tokens)
    tpot = _target("tpot_target_s", tpot_target_s)
    xfer = v.check_real("transfer_s", transfer_s, minimum=0.0, maximum=3600.0)
    fit = sequences_that_fit(replica, isl, osl, k)
    cap = min(fit, replica.max_num_seqs)
    if cap < 1:
        raise ValueError(f"no sequence of {isl + osl} tokens fits in the KV pool of "
                         f"{replica.model.id} on {replica.n_gpus} x {replica.gpu.id}")
    ctx = isl + osl / 2.0
    extra = xfer / (osl - 1)

    def tpot_at(b: int) -> float:
        return decode_step_s(replica, b, ctx) + extra

    if tpot_at(1) > tpot:
        raise ValueError(f"tpot_target_s = {tpot:g} s is below the TPOT of one sequence on this "
                         f"decode replica ({tpot_at(1):.4g} s)")
    lo, hi = 1, cap                               # largest b with tpot_at(b) <= target (monotone)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if tpot_at(mid) <= tpot else (lo, mid - 1)
    step = decode_step_s(replica, lo, ctx)
    limited = ("TPOT target" if lo < cap else "memory" if fit < replica.max_num_seqs
               else "engine cap")
    return {"batch": lo, "limited_by": limited, "step_s": step, "tpot_s": step + extra,
            "capacity_rps": lo / (osl * step)}


def _wait_quantile_s(lam: float, mu: float, c: int, tail: float) -> float:
    """The wait exceeded with probability ``tail`` in an M/M/c queue: 0 if Erlang C ≤ tail, else
    ``ln(C / tail) / (cμ − λ)``."""
    cq = queueing.erlang_c(c, lam / mu)
    return 0.0 if cq <= tail else math.log(cq / tail) / (c * mu - lam)


def prefill_pool(replica: sizing.Replica, rate_per_s: float, isl: int, ttft_target_s: float,
                 cached_tokens: int = 0, percentile: float = 99.0) -> dict:
    """The prefill pool: the fewest prefill-only replicas meeting the TTFT target at ``percentile``.

    ``service_s`` = the prompt's uncached part through the cost model (one prompt at a time);
    TTFT = request overhead + wait + service, the wait an M/M/c queue's (module docstring). Returns
    ``replicas``, ``service_s``, ``utilisation`` (``λ·S / c``), ``wait_probability`` (Erlang C) and
    ``ttft_s`` (TTFT at ``percentile``). A ``ValueError`` if one prompt alone misses the target.
    """
    sizing._as_replica(replica)
    lam = _rate(rate_per_s)
    isl = v.check_int("isl", isl, minimum=1, maximum=MAX_CONTEXT_TOKENS)
    k = v.check_cached_tokens(cached_tokens, isl)
    ttft = _target("ttft_target_s", ttft_target_s)
    pct = v.check_real("percentile", percentile, minimum=50.0, maximum=99.99)
    service = prefill_time_with_cache_s(replica, isl, k)
    overhead = replica.calibration.request_overhead_s
    budget = ttft - overhead - service
    if budget <= 0:
        raise ValueError(f"ttft_target_s = {ttft:g} s is below one prompt's own prefill on this "
                         f"replica ({overhead + service:.4g} s)")
    tail = 1.0 - pct / 100.0
    staff = queueing.servers_needed(lam, 1.0 / service, wait_s=budget,
                                    max_wait_exceeds_probability=tail)
    c = staff.servers
    return {"replicas": c, "service_s": service, "utilisation": staff.utilisation,
            "wait_probability": staff.wait_probability,
            "ttft_s": overhead + service + _wait_quantile_s(lam, 1.0 / service, c, tail)}


def _with_budget(replica: sizing.Replica, budget: int) -> sizing.Replica:
    """The same replica with a token budget of ``budget`` per iteration (vLLM's
    ``max_num_batched_tokens``; never fewer tokens than sequences, as vLLM requires)."""
    import dataclasses

    return dataclasses.replace(replica, max_batched_tokens=budget,
                               max_num_seqs=min(replica.max_num_seqs, budget))


def colocated_pool(replica: sizing.Replica, rate_per_s: float, isl: int, osl: int,
                   tpot_target_s: float, cached_tokens: int = 0, *,
                   utilisation: float = 1.0) -> dict:
    """Colocated replicas (chunked prefill in the replica's token budget) carrying ``rate_per_s``.

    Each replica runs at the book's capacity (:func:`vidya_lab.sizing.capacity_rps`: the largest
    batch whose steady mean TPOT meets the target); ``replicas = ceil(λ / (utilisation ×
    capacity))``, ``utilisation`` being the share of capacity in use at ``rate_per_s`` (1: every
    replica at capacity, no room for a burst; the book plans at ``layouts.DEFAULT_UTILISATION``). Returns
    ``replicas``, ``batch``, ``capacity_rps``, ``budget`` (tokens per iteration), ``longest_gap_s``
    (an iteration whose budget is full of prompt chunks: the wait between two tokens of every
    decoding student while prompts are waiting), ``ttft_floor_s`` (a prompt's first token on a
    replica running that batch, with no queue: request overhead + its chunks' iterations),
    ``gpus`` and ``cost_per_hour_usd``.
    """
    sizing._as_replica(replica)
    lam = _rate(rate_per_s)
    isl, osl, k = _lengths(isl, osl, cached_tokens)
    tpot = _target("tpot_target_s", tpot_target_s)
    u = _utilisation(utilisation)
    b = sizing.slo_batch(replica, isl, osl, tpot, k)
    if b < 1:
        raise ValueError(f"no sequence of {isl + osl} tokens fits on {replica.n_gpus} x "
                         f"{replica.gpu.id}")
    cyc = sizing.cycle(replica, b, isl, osl, k)
    capacity = cyc["output_tokens_per_s"] / osl
    replicas = math.ceil(lam / (u * capacity))
    chunk = max(1, int(replica.max_batched_tokens - cyc["batch"]))
    ctx = isl + osl / 2.0
    ttft, done = replica.calibration.request_overhead_s, k
    while done < isl:                             # the prompt's chunks beside the running batch
        c = min(chunk, isl - done)
        pt, pairs, kvt, seqs = sizing.prefill_work([(c, done)])
        ttft += replica.step_time_s(pt, pairs, kvt, seqs, cyc["batch"], cyc["batch"] * ctx)
        done += c
    return {"replicas": replicas, "batch": b, "capacity_rps": capacity,
            "budget": replica.max_batched_tokens, "longest_gap_s": cyc["step_mixed_s"],
            "ttft_floor_s": ttft, "gpus": replicas * replica.n_gpus,
            "cost_per_hour_usd": sizing.cost_per_hour_usd(replica, replicas)}


def stall_free_budget(replica: sizing.Replica, isl: int, osl: int, tpot_target_s: float,
                      cached_tokens: int = 0, choices=BUDGET_CHOICES,
                      stall_target_s: float | None = None) -> int:
    """The largest token budget in ``choices`` whose full iteration (at the batch the replica then
    runs, the largest whose mean TPOT meets ``tpot_target_s``) stays within ``stall_target_s``
    (default the TPOT target): no student ever waits longer than that between two tokens
    (Sarathi-Serve picks its budget from the latency target the same way; the capstone passes its
    ITL target). A ``ValueError`` if even the smallest choice exceeds it."""
    sizing._as_replica(replica)
    isl, osl, k = _lengths(isl, osl, cached_tokens)
    tpot = _target("tpot_target_s", tpot_target_s)
    stall = tpot if stall_target_s is None else _target("stall_target_s", stall_target_s)
    budgets = sorted(v.check_int("choices", c, minimum=2, maximum=MAX_BATCHED_TOKENS)
                     for c in choices)
    if not budgets:
        raise ValueError("choices must hold at least one token budget")
    best = None
    for c in budgets:
        r = _with_budget(replica, c)
        try:
            b = sizing.slo_batch(r, isl, osl, tpot, k)
        except ValueError:
            continue                                # batch 1 misses the target at this budget
        if b >= 1 and sizing.cycle(r, b, isl, osl, k)["step_mixed_s"] <= stall:
            best = c
    if best is None:
        raise ValueError(f"no token budget in {budgets} keeps an iteration within "
                         f"{stall:g} s on this replica")
    return best


def disaggregated(prefill_replica: sizing.Replica, decode_replica: sizing.Replica,
                  rate_per_s: float, isl: int, osl: int, ttft_target_s: float,
                  tpot_target_s: float, cached_tokens: int = 0,
                  link: str | catalog.Link = "infiniband-ndr", percentile: float = 99.0,
                  prefix_on_decode: bool = True, utilisation: float = 1.0) -> dict:
    """A prefill pool and a decode pool, each sized for its target (module docstring).

    ``prefix_on_decode``: the decode replicas hold the cached prefix themselves, so only the
    ``isl − cached`` uncached tokens' KV is sent (False: the whole prompt's). ``utilisation``: the
    decode pool's share of its capacity in use at ``rate_per_s``, as in :func:`colocated_pool` (the
    prefill pool is sized by its own TTFT tail, which already leaves it headroom). Returns ``prefill``
    (:func:`prefill_pool`), ``decode`` (:func:`decode_pool`), ``prefill_replicas``,
    ``decode_replicas``, ``gpus``, ``cost_per_hour_usd``, ``transfer_tokens``,
    ``transfer_bytes`` (the whole replica's KV of those tokens), ``transfer_s`` and
    ``longest_gap_s`` (the second token's wait: transfer + one decode iteration).
    """
    sizing._as_replica(prefill_replica, "prefill_replica")
    sizing._as_replica(decode_replica, "decode_replica")
    lam = _rate(rate_per_s)
    isl, osl, k = _lengths(isl, osl, cached_tokens)
    sent = isl - k if (v.check_bool("prefix_on_decode", prefix_on_decode) and k) else isl
    xfer = kv_transfer_s(prefill_replica, sent, link)
    dec = decode_pool(decode_replica, isl, osl, tpot_target_s, k, xfer)
    pre = prefill_pool(prefill_replica, lam, isl, ttft_target_s, k, percentile)
    n_dec = math.ceil(lam / (_utilisation(utilisation) * dec["capacity_rps"]))
    gpus = pre["replicas"] * prefill_replica.n_gpus + n_dec * decode_replica.n_gpus
    cost = (sizing.cost_per_hour_usd(prefill_replica, pre["replicas"])
            + sizing.cost_per_hour_usd(decode_replica, n_dec))
    per_token = sizing.kv_bytes_per_token(prefill_replica.model, prefill_replica.kv_precision)
    return {"prefill": pre, "decode": dec, "prefill_replicas": pre["replicas"],
            "decode_replicas": n_dec, "gpus": gpus, "cost_per_hour_usd": cost,
            "transfer_tokens": sent, "transfer_bytes": per_token * sent, "transfer_s": xfer,
            "longest_gap_s": xfer + dec["step_s"]}


def when_it_pays(replica: sizing.Replica, rate_per_s: float, isl: int, osl: int,
                 ttft_target_s: float, tpot_target_s: float, cached_tokens: int = 0, *,
                 link: str | catalog.Link = "infiniband-ndr",
                 decode_replica: sizing.Replica | None = None, percentile: float = 99.0,
                 utilisation: float = 1.0) -> dict:
    """Colocated (the engine's budget, and the :func:`stall_free_budget`) against disaggregated.

    Returns ``colocated`` and ``colocated_stall_free`` (:func:`colocated_pool`; the second also has
    ``budget``), ``disaggregated`` (:func:`disaggregated`, prefill on ``replica``, decode on
    ``decode_replica`` or ``replica``), ``saving_per_hour_usd`` (stall-free colocated minus
    disaggregated: both keep every gap within the TPOT target) and ``pays`` (saving > 0). Every
    pool runs at the same ``utilisation`` of its capacity (:func:`colocated_pool`), so the
    comparison is on one footing.
    """
    sizing._as_replica(replica)
    colo = colocated_pool(replica, rate_per_s, isl, osl, tpot_target_s, cached_tokens,
                          utilisation=utilisation)
    budget = stall_free_budget(replica, isl, osl, tpot_target_s, cached_tokens)
    tuned = colocated_pool(_with_budget(replica, budget), rate_per_s, isl, osl, tpot_target_s,
                           cached_tokens, utilisation=utilisation)
    dis = disaggregated(replica, replica if decode_replica is None else decode_replica,
                        rate_per_s, isl, osl, ttft_target_s, tpot_target_s, cached_tokens,
                        link=link, percentile=percentile, utilisation=utilisation)
    saving = tuned["cost_per_hour_usd"] - dis["cost_per_hour_usd"]
    return {"colocated": colo, "colocated_stall_free": tuned, "disaggregated": dis,
            "saving_per_hour_usd": saving, "pays": saving > 0}


def _gpus_or_none(f, *args, **kwargs):
    try:
        return f(*args, **kwargs)
    except ValueError:                             # this deployment cannot meet the target at all
        return None


def tpot_sweep(replica: sizing.Replica, rate_per_s: float, isl: int, osl: int,
               ttft_target_s: float, tpot_targets_s, cached_tokens: int = 0, *,
               link: str | catalog.Link = "infiniband-ndr",
               utilisation: float = 1.0) -> list[dict]:
    """GPUs each deployment needs at each TPOT target (for the chapter's "when it pays" figure).

    One row per target: ``tpot_target_s``, ``colocated_gpus`` (the engine's budget),
    ``stall_free_gpus`` and ``stall_free_budget``, ``disaggregated_gpus``, ``prefill_gpus`` and
    ``decode_gpus``; ``None`` where that deployment cannot meet the target. Every pool at
    ``utilisation`` of its capacity (:func:`when_it_pays`).
    """
    sizing._as_replica(replica)
    targets = v.check_reals("tpot_targets_s", tpot_targets_s, minimum=1e-4, max_length=200)
    rows = []
    for t in targets.tolist():
        colo = _gpus_or_none(colocated_pool, replica, rate_per_s, isl, osl, t, cached_tokens,
                             utilisation=utilisation)
        budget = _gpus_or_none(stall_free_budget, replica, isl, osl, t, cached_tokens)
        tuned = None if budget is None else colocated_pool(
            _with_budget(replica, budget), rate_per_s, isl, osl, t, cached_tokens,
            utilisation=utilisation)
        dis = _gpus_or_none(disaggregated, replica, replica, rate_per_s, isl, osl, ttft_target_s,
                            t, cached_tokens, link=link, utilisation=utilisation)
        rows.append({
            "tpot_target_s": t, "colocated_gpus": None if colo is None else colo["gpus"],
            "stall_free_budget": budget, "stall_free_gpus": None if tuned is None else tuned["gpus"],
            "disaggregated_gpus": None if dis is None else dis["gpus"],
            "prefill_gpus": None if dis is None else dis["prefill_replicas"] * replica.n_gpus,
            "decode_gpus": None if dis is None else dis["decode_replicas"] * replica.n_gpus})
    return rows
