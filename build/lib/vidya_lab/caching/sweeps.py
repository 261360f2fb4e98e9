"""How much cache: replay one trace at many cache sizes, and find where follow-ups fall off a cliff.

:func:`sweep_cache_bytes` is :func:`vidya_lab.caching.simulate` at each size. :func:`cliff_sweep`
asks the chapter's question about conversations: LRU keeps a student's history only while fewer
than a cache's worth of other blocks were touched since, so when students return after similar
think times the hit rate of follow-ups falls from "everything" to "only the syllabus" over a narrow
range of sizes — a cliff, not a slope.
"""

from __future__ import annotations

import math

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.caching.deployment import default_replica
from vidya_lab.caching.replay import CacheResult, simulate
from vidya_lab.caching.trace import KINDS, PromptTrace

#: Most cache sizes one sweep replays (each size is a whole replay).
MAX_SWEEP_SIZES = 1000


def _sizes(cache_bytes) -> np.ndarray:
    return v.check_reals("cache_bytes", cache_bytes, minimum=0.0, max_length=MAX_SWEEP_SIZES)


def _kind_mask(trace_kind: np.ndarray, kinds) -> tuple[tuple[str, ...], np.ndarray]:
    """The requests of ``kinds`` (a kind or a sequence of them, each one of :data:`KINDS`); refused by
    name when a kind is unknown or the trace has none of them."""
    if isinstance(kinds, str):
        kinds = (kinds,)
    if not isinstance(kinds, (list, tuple, set, frozenset, np.ndarray)):
        raise TypeError(f"kinds must be a sequence of request kinds ({', '.join(KINDS)}), got "
                        f"{type(kinds).__name__}")
    kinds = tuple(v.check_choice("kinds", k, KINDS) for k in kinds)
    sel = np.isin(trace_kind, list(kinds))
    if not sel.any():
        raise ValueError(f"the trace has no requests of kinds {kinds}")
    return kinds, sel


def sweep_cache_bytes(trace: PromptTrace, cache_bytes, r: sizing.Replica | None = None, *,
                      policy: str = "lru-leaf", kinds=None) -> list[dict]:
    """:func:`simulate` at each cache size (bytes per GPU, at most :data:`MAX_SWEEP_SIZES`): one
    summary dict per size.

    ``kinds`` (e.g. ``("follow-up",)``) adds ``kind_token_hit_rate``: the hit rate of those requests;
    an unknown kind, or kinds the trace has no request of, is refused (as :func:`cliff_sweep` does).
    """
    v.check_instance("trace", trace, PromptTrace, "PromptTrace (see tutor_trace)")
    sizes = _sizes(cache_bytes)
    sel = None if kinds is None else _kind_mask(trace.kind, kinds)[1]
    out = []
    for c in sizes:
        res = simulate(trace, r, cache_bytes=float(c), policy=policy)
        row = dict(res.summary)
        if sel is not None:
            row["kind_token_hit_rate"] = float(res.hit_tokens[sel].sum() / res.prompt_tokens[sel].sum())
        out.append(row)
    return out


def cliff_sweep(trace: PromptTrace, cache_bytes, r: sizing.Replica | None = None, *,
                kinds=("follow-up",), policy: str = "lru-leaf", near: float = 0.95,
                far: float = 0.2) -> dict:
    """How the hit rate of some requests (default: follow-up turns) falls as the cache shrinks.

    Runs :func:`simulate` at each size in ``cache_bytes`` (bytes per GPU) and once with an unlimited
    cache. For the selected requests:

    * ``floor`` — the hit rate if only their designed shared prefix (syllabus + subject, whole blocks)
      hit: Σ floor(shared / B)·B / Σ prompt tokens;
    * ``ceiling`` — the hit rate with an unlimited cache;
    * ``hit_rate`` — per size; ``gain_share`` = (hit_rate − floor) / (ceiling − floor), the share of
      what more cache can win that this size wins;
    * ``needed_bytes`` — the smallest swept size whose ``gain_share`` ≥ ``near``, and
      ``needed_fraction_of_kv_budget`` — that size over the replica's KV budget per GPU;
    * ``edge_bytes`` — the largest swept size whose ``gain_share`` < ``far`` (below it the histories
      win almost nothing); the cliff lies between ``edge_bytes`` and ``needed_bytes``;
    * ``proportional`` — min(1, size / needed_bytes): the share a policy that kept a fixed subset of
      histories would win (hits in proportion to the room). LRU below it is the cliff.

    Returns a dict of those (arrays per size) and ``token_hit_rate`` (all requests) per size.
    """
    v.check_instance("trace", trace, PromptTrace, "PromptTrace (see tutor_trace)")
    r = default_replica() if r is None else sizing._as_replica(r)
    sizes = _sizes(cache_bytes)
    near = v.check_fraction("near", near)
    far = v.check_fraction("far", far)
    _, sel = _kind_mask(trace.kind, kinds)
    prompt = trace.prompt_tokens[sel]
    b = r.block_tokens
    floor = float(((trace.shared_tokens[sel] // b) * b).sum() / prompt.sum())

    def rate(res: CacheResult) -> float:
        return float(res.hit_tokens[sel].sum() / prompt.sum())

    ceiling = rate(simulate(trace, r, cache_bytes=1e18, policy=policy))  # unlimited
    results = [simulate(trace, r, cache_bytes=float(c), policy=policy) for c in sizes]
    hit = np.asarray([rate(res) for res in results])
    span = ceiling - floor
    share = (hit - floor) / span if span > 0 else np.ones_like(hit)
    reached = np.flatnonzero(share >= near)
    needed = float(sizes[reached[0]]) if reached.size else math.nan
    prop = np.minimum(1.0, sizes / needed) if reached.size else np.full_like(sizes, np.nan)
    low = np.flatnonzero(share < far)
    edge = float(sizes[low[-1]]) if low.size else math.nan
    return {"cache_bytes": sizes, "hit_rate": hit, "floor": floor, "ceiling": ceiling,
            "gain_share": share, "needed_bytes": needed, "proportional": prop, "edge_bytes": edge,
            "needed_fraction_of_kv_budget": (needed / r.kv_budget_bytes if r.kv_budget_bytes > 0
                                             else math.nan),
            "token_hit_rate": np.asarray([res.summary["token_hit_rate"] for res in results])}
