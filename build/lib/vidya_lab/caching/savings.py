"""What a cache hit saves: prefill time (TTFT) and FLOPs, through the one cost model.

A request whose first ``k`` prompt tokens are cached computes only the uncached suffix, in chunks of
``max_batched_tokens``, each attending to everything before it (the cached prefix is prior context):
``sizing.iteration_time_s(r, prefill=[(chunk, prior)])`` summed over chunks. With nothing cached
this is :func:`vidya_lab.sizing.prefill_time_s` exactly.
"""

from __future__ import annotations

import functools

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing


def prefill_time_with_cache_s(r: sizing.Replica, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """Prefill time of a prompt whose first ``cached_tokens`` are in the cache (TTFT at idle), seconds.

    Only the uncached suffix is computed, in chunks of ``max_batched_tokens``, each attending to
    everything before it: Σ ``sizing.iteration_time_s(r, prefill=[(chunk, prior)])``. With
    ``cached_tokens = 0`` this is :func:`vidya_lab.sizing.prefill_time_s`.
    """
    sizing._as_replica(r)
    n = v.check_int("prompt_tokens", prompt_tokens, minimum=1, maximum=10**9)
    k = v.check_cached_tokens(cached_tokens, n, "prompt_tokens")
    v.check_work("prefill_time_with_cache_s (chunks)", (n - k) / r.max_batched_tokens, 1e6,
                 unit="iterations")
    return prefill_time(r, n, k)


def ttft_with_cache_s(r: sizing.Replica, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """Time to first token on an idle replica when ``cached_tokens`` are cached, seconds.

    Formula: the calibration's ``request_overhead_s`` + :func:`prefill_time_with_cache_s`; with
    nothing cached it is :func:`vidya_lab.sizing.ttft_s`.
    """
    sizing._as_replica(r)
    return r.calibration.request_overhead_s + prefill_time_with_cache_s(r, prompt_tokens, cached_tokens)


@functools.lru_cache(maxsize=65536)
def prefill_time(r: sizing.Replica, n: int, k: int) -> float:
    """:func:`prefill_time_with_cache_s` without validation, memoised (for replays)."""
    total, done = 0.0, k
    while done < n:
        c = min(r.max_batched_tokens, n - done)
        total += sizing.iteration_time_s(r, prefill=[(c, done)])
        done += c
    return total


def prefill_flops(model, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """FLOPs to prefill the uncached part of a prompt, whole model (all GPUs together).

    Formula: 2·L·P_layer·u + 4·h·hd·L·(u·k + u(u+1)/2), with u = prompt − cached new tokens,
    k = cached tokens, P_layer the parameters of one block a token multiplies (top-k experts for an
    MoE), h query heads of dimension hd: the matrix-multiply and attention terms of the cost model.
    The output head runs once per request either way and is left out.
    """
    m = sizing.get_model(model)
    n = v.check_int("prompt_tokens", prompt_tokens, minimum=0)
    k = v.check_int("cached_tokens", cached_tokens, minimum=0, maximum=max(n, 0))
    return float(prefill_flops_array(m, np.asarray([n]), np.asarray([k]))[0])


def prefill_flops_array(m, prompt_tokens: np.ndarray, cached_tokens: np.ndarray) -> np.ndarray:
    """:func:`prefill_flops` for arrays of requests (``m`` a catalog Model; no validation)."""
    u = prompt_tokens.astype(np.float64) - cached_tokens
    pairs = u * cached_tokens + u * (u + 1) / 2
    return 2.0 * m.n_layers * m.layer_params(active=True) * u \
        + 4.0 * m.n_heads * m.head_dim * m.n_layers * pairs
