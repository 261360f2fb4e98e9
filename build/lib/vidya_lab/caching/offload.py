"""KV offload: a second cache tier in CPU memory, restored over PCIe instead of recomputed.

When the GPU's prefix cache is too small for the conversation histories (the cliff of
:func:`~vidya_lab.caching.cliff_sweep`), the blocks it evicts can be copied to the host's memory
instead of being dropped, and copied back when their student returns (LMCache, and vLLM's
``OffloadingConnector`` behind its KV-connector interface, do this). Whether that pays is one
comparison per request:

* **restore**: the offloaded blocks cross PCIe: tokens × KV bytes per token per GPU ÷ the
  host-to-device copy rate (each GPU of a tensor-parallel group copies its own share of every block
  over its own link, at the same time) — :func:`restore_time_s`, with the copy rates measured by
  nvbandwidth on cloud machines (``device_measurements.csv``: :func:`host_to_device_bytes_per_s`);
* **recompute**: the same tokens prefilled again through the cost model (chunks attending to the
  cached prefix before them).

:func:`restore_or_recompute` prices both for one request and :func:`break_even_link_bytes_per_s`
finds the copy rate below which recomputing wins (a slower tier, such as a disk, must beat it).

The tier's contents come from a replay (:func:`simulate_offload`). Model: the GPU tier is the book's
prefix cache; a block it evicts moves to the CPU tier (least recently used first out), and a block
restored from the CPU tier is written back to the GPU as a computed block would be (an *exclusive*
two-level LRU). Then the GPU tier sees exactly the access stream of the GPU-only cache, and the
blocks held in either tier are exactly those an LRU cache of the two capacities together would
hold, so one replay with two caches side by side gives both (exact for plain LRU; with leaf-first
eviction a close model). Copies run on the GPU's copy engines, beside the compute: they add to the
request's TTFT but not to other requests' steps.
"""

from __future__ import annotations

import csv
import functools
import heapq
import math
from importlib import resources

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.caching.deployment import cache_capacity_blocks, default_replica
from vidya_lab.caching.prefix_cache import POLICIES, PrefixCache
from vidya_lab.caching.replay import in_flight_tpot_s
from vidya_lab.caching.savings import prefill_time
from vidya_lab.caching.trace import KINDS, PromptTrace
from vidya_lab.catalog import GPU, get_gpu, gpu_id_for

#: The measurement file and its row of host-to-device copy rates (pinned host memory, GB/s).
MEASUREMENTS_FILE = "device_measurements.csv"
H2D_METRIC = "host_to_device_copy"
#: Slowest and fastest copy rates accepted when given by hand, bytes/s (a disk to a PCIe Gen6 x16).
MIN_LINK_BYTES_PER_S, MAX_LINK_BYTES_PER_S = 1e6, 1e12


@functools.lru_cache(maxsize=1)
def _h2d_rates() -> dict[str, tuple[float, str]]:
    """{catalog gpu id: (bytes/s, citation)} from the measurement file's host-to-device rows."""
    text = resources.files("vidya_lab").joinpath("data", MEASUREMENTS_FILE).read_text()
    out: dict[str, tuple[float, str]] = {}
    for row in csv.DictReader(text.splitlines()):
        if row["metric"] != H2D_METRIC:
            continue
        if row["unit"] != "GB/s":  # pragma: no cover - the file's convention, checked by a test
            raise ValueError(f"{MEASUREMENTS_FILE}: {H2D_METRIC} of {row['gpu']} is in "
                             f"{row['unit']!r}, expected 'GB/s'")
        out[gpu_id_for(row["gpu"])] = (float(row["value"]) * 1e9, row["citation"])
    return out


def host_to_device_bytes_per_s(gpu) -> float:
    """Measured host-to-device copy rate of one GPU from pinned host memory, bytes/s.

    From nvbandwidth/TransferBench runs on cloud machines (``device_measurements.csv``, Azure
    AI-benchmarking-guide): e.g. 51 GB/s on an H100 SXM and 52 GB/s on an H200. A GPU without a
    measurement raises ``ValueError`` naming those that have one (pass ``link_bytes_per_s`` to the
    functions of this module instead).
    """
    g = get_gpu(gpu) if isinstance(gpu, str) else v.check_instance(
        "gpu", gpu, GPU, "catalog gpu id or catalog.GPU")
    rates = _h2d_rates()
    if g.id not in rates:
        raise ValueError(f"no measured host-to-device copy rate for {g.id} in {MEASUREMENTS_FILE}; "
                         f"measured: {', '.join(sorted(rates))}; pass link_bytes_per_s instead")
    return rates[g.id][0]


def _link(r: sizing.Replica, link_bytes_per_s) -> float:
    if link_bytes_per_s is None:
        return host_to_device_bytes_per_s(r.gpu)
    return v.check_real("link_bytes_per_s", link_bytes_per_s, minimum=MIN_LINK_BYTES_PER_S,
                        maximum=MAX_LINK_BYTES_PER_S)


def restore_time_s(r: sizing.Replica, tokens: int, link_bytes_per_s: float | None = None) -> float:
    """Seconds to copy the KV of ``tokens`` tokens back from host memory.

    Formula: tokens × ``r.kv_bytes_per_token_per_gpu`` ÷ link bytes/s: every GPU of the group copies
    its own share over its own link at once. ``link_bytes_per_s`` defaults to the GPU's measured
    host-to-device rate (:func:`host_to_device_bytes_per_s`).
    """
    sizing._as_replica(r)
    n = v.check_int("tokens", tokens, minimum=0, maximum=10**9)
    return n * r.kv_bytes_per_token_per_gpu / _link(r, link_bytes_per_s)


def restore_or_recompute(r: sizing.Replica, prompt_tokens: int, gpu_cached_tokens: int,
                         offloaded_tokens: int, link_bytes_per_s: float | None = None) -> dict:
    """TTFT of one request (idle replica) whose prompt has ``gpu_cached_tokens`` in the GPU's cache
    and the next ``offloaded_tokens`` in the CPU tier: restored, or recomputed.

    Returns ``restore_s`` (the copy), ``ttft_restore_s`` (overhead + copy + prefill of the rest),
    ``ttft_recompute_s`` (overhead + prefill of everything past the GPU's tokens), ``saved_s`` and
    ``speedup`` (recompute ÷ restore TTFT).
    """
    sizing._as_replica(r)
    n = v.check_int("prompt_tokens", prompt_tokens, minimum=1, maximum=10**7)
    g = v.check_int("gpu_cached_tokens (below prompt_tokens)", gpu_cached_tokens, minimum=0,
                    maximum=n - 1)
    o = v.check_int("offloaded_tokens (below prompt_tokens - gpu_cached_tokens)", offloaded_tokens,
                    minimum=0, maximum=n - 1 - g)
    v.check_work("restore_or_recompute (chunks)", (n - g) / r.max_batched_tokens, 1e5,
                 unit="iterations")
    overhead = r.calibration.request_overhead_s
    copy = restore_time_s(r, o, link_bytes_per_s)
    restored = overhead + copy + prefill_time(r, n, g + o)
    recomputed = overhead + prefill_time(r, n, g)
    return {"restore_s": copy, "ttft_restore_s": restored, "ttft_recompute_s": recomputed,
            "saved_s": recomputed - restored, "speedup": recomputed / restored}


def break_even_link_bytes_per_s(r: sizing.Replica, prompt_tokens: int, gpu_cached_tokens: int,
                                offloaded_tokens: int) -> float:
    """Copy rate (bytes/s per GPU) at which restoring the offloaded tokens takes as long as
    recomputing them: offloaded bytes per GPU ÷ (prefill past the GPU's tokens − prefill past both).

    A tier whose link is slower than this loses to recomputing (``inf`` if nothing is offloaded).
    """
    sizing._as_replica(r)
    x = restore_or_recompute(r, prompt_tokens, gpu_cached_tokens, offloaded_tokens,
                             MAX_LINK_BYTES_PER_S)
    gain = x["ttft_recompute_s"] - (x["ttft_restore_s"] - x["restore_s"])
    if offloaded_tokens == 0 or gain <= 0:
        return math.inf
    return offloaded_tokens * r.kv_bytes_per_token_per_gpu / gain


def _two_tier_replay(trace: PromptTrace, r: sizing.Replica, gpu: PrefixCache, both: PrefixCache,
                     tpot: float, link: float) -> tuple[np.ndarray, np.ndarray]:
    """Admit every request into the GPU tier and the two tiers together; hit tokens of each."""
    b = r.block_tokens
    keys = trace.sequence_hashes(b)
    prompt, answer, arrival = trace.prompt_tokens, trace.answer_tokens, trace.arrival_s
    overhead, per_block = r.calibration.request_overhead_s, b * r.kv_bytes_per_token_per_gpu / link
    hit_gpu = np.zeros(len(trace), dtype=np.int64)
    hit_all = np.zeros(len(trace), dtype=np.int64)
    running: list[tuple[float, int, object, object, list]] = []
    for i in range(len(trace)):
        t = float(arrival[i])
        while running and running[0][0] <= t:
            _, _, h_gpu, h_all, done = heapq.heappop(running)
            gpu.release(h_gpu, done)
            both.release(h_all, done)
        p, own = int(prompt[i]), keys[i]
        g, h_gpu = gpu.admit(own, (p - 1) // b, p // b)
        a, h_all = both.admit(own, (p - 1) // b, p // b)
        a = max(a, g)
        hit_gpu[i], hit_all[i] = g * b, a * b
        ttft = overhead + (a - g) * per_block + prefill_time(r, p, a * b)
        heapq.heappush(running, (t + ttft + int(answer[i]) * tpot, i, h_gpu, h_all, own))
    for _, _, h_gpu, h_all, done in running:
        gpu.release(h_gpu, done)
        both.release(h_all, done)
    return hit_gpu, hit_all


def simulate_offload(trace: PromptTrace, r: sizing.Replica | None = None, *,
                     gpu_cache_bytes: float, cpu_cache_bytes: float,
                     link_bytes_per_s: float | None = None, policy: str = "lru-leaf",
                     kinds=("follow-up",)) -> dict:
    """Replay ``trace`` through a GPU prefix cache of ``gpu_cache_bytes`` per GPU with a CPU tier of
    ``cpu_cache_bytes`` per GPU behind it (module docstring: an exclusive two-level LRU).

    ``tpot_s`` of each answer is the decode step at the trace's in-flight batch, as in
    :func:`~vidya_lab.caching.simulate`. For the requests of ``kinds`` (default the follow-up turns),
    returns ``hit_rate_gpu`` (tokens served by the GPU tier alone, over prompt tokens) and
    ``hit_rate_tiered`` (by either tier), ``restored_tokens``, ``ttft_s_mean_gpu_only`` (the same
    requests without the tier: the offloaded blocks recomputed) and ``ttft_s_mean_tiered``
    (restored over the link), ``prefill_tokens_gpu_only`` and ``prefill_tokens_tiered``; and for all
    requests ``token_hit_rate_gpu`` and ``token_hit_rate_tiered``.
    """
    v.check_instance("trace", trace, PromptTrace, "PromptTrace (see tutor_trace)")
    r = default_replica() if r is None else sizing._as_replica(r)
    policy = v.check_choice("policy", policy, POLICIES)
    g_bytes = v.check_real("gpu_cache_bytes", gpu_cache_bytes, minimum=0.0)
    c_bytes = v.check_real("cpu_cache_bytes", cpu_cache_bytes, minimum=0.0, maximum=1e15)
    link = _link(r, link_bytes_per_s)
    kinds = (kinds,) if isinstance(kinds, str) else tuple(
        v.check_instances("kinds", kinds, str, "request kind (str)", max_length=100))
    for k in kinds:
        v.check_choice("kinds", k, KINDS)
    sel = np.isin(trace.kind, list(kinds))
    if not sel.any():
        raise ValueError(f"the trace has no requests of kinds {kinds}")
    g_blocks = cache_capacity_blocks(r, g_bytes)
    gpu = PrefixCache(g_blocks, r.block_tokens, policy)
    both = PrefixCache(g_blocks + cache_capacity_blocks(r, c_bytes), r.block_tokens, policy)
    n = len(trace)
    span = float(trace.arrival_s[-1] - trace.arrival_s[0]) if n > 1 else 0.0
    tpot = in_flight_tpot_s(r, (n - 1) / span if span > 0 else 1.0,
                            float(trace.prompt_tokens.mean()), float(trace.answer_tokens.mean()))
    hit_gpu, hit_all = _two_tier_replay(trace, r, gpu, both, tpot, link)
    return _summary(r, trace, sel, hit_gpu, hit_all, link, g_bytes, c_bytes)


def _summary(r, trace, sel, hit_gpu, hit_all, link, g_bytes, c_bytes) -> dict:
    prompt = trace.prompt_tokens
    overhead, per_token = r.calibration.request_overhead_s, r.kv_bytes_per_token_per_gpu / link
    idx = np.flatnonzero(sel)
    gpu_only = [overhead + prefill_time(r, int(prompt[i]), int(hit_gpu[i])) for i in idx]
    tiered = [overhead + (hit_all[i] - hit_gpu[i]) * per_token
              + prefill_time(r, int(prompt[i]), int(hit_all[i])) for i in idx]
    total = float(prompt[sel].sum())
    return {"requests": int(sel.sum()), "gpu_cache_bytes": g_bytes, "cpu_cache_bytes": c_bytes,
            "link_bytes_per_s": link,
            "hit_rate_gpu": float(hit_gpu[sel].sum() / total),
            "hit_rate_tiered": float(hit_all[sel].sum() / total),
            "restored_tokens": int((hit_all - hit_gpu)[sel].sum()),
            "ttft_s_mean_gpu_only": float(np.mean(gpu_only)),
            "ttft_s_mean_tiered": float(np.mean(tiered)),
            "prefill_tokens_gpu_only": int((prompt - hit_gpu)[sel].sum()),
            "prefill_tokens_tiered": int((prompt - hit_all)[sel].sum()),
            "token_hit_rate_gpu": float(hit_gpu.sum() / prompt.sum()),
            "token_hit_rate_tiered": float(hit_all.sum() / prompt.sum())}


def offload_sweep(trace: PromptTrace, gpu_cache_bytes, cpu_cache_bytes: float,
                  r: sizing.Replica | None = None, **kw) -> list[dict]:
    """:func:`simulate_offload` at each GPU cache size in ``gpu_cache_bytes`` (bytes per GPU, at
    most 32 sizes) with the same CPU tier: one summary per size."""
    sizes = v.check_reals("gpu_cache_bytes", gpu_cache_bytes, minimum=0.0, max_length=32)
    return [simulate_offload(trace, r, gpu_cache_bytes=float(s), cpu_cache_bytes=cpu_cache_bytes,
                             **kw) for s in sizes]
