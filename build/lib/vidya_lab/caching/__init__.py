"""Prefix caching, KV offload, speculative decoding and low precision: chapter 4's speed-ups, with their costs.

Every tutor request starts with the same 3,000-token syllabus. Without a prefix cache the replica
prefills it again for every request; with one (as vLLM's automatic prefix caching and SGLang's
RadixAttention do it), the KV of the syllabus is kept and reused.

Read the code in this order (each file one idea, with the function that holds it):

1. :mod:`~vidya_lab.caching.hashing` — blocks and chained keys: :func:`block_hashes`.
2. :mod:`~vidya_lab.caching.prefix_cache` — the cache with reference counts and LRU eviction:
   :meth:`PrefixCache.admit` (and :meth:`PrefixCache.release`).
3. :mod:`~vidya_lab.caching.trace` — requests with token ids, stored as a tree of shared segments:
   :meth:`PromptTrace.sequence_hashes`.
4. :mod:`~vidya_lab.caching.tutor_trace` — Tanvi's traffic (syllabus, subjects, conversations,
   uploads), seeded: :func:`tutor_trace`.
5. :mod:`~vidya_lab.caching.deployment` — the replica and the cache's size in blocks:
   :func:`cache_capacity_blocks`.
6. :mod:`~vidya_lab.caching.savings` — what a hit saves, through the cost model:
   :func:`prefill_time_with_cache_s`.
7. :mod:`~vidya_lab.caching.replay` — a trace through the cache: :func:`simulate`.
8. :mod:`~vidya_lab.caching.sweeps` — how much cache: :func:`cliff_sweep`.
9. :mod:`~vidya_lab.caching.memory_cost` — what the cache's memory costs the running batch:
   :func:`saturated_throughput_with_cache`.
10. :mod:`~vidya_lab.caching.capacity` — what the cache is worth in a replica's capacity, and
    each number format with it: :func:`capacity_with_cache`.
11. :mod:`~vidya_lab.caching.offload` — a CPU tier restored over PCIe instead of recomputed:
    :func:`restore_or_recompute` (and the two-tier replay :func:`simulate_offload`).
12. :mod:`~vidya_lab.caching.speculative` — speculative decoding priced by the cost model:
    :func:`speculative_at_batch`.
13. :mod:`~vidya_lab.caching.draft_heads` — EAGLE-style draft heads and multi-token prediction,
    their draft step priced by the cost model: :func:`draft_head_at_batch`.
14. :mod:`~vidya_lab.caching.quantisation` — :func:`quantisation_table`.
15. :mod:`~vidya_lab.caching.isolation` — the cache's timing side channel and per-tenant salts:
    :func:`probe_signal` and :func:`simulate_isolated`.
16. :mod:`~vidya_lab.caching.disaggregation` — :func:`prefill_interference`.

References: Kwon et al., *PagedAttention* (arXiv:2309.06180); Zheng et al., *SGLang* (arXiv:2312.07104);
Leviathan et al., *Fast Inference from Transformers via Speculative Decoding* (arXiv:2211.17192);
Gu et al., *Auditing Prompt Caching in Language Model APIs* (ICML 2025); vLLM's prefix-caching design notes
(the cache salt);
Zhong et al., *DistServe* (arXiv:2401.09670); Patel et al., *Splitwise* (ISCA 2024).
"""

from __future__ import annotations

from vidya_lab.caching.capacity import PRECISION_OPTIONS, capacity_by_precision, capacity_with_cache
from vidya_lab.caching.deployment import cache_capacity_blocks, default_replica
from vidya_lab.caching.disaggregation import prefill_interference
from vidya_lab.caching.draft_heads import (
    draft_head_at_batch,
    draft_head_break_even_batch,
    head_draft_cost_ratio,
)
from vidya_lab.caching.hashing import ROOT_HASH, block_hashes
from vidya_lab.caching.isolation import (
    assign_tenants,
    probe_signal,
    salt_keys,
    simulate_isolated,
    tenant_prefix_blocks,
    tenant_prefix_bytes,
)
from vidya_lab.caching.memory_cost import (
    break_even_cache_bytes,
    concurrency_with_cache,
    saturated_throughput_with_cache,
)
from vidya_lab.caching.offload import (
    break_even_link_bytes_per_s,
    host_to_device_bytes_per_s,
    offload_sweep,
    restore_or_recompute,
    restore_time_s,
    simulate_offload,
)
from vidya_lab.caching.prefix_cache import POLICIES, PrefixCache
from vidya_lab.caching.quantisation import QUANT_OPTIONS, quantisation_table
from vidya_lab.caching.replay import CacheResult, best_case_token_hit_rate, simulate
from vidya_lab.caching.savings import prefill_flops, prefill_time_with_cache_s, ttft_with_cache_s
from vidya_lab.caching.speculative import (
    DEFAULT_DRAFT_MODEL,
    AssumedCostDraft,
    DraftModel,
    PromptLookup,
    spec_break_even_batch,
    spec_decode_at_batch,
    spec_expected_tokens,
    spec_walltime_speedup,
    speculative_at_batch,
    speculative_break_even_batch,
)
from vidya_lab.caching.sweeps import MAX_SWEEP_SIZES, cliff_sweep, sweep_cache_bytes
from vidya_lab.caching.trace import KINDS, PromptTrace
from vidya_lab.caching.tutor_trace import (
    MAX_SEQUENCE_TOKENS,
    MAX_SUBJECTS,
    MAX_TRACE_REQUESTS,
    MAX_TRACE_TOKENS,
    THINK_S_CV,
    THINK_S_MEAN,
    VOCAB_TOKENS,
    tutor_trace,
)

__all__ = [
    "POLICIES",
    "PrefixCache",
    "PromptTrace",
    "CacheResult",
    "block_hashes",
    "default_replica",
    "cache_capacity_blocks",
    "tutor_trace",
    "simulate",
    "sweep_cache_bytes",
    "cliff_sweep",
    "break_even_cache_bytes",
    "best_case_token_hit_rate",
    "prefill_time_with_cache_s",
    "ttft_with_cache_s",
    "prefill_flops",
    "concurrency_with_cache",
    "saturated_throughput_with_cache",
    "spec_expected_tokens",
    "spec_walltime_speedup",
    "spec_decode_at_batch",
    "spec_break_even_batch",
    "speculative_at_batch",
    "speculative_break_even_batch",
    "DraftModel",
    "PromptLookup",
    "AssumedCostDraft",
    "DEFAULT_DRAFT_MODEL",
    "quantisation_table",
    "QUANT_OPTIONS",
    "prefill_interference",
    "capacity_with_cache",
    "capacity_by_precision",
    "PRECISION_OPTIONS",
    "host_to_device_bytes_per_s",
    "restore_time_s",
    "restore_or_recompute",
    "break_even_link_bytes_per_s",
    "simulate_offload",
    "offload_sweep",
    "probe_signal",
    "head_draft_cost_ratio",
    "draft_head_at_batch",
    "draft_head_break_even_batch",
    "salt_keys",
    "assign_tenants",
    "simulate_isolated",
    "tenant_prefix_blocks",
    "tenant_prefix_bytes",
    "ROOT_HASH",
    "KINDS",
    "VOCAB_TOKENS",
    "THINK_S_MEAN",
    "THINK_S_CV",
    "MAX_TRACE_REQUESTS",
    "MAX_SUBJECTS",
    "MAX_TRACE_TOKENS",
    "MAX_SEQUENCE_TOKENS",
    "MAX_SWEEP_SIZES",
]
