"""The catalog: models, GPUs, links and precisions, every number with its source beside it.

Four kinds of entries, all frozen dataclasses with units in their field names, one file each:

* :mod:`~vidya_lab.catalog.models` — :class:`Model`, the shape of a transformer from its published
  ``config.json``; parameter counts are computed from the shape and tested against model cards.
* :mod:`~vidya_lab.catalog.gpus` — :class:`GPU`: memory as the device reports it (and the datasheet
  figure), peak and achievable bandwidth, dense tensor-core rates, its link, an on-demand price.
* :mod:`~vidya_lab.catalog.links` — :class:`Link`: NVLink, PCIe, Infinity Fabric, InfiniBand, with
  measured all-reduce bus bandwidth and latencies (nccl-tests style).
* :mod:`~vidya_lab.catalog.precisions` — :class:`Precision`: bytes per element and the tensor-core
  rate a format runs at.

Look-ups: :func:`get_model`, :func:`get_gpu`, :func:`get_precision`, :func:`get_link`; an unknown id
raises a ``KeyError`` that lists the known ids. :func:`model_id_for` / :func:`gpu_id_for` map the
names used in ``published_calibration.csv`` ("Llama-3.1-8B", "H100-SXM-80GB") to catalog ids.

Sources: ``facts.md`` and ``published_calibration.csv`` (GPU specs), ``device_measurements.csv``
(memory as reported, achievable bandwidth, collectives), Hugging Face ``config.json`` of each model
(shapes). GB = 1e9 bytes throughout; GiB = 2**30 and MiB = 2**20 bytes are written out.
"""

from __future__ import annotations

import math

from vidya_lab import _validate as v
from vidya_lab.catalog.gpus import GPU, GPUS
from vidya_lab.catalog.links import (
    DEFAULT_INTER_NODE_LINK,
    GPUS_PER_NODE,
    LINKS,
    Link,
    get_link,
)
from vidya_lab.catalog.models import MODELS, Model
from vidya_lab.catalog.precisions import PRECISIONS, Precision

GB = 1e9
GiB = 2**30
MiB = 2**20
TB = 1e12
TERA = 1e12

__all__ = ["DEFAULT_INTER_NODE_LINK", "GB", "GPU", "GPUS", "GPUS_PER_NODE", "GiB", "LINKS", "Link",
           "MODELS", "MiB", "Model", "PRECISIONS", "Precision", "TB", "TERA", "bytes_per_element",
           "get_gpu", "get_link", "get_model", "get_precision", "gpu_id_for", "gpu_link",
           "gpu_table", "model_id_for", "model_table"]


def gpu_link(gpu: str | GPU) -> Link:
    """The GPU's own intra-node :class:`Link` (NVLink, PCIe or Infinity Fabric)."""
    return LINKS[get_gpu(gpu).link]


# ----------------------------------------------------------------------------- look-ups

def _lookup(table: dict, kind: str, key, name: str | None = None):
    """``table[key]``; the messages name the parameter ``name`` when it is not ``kind`` (e.g. a
    ``kv_precision`` is a precision)."""
    if not isinstance(key, str):
        what = "an id string" if name in (None, kind) else f"a {kind} id string"
        raise TypeError(f"{name or kind} must be {what}, got {v._show(key)} ({type(key).__name__})")
    try:
        return table[key.strip().lower()]
    except KeyError:
        where = "" if name in (None, kind) else f" for {name}"
        raise KeyError(f"unknown {kind} {v._show(key)}{where}; known: {', '.join(table)}") from None


def get_model(model: str | Model) -> Model:
    """The :class:`Model` for an id such as ``"llama-3.1-70b"`` (a Model passes through)."""
    return model if isinstance(model, Model) else _lookup(MODELS, "model", model)


def get_gpu(gpu: str | GPU) -> GPU:
    """The :class:`GPU` for an id such as ``"h100-sxm"`` (a GPU passes through)."""
    return gpu if isinstance(gpu, GPU) else _lookup(GPUS, "gpu", gpu)


def get_precision(precision: str | Precision, *, name: str = "precision") -> Precision:
    """The :class:`Precision` for ``"fp16"``, ``"bf16"``, ``"fp8"``, ``"int8"``, ``"int4"`` or
    ``"fp4"``; ``name``: the parameter the messages name (e.g. ``"kv_precision"``)."""
    return precision if isinstance(precision, Precision) else _lookup(PRECISIONS, "precision", precision, name)


def bytes_per_element(precision: str | Precision) -> float:
    """Bytes one value takes in ``precision``."""
    return get_precision(precision).bytes_per_element


#: Names used in published_calibration.csv → catalog ids.
CSV_MODEL_NAMES: dict[str, str] = {
    "Llama-2-7B": "llama-2-7b",
    "Llama-2-13B": "llama-2-13b",
    "LLaMA-13B": "llama-2-13b",
    "Llama-2-70B": "llama-2-70b",
    "Llama-3-70B": "llama-3.1-70b",
    "Llama-3.1-8B": "llama-3.1-8b",
    "Llama-3.1-70B": "llama-3.1-70b",
    "Llama-3.1-405B": "llama-3.1-405b",
    "Llama-3.3-70B": "llama-3.3-70b",
    "OPT-13B": "opt-13b",
    "Mixtral-8x7B": "mixtral-8x7b",
}
CSV_GPU_NAMES: dict[str, str] = {
    "A100-SXM4-80GB": "a100-80gb",
    "H100-SXM-80GB": "h100-sxm",
    "H200-SXM-141GB": "h200",
    "L40S-48GB": "l40s",
    "B200": "b200",
    "MI300X-192GB": "mi300x",
}


def model_id_for(csv_name: str) -> str:
    """Catalog id for a model name as written in published_calibration.csv (KeyError if none).

    "LLaMA-13B" (the vLLM blog) is LLaMA-1 13B, whose shape equals Llama-2-13B's;
    "Llama-3-70B" (scaling-book) has Llama-3.1-70B's shape.
    """
    return _lookup_csv(CSV_MODEL_NAMES, "model", csv_name)


def gpu_id_for(csv_name: str) -> str:
    """Catalog id for a GPU name as written in published_calibration.csv (KeyError if none)."""
    return _lookup_csv(CSV_GPU_NAMES, "gpu", csv_name)


def _lookup_csv(table: dict[str, str], kind: str, name: str) -> str:
    lowered = {k.lower(): val for k, val in table.items()}
    if not isinstance(name, str) or name.strip().lower() not in lowered:
        raise KeyError(f"unknown CSV {kind} name {name!r}; known: {', '.join(table)}")
    return lowered[name.strip().lower()]


def model_table() -> list[dict]:
    """One dict per model (ids, shape, parameter counts): for the CLI and the book."""
    rows = []
    for m in MODELS.values():
        rows.append({
            "id": m.id, "name": m.name, "n_layers": m.n_layers, "d_model": m.d_model,
            "n_heads": m.n_heads, "n_kv_heads": m.n_kv_heads, "head_dim": m.head_dim,
            "d_ff": m.d_ff, "vocab_size": m.vocab_size, "max_context_tokens": m.max_context_tokens,
            "n_experts": m.n_experts, "experts_per_token": m.experts_per_token,
            "total_params": m.total_params(), "active_params_per_token": m.active_params_per_token(),
            "attention": ("mla" if m.is_mla else
                          "gqa+sliding" if m.n_sliding_layers else "gqa"),
            "kv_lora_rank": m.kv_lora_rank, "qk_rope_head_dim": m.qk_rope_head_dim,
            "sliding_window": m.sliding_window, "n_sliding_layers": m.n_sliding_layers,
            "n_shared_experts": m.n_shared_experts, "n_dense_layers": m.n_dense_layers,
            "source": m.source,
        })
    return rows


def gpu_table() -> list[dict]:
    """One dict per GPU (every spec number with its source): for the CLI and the book."""
    rows = []
    for g in GPUS.values():
        link = g.intra_link
        rows.append({
            "id": g.id, "name": g.name, "hbm_bytes": g.hbm_bytes,
            "hbm_marketing_bytes": g.hbm_marketing_bytes, "hbm_bytes_per_s": g.hbm_bytes_per_s,
            "hbm_achievable_bytes_per_s": g.hbm_achievable_bytes_per_s,
            "bf16_flops_per_s": g.bf16_flops_per_s, "fp8_flops_per_s": g.fp8_flops_per_s,
            "int8_ops_per_s": g.int8_ops_per_s, "fp4_flops_per_s": g.fp4_flops_per_s,
            "link": link.id, "interconnect_kind": link.name,
            "interconnect_bytes_per_s": link.bytes_per_s,
            "allreduce_bus_bytes_per_s": link.allreduce_bus_bytes_per_s,
            "collective_latency_s": g.collective_latency_s,
            "price_per_hour_usd": g.price_per_hour_usd, "spec_source": g.spec_source,
            "memory_source": g.memory_source, "bandwidth_source": g.bandwidth_source,
            "interconnect_source": link.source, "price_source": g.price_source,
        })
    return rows


def _check_catalog() -> None:  # import-time sanity: a typo must not slip through silently
    for m in MODELS.values():
        assert m.n_heads % m.n_kv_heads == 0, m.id
        assert m.n_heads * m.head_dim == m.d_model or m.arch == "llama", m.id
        assert math.isfinite(m.total_params())


_check_catalog()
