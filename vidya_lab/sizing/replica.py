"""ONE model replica: tp × pp GPUs serving one copy of the weights, and its memory budget.

Build it from ids; it is validated at construction, frozen and hashable::

    r = Replica("llama-3.1-70b", "h100-sxm", tp=4)

Per GPU (bytes; GB = 1e9): ``r.weights_bytes_per_gpu`` (the fullest GPU), ``r.kv_bytes_per_token_per_gpu``,
``r.activation_reserve_bytes`` (runtime + activations), ``r.kv_budget_bytes`` (by the engine's rule),
``r.kv_blocks``; per replica ``r.kv_capacity_tokens``. :func:`max_concurrent_sequences`,
:func:`kv_rounding_waste_fraction` and :func:`memory_breakdown` answer chapter 2's memory questions.
The time of one iteration is ``r.step_time_s(...)`` (:mod:`vidya_lab.sizing.cost`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

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
from vidya_lab.sizing.efficiency import Calibration, fitted_calibration, is_extrapolated
from vidya_lab.sizing.engine import (
    DEFAULT_MEMORY_FRACTION,
    MEMORY_RULES,
    EngineDefaults,
    engine_defaults,
)
from vidya_lab.sizing.memory import (
    default_kv_precision,
    kv_budget_bytes,
    reserve_bytes,
    usable_bytes,
)

#: Bounds on the engine limits a Replica accepts (far above any engine's; they bound memory).
MAX_NUM_SEQS = 65_536
MAX_BATCHED_TOKENS = 1_048_576
MAX_BLOCK_TOKENS = 4096
#: Longest context the memory questions accept, tokens (memory arithmetic only: whether a model can
#: attend that far is :func:`~vidya_lab.sizing.estimate`'s question).
MAX_CONTEXT_TOKENS = 10_000_000


@dataclass(frozen=True)
class Replica:
    """ONE model replica: tp × pp GPUs serving one copy of the weights. Frozen and hashable.

    Parameters
    ----------
    model, gpu : catalog ids (or :class:`~vidya_lab.catalog.Model` / :class:`~vidya_lab.catalog.GPU`).
    tp, pp : tensor- and pipeline-parallel degrees (GPUs per replica = tp × pp).
    precision : weights (and matrix-multiply math): "fp16", "bf16", "fp8", "int8", "int4", "fp4".
    kv_precision : KV-cache precision; None → :func:`~vidya_lab.sizing.memory.default_kv_precision`.
    memory_rule : "vllm" or "trtllm" (:mod:`vidya_lab.sizing.engine`); it also picks the engine
        whose batch limits are the defaults.
    memory_fraction : the rule's fraction; None → 0.90 (vLLM) or 0.95 (TensorRT-LLM).
    block_tokens : tokens per KV block (vLLM's default 16).
    max_num_seqs : cap on sequences in one batch; None → the engine's default on this GPU.
    max_batched_tokens : cap on tokens in one iteration (longer prefills are chunked, and
        activation memory is reserved for this many tokens); None → the engine's default.
    calibration : achieved efficiencies; None → :func:`~vidya_lab.sizing.efficiency.fitted_calibration`.
    interconnect : a :data:`vidya_lab.catalog.LINKS` id for the link inside a node (e.g. "pcie4");
        None → the GPU's own.
    inter_node : the link between nodes for layouts wider than one; None → InfiniBand NDR.
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
    max_num_seqs: int | None = None
    max_batched_tokens: int | None = None
    calibration: Calibration | None = field(default=None)
    interconnect: str | None = None
    inter_node: str | None = None

    def __post_init__(self) -> None:
        s = functools.partial(object.__setattr__, self)
        s("model", get_model(self.model))
        s("gpu", get_gpu(self.gpu))
        s("precision", get_precision(self.precision).id)
        s("kv_precision", get_precision(self.kv_precision, name="kv_precision").id
          if self.kv_precision is not None else default_kv_precision(self.precision))
        par.check_layout(self.model, self.tp, self.pp)
        v.check_choice("memory_rule", self.memory_rule, MEMORY_RULES)
        if self.memory_fraction is None:
            s("memory_fraction", DEFAULT_MEMORY_FRACTION[self.memory_rule])
        v.check_fraction("memory_fraction", self.memory_fraction, allow_zero=False)
        v.check_int("block_tokens", self.block_tokens, minimum=1, maximum=MAX_BLOCK_TOKENS)
        defaults = engine_defaults(self.gpu, self.memory_rule)
        if self.max_batched_tokens is None:
            s("max_batched_tokens", defaults.max_batched_tokens)
        v.check_int("max_batched_tokens", self.max_batched_tokens, minimum=2,
                    maximum=MAX_BATCHED_TOKENS)
        if self.max_num_seqs is None:  # as vLLM: never more sequences than tokens per iteration
            s("max_num_seqs", min(defaults.max_num_seqs, self.max_batched_tokens))
        v.check_int("max_num_seqs", self.max_num_seqs, minimum=1, maximum=MAX_NUM_SEQS)
        if self.calibration is None:
            s("calibration", fitted_calibration())
        v.check_instance("calibration", self.calibration, Calibration)
        for name in ("interconnect", "inter_node"):  # ids, validated (KeyError lists the known)
            if getattr(self, name) is not None:
                s(name, get_link(getattr(self, name), name=name).id)

    # ------------------------------------------------------------------ layout
    @property
    def n_gpus(self) -> int:
        """GPUs in this replica: tp × pp."""
        return self.tp * self.pp

    @property
    def engine(self) -> EngineDefaults:
        """The batch limits of this replica's engine on its GPU (before any override)."""
        return engine_defaults(self.gpu, self.memory_rule)

    @property
    def extrapolated(self) -> bool:
        """True when no published timing row of this GPU type backs the calibration."""
        return is_extrapolated(self.gpu.id)

    def with_calibration(self, calibration: Calibration) -> Replica:
        """The same replica at other efficiencies (e.g. :data:`~vidya_lab.sizing.PHYSICAL`)."""
        return replace(self, calibration=calibration)

    # ------------------------------------------------------------------ memory (per GPU)
    @functools.cached_property
    def weights_bytes_per_gpu(self) -> float:
        """Weight bytes stored on the fullest GPU (replicated KV projections included)."""
        return par.weight_params_per_gpu(self.model, self.tp, self.pp) * bytes_per_element(self.precision)

    @functools.cached_property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV bytes one token costs on the fullest GPU: 2·ceil(L/pp)·ceil(kv/tp)·hd·bytes; for MLA
        ceil(L/pp)·(kv_lora_rank + qk_rope_head_dim)·bytes, the latent replicated on every TP rank.
        Sliding-window layers are counted as if they kept every token (the upper bound of
        :func:`~vidya_lab.sizing.memory.kv_bytes_per_token`)."""
        m = self.model
        if m.is_mla:
            return (par.layers_per_stage(m, self.pp) * (m.kv_lora_rank + m.qk_rope_head_dim)
                    * bytes_per_element(self.kv_precision))
        return (2 * par.layers_per_stage(m, self.pp) * par.kv_heads_per_gpu(m, self.tp)
                * m.head_dim * bytes_per_element(self.kv_precision))

    @functools.cached_property
    def activation_reserve_bytes(self) -> float:
        """Per-GPU memory kept for the runtime and the activations of ``max_batched_tokens`` tokens
        (:func:`~vidya_lab.sizing.memory.reserve_bytes`)."""
        return reserve_bytes(self.model, self.tp, self.max_batched_tokens)

    @property
    def usable_bytes(self) -> float:
        """Memory per GPU the rule lets weights and the reserve use."""
        return usable_bytes(self.memory_rule, self.memory_fraction, self.gpu.hbm_bytes)

    @functools.cached_property
    def kv_budget_bytes(self) -> float:
        """Bytes per GPU left for the KV cache by the memory rule (0 if the weights do not fit)."""
        return kv_budget_bytes(self.memory_rule, self.memory_fraction, self.gpu.hbm_bytes,
                               self.weights_bytes_per_gpu, self.activation_reserve_bytes)

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
        """Do weights and the reserve fit within the rule's memory?"""
        return self.weights_bytes_per_gpu + self.activation_reserve_bytes <= self.usable_bytes

    # ------------------------------------------------------------------ time
    @functools.cached_property
    def _cost(self):
        from vidya_lab.sizing.cost import StepCost

        return StepCost(self)

    def step_time_s(self, prefill_tokens: float = 0, prefill_pairs: float = 0,
                    prefill_kv_tokens: float = 0, prefill_seqs: float = 0, n_decode: float = 0,
                    decode_ctx_sum: float = 0) -> float:
        """Time of one engine iteration from aggregates, seconds: the fast path (no validation).

        Parameters
        ----------
        prefill_tokens : new prompt tokens processed this iteration (all chunks).
        prefill_pairs : (query, key) pairs they attend: Σ c·k + c(c+1)/2 over chunks of c tokens
            with k tokens already cached (see :func:`~vidya_lab.sizing.cost.prefill_work`).
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


def _as_replica(r, name: str = "replica") -> Replica:
    return v.check_instance(name, r, Replica, "sizing.Replica")


# ----------------------------------------------------------------------------- memory questions

def max_concurrent_sequences(r: Replica, context_tokens: int) -> int:
    """Sequences of ``context_tokens`` each whose KV fits at once (blocks, rounded up per sequence).

    Formula: floor(kv_blocks / ceil(context / block_tokens)); the engine cap is NOT applied here.
    """
    _as_replica(r)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=MAX_CONTEXT_TOKENS)
    return r.kv_blocks // math.ceil(ctx / r.block_tokens)


def kv_rounding_waste_fraction(r: Replica, context_tokens: int) -> float:
    """Share of a sequence's KV blocks left empty by rounding up to whole blocks."""
    _as_replica(r)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=MAX_CONTEXT_TOKENS)
    allocated = math.ceil(ctx / r.block_tokens) * r.block_tokens
    return (allocated - ctx) / allocated


def memory_breakdown(r: Replica, context_tokens: int, batch: int | None = None) -> dict:
    """Per-GPU memory, bytes: weights, reserve, KV in use, KV budget, free (a stacked bar).

    ``batch`` sequences of ``context_tokens`` are in the cache (default: as many as fit).
    ``hbm_bytes`` is the memory the device reports; ``hbm_marketing_bytes`` the datasheet figure.
    """
    fit = max_concurrent_sequences(r, context_tokens)
    b = fit if batch is None else v.check_int("batch", batch, minimum=0, maximum=MAX_NUM_SEQS)
    used = min(b, fit) * math.ceil(context_tokens / r.block_tokens) * r.block_tokens \
        * r.kv_bytes_per_token_per_gpu
    w, a = r.weights_bytes_per_gpu, r.activation_reserve_bytes
    return {"hbm_bytes": r.gpu.hbm_bytes, "hbm_marketing_bytes": r.gpu.hbm_marketing_bytes,
            "usable_bytes": r.usable_bytes, "weights_bytes": w, "activation_reserve_bytes": a,
            "kv_budget_bytes": r.kv_budget_bytes, "kv_used_bytes": used,
            "kv_unused_bytes": r.kv_budget_bytes - used,
            "unallocated_bytes": max(0.0, r.gpu.hbm_bytes - w - a - r.kv_budget_bytes),
            "sequences": min(b, fit), "max_sequences": fit}
