"""Memory first, then time: the memory budget of a replica and THE cost model of one engine iteration.

Every later chapter calls this module; nothing else re-derives a step time.

The deployment
--------------
:class:`Replica` is a frozen, hashable description of ONE model replica: model, GPU, tensor- and
pipeline-parallel degree, weight and KV precision, the engine's memory rule and limits, and the
:class:`Calibration` (achieved fractions of peak) it runs at. Build it from ids::

    r = Replica("llama-3.1-70b", "h100-sxm", tp=4)                 # validated at construction

Memory (bytes; GB = 1e9)
------------------------
* :func:`weights_bytes` — total parameters × bytes per parameter (all experts of an MoE).
* :func:`kv_bytes_per_token` — 2 × layers × KV heads × head_dim × bytes (KV heads, not query heads).
* ``r.weights_bytes_per_gpu``, ``r.kv_bytes_per_token_per_gpu``, ``r.activation_reserve_bytes``,
  ``r.kv_budget_bytes`` (per GPU, by the memory rule), ``r.kv_blocks``, ``r.kv_capacity_tokens``,
  :func:`max_concurrent_sequences`, :func:`memory_breakdown`.
* Memory rules: ``"vllm"`` — ``gpu_memory_utilization`` (default 0.9) is a fraction of the WHOLE
  GPU for weights, activations and KV together: KV = f·HBM − weights − reserve.
  ``"trtllm"`` — ``kv_cache_free_gpu_mem_fraction`` (0.95 in TensorRT-LLM's published benchmarks) is a
  fraction of what weights and activations LEAVE: KV = f·(HBM − weights − reserve).

The cost model
--------------
One engine iteration processes some prefill chunks (each: new tokens, and the context already in the
cache before them) and some decoding sequences (each: the context it attends to). Per GPU of the
fullest pipeline stage (L_s = ceil(L/pp) layers)::

    compute_s = (2·P_act·T + 2·V·d·R + 4·(h/tp)·hd·L_s·pairs) / (peak FLOP/s · η_compute)
    memory_s  = (W_read(T) + kv_tok·(ctx_read + T)) / (peak bytes/s · η_memory)
    stage_s   = max(compute_s, memory_s) + all-reduce_s(T)
    iteration_s = overhead_s + pp·stage_s + (pp−1)·send_s(T)

T = tokens in the iteration (prefill + one per decoding sequence); R = logit rows (decoding sequences +
prefill sequences); pairs = (query, key) pairs attended; P_act = parameters a token multiplies on this
GPU (top-k experts only for an MoE); W_read = weight bytes read once per iteration (for an MoE, only the
experts some token of the batch routes to: E·(1 − (1 − k/E)^T) per layer in expectation). The
all-reduce and send times come from :mod:`vidya_lab.parallelism`. η and the overhead come from the
:class:`Calibration` fitted in :mod:`vidya_lab.calibration`; :data:`PHYSICAL` (η = 1, no overhead) is
the bound no measurement may beat.

* :func:`iteration_time_s` — friendly form: ``prefill=[(chunk_tokens, prior_tokens), ...]``,
  ``decode_contexts=[ctx, ...]``.
* ``r.step_time_s(prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs, n_decode,
  decode_ctx_sum)`` — the aggregate fast path (a few µs) for simulators; :func:`prefill_work` turns
  chunks into the first four aggregates.
* :func:`iteration_breakdown` — the same time split into compute, weight read, KV read and
  communication, for widgets.

Derived: :func:`prefill_time_s` and :func:`ttft_s` (TTFT at idle), :func:`decode_step_time_s` (TPOT at batch B),
:func:`critical_batch_size`, :func:`throughput_latency_curve`, :func:`saturated_throughput`,
:func:`gpus_for_peak_load`, :func:`cost_per_million_output_tokens`, and :func:`estimate`, whose keys
are a contract with the CLI (``vidya-lab estimate``) and the book.

References: Williams et al., *Roofline* (CACM 2009); Kwon et al., *PagedAttention* (arXiv:2309.06180);
Pope et al., *Efficiently Scaling Transformer Inference* (arXiv:2211.05102); the scaling-book
``inference.md`` (facts.md).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field, replace
from importlib import resources

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import parallelism as par
from vidya_lab.catalog import (
    GPU,
    Model,
    bytes_per_element,
    get_gpu,
    get_link,
    get_model,
    get_precision,
)

MEMORY_RULES = ("vllm", "trtllm")
#: Default memory fraction of each rule: vLLM ``gpu_memory_utilization`` and TensorRT-LLM
#: ``kv_cache_free_gpu_mem_fraction`` as its published benchmarks set it (facts.md).
DEFAULT_MEMORY_FRACTION = {"vllm": 0.90, "trtllm": 0.95}
#: CUDA context, library workspaces, communication buffers and CUDA graphs, per GPU, bytes.
#: An assumption (about 1.5 GB is typical of vLLM's "non-torch" plus graph memory), not a measurement.
RUNTIME_RESERVE_BYTES = 1.5e9
#: Bytes of one activation value sent in all-reduces and pipeline hand-offs (16-bit even for fp8).
ACTIVATION_BYTES = 2.0


# ----------------------------------------------------------------------------- calibration

@dataclass(frozen=True)
class Calibration:
    """Achieved fractions of peak, and a fixed cost per engine iteration.

    Attributes
    ----------
    compute_efficiency_16bit : fraction of the bf16/fp16 tensor-core peak matrix multiplies reach.
    compute_efficiency_8bit : the same for fp8/int8 math.
    memory_efficiency : fraction of peak HBM bandwidth reached by weight and KV reads.
    step_overhead_s : fixed time per engine iteration (scheduling, launches, sampling), seconds.
    collective_latency_scale : achieved latency of one all-reduce or send ÷ the catalog's
        ``collective_latency_s`` (≥ 1).
    request_overhead_s : time a request spends outside the engine's iterations before its first
        token (HTTP front end, tokenisation, scheduling hand-off), seconds; added to TTFT only.
    name : where the numbers come from.
    """

    compute_efficiency_16bit: float = 1.0
    compute_efficiency_8bit: float = 1.0
    memory_efficiency: float = 1.0
    step_overhead_s: float = 0.0
    collective_latency_scale: float = 1.0
    request_overhead_s: float = 0.0
    name: str = "physical bound (efficiencies 1, no overhead)"

    def __post_init__(self) -> None:
        for f in ("compute_efficiency_16bit", "compute_efficiency_8bit", "memory_efficiency"):
            v.check_fraction(f, getattr(self, f), allow_zero=False)
        v.check_real("step_overhead_s", self.step_overhead_s, minimum=0.0)
        v.check_real("collective_latency_scale", self.collective_latency_scale, minimum=1.0)
        v.check_real("request_overhead_s", self.request_overhead_s, minimum=0.0)

    def compute_efficiency(self, precision: str) -> float:
        """η for the math ``precision``'s matrix multiplies run in."""
        compute = get_precision(precision).compute
        return self.compute_efficiency_16bit if compute == "bf16" else self.compute_efficiency_8bit


#: The roofline itself: no measurement may beat it.
PHYSICAL = Calibration()

CALIBRATION_FILE = "calibration.json"


@functools.lru_cache(maxsize=1)
def fitted_calibration() -> Calibration:
    """The calibration fitted on published_calibration.csv (vidya_lab/data/calibration.json)."""
    text = resources.files("vidya_lab").joinpath("data", CALIBRATION_FILE).read_text()
    params = json.loads(text)["parameters"]
    return Calibration(**params, name="fitted on published_calibration.csv (TensorRT-LLM rows)")


# ----------------------------------------------------------------------------- memory (whole model)

def weights_bytes(model: Model | str, precision: str = "bf16") -> float:
    """Bytes of all weights: total parameters (every expert) × bytes per parameter."""
    return get_model(model).total_params() * bytes_per_element(precision)


def kv_bytes_per_token(model: Model | str, kv_precision: str = "bf16") -> float:
    """KV-cache bytes of one token, all layers: 2 (K and V) × layers × KV heads × head_dim × bytes.

    Grouped-query attention stores the KV heads, not the query heads: Llama-3.1-70B in bf16 gives
    2·80·8·128·2 = 327,680 bytes; OPT-13B (every head a KV head) in fp16 gives 819,200.
    """
    m = get_model(model)
    return 2 * m.n_layers * m.n_kv_heads * m.head_dim * bytes_per_element(kv_precision)


def default_kv_precision(precision: str) -> str:
    """KV precision when none is given: the weights' precision, except 16-bit for int4 weight-only."""
    return "bf16" if get_precision(precision).id == "int4" else get_precision(precision).id


# ----------------------------------------------------------------------------- the replica

class _Cost:
    """Per-replica coefficients of the step-time formula, precomputed once (plain floats)."""

    __slots__ = ("flops_per_token", "flops_per_logit_row", "flops_per_pair", "flops_per_s",
                 "dense_weight_bytes", "expert_weight_bytes", "n_experts", "miss_prob",
                 "kv_bytes_per_token", "bytes_per_s", "tp_comm_per_token", "tp_comm_fixed",
                 "pp_comm_per_token", "pp_comm_fixed", "pp", "overhead")

    def __init__(self, r: Replica, cal: Calibration) -> None:
        m, g = r.model, r.gpu
        ls = par.layers_per_stage(m, r.pp)
        wbytes = bytes_per_element(r.precision)
        # compute: parameters a token multiplies on one GPU of the fullest stage
        self.flops_per_token = 2.0 * ls * par.layer_params_per_gpu(m, r.tp, active=True)
        self.flops_per_logit_row = 2.0 * m.vocab_size * m.d_model / r.tp
        self.flops_per_pair = 4.0 * (m.n_heads / r.tp) * m.head_dim * ls
        self.flops_per_s = g.flops_per_s(r.precision) * cal.compute_efficiency(r.precision)
        # memory: weights read once per iteration (experts only if routed to), KV read and written
        stored = par.weight_params_per_gpu(m, r.tp, r.pp) * wbytes
        expert = ls * m.n_experts * m.expert_params() / r.tp * wbytes if m.is_moe else 0.0
        self.dense_weight_bytes = stored - expert
        self.expert_weight_bytes = expert
        self.n_experts = m.n_experts
        self.miss_prob = 1.0 - m.experts_per_token / m.n_experts
        self.kv_bytes_per_token = r.kv_bytes_per_token_per_gpu
        self.bytes_per_s = g.hbm_bytes_per_s * cal.memory_efficiency
        # communication (parallelism.py): linear in tokens, plus a fixed latency per collective;
        # a layout wider than a node pays the inter-node link (parallelism.layout_links)
        comm = par.comm_coefficients(m, g, r.tp, r.pp, activation_bytes=ACTIVATION_BYTES,
                                     interconnect=r.interconnect, inter_node=r.inter_node)
        scale = cal.collective_latency_scale
        self.tp_comm_per_token = comm["tp_s_per_token"]
        self.tp_comm_fixed = comm["tp_fixed_s"] * scale
        self.pp_comm_per_token = comm["pp_s_per_token"]
        self.pp_comm_fixed = comm["pp_fixed_s"] * scale
        self.pp = r.pp
        self.overhead = cal.step_overhead_s

    def weight_read_bytes(self, tokens: float) -> float:
        if self.n_experts == 1:
            return self.dense_weight_bytes
        touched = 1.0 - self.miss_prob ** tokens  # expected fraction of experts some token uses
        return self.dense_weight_bytes + self.expert_weight_bytes * touched

    def parts(self, prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs, n_decode,
              decode_ctx_sum):
        tokens = prefill_tokens + n_decode
        compute = (self.flops_per_token * tokens
                   + self.flops_per_logit_row * (n_decode + prefill_seqs)
                   + self.flops_per_pair * (prefill_pairs + decode_ctx_sum)) / self.flops_per_s
        weights = self.weight_read_bytes(tokens) / self.bytes_per_s
        kv = self.kv_bytes_per_token * (prefill_kv_tokens + decode_ctx_sum + n_decode) / self.bytes_per_s
        tp = self.tp_comm_per_token * tokens + self.tp_comm_fixed
        pp = self.pp_comm_per_token * tokens + self.pp_comm_fixed
        return compute, weights, kv, tp, pp

    def step_time_s(self, prefill_tokens=0.0, prefill_pairs=0.0, prefill_kv_tokens=0.0,
                    prefill_seqs=0.0, n_decode=0.0, decode_ctx_sum=0.0) -> float:
        tokens = prefill_tokens + n_decode
        if tokens <= 0:
            return 0.0
        compute = (self.flops_per_token * tokens
                   + self.flops_per_logit_row * (n_decode + prefill_seqs)
                   + self.flops_per_pair * (prefill_pairs + decode_ctx_sum)) / self.flops_per_s
        wread = self.dense_weight_bytes
        if self.n_experts > 1:
            wread += self.expert_weight_bytes * (1.0 - self.miss_prob ** tokens)
        memory = (wread + self.kv_bytes_per_token * (prefill_kv_tokens + decode_ctx_sum + n_decode)
                  ) / self.bytes_per_s
        stage = (compute if compute > memory else memory) + self.tp_comm_per_token * tokens \
            + self.tp_comm_fixed
        return self.overhead + self.pp * stage + self.pp_comm_per_token * tokens + self.pp_comm_fixed


@dataclass(frozen=True)
class Replica:
    """ONE model replica: tp × pp GPUs serving one copy of the weights. Frozen and hashable.

    Parameters
    ----------
    model, gpu : catalog ids (or :class:`Model` / :class:`GPU` objects).
    tp, pp : tensor- and pipeline-parallel degrees (GPUs per replica = tp × pp).
    precision : weights (and matrix-multiply math): "fp16", "bf16", "fp8", "int8", "int4".
    kv_precision : KV-cache precision; None → :func:`default_kv_precision`.
    memory_rule : "vllm" or "trtllm" (see the module docstring).
    memory_fraction : the rule's fraction; None → 0.90 (vLLM) or 0.95 (TensorRT-LLM).
    block_tokens : tokens per KV block (vLLM's default 16).
    max_num_seqs : the engine's cap on sequences in one batch (vLLM's default 256).
    max_batched_tokens : the engine's cap on tokens in one iteration; prefills longer than this are
        chunked, and activation memory is reserved for this many tokens.
    calibration : achieved efficiencies; None → :func:`fitted_calibration`.
    interconnect : a :data:`vidya_lab.catalog.LINKS` id for the link inside a node (e.g. "pcie4");
        None → the GPU's own (:func:`vidya_lab.catalog.gpu_link`).
    inter_node : the link between nodes for layouts wider than one; None →
        :data:`vidya_lab.catalog.DEFAULT_INTER_NODE_LINK` (see :func:`vidya_lab.parallelism.layout_links`).
    """

    model: Model
    gpu: GPU
    tp: int = 1
    pp: int = 1
    precision: str = "bf16"
    kv_precision: str | None = None
    memory_rule: str = "vllm"
    memory_fraction: float | None = None
    block_tokens: int = 16
    max_num_seqs: int = 256
    max_batched_tokens: int = 8192
    calibration: Calibration | None = field(default=None)
    interconnect: str | None = None
    inter_node: str | None = None

    def __post_init__(self) -> None:
        s = functools.partial(object.__setattr__, self)
        s("model", get_model(self.model))
        s("gpu", get_gpu(self.gpu))
        s("precision", get_precision(self.precision).id)
        s("kv_precision", get_precision(self.kv_precision).id if self.kv_precision is not None
          else default_kv_precision(self.precision))
        par.check_layout(self.model, self.tp, self.pp)
        v.check_choice("memory_rule", self.memory_rule, MEMORY_RULES)
        if self.memory_fraction is None:
            s("memory_fraction", DEFAULT_MEMORY_FRACTION[self.memory_rule])
        v.check_fraction("memory_fraction", self.memory_fraction, allow_zero=False)
        v.check_int("block_tokens", self.block_tokens, minimum=1)
        v.check_int("max_num_seqs", self.max_num_seqs, minimum=1)
        v.check_int("max_batched_tokens", self.max_batched_tokens, minimum=1)
        if self.calibration is None:
            s("calibration", fitted_calibration())
        elif not isinstance(self.calibration, Calibration):
            raise TypeError(f"calibration must be a Calibration, got {type(self.calibration).__name__}")
        for name in ("interconnect", "inter_node"):  # ids, validated (KeyError lists the known)
            if getattr(self, name) is not None:
                s(name, get_link(getattr(self, name)).id)

    # ------------------------------------------------------------------ layout and memory
    @property
    def n_gpus(self) -> int:
        """GPUs in this replica: tp × pp."""
        return self.tp * self.pp

    def with_calibration(self, calibration: Calibration) -> Replica:
        """The same replica at other efficiencies (e.g. :data:`PHYSICAL`)."""
        return replace(self, calibration=calibration)

    @functools.cached_property
    def weights_bytes_per_gpu(self) -> float:
        """Weight bytes on the fullest GPU (replicated KV projections included)."""
        return par.weight_params_per_gpu(self.model, self.tp, self.pp) * bytes_per_element(self.precision)

    @functools.cached_property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV bytes one token costs on the fullest GPU: 2·ceil(L/pp)·ceil(kv/tp)·hd·bytes."""
        m = self.model
        return (2 * par.layers_per_stage(m, self.pp) * par.kv_heads_per_gpu(m, self.tp)
                * m.head_dim * bytes_per_element(self.kv_precision))

    @functools.cached_property
    def activation_reserve_bytes(self) -> float:
        """Per-GPU memory for activations of ``max_batched_tokens`` tokens plus the runtime reserve.

        Formula: RUNTIME_RESERVE_BYTES + max_batched_tokens · (4·d + 3·k·d_ff/tp) · 2 bytes
        (residual stream, attention and MLP intermediates of one layer at a time; k = experts used).
        """
        m = self.model
        per_token = (4 * m.d_model + 3 * m.experts_per_token * m.d_ff / self.tp) * ACTIVATION_BYTES
        return RUNTIME_RESERVE_BYTES + self.max_batched_tokens * per_token

    @functools.cached_property
    def kv_budget_bytes(self) -> float:
        """Bytes per GPU left for the KV cache by the memory rule (0 if the weights do not fit)."""
        hbm, w, a, f = (self.gpu.hbm_bytes, self.weights_bytes_per_gpu,
                        self.activation_reserve_bytes, self.memory_fraction)
        budget = f * hbm - w - a if self.memory_rule == "vllm" else f * (hbm - w - a)
        return max(0.0, budget)

    @functools.cached_property
    def kv_blocks(self) -> int:
        """KV blocks per GPU: floor(budget / (block_tokens · KV bytes per token per GPU))."""
        return int(self.kv_budget_bytes // (self.block_tokens * self.kv_bytes_per_token_per_gpu))

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens the replica's KV cache holds (every GPU holds its share of every token)."""
        return self.kv_blocks * self.block_tokens

    @property
    def weights_fit(self) -> bool:
        """Do weights and the activation reserve fit within the rule's memory?"""
        usable = self.memory_fraction * self.gpu.hbm_bytes if self.memory_rule == "vllm" \
            else self.gpu.hbm_bytes
        return self.weights_bytes_per_gpu + self.activation_reserve_bytes <= usable

    # ------------------------------------------------------------------ the cost model
    @functools.cached_property
    def _cost(self) -> _Cost:
        return _Cost(self, self.calibration)

    def step_time_s(self, prefill_tokens: float = 0, prefill_pairs: float = 0,
                    prefill_kv_tokens: float = 0, prefill_seqs: float = 0, n_decode: float = 0,
                    decode_ctx_sum: float = 0) -> float:
        """Time of one engine iteration from aggregates, seconds: the fast path (no validation).

        Parameters
        ----------
        prefill_tokens : new prompt tokens processed this iteration (all chunks).
        prefill_pairs : (query, key) pairs they attend: Σ c·k + c(c+1)/2 over chunks of c tokens
            with k tokens already cached (see :func:`prefill_work`).
        prefill_kv_tokens : KV tokens the chunks read: Σ (k + c).
        prefill_seqs : sequences with a prefill chunk (each gets one logit row).
        n_decode : decoding sequences (one new token each).
        decode_ctx_sum : Σ context tokens the decoding sequences attend to.
        """
        return self._cost.step_time_s(prefill_tokens, prefill_pairs, prefill_kv_tokens,
                                      prefill_seqs, n_decode, decode_ctx_sum)


def replica(model, gpu, **kwargs) -> Replica:
    """Shorthand for :class:`Replica` (ids accepted)."""
    return Replica(model, gpu, **kwargs)


def _as_replica(r) -> Replica:
    if not isinstance(r, Replica):
        raise TypeError(f"replica must be a Replica, got {type(r).__name__}")
    return r


# ----------------------------------------------------------------------------- iterations

def prefill_work(chunks) -> tuple[float, float, float, float]:
    """Aggregates of prefill chunks ``[(chunk_tokens, prior_tokens), ...]``.

    Returns (prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs) where pairs = Σ c·k +
    c(c+1)/2 (causal attention: token i of the chunk sees the k cached tokens and i of its own).
    """
    tokens = pairs = kv = 0.0
    n = 0
    for i, chunk in enumerate(chunks):
        try:
            c, k = chunk
        except (TypeError, ValueError):
            raise TypeError(f"prefill[{i}] must be a (chunk_tokens, prior_tokens) pair, got {chunk!r}") from None
        c = v.check_int(f"prefill[{i}] chunk_tokens", c, minimum=1)
        k = v.check_int(f"prefill[{i}] prior_tokens", k, minimum=0)
        tokens += c
        pairs += c * k + c * (c + 1) / 2
        kv += k + c
        n += 1
    return tokens, pairs, kv, float(n)


def _decode_aggregates(decode_contexts) -> tuple[float, float]:
    ctxs = decode_contexts if isinstance(decode_contexts, (list, tuple)) else list(decode_contexts)
    if not ctxs:
        return 0.0, 0.0
    if all(type(c) is int for c in ctxs) and min(ctxs) >= 1:  # the common case, at C speed
        return float(len(ctxs)), float(sum(ctxs))
    total = 0.0
    for i, ctx in enumerate(ctxs):  # slow path: name the offending entry
        total += v.check_int(f"decode_contexts[{i}]", ctx, minimum=1)
    return float(len(ctxs)), total


def iteration_time_s(r: Replica, prefill=(), decode_contexts=()) -> float:
    """Time of one engine iteration, seconds: THE cost model.

    Parameters
    ----------
    r : the replica.
    prefill : ``[(chunk_tokens, prior_tokens), ...]``: prompt chunks processed this iteration and the
        tokens of the same sequence already in the KV cache.
    decode_contexts : for each decoding sequence, the context tokens it attends to.

    Formula: overhead + pp·(max(compute, memory) + all-reduce) + (pp−1)·send (module docstring).
    """
    _as_replica(r)
    pt, pairs, kv, seqs = prefill_work(prefill)
    nd, ctx = _decode_aggregates(decode_contexts)
    return r.step_time_s(pt, pairs, kv, seqs, nd, ctx)


def iteration_breakdown(r: Replica, prefill=(), decode_contexts=()) -> dict:
    """The iteration's time split into its parts, seconds.

    Keys: ``compute_s``, ``weight_read_s``, ``kv_read_s``, ``memory_s`` (weights + KV),
    ``tp_comm_s``, ``pp_comm_s``, ``overhead_s``, ``bound`` ("compute" or "memory"), ``total_s``
    (equal to :func:`iteration_time_s`). Per stage for compute and memory; the total counts pp stages.
    """
    _as_replica(r)
    pt, pairs, kv, seqs = prefill_work(prefill)
    nd, ctx = _decode_aggregates(decode_contexts)
    c = r._cost
    compute, weights, kv_s, tp, pp = c.parts(pt, pairs, kv, seqs, nd, ctx)
    total = r.step_time_s(pt, pairs, kv, seqs, nd, ctx)
    return {"compute_s": compute, "weight_read_s": weights, "kv_read_s": kv_s,
            "memory_s": weights + kv_s, "tp_comm_s": tp, "pp_comm_s": pp,
            "overhead_s": c.overhead if pt + nd > 0 else 0.0,
            "bound": "compute" if compute > weights + kv_s else "memory", "total_s": total}


# ----------------------------------------------------------------------------- derived quantities

def prefill_time_s(r: Replica, prompt_tokens: int) -> float:
    """Time to prefill one prompt on an idle replica (= TTFT at idle), seconds.

    A prompt longer than ``max_batched_tokens`` is processed in chunks, one iteration each.
    """
    _as_replica(r)
    n = v.check_int("prompt_tokens", prompt_tokens, minimum=1)
    step = r.max_batched_tokens
    total, done = 0.0, 0
    while done < n:
        c = min(step, n - done)
        total += r.step_time_s(c, c * done + c * (c + 1) / 2, done + c, 1, 0, 0)
        done += c
    return total


def ttft_s(r: Replica, prompt_tokens: int) -> float:
    """Time to first token of one request on an idle replica, seconds.

    Formula: the calibration's ``request_overhead_s`` + :func:`prefill_time_s`.
    """
    return r.calibration.request_overhead_s + prefill_time_s(r, prompt_tokens)


def decode_step_time_s(r: Replica, batch: int, context_tokens: int) -> float:
    """One decode iteration of ``batch`` sequences, each attending to ``context_tokens``, seconds.

    This is the TPOT (time per output token) at batch ``batch`` when no prefill interrupts.
    """
    _as_replica(r)
    b = v.check_int("batch", batch, minimum=1)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    return r.step_time_s(0, 0, 0, 0, b, b * ctx)


def decode_steps_time_s(r: Replica, batch: int, context_tokens: int, steps: int) -> float:
    """Time of ``steps`` consecutive decode iterations of a fixed batch, seconds (static batching).

    Step j (0-based) has ``batch`` sequences attending to ``context_tokens + j`` tokens each; the sum
    of :func:`decode_step_time_s` over j, evaluated in one vectorised pass.
    """
    _as_replica(r)
    b = v.check_int("batch", batch, minimum=1)
    ctx0 = v.check_int("context_tokens", context_tokens, minimum=1)
    n = v.check_int("steps", steps, minimum=0)
    if n == 0:
        return 0.0
    c = r._cost
    ctx = ctx0 + np.arange(n, dtype=float)
    compute = (c.flops_per_token * b + c.flops_per_logit_row * b + c.flops_per_pair * b * ctx) \
        / c.flops_per_s
    memory = (c.weight_read_bytes(b) + c.kv_bytes_per_token * (b * ctx + b)) / c.bytes_per_s
    stage = np.maximum(compute, memory) + c.tp_comm_per_token * b + c.tp_comm_fixed
    per_step_fixed = c.overhead + c.pp_comm_per_token * b + c.pp_comm_fixed
    return float(n * per_step_fixed + c.pp * stage.sum())


def critical_batch_size(r: Replica, context_tokens: int = 0) -> float:
    """Decode batch at which compute time equals memory time (beyond it decode is compute-bound).

    Per GPU, with r = (η_c·F)/(η_m·BW) the calibrated ridge in FLOP per byte, f the FLOPs of one
    decoding sequence (2·P_act + 2·V·d/tp + A·ctx), W the weight bytes and k the KV bytes per token:
    compute B·f/(η_c·F) equals memory (W + B·k·(ctx+1))/(η_m·BW) at

        B* = r·W / (f − r·k·(ctx+1)).

    With context 0 and no output head this is the classic (F/BW)·(bytes per parameter)/2 (295 for
    H100 bf16; scaling-book ``inference.md``). Returns ``math.inf`` when f ≤ r·k·(ctx+1): long
    contexts keep decode memory-bound at any batch. For an MoE every expert is counted as read
    (the large-batch case).
    """
    _as_replica(r)
    ctx = v.check_int("context_tokens", context_tokens, minimum=0)
    c = r._cost
    ratio = c.flops_per_s / c.bytes_per_s  # FLOP per byte at the (calibrated) ridge
    flops_per_seq = c.flops_per_token + c.flops_per_logit_row + c.flops_per_pair * ctx
    bytes_per_seq = c.kv_bytes_per_token * (ctx + 1)
    denom = flops_per_seq - ratio * bytes_per_seq
    if denom <= 0:
        return math.inf
    weights = c.dense_weight_bytes + c.expert_weight_bytes
    return ratio * weights / denom


def throughput_latency_curve(r: Replica, batches, context_tokens: int) -> list[dict]:
    """TPOT and decode tokens/s as batch grows: one dict per batch (batch, tpot_s, tokens_per_s)."""
    out = []
    for b in batches:
        t = decode_step_time_s(r, int(b), context_tokens)
        out.append({"batch": int(b), "tpot_s": t, "tokens_per_s": int(b) / t})
    return out


def max_concurrent_sequences(r: Replica, context_tokens: int) -> int:
    """Sequences of ``context_tokens`` each whose KV fits at once (blocks, rounded up per sequence).

    Formula: floor(kv_blocks / ceil(context / block_tokens)); the engine cap is NOT applied here.
    """
    _as_replica(r)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    return r.kv_blocks // math.ceil(ctx / r.block_tokens)


def kv_rounding_waste_fraction(r: Replica, context_tokens: int) -> float:
    """Share of a sequence's KV blocks left empty by rounding up to whole blocks."""
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    allocated = math.ceil(ctx / r.block_tokens) * r.block_tokens
    return (allocated - ctx) / allocated


def memory_breakdown(r: Replica, context_tokens: int, batch: int | None = None) -> dict:
    """Per-GPU memory, bytes: weights, activation reserve, KV in use, KV budget, free (stacked bar).

    ``batch`` sequences of ``context_tokens`` are in the cache (default: as many as fit).
    """
    _as_replica(r)
    fit = max_concurrent_sequences(r, context_tokens)
    b = fit if batch is None else v.check_int("batch", batch, minimum=0)
    used = min(b, fit) * math.ceil(context_tokens / r.block_tokens) * r.block_tokens \
        * r.kv_bytes_per_token_per_gpu
    w, a = r.weights_bytes_per_gpu, r.activation_reserve_bytes
    return {"hbm_bytes": r.gpu.hbm_bytes, "weights_bytes": w, "activation_reserve_bytes": a,
            "kv_budget_bytes": r.kv_budget_bytes, "kv_used_bytes": used,
            "kv_unused_bytes": r.kv_budget_bytes - used,
            "unallocated_bytes": max(0.0, r.gpu.hbm_bytes - w - a - r.kv_budget_bytes),
            "sequences": min(b, fit), "max_sequences": fit}


def _steady_step_time_s(r: Replica, batch: float, isl: int, osl: int) -> float:
    """Mean iteration time of a saturated continuous-batching engine with ``batch`` sequences.

    Each iteration every sequence gains a token; batch/osl sequences finish and as many new prompts
    are prefilled in the same iteration (isl·batch/osl prefill tokens); decoders attend to
    isl + osl/2 tokens on average. An average-step approximation of the mixed iterations.
    """
    new = batch / osl
    ctx = isl + osl / 2.0
    return r.step_time_s(new * isl, new * isl * (isl + 1) / 2, new * isl, new, batch, batch * ctx)


def steady_tpot_s(r: Replica, batch: float, isl: int, osl: int) -> float:
    """TPOT of a saturated replica holding ``batch`` sequences of isl-token prompts and osl-token
    answers, seconds: the mean step of :func:`saturated_throughput` and :func:`gpus_for_peak_load`
    (with pp > 1 the batch is split into pp micro-batches in flight)."""
    _as_replica(r)
    b = v.check_real("batch", batch, minimum=0.0, min_inclusive=False)
    isl = v.check_int("isl", isl, minimum=1)
    osl = v.check_int("osl", osl, minimum=1)
    return _steady_step_time_s(r, b / r.pp, isl, osl)


def saturated_throughput(r: Replica, isl: int, osl: int) -> dict:
    """Offline (saturated) output throughput of one replica with continuous batching.

    Batch = min(KV-limited sequences of isl+osl tokens, ``max_num_seqs``); with pp > 1 the batch is
    split into pp micro-batches in flight. Returns ``batch``, ``limited_by`` ("memory" or
    "engine cap"), ``step_s`` (mean iteration, one token per sequence), ``output_tokens_per_s``
    (per replica) and ``tpot_s``. Zero throughput when not even one sequence fits.
    """
    _as_replica(r)
    isl = v.check_int("isl", isl, minimum=1)
    osl = v.check_int("osl", osl, minimum=1)
    kv_limit = max_concurrent_sequences(r, isl + osl)
    batch = min(kv_limit, r.max_num_seqs)
    limited = "memory" if kv_limit < r.max_num_seqs else "engine cap"
    if batch < 1 or not r.weights_fit:
        return {"batch": 0, "limited_by": "memory", "step_s": math.inf,
                "output_tokens_per_s": 0.0, "tpot_s": math.inf}
    micro = batch / r.pp
    step = _steady_step_time_s(r, micro, isl, osl)
    return {"batch": batch, "limited_by": limited, "step_s": step,
            "output_tokens_per_s": batch / step, "tpot_s": step}


def cost_per_hour_usd(r: Replica, replicas: int = 1) -> float:
    """Rental cost of ``replicas`` replicas for one hour, USD (catalog price × GPUs)."""
    n = v.check_int("replicas", replicas, minimum=1)
    return n * r.n_gpus * r.gpu.price_per_hour_usd


def cost_per_million_output_tokens(r: Replica, isl: int, osl: int) -> float:
    """USD per 1e6 output tokens at saturated throughput: price/hour ÷ (3600 · tokens/s) × 1e6."""
    tput = saturated_throughput(r, isl, osl)["output_tokens_per_s"]
    if tput <= 0:
        return math.inf
    return cost_per_hour_usd(r) / (3600.0 * tput) * 1e6


def gpus_for_peak_load(r: Replica, requests_per_s: float, isl: int, osl: int, *,
                       tpot_slo_s: float | None = None, utilisation: float = 0.8) -> dict:
    """GPUs needed to serve a peak load, with headroom.

    Each replica runs at the largest batch whose decode TPOT meets ``tpot_slo_s`` (if given) and that
    fits in memory and under the engine cap; its throughput is then batch / mean step. Replicas =
    ceil(λ·osl / (throughput · utilisation)). Little's law gives the sequences in flight:
    L = λ · (TTFT + osl · TPOT).

    Returns ``replicas``, ``gpus``, ``batch_per_replica``, ``tokens_per_s_per_replica``,
    ``tpot_s``, ``ttft_s``, ``in_flight_sequences`` (Little), ``cost_per_hour_usd``,
    ``cost_per_million_output_tokens_usd``.
    """
    _as_replica(r)
    lam = v.check_real("requests_per_s", requests_per_s, minimum=0.0, min_inclusive=False)
    isl = v.check_int("isl", isl, minimum=1)
    osl = v.check_int("osl", osl, minimum=1)
    u = v.check_fraction("utilisation", utilisation, allow_zero=False)
    sat = saturated_throughput(r, isl, osl)
    bmax = sat["batch"]
    if bmax < 1:
        raise ValueError(f"{r.model.id} does not fit on {r.n_gpus} x {r.gpu.id} with "
                         f"{isl + osl}-token sequences; choose more GPUs per replica")
    batch = bmax
    if tpot_slo_s is not None:
        slo = v.check_real("tpot_slo_s", tpot_slo_s, minimum=0.0, min_inclusive=False)
        lo, hi = 0, bmax  # largest batch with steady TPOT <= slo (monotone in batch)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _steady_step_time_s(r, mid / r.pp, isl, osl) <= slo:
                lo = mid
            else:
                hi = mid - 1
        if lo < 1:
            raise ValueError(f"tpot_slo_s={slo} is below the batch-1 step time "
                             f"{_steady_step_time_s(r, 1 / r.pp, isl, osl):.4g} s of this replica")
        batch = lo
    step = _steady_step_time_s(r, batch / r.pp, isl, osl)
    per_replica = batch / step
    replicas = math.ceil(lam * osl / (per_replica * u))
    ttft = ttft_s(r, isl)
    in_flight = lam * (ttft + osl * step)
    gpus = replicas * r.n_gpus
    hourly = cost_per_hour_usd(r, replicas)
    return {"replicas": replicas, "gpus": gpus, "batch_per_replica": batch,
            "tokens_per_s_per_replica": per_replica, "tpot_s": step, "ttft_s": ttft,
            "in_flight_sequences": in_flight, "cost_per_hour_usd": hourly,
            "cost_per_million_output_tokens_usd": hourly / (3600.0 * lam * osl) * 1e6}


# ----------------------------------------------------------------------------- the contract

ESTIMATE_KEYS = ("weights_bytes", "weights_bytes_per_gpu", "kv_bytes_per_token", "fits", "reason",
                 "max_concurrent_sequences", "ttft_s", "tpot_s", "max_output_tokens_per_s",
                 "roofline_output_tokens_per_s")


def estimate(model, gpu, *, gpus: int = 1, tp: int = 1, pp: int = 1, precision: str = "bf16",
             kv_precision: str | None = None, isl: int = 2048, osl: int = 256, batch: int = 1,
             memory_rule: str = "vllm") -> dict:
    """Memory, latency and throughput of serving ``model`` on ``gpus`` × ``gpu``: one dict, SI units.

    Keys: ``weights_bytes`` (whole model), ``weights_bytes_per_gpu``, ``kv_bytes_per_token`` (whole
    model, all layers), ``fits`` (bool), ``reason`` (why not, else None),
    ``max_concurrent_sequences`` (per replica, each holding isl+osl tokens; KV memory limit),
    ``ttft_s`` (one isl-token request on an idle replica), ``tpot_s`` (decode step at ``batch``
    concurrent sequences of mean context isl + osl/2), ``max_output_tokens_per_s`` (calibrated,
    saturated continuous batching, all ``gpus`` together: replicas = gpus ÷ (tp × pp)),
    ``roofline_output_tokens_per_s`` (the same with efficiencies 1). When ``fits`` is false the
    latency and throughput keys are None.

    Raises ``KeyError`` for an unknown id and ``ValueError`` for an impossible layout (tp not dividing
    the heads, gpus not a multiple of tp × pp).
    """
    gpus = v.check_int("gpus", gpus, minimum=1)
    tp = v.check_int("tp", tp, minimum=1)
    pp = v.check_int("pp", pp, minimum=1)
    isl = v.check_int("isl", isl, minimum=1)
    osl = v.check_int("osl", osl, minimum=1)
    batch = v.check_int("batch", batch, minimum=1)
    if gpus % (tp * pp):
        raise ValueError(f"gpus must be a multiple of tp x pp = {tp * pp}, got {gpus}")
    r = Replica(model, gpu, tp=tp, pp=pp, precision=precision, kv_precision=kv_precision,
                memory_rule=memory_rule)
    replicas = gpus // (tp * pp)
    m = r.model
    ctx = isl + osl
    out = {
        "weights_bytes": weights_bytes(m, r.precision),
        "weights_bytes_per_gpu": r.weights_bytes_per_gpu,
        "kv_bytes_per_token": kv_bytes_per_token(m, r.kv_precision),
        "fits": True, "reason": None,
        "max_concurrent_sequences": max_concurrent_sequences(r, ctx),
        "ttft_s": None, "tpot_s": None,
        "max_output_tokens_per_s": None, "roofline_output_tokens_per_s": None,
    }
    reason = None
    if not r.weights_fit:
        usable = r.memory_fraction * r.gpu.hbm_bytes if r.memory_rule == "vllm" else r.gpu.hbm_bytes
        reason = (f"weights {r.weights_bytes_per_gpu / 1e9:.1f} GB + activation reserve "
                  f"{r.activation_reserve_bytes / 1e9:.1f} GB per GPU exceed the "
                  f"{usable / 1e9:.1f} GB usable of a {r.gpu.hbm_bytes / 1e9:.0f} GB {r.gpu.id} "
                  f"({r.memory_rule} rule); use more GPUs (tp/pp) or a smaller precision")
    elif ctx > m.max_context_tokens:
        reason = f"isl + osl = {ctx} tokens exceeds {m.id}'s context of {m.max_context_tokens}"
    elif out["max_concurrent_sequences"] < 1:
        reason = (f"no room for even one {ctx}-token sequence in the KV cache "
                  f"({r.kv_budget_bytes / 1e9:.2f} GB per GPU left for KV)")
    elif batch > out["max_concurrent_sequences"]:
        reason = (f"batch {batch} exceeds the {out['max_concurrent_sequences']} sequences of "
                  f"{ctx} tokens that fit in KV memory")
    if reason is not None:
        out["fits"], out["reason"] = False, reason
        return out
    out["ttft_s"] = ttft_s(r, isl)
    out["tpot_s"] = decode_step_time_s(r, batch, isl + osl // 2)
    out["max_output_tokens_per_s"] = replicas * saturated_throughput(r, isl, osl)["output_tokens_per_s"]
    bound = r.with_calibration(PHYSICAL)
    out["roofline_output_tokens_per_s"] = replicas * saturated_throughput(bound, isl, osl)[
        "output_tokens_per_s"]
    return out
