"""The prefix cache as a timing side channel, and per-tenant isolation (a cache salt) against it.

A cached prefix answers faster, and the difference is visible to anyone who can time a request:
someone who guesses another user's text, sends it, and gets a fast first token has learned that
the text was cached (Gu et al., *Auditing Prompt Caching in Language Model APIs*, ICML 2025, found
caches shared across users at seven API providers). :func:`probe_signal` is that difference through the cost model.

The defence engines offer is a **cache salt**: vLLM mixes a per-request ``cache_salt`` into the hash
of a prompt's first block, so only requests with the same salt can reuse each other's blocks (vLLM's
prefix-caching design notes). Salting every key of a request with its tenant is equivalent (the
keys are chained, so a different first key changes all of them): :func:`salt_keys`. The price is
the sharing it forbids — each tenant keeps its own copy of the syllabus and pays its own first
misses — measured by replaying a trace with each conversation assigned to a tenant
(:func:`simulate_isolated`), and bounded in memory by :func:`tenant_prefix_bytes`.
"""

from __future__ import annotations

import heapq

import numpy as np

from vidya_lab import _cache, sizing
from vidya_lab import _validate as v
from vidya_lab.caching.deployment import cache_capacity_blocks, default_replica
from vidya_lab.caching.prefix_cache import POLICIES, PrefixCache
from vidya_lab.caching.replay import in_flight_tpot_s
from vidya_lab.caching.savings import prefill_time
from vidya_lab.caching.trace import PromptTrace
from vidya_lab.scenario import TANVI

#: Most tenants a replay assigns (a school district's schools, or every conversation its own).
MAX_TENANTS = 1_000_000


def salt_keys(keys, salt: int) -> list[int]:
    """A request's block keys in the key space of tenant ``salt``: hash((salt, key)) for each.

    Two tenants share no key (up to 64-bit hash collisions); one tenant shares exactly as before.
    """
    keys = v.check_instances("keys", keys, int, "block key (int)")
    return _salt(keys, v.check_int("salt", salt))


def _salt(keys: list[int], salt: int) -> list[int]:
    return [hash((salt, k)) for k in keys]


def probe_signal(r: sizing.Replica, known_tokens: int, guessed_tokens: int,
                 suffix_tokens: int = 1) -> dict:
    """How much faster a probe's first token comes when its guessed text was cached, seconds.

    The probe is ``known_tokens`` the attacker knows are cached (a public system prompt), then the
    ``guessed_tokens`` it wants to test, then ``suffix_tokens`` of its own. On a miss the replica
    prefills guess and suffix; on a hit only the suffix (both attend to everything before them):
    ``prefill_time_with_cache_s`` through the cost model, on an idle replica. Returns
    ``ttft_miss_s``, ``ttft_hit_s`` and ``signal_s`` (their difference).
    """
    sizing._as_replica(r)
    k = v.check_int("known_tokens", known_tokens, minimum=0, maximum=10**6)
    g = v.check_int("guessed_tokens", guessed_tokens, minimum=1, maximum=10**6)
    s = v.check_int("suffix_tokens", suffix_tokens, minimum=1, maximum=10**6)
    overhead = r.calibration.request_overhead_s
    miss = overhead + prefill_time(r, k + g + s, k)
    hit = overhead + prefill_time(r, k + g + s, k + g)
    return {"ttft_miss_s": miss, "ttft_hit_s": hit, "signal_s": miss - hit}


def tenant_prefix_blocks(block_tokens: int = 16, syllabus_tokens: int = TANVI.syllabus_prompt_tokens,
                         subjects: int = TANVI.subjects,
                         subject_tokens: int = TANVI.subject_prompt_tokens) -> int:
    """Whole blocks one tenant's resident prefixes take: the syllabus once, and each subject's
    blocks past it: floor(S/B) + subjects × (floor((S + P)/B) − floor(S/B)).

    The block that holds the syllabus's end and the subject's start differs per subject, so it
    counts with the subjects."""
    b = v.check_int("block_tokens", block_tokens, minimum=1)
    syl = v.check_int("syllabus_tokens", syllabus_tokens, minimum=0)
    n = v.check_int("subjects", subjects, minimum=0, maximum=10**6)
    sub = v.check_int("subject_tokens", subject_tokens, minimum=0)
    return syl // b + n * ((syl + sub) // b - syl // b)


def tenant_prefix_bytes(r: sizing.Replica, tenants: int, **prefix) -> float:
    """Bytes per GPU that ``tenants`` isolated tenants' resident prefixes take on replica ``r``:
    tenants × :func:`tenant_prefix_blocks` × block tokens × KV bytes per token per GPU."""
    sizing._as_replica(r)
    t = v.check_int("tenants", tenants, minimum=0, maximum=MAX_TENANTS)
    blocks = tenant_prefix_blocks(r.block_tokens, **prefix)
    return t * blocks * r.block_tokens * r.kv_bytes_per_token_per_gpu


def assign_tenants(trace: PromptTrace, tenants: int | None, seed: int = 0) -> np.ndarray:
    """A tenant per request: each conversation drawn uniformly from ``tenants`` (seeded); ``None``
    gives every conversation its own tenant (a salt per student); 1 is no isolation."""
    v.check_instance("trace", trace, PromptTrace, "PromptTrace (see tutor_trace)")
    conv = trace.conversation
    if tenants is None:
        return conv.astype(np.int64)
    t = v.check_int("tenants", tenants, minimum=1, maximum=MAX_TENANTS)
    rng = np.random.default_rng(v.check_int("seed", seed, minimum=0))
    ids, inverse = np.unique(conv, return_inverse=True)
    return rng.integers(0, t, size=ids.size)[inverse].astype(np.int64)


def _salted_replay(trace: PromptTrace, r: sizing.Replica, cache: PrefixCache, tenant: np.ndarray,
                   tpot: float) -> np.ndarray:
    b = r.block_tokens
    keys = trace.sequence_hashes(b)
    prompt, answer, arrival = trace.prompt_tokens, trace.answer_tokens, trace.arrival_s
    overhead = r.calibration.request_overhead_s
    hit = np.zeros(len(trace), dtype=np.int64)
    running: list[tuple[float, int, object, list]] = []
    for i in range(len(trace)):
        t = float(arrival[i])
        while running and running[0][0] <= t:
            _, _, handle, done = heapq.heappop(running)
            cache.release(handle, done)
        p, own = int(prompt[i]), _salt(keys[i], int(tenant[i]))
        blocks, handle = cache.admit(own, (p - 1) // b, p // b)
        hit[i] = blocks * b
        ttft = overhead + prefill_time(r, p, int(hit[i]))
        heapq.heappush(running, (t + ttft + int(answer[i]) * tpot, i, handle, own))
    for _, _, handle, done in running:
        cache.release(handle, done)
    return hit


def simulate_isolated(trace: PromptTrace, tenant, r: sizing.Replica | None = None, *,
                      cache_bytes: float | None = None, policy: str = "lru-leaf") -> dict:
    """Replay ``trace`` through one replica's prefix cache with every request salted by its tenant.

    ``tenant``: one integer per request (:func:`assign_tenants`). The cache is ``cache_bytes`` per
    GPU (default the whole KV budget, as :func:`~vidya_lab.caching.simulate`). Returns
    ``tenants`` (distinct), ``token_hit_rate``, ``prefill_tokens`` (computed in all),
    ``mean_cached_tokens`` (per request), ``ttft_s_mean`` (idle replica), ``cache_bytes_used``
    (peak, per GPU) and ``evictions``.

    Read back from ``VIDYA_LAB_CACHE`` when set and this very call is there
    (:mod:`vidya_lab._cache`)."""
    return _cache.call("simulate_isolated", _simulate_isolated, dict(locals()))


def _simulate_isolated(trace, tenant, r, cache_bytes, policy):
    """:func:`simulate_isolated`, computed."""
    v.check_instance("trace", trace, PromptTrace, "PromptTrace (see tutor_trace)")
    r = default_replica() if r is None else sizing._as_replica(r)
    policy = v.check_choice("policy", policy, POLICIES)
    salts = np.asarray(tenant)
    if salts.shape != (len(trace),) or salts.dtype.kind not in "iu":
        raise ValueError(f"tenant must hold one integer per request ({len(trace)}), got shape "
                         f"{salts.shape} and dtype {salts.dtype}")
    budget = r.kv_budget_bytes if cache_bytes is None else v.check_real(
        "cache_bytes", cache_bytes, minimum=0.0)
    cache = PrefixCache(cache_capacity_blocks(r, budget), r.block_tokens, policy)
    n = len(trace)
    span = float(trace.arrival_s[-1] - trace.arrival_s[0]) if n > 1 else 0.0
    tpot = in_flight_tpot_s(r, (n - 1) / span if span > 0 else 1.0,
                            float(trace.prompt_tokens.mean()), float(trace.answer_tokens.mean()))
    hit = _salted_replay(trace, r, cache, salts, tpot)
    prompt = trace.prompt_tokens
    overhead = r.calibration.request_overhead_s
    ttft = [overhead + prefill_time(r, int(p), int(h))
            for p, h in zip(prompt.tolist(), hit.tolist(), strict=True)]
    return {"tenants": int(np.unique(salts).size), "token_hit_rate": float(hit.sum() / prompt.sum()),
            "prefill_tokens": int((prompt - hit).sum()), "mean_cached_tokens": float(hit.mean()),
            "ttft_s_mean": float(np.mean(ttft)),
            "cache_bytes_used": cache.peak_blocks * r.block_tokens * r.kv_bytes_per_token_per_gpu,
            "evictions": cache.evictions}
