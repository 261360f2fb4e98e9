"""Routing for the prefix cache: which replica a request goes to decides what it finds cached.

Chapter 4 counted the prefix cache of one replica. A fleet has many, and each replica caches only
what it has served: a student's follow-up question carries the whole conversation so far, and it
finds that history cached only on the replica that answered the previous turn. Three routers, as
engines' routers run them:

* ``"round_robin"`` — the next replica in turn (Dynamo's default ``--router-mode``); a follow-up
  lands on its history's replica by chance, one time in N;
* ``"session_affinity"`` — every turn of a conversation to the same replica, by a hash of its id
  (the sticky sessions llm-d and SGLang's router offer);
* ``"prefix_aware"`` — SGLang's cache-aware rule (``sgl-router``, ``policies/cache_aware.rs``):
  when the load is imbalanced (busiest − idlest > ``balance_abs_threshold`` requests *and* busiest >
  ``balance_rel_threshold`` × idlest) send to the least-loaded replica; otherwise to the replica
  whose view holds the longest prefix of the prompt, if that match exceeds ``cache_threshold`` of it
  (ties to the least loaded: every warm replica holds the syllabus), else to the replica whose view
  is smallest. The view is the router's own approximate record of what it sent where (SGLang's
  approximate radix tree; without eviction here); Dynamo's KV router and llm-d's scheduler read
  the engines' KV events instead and weigh overlap against load in one score.

:func:`route` gives each request a replica; :func:`replay_routed` replays each replica's share
through its own prefix cache (:func:`vidya_lab.caching.simulate`, the cache of chapter 4), each
replica warmed before readiness with the syllabus and every subject prompt (the cold start's
prefix warm-up); :func:`routed_capacity` counts the hit tokens in one replica's capacity
(:func:`vidya_lab.sizing.capacity_rps` with ``cached_tokens``) and the replicas a rate needs.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import caching, sizing
from vidya_lab.caching.replay import in_flight_tpot_s
from vidya_lab.caching.trace import PromptTrace
from vidya_lab.sizing.throughput import _kv_limit

ROUTING_POLICIES = ("round_robin", "session_affinity", "prefix_aware")
#: The most replicas a routed replay may spread a trace over (one cache replay each).
MAX_ROUTED_REPLICAS = 256


@dataclass(frozen=True)
class PrefixAware:
    """SGLang's cache-aware thresholds (defaults as ``sgl-router`` ships them)."""

    cache_threshold: float = 0.5
    balance_abs_threshold: int = 32
    balance_rel_threshold: float = 1.0001

    def __post_init__(self) -> None:
        v.check_fraction("cache_threshold", self.cache_threshold)
        v.check_int("balance_abs_threshold", self.balance_abs_threshold, minimum=0)
        v.check_real("balance_rel_threshold", self.balance_rel_threshold, minimum=1.0,
                     maximum=1e6)


def _affinity(conversation: np.ndarray, n: int) -> np.ndarray:
    """A replica per conversation id: a 64-bit mix of the id (splitmix64's finaliser), mod n."""
    x = conversation.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x % np.uint64(n)).astype(np.int64)


def warm_prefixes(trace: PromptTrace) -> list[int]:
    """The segments a replica warms before readiness: each subject prompt the trace uses (each
    after the syllabus), one per subject, in subject order."""
    first = (trace.kind == "new") & (trace.subject >= 0)
    out: dict[int, int] = {}
    for i in np.flatnonzero(first):
        out.setdefault(int(trace.subject[i]), int(trace.seg_parent[trace.prompt_seg[i]]))
    return [out[s] for s in sorted(out)]


def _prompt_keys(trace: PromptTrace, block_tokens: int) -> list[list[int]]:
    keys = trace.sequence_hashes(block_tokens)
    return [keys[i][:int(p) // block_tokens] for i, p in enumerate(trace.prompt_tokens.tolist())]


def _warm_keys(trace: PromptTrace, block_tokens: int) -> set[int]:
    """Block keys of the warmed prefixes (the syllabus and each subject prompt)."""
    ext, n_warm = _with_warm_up(trace)
    keys = ext.sequence_hashes(block_tokens)
    return {k for i in range(len(trace), len(trace) + n_warm) for k in keys[i]}


def _match(view: set, keys: list[int]) -> int:
    """Leading blocks of ``keys`` in ``view``: chained keys make presence monotone, so bisect."""
    lo, hi = 0, len(keys)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if keys[mid - 1] in view:
            lo = mid
        else:
            hi = mid - 1
    return lo


def route(trace: PromptTrace, replicas: int, policy: str = "round_robin", *,
          tpot_s: float, block_tokens: int = 16, warm: bool = True,
          rule: PrefixAware | None = None) -> np.ndarray:
    """The replica (0 … replicas − 1) each request of ``trace`` is sent to, in arrival order.

    ``tpot_s`` paces the router's load count: a request is in flight from its arrival for
    ``answer_tokens × tpot_s`` seconds. ``warm``: every replica's view starts with the warmed
    prefixes. ``rule``: the prefix-aware thresholds (default :class:`PrefixAware`).
    """
    v.check_instance("trace", trace, PromptTrace, "PromptTrace (see caching.tutor_trace)")
    n = v.check_int("replicas", replicas, minimum=1, maximum=MAX_ROUTED_REPLICAS)
    v.check_choice("policy", policy, ROUTING_POLICIES)
    tpot = v.check_real("tpot_s", tpot_s, minimum=0.0, maximum=60.0)
    b = v.check_int("block_tokens", block_tokens, minimum=1, maximum=4096)
    v.check_bool("warm", warm)
    rule = PrefixAware() if rule is None else v.check_instance("rule", rule, PrefixAware)
    if policy == "round_robin":
        return np.arange(len(trace), dtype=np.int64) % n
    if policy == "session_affinity":
        return _affinity(trace.conversation, n)
    return _prefix_aware(trace, n, tpot, b, warm, rule)


def _prefix_aware(trace: PromptTrace, n: int, tpot: float, b: int, warm: bool,
                  rule: PrefixAware) -> np.ndarray:
    """SGLang's cache-aware rule (module docstring) over the trace, request by request."""
    base = _warm_keys(trace, b) if warm else set()
    views = [set(base) for _ in range(n)]
    load = np.zeros(n, dtype=np.int64)
    finishing: list[tuple[float, int]] = []
    out = np.empty(len(trace), dtype=np.int64)
    arrival, answer, prompt = trace.arrival_s, trace.answer_tokens, trace.prompt_tokens
    for i, keys in enumerate(_prompt_keys(trace, b)):
        t = float(arrival[i])
        while finishing and finishing[0][0] <= t:
            load[heapq.heappop(finishing)[1]] -= 1
        hi, lo = int(load.max()), int(load.min())
        if hi - lo > rule.balance_abs_threshold and hi > lo * rule.balance_rel_threshold:
            j = int(np.argmin(load))
        else:
            m = np.array([_match(view, keys) for view in views])
            best = int(m.max())
            if best * b > rule.cache_threshold * int(prompt[i]):
                tied = np.flatnonzero(m == best)
                j = int(tied[np.argmin(load[tied])])
            else:
                j = int(np.argmin([len(view) for view in views]))
        views[j].update(keys)
        load[j] += 1
        heapq.heappush(finishing, (t + int(answer[i]) * tpot, j))
        out[i] = j
    return out


def _path_tokens(trace: PromptTrace, seg: int) -> int:
    """Tokens on the path from the root to segment ``seg`` (its prompt, if it ends one)."""
    total = 0
    while seg >= 0:
        total += int(trace.seg_len[seg])
        seg = int(trace.seg_parent[seg])
    return total


def _with_warm_up(trace: PromptTrace) -> tuple[PromptTrace, int]:
    """The trace with one warm-up request per subject appended (prompt: syllabus + that subject,
    no question, no answer), sharing the trace's token store. Returns it and the warm-ups."""
    heads = warm_prefixes(trace)
    k, m = len(heads), int(trace.seg_len.size)
    end = int(trace.tokens.size)
    ext_start = np.concatenate((trace.seg_start, np.full(k, end, dtype=np.int64)))
    ext_len = np.concatenate((trace.seg_len, np.zeros(k, dtype=np.int64)))
    ext_parent = np.concatenate((trace.seg_parent, np.asarray(heads, dtype=np.int64)))
    path_len = [_path_tokens(trace, h) for h in heads]
    t0 = float(trace.arrival_s[0]) - 10.0 if len(trace) else 0.0

    def cat(a, extra):
        return np.concatenate((a, np.asarray(extra, dtype=a.dtype)))

    ext = PromptTrace(
        arrival_s=cat(trace.arrival_s, [t0] * k), prompt_tokens=cat(trace.prompt_tokens, path_len),
        answer_tokens=cat(trace.answer_tokens, [0] * k), kind=cat(trace.kind, ["new"] * k),
        conversation=cat(trace.conversation, [-1] * k), subject=cat(trace.subject, [-1] * k),
        shared_tokens=cat(trace.shared_tokens, path_len), tokens=trace.tokens,
        seg_start=ext_start, seg_len=ext_len, seg_parent=ext_parent,
        prompt_seg=cat(trace.prompt_seg, heads), answer_seg=cat(trace.answer_seg,
                                                                 np.arange(m, m + k)))
    return ext, k


def _subset(ext: PromptTrace, idx: np.ndarray) -> PromptTrace:
    """Requests ``idx`` of ``ext`` (in the order given), sharing its token store and block keys."""
    return PromptTrace(arrival_s=ext.arrival_s[idx], prompt_tokens=ext.prompt_tokens[idx],
                       answer_tokens=ext.answer_tokens[idx], kind=ext.kind[idx],
                       conversation=ext.conversation[idx], subject=ext.subject[idx],
                       shared_tokens=ext.shared_tokens[idx], tokens=ext.tokens,
                       seg_start=ext.seg_start, seg_len=ext.seg_len, seg_parent=ext.seg_parent,
                       prompt_seg=ext.prompt_seg[idx], answer_seg=ext.answer_seg[idx],
                       _keys=ext._keys)


@dataclass(frozen=True, eq=False)
class RoutedCache:
    """A trace replayed through N replicas' prefix caches under one router.

    Per request (arrival order): ``replica``, ``hit_tokens``; per replica: ``requests`` and
    ``token_hit_rate`` (hit tokens ÷ prompt tokens of its requests; NaN if it got none).
    ``token_hit_rate`` (fleet), ``follow_up_hit_rate`` (the same over follow-ups only),
    ``cached_tokens_mean`` (hit tokens per request), ``shared_cached_tokens_mean`` (the part of them
    in the prefix every conversation shares: the syllabus and subject blocks), ``busiest_share`` (the busiest replica's
    requests ÷ the mean), ``prompt_tokens_mean``, ``answer_tokens_mean``, ``policy``, ``tpot_s``.
    The warm-up requests are replayed but not counted.
    """

    policy: str
    replica: np.ndarray
    hit_tokens: np.ndarray
    requests: np.ndarray
    replica_hit_rate: np.ndarray
    token_hit_rate: float
    follow_up_hit_rate: float
    cached_tokens_mean: float
    shared_cached_tokens_mean: float
    busiest_share: float
    prompt_tokens_mean: float
    answer_tokens_mean: float
    tpot_s: float


def replay_routed(trace: PromptTrace, replica: sizing.Replica, replicas: int,
                  policy: str = "round_robin", *, cache_bytes: float | None = None,
                  tpot_s: float | None = None, warm: bool = True,
                  rule: PrefixAware | None = None) -> RoutedCache:
    """Route ``trace`` over ``replicas`` copies of ``replica`` and replay each one's share through
    its own prefix cache (:func:`vidya_lab.caching.simulate`, ``cache_bytes`` per GPU, default the
    whole KV budget). ``tpot_s`` default: the decode step at the batch Little's law gives for one
    replica's share of the trace's rate (:func:`vidya_lab.caching.replay.in_flight_tpot_s`)."""
    r = sizing._as_replica(replica)
    v.check_instance("trace", trace, PromptTrace, "PromptTrace (see caching.tutor_trace)")
    n = v.check_int("replicas", replicas, minimum=1, maximum=MAX_ROUTED_REPLICAS)
    if len(trace) < 2:
        raise ValueError(f"trace needs at least 2 requests to route, got {len(trace)}")
    if tpot_s is None:
        span = float(trace.arrival_s[-1] - trace.arrival_s[0])
        rate = (len(trace) - 1) / span / n if span > 0 else 1.0
        tpot_s = in_flight_tpot_s(r, rate, float(trace.prompt_tokens.mean()),
                                  float(trace.answer_tokens.mean()))
    tpot = v.check_real("tpot_s", tpot_s, minimum=0.0, maximum=60.0)
    where = route(trace, n, policy, tpot_s=tpot, block_tokens=r.block_tokens, warm=warm, rule=rule)
    ext, k = _with_warm_up(trace) if warm else (trace, 0)
    warm_idx = np.arange(len(trace), len(trace) + k)
    hit = np.zeros(len(trace), dtype=np.int64)
    for j in range(n):
        mine = np.flatnonzero(where == j)
        if not mine.size:
            continue
        res = caching.simulate(_subset(ext, np.concatenate((warm_idx, mine))), r,
                               cache_bytes=cache_bytes, tpot_s=tpot)
        hit[mine] = res.hit_tokens[k:]
    return _summary(trace, policy, where, hit, n, tpot, r.block_tokens)


def _summary(trace: PromptTrace, policy: str, where, hit, n: int, tpot: float,
             b: int) -> RoutedCache:
    prompt = trace.prompt_tokens
    shared = np.minimum(hit, trace.shared_tokens // b * b)
    count = np.bincount(where, minlength=n)
    ph = np.bincount(where, weights=hit, minlength=n)
    pp = np.bincount(where, weights=prompt, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        per = np.where(pp > 0, ph / np.where(pp > 0, pp, 1.0), np.nan)
    fu = trace.kind == "follow-up"
    fu_rate = float(hit[fu].sum() / prompt[fu].sum()) if fu.any() else math.nan
    return RoutedCache(policy, where, hit, count, per, float(hit.sum() / prompt.sum()), fu_rate,
                       float(hit.mean()), float(shared.mean()), float(count.max() / count.mean()),
                       float(prompt.mean()), float(trace.answer_tokens.mean()), tpot)


def routed_capacity(replica: sizing.Replica, routed: RoutedCache | None, *,
                    prompt_tokens: float, answer_tokens: float, tpot_target_s: float) -> float:
    """One replica's capacity, requests/s at the TPOT target, with the routed hit tokens counted.

    Of every prompt (mean lengths), ``routed.cached_tokens_mean`` tokens are not prefilled
    (their attention still reads them), and ``routed.shared_cached_tokens_mean`` of those, the
    syllabus and subject blocks every sequence shares, are held once in KV memory; a hit on a
    conversation's own history saves its prefill but its blocks are that sequence's alone. The
    batch is the largest whose steady mean TPOT meets the target within that memory
    (:func:`vidya_lab.sizing.slo_batch`, :func:`vidya_lab.sizing.cycle`); ``routed=None``: no
    cache counted (:func:`vidya_lab.sizing.capacity_rps`).
    """
    r = sizing._as_replica(replica)
    isl = int(round(v.check_real("prompt_tokens", prompt_tokens, minimum=2.0, maximum=1e7)))
    osl = int(round(v.check_real("answer_tokens", answer_tokens, minimum=1.0, maximum=1e7)))
    tpot = v.check_real("tpot_target_s", tpot_target_s, minimum=0.0, min_inclusive=False)
    if routed is None:
        return sizing.capacity_rps(r, isl, osl, tpot)
    v.check_instance("routed", routed, RoutedCache)
    hit = min(int(round(routed.cached_tokens_mean)), isl - 1)
    shared = min(int(round(routed.shared_cached_tokens_mean)), hit)
    memory = min(_kv_limit(r, isl, osl, shared), r.max_num_seqs)
    b = min(sizing.slo_batch(r, isl, osl, tpot, hit), memory)
    return 0.0 if b < 1 else sizing.cycle(r, b, isl, osl, hit)["output_tokens_per_s"] / osl
