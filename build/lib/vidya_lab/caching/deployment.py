"""The replica the chapter's cache lives on, and how many blocks a cache budget in bytes holds.

A cache of ``cache_bytes`` per GPU holds ``cache_bytes // (block_tokens × KV bytes per token per
GPU)`` blocks, with the KV bytes from :mod:`vidya_lab.sizing` (so ``cache_bytes`` is per GPU, like
``Replica.kv_budget_bytes``; each GPU of a tensor-parallel group holds its share of every block).
"""

from __future__ import annotations

import functools
from dataclasses import replace

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.catalog import get_gpu, get_model, get_precision
from vidya_lab.scenario import TANVI


@functools.lru_cache(maxsize=64)
def _default_replica(model: str, gpu: str, precision: str) -> sizing.Replica:
    from vidya_lab.layouts import reference_tp

    return sizing.Replica(model, gpu, tp=reference_tp(model, gpu, precision), precision=precision)


def default_replica(model: str = TANVI.model_id, gpu: str = TANVI.candidate_gpu_ids[0],
                    precision: str = "bf16") -> sizing.Replica:
    """The book's replica of ``model`` on ``gpu``: tensor parallelism of
    :func:`vidya_lab.layouts.reference_tp` (chapter 3's cheapest single-node layout; Llama-3.3-70B in
    bf16 on H100: tp = 4). The same call returns the same (cached) replica."""
    m, g, p = get_model(model), get_gpu(gpu), get_precision(precision)
    return _default_replica(m.id if isinstance(model, str) else m, g.id if isinstance(gpu, str) else g,
                            p.id)


def replica_with_block(r: sizing.Replica, block_tokens: int | None) -> sizing.Replica:
    """``r`` with ``block_tokens`` tokens per KV block (``None``: unchanged)."""
    if block_tokens is None or block_tokens == r.block_tokens:
        return r
    return replace(r, block_tokens=v.check_int("block_tokens", block_tokens, minimum=1))


def cache_capacity_blocks(r: sizing.Replica, cache_bytes: float, block_tokens: int | None = None) -> int:
    """Blocks a cache of ``cache_bytes`` per GPU holds: floor(bytes / (block × KV bytes/token/GPU))."""
    sizing._as_replica(r)
    c = v.check_real("cache_bytes", cache_bytes, minimum=0.0)
    b = r.block_tokens if block_tokens is None else v.check_int("block_tokens", block_tokens, minimum=1)
    return int(c // (b * r.kv_bytes_per_token_per_gpu))
