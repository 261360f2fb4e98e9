"""Models, GPUs and precisions: every number the book uses, with its source beside it.

Three kinds of entries, all frozen dataclasses with units in their field names:

* :class:`Model` — the shape of a transformer from its published ``config.json`` (layers, d_model,
  query and KV heads, head_dim, d_ff, vocabulary, context) and, for a mixture of experts, the number of
  experts and how many each token uses. Parameter counts are *computed* from the shape
  (:meth:`Model.total_params`, :meth:`Model.active_params_per_token`) and tested against the counts the
  model cards publish.
* :class:`GPU` — memory bytes, memory bandwidth, dense tensor-core rates per precision, interconnect,
  a per-collective latency and an hourly rental price (an assumption, stated in ``price_source``).
* :class:`Precision` — bytes per element and which tensor-core rate the matrix multiplies run at.

Look-ups: :func:`get_model`, :func:`get_gpu`, :func:`get_precision`; an unknown id raises a
``KeyError`` that lists the known ids. :func:`model_id_for` / :func:`gpu_id_for` map the names used in
``published_calibration.csv`` ("Llama-3.1-8B", "H100-SXM-80GB") to catalog ids.

Sources: ``../shared/data/facts.md`` and ``published_calibration.csv`` (GPU specs), Hugging Face
``config.json`` of each model (shapes). GB = 1e9 bytes throughout; GiB = 2**30 bytes is written out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GB = 1e9
GiB = 2**30
TB = 1e12
TERA = 1e12


# ----------------------------------------------------------------------------- precisions

@dataclass(frozen=True)
class Precision:
    """A number format for weights, activations or the KV cache.

    Attributes
    ----------
    id : "bf16", "fp8", ...
    bytes_per_element : storage size of one value, bytes.
    compute : which tensor-core rate a matrix multiply with weights in this format runs at:
        ``"bf16"`` (16-bit math; also int4 weight-only, W4A16), ``"fp8"`` or ``"int8"`` (W8A8).
    source : where the convention comes from.
    """

    id: str
    bytes_per_element: float
    compute: str
    source: str


PRECISIONS: dict[str, Precision] = {
    p.id: p
    for p in (
        Precision("fp16", 2.0, "bf16", "IEEE 754 half precision: 16 bits; same tensor-core rate as bf16"),
        Precision("bf16", 2.0, "bf16", "bfloat16: 16 bits"),
        Precision("fp8", 1.0, "fp8",
                  "FP8 (E4M3) weights and activations, as TensorRT-LLM's FP8 rows "
                  "(perf-overview.md); on a GPU without FP8 units the math runs in bf16"),
        Precision("int8", 1.0, "int8", "INT8 weights and activations (W8A8, SmoothQuant-style)"),
        Precision("int4", 0.5, "bf16",
                  "INT4 weight-only (W4A16, AWQ/GPTQ-style): 4 bits stored, 16-bit math"),
    )
}


# ----------------------------------------------------------------------------- GPUs

@dataclass(frozen=True)
class GPU:
    """One accelerator. Rates are dense (no sparsity), per GPU.

    Attributes
    ----------
    hbm_bytes : device memory, bytes (GB = 1e9).
    hbm_bytes_per_s : peak memory bandwidth, bytes/s.
    bf16_flops_per_s, fp8_flops_per_s, int8_ops_per_s : dense tensor-core peaks
        (``fp8_flops_per_s`` is None where the GPU has no FP8 units).
    interconnect_kind : "NVLink 4", "PCIe Gen4 x16", ...
    interconnect_bytes_per_s : GPU-to-GPU bandwidth per direction, bytes/s.
    collective_latency_s : fixed cost of one collective (all-reduce) or point-to-point send, s:
        an assumption (launch + synchronisation), not a datasheet number.
    price_per_hour_usd : rental price of one GPU for one hour, USD (an assumption; see price_source).
    """

    id: str
    name: str
    hbm_bytes: float
    hbm_bytes_per_s: float
    bf16_flops_per_s: float
    fp8_flops_per_s: float | None
    int8_ops_per_s: float
    interconnect_kind: str
    interconnect_bytes_per_s: float
    collective_latency_s: float
    price_per_hour_usd: float
    spec_source: str
    interconnect_source: str
    price_source: str

    def flops_per_s(self, precision: str | Precision) -> float:
        """Dense peak for matrix multiplies with weights in ``precision``, FLOP/s.

        FP8 on a GPU without FP8 units (A100) and INT4 weight-only run at the bf16 rate.
        """
        p = precision if isinstance(precision, Precision) else get_precision(precision)
        if p.compute == "fp8":
            return self.fp8_flops_per_s if self.fp8_flops_per_s is not None else self.bf16_flops_per_s
        if p.compute == "int8":
            return self.int8_ops_per_s
        return self.bf16_flops_per_s

    def critical_intensity(self, precision: str | Precision = "bf16") -> float:
        """Peak FLOP/s ÷ peak bytes/s: the arithmetic intensity (FLOP/byte) at the roofline's ridge."""
        return self.flops_per_s(precision) / self.hbm_bytes_per_s


_KLOCKWOOD_H100 = "https://glennklockwood.com/garden/processors/h100 (facts.md)"
_SCALING_GPUS = "github:jax-ml/scaling-book gpus.md (facts.md)"
_PRICE = ("assumption: a round on-demand cloud price per GPU-hour in 2024-25, not a quote; "
          "change it for your provider")
_NVL_LAT = "assumption: ~5 µs per small all-reduce over NVLink (kernel launch + synchronisation)"

GPUS: dict[str, GPU] = {
    g.id: g
    for g in (
        GPU("a100-80gb", "NVIDIA A100 80GB SXM4", 80 * GB, 2.039 * TB, 312 * TERA, None, 624 * TERA,
            "NVLink 3", 300 * GB, 5e-6, 1.80,
            "https://glennklockwood.com/garden/processors/A100 (facts.md): 80 GB HBM2e, "
            "2.039 TB/s, bf16 312 TFLOPS dense, no FP8, INT8 624 dense",
            "NVLink 3: 12 links x 25 GB/s = 300 GB/s per direction; " + _SCALING_GPUS + "; " + _NVL_LAT,
            _PRICE),
        GPU("h100-sxm", "NVIDIA H100 SXM5 80GB", 80 * GB, 3.35 * TB, 989.4 * TERA, 1978.9 * TERA,
            1978.9 * TERA, "NVLink 4", 450 * GB, 5e-6, 3.00,
            _KLOCKWOOD_H100 + ": 80 GB HBM3, 3.35 TB/s, bf16 989.4 / fp8 1978.9 TFLOPS dense; "
            "INT8 dense taken equal to FP8 dense (NVIDIA datasheet: 3,958 TOPS with sparsity)",
            "NVLink 4: 18 links x 25 GB/s = 450 GB/s per direction; " + _SCALING_GPUS + "; " + _NVL_LAT,
            _PRICE),
        GPU("h200", "NVIDIA H200 SXM 141GB", 141 * GB, 4.8 * TB, 989.4 * TERA, 1978.9 * TERA,
            1978.9 * TERA, "NVLink 4", 450 * GB, 5e-6, 3.70,
            "github:NVIDIA/TensorRT-LLM docs/source/blogs/H200launch.md: 141 GB HBM3e at 4.8 TB/s; "
            "compute equal to H100 (" + _SCALING_GPUS + "; MI300X-vs-H200 METHODOLOGY.md)",
            "NVLink 4 as H100: 450 GB/s per direction; " + _SCALING_GPUS + "; " + _NVL_LAT,
            _PRICE),
        GPU("l40s", "NVIDIA L40S 48GB", 48 * GB, 0.864 * TB, 362.05 * TERA, 733 * TERA, 733 * TERA,
            "PCIe Gen4 x16", 32 * GB, 10e-6, 1.00,
            "reseller copy of NVIDIA's L40S datasheet (mullet.se; itcreations.com) [SECONDARY]: "
            "48 GB GDDR6, 864 GB/s, bf16 362.05 / fp8 733 TFLOPS dense; INT8 733 TOPS dense",
            "PCIe Gen4 x16, 64 GB/s bidirectional = 32 GB/s per direction, no NVLink (same source); "
            "assumption: ~10 µs per collective over PCIe",
            _PRICE),
        GPU("b200", "NVIDIA B200 (HGX, 1000 W)", 192 * GB, 8.0 * TB, 2250 * TERA, 4500 * TERA,
            4500 * TERA, "NVLink 5", 900 * GB, 5e-6, 5.00,
            "https://glennklockwood.com/garden/processors/B200 (facts.md): 192 GB HBM3e, 8 TB/s, "
            "bf16 2250 / fp8 4500 TFLOPS dense; INT8 taken equal to FP8. DGX B200 exposes "
            "180 GB per GPU [SECONDARY]",
            "NVLink 5: 18 links x 50 GB/s = 900 GB/s per direction; " + _SCALING_GPUS + "; " + _NVL_LAT,
            _PRICE),
        GPU("mi300x", "AMD Instinct MI300X 192GB", 192 * GB, 5.3 * TB, 1307.4 * TERA, 2614.9 * TERA,
            2614.9 * TERA, "Infinity Fabric", 448 * GB, 10e-6, 2.50,
            "github:alpharomercoma/MI300X-vs-H200 METHODOLOGY.md; jaredwatkins.com MI300 page "
            "[third-party]: 192 GB HBM3, 5.3 TB/s, bf16 1307.4 / fp8 2614.9 TFLOPS dense; "
            "INT8 taken equal to FP8",
            "[UNCERTAIN] third-party figures conflict (facts.md); assumption: 7 links x 64 GB/s = "
            "448 GB/s per direction to the other 7 GPUs of a node, ~10 µs per collective",
            _PRICE),
    )
}


# ----------------------------------------------------------------------------- links between GPUs

#: GPUs in one server (HGX/DGX boards and 8-GPU PCIe servers hold 8); a layout of more GPUs spans
#: several nodes and its cross-node traffic goes over :data:`DEFAULT_INTER_NODE_LINK`.
GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Link:
    """A GPU-to-GPU link that collectives and pipeline hand-offs run over.

    Attributes
    ----------
    id : "nvlink4", "pcie4", "infiniband-ndr", ...
    name : human name.
    bytes_per_s : bandwidth one GPU can send over it, per direction, bytes/s (for an inter-node link:
        the NIC bandwidth behind each GPU).
    latency_s : fixed cost of one collective or send over it, seconds (an assumption, not a datasheet
        number).
    scope : "intra-node" or "inter-node".
    source : where the numbers come from.
    """

    id: str
    name: str
    bytes_per_s: float
    latency_s: float
    scope: str
    source: str


LINKS: dict[str, Link] = {
    k.id: k
    for k in (
        Link("nvlink3", "NVLink 3 (A100)", 300 * GB, 5e-6, "intra-node",
             "12 links x 25 GB/s per direction; " + _SCALING_GPUS + "; " + _NVL_LAT),
        Link("nvlink4", "NVLink 4 (H100, H200)", 450 * GB, 5e-6, "intra-node",
             "18 links x 25 GB/s per direction; " + _SCALING_GPUS + "; " + _NVL_LAT),
        Link("nvlink5", "NVLink 5 (B200)", 900 * GB, 5e-6, "intra-node",
             "18 links x 50 GB/s per direction; " + _SCALING_GPUS + "; " + _NVL_LAT),
        Link("pcie4", "PCIe Gen4 x16 (L40S)", 32 * GB, 10e-6, "intra-node",
             "64 GB/s bidirectional = 32 GB/s per direction (L40S datasheet copy, facts.md) "
             "[SECONDARY]; assumption: ~10 µs per collective"),
        Link("infiniband-ndr", "InfiniBand NDR, one 400 Gb/s NIC per GPU", 50 * GB, 20e-6, "inter-node",
             "an H100 node has 400 GB/s of egress into InfiniBand, i.e. 50 GB/s behind each of its "
             "8 GPUs; " + _SCALING_GPUS + "; assumption: ~20 µs per collective across nodes"),
        Link("ethernet-100g", "100 Gb/s Ethernet, one NIC per node", 12.5 * GB, 50e-6, "inter-node",
             "assumption: a node without InfiniBand, one 100 Gb/s NIC (12.5 GB/s per direction) and "
             "~50 µs per collective over TCP; for the 'without InfiniBand' comparison of facts.md"),
    )
}

#: Link between nodes when a layout needs more than :data:`GPUS_PER_NODE` GPUs.
DEFAULT_INTER_NODE_LINK = "infiniband-ndr"


def get_link(link: str | Link) -> Link:
    """The :class:`Link` for an id such as ``"nvlink4"`` or ``"infiniband-ndr"`` (a Link passes through)."""
    return link if isinstance(link, Link) else _lookup(LINKS, "link", link)


def gpu_link(gpu: str | GPU) -> Link:
    """The GPU's own intra-node link (its ``interconnect_*`` fields) as a :class:`Link`."""
    g = get_gpu(gpu)
    return Link(f"{g.id}-native", g.interconnect_kind, g.interconnect_bytes_per_s,
                g.collective_latency_s, "intra-node", g.interconnect_source)


# ----------------------------------------------------------------------------- models

@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's shape, from its published ``config.json``.

    Attributes
    ----------
    n_layers, d_model, n_heads (query heads), n_kv_heads, head_dim, d_ff (per expert),
    vocab_size, max_context_tokens : as in the config (``num_hidden_layers``, ``hidden_size``,
        ``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``/``ffn_dim``, ...).
    arch : "llama" (gated SwiGLU MLP, RMSNorm, no biases, rotary positions) or
        "opt" (two-matrix ReLU MLP, LayerNorm, biases, learned positions).
    tied_embeddings : whether the output head reuses the input embedding matrix.
    n_experts, experts_per_token : 1 and 1 for a dense model; 8 and 2 for Mixtral-8x7B.
    published_params : the parameter count the model card or checkpoint states (for the tests).
    source : where the shape comes from.
    """

    id: str
    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    max_context_tokens: int
    arch: str
    tied_embeddings: bool
    source: str
    published_params: float
    n_experts: int = 1
    experts_per_token: int = 1

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    # parameter counts, from the shape ------------------------------------------------------
    def attention_params_per_layer(self) -> int:
        """q, k, v, o projections (+ biases for OPT): d·(h·hd) + 2·d·(kv·hd) + (h·hd)·d."""
        q = self.d_model * self.n_heads * self.head_dim
        kv = 2 * self.d_model * self.n_kv_heads * self.head_dim
        o = self.n_heads * self.head_dim * self.d_model
        bias = 0
        if self.arch == "opt":
            bias = self.n_heads * self.head_dim + 2 * self.n_kv_heads * self.head_dim + self.d_model
        return q + kv + o + bias

    def kv_projection_params_per_layer(self) -> int:
        """The k and v projections alone (they are replicated when tp > KV heads)."""
        bias = 2 * self.n_kv_heads * self.head_dim if self.arch == "opt" else 0
        return 2 * self.d_model * self.n_kv_heads * self.head_dim + bias

    def expert_params(self) -> int:
        """One MLP (one expert): 3·d·d_ff (gated) or 2·d·d_ff + biases (OPT)."""
        if self.arch == "opt":
            return 2 * self.d_model * self.d_ff + self.d_ff + self.d_model
        return 3 * self.d_model * self.d_ff

    def norm_params_per_layer(self) -> int:
        return 4 * self.d_model if self.arch == "opt" else 2 * self.d_model

    def router_params_per_layer(self) -> int:
        return self.d_model * self.n_experts if self.is_moe else 0

    def layer_params(self, *, active: bool = False) -> int:
        """Parameters of one transformer block; ``active`` counts only the experts a token uses."""
        experts = self.experts_per_token if active else self.n_experts
        return (self.attention_params_per_layer() + experts * self.expert_params()
                + self.norm_params_per_layer() + self.router_params_per_layer())

    def embedding_params(self) -> int:
        """Input embedding (+ learned positions for OPT, whose table has 2 extra rows)."""
        pos = (self.max_context_tokens + 2) * self.d_model if self.arch == "opt" else 0
        return self.vocab_size * self.d_model + pos

    def lm_head_params(self) -> int:
        """Output head; 0 extra parameters when tied to the embedding."""
        return 0 if self.tied_embeddings else self.vocab_size * self.d_model

    def final_norm_params(self) -> int:
        return 2 * self.d_model if self.arch == "opt" else self.d_model

    def non_layer_params(self) -> int:
        return self.embedding_params() + self.lm_head_params() + self.final_norm_params()

    def total_params(self) -> int:
        """Every parameter stored (all experts): what memory must hold."""
        return self.n_layers * self.layer_params() + self.non_layer_params()

    def active_params_per_token(self) -> int:
        """Parameters one token's forward pass multiplies by (top-k experts only), excluding the
        input embedding, which is a look-up, not a matrix multiply."""
        head = self.vocab_size * self.d_model  # the output projection, tied or not
        return self.n_layers * self.layer_params(active=True) + head + self.final_norm_params()


_HF = "Hugging Face config.json of "
MODELS: dict[str, Model] = {
    m.id: m
    for m in (
        Model("llama-2-7b", "Llama-2-7B", 32, 4096, 32, 32, 128, 11008, 32000, 4096, "llama", False,
              _HF + "meta-llama/Llama-2-7b-hf", 6.74e9),
        Model("llama-2-13b", "Llama-2-13B", 40, 5120, 40, 40, 128, 13824, 32000, 4096, "llama", False,
              _HF + "meta-llama/Llama-2-13b-hf", 13.0e9),
        Model("llama-2-70b", "Llama-2-70B", 80, 8192, 64, 8, 128, 28672, 32000, 4096, "llama", False,
              _HF + "meta-llama/Llama-2-70b-hf", 69.0e9),
        Model("llama-3.1-8b", "Llama-3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256, 131072, "llama",
              False, _HF + "meta-llama/Llama-3.1-8B", 8.03e9),
        Model("llama-3.1-70b", "Llama-3.1-70B", 80, 8192, 64, 8, 128, 28672, 128256, 131072, "llama",
              False, _HF + "meta-llama/Llama-3.1-70B; facts.md (scaling-book applied-inference.md)",
              70.6e9),
        Model("llama-3.1-405b", "Llama-3.1-405B", 126, 16384, 128, 8, 128, 53248, 128256, 131072,
              "llama", False, _HF + "meta-llama/Llama-3.1-405B", 405.9e9),
        Model("llama-3.3-70b", "Llama-3.3-70B", 80, 8192, 64, 8, 128, 28672, 128256, 131072, "llama",
              False, _HF + "meta-llama/Llama-3.3-70B-Instruct (same shape as Llama-3.1-70B)", 70.6e9),
        Model("opt-13b", "OPT-13B", 40, 5120, 40, 40, 128, 20480, 50272, 2048, "opt", True,
              _HF + "facebook/opt-13b; KV size in facts.md (PagedAttention paper §3)", 12.9e9),
        Model("mixtral-8x7b", "Mixtral-8x7B", 32, 4096, 32, 8, 128, 14336, 32000, 32768, "llama",
              False, _HF + "mistralai/Mixtral-8x7B-v0.1 (num_local_experts 8, "
              "num_experts_per_tok 2); 46.7B total, 12.9B active per the model card", 46.7e9,
              n_experts=8, experts_per_token=2),
    )
}


# ----------------------------------------------------------------------------- look-ups

def _lookup(table: dict, kind: str, key):
    if not isinstance(key, str):
        raise TypeError(f"{kind} must be an id string, got {key!r} ({type(key).__name__})")
    try:
        return table[key.strip().lower()]
    except KeyError:
        raise KeyError(f"unknown {kind} {key!r}; known: {', '.join(table)}") from None


def get_model(model: str | Model) -> Model:
    """The :class:`Model` for an id such as ``"llama-3.1-70b"`` (a Model passes through)."""
    return model if isinstance(model, Model) else _lookup(MODELS, "model", model)


def get_gpu(gpu: str | GPU) -> GPU:
    """The :class:`GPU` for an id such as ``"h100-sxm"`` (a GPU passes through)."""
    return gpu if isinstance(gpu, GPU) else _lookup(GPUS, "gpu", gpu)


def get_precision(precision: str | Precision) -> Precision:
    """The :class:`Precision` for ``"fp16"``, ``"bf16"``, ``"fp8"``, ``"int8"`` or ``"int4"``."""
    return precision if isinstance(precision, Precision) else _lookup(PRECISIONS, "precision", precision)


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
            "source": m.source,
        })
    return rows


def gpu_table() -> list[dict]:
    """One dict per GPU (every spec number with its source): for the CLI and the book."""
    rows = []
    for g in GPUS.values():
        rows.append({
            "id": g.id, "name": g.name, "hbm_bytes": g.hbm_bytes, "hbm_bytes_per_s": g.hbm_bytes_per_s,
            "bf16_flops_per_s": g.bf16_flops_per_s, "fp8_flops_per_s": g.fp8_flops_per_s,
            "int8_ops_per_s": g.int8_ops_per_s, "interconnect_kind": g.interconnect_kind,
            "interconnect_bytes_per_s": g.interconnect_bytes_per_s,
            "collective_latency_s": g.collective_latency_s,
            "price_per_hour_usd": g.price_per_hour_usd, "spec_source": g.spec_source,
            "interconnect_source": g.interconnect_source, "price_source": g.price_source,
        })
    return rows


def _check_catalog() -> None:  # import-time sanity: a typo must not slip through silently
    for m in MODELS.values():
        assert m.n_heads % m.n_kv_heads == 0, m.id
        assert m.n_heads * m.head_dim == m.d_model or m.arch == "llama", m.id
        assert math.isfinite(m.total_params())


_check_catalog()
