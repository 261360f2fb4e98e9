"""Memory first: the bytes of a model's weights and of one token's KV cache, and an engine's budget.

These are the numbers a student derives on paper before calling anything (bytes; GB = 1e9):

* weights = parameters × bytes per parameter (every expert of an MoE is stored);
* KV per token = 2 (K and V) × layers × KV heads × head_dim × bytes — KV heads, not query heads:
  grouped-query attention is why Llama-3.1-70B needs 327,680 bytes per token in bf16, not 2.6 MB;
* activations = the largest intermediate tensors of one layer for a full token budget;
* the KV budget = what the engine's memory rule (:mod:`vidya_lab.sizing.engine`) leaves.
"""

from __future__ import annotations

from vidya_lab import _validate as v
from vidya_lab.catalog import Model, bytes_per_element, get_model, get_precision
from vidya_lab.sizing.engine import MEMORY_RULES, RUNTIME_RESERVE_BYTES

#: Bytes of one activation value sent in all-reduces and pipeline hand-offs (16-bit even for fp8).
ACTIVATION_BYTES = 2.0


def weights_bytes(model: Model | str, precision: str = "bf16") -> float:
    """Bytes of all weights: total parameters (every expert) × bytes per parameter."""
    return get_model(model).total_params() * bytes_per_element(precision)


def kv_bytes_per_token(model: Model | str, kv_precision: str = "bf16",
                       context_tokens: int | None = None) -> float:
    """KV-cache bytes of one token, all layers, averaged over a sequence of ``context_tokens``.

    * Grouped-query attention, per layer: 2 (K and V) × KV heads × head_dim × bytes — KV heads, not
      query heads: Llama-3.1-70B in bf16 gives 2·80·8·128·2 = 327,680 bytes; OPT-13B (every head a
      KV head) in fp16 gives 819,200.
    * Multi-head latent attention (DeepSeek-V3), per layer: (kv_lora_rank + qk_rope_head_dim) ×
      bytes — one compressed latent and one shared rope key, no factor 2 and no heads:
      61·(512+64)·2 = 70,272 bytes in bf16.
    * Sliding-window layers keep at most ``sliding_window`` tokens of a sequence, so their share of a
      token's KV depends on the sequence length L: a sequence of L tokens holds
      full·L + sliding·min(L, W) layer-tokens, and the figure returned is that divided by L.
      With ``context_tokens=None`` every layer is counted as if it kept every token: the upper
      bound, exact for a model without sliding layers, and what an engine that gives every layer
      the same pages (no hybrid allocator) reserves.
    """
    m = get_model(model)
    kv = get_precision(kv_precision, name="kv_precision").bytes_per_element
    per_layer = ((m.kv_lora_rank + m.qk_rope_head_dim) if m.is_mla
                 else 2 * m.n_kv_heads * m.head_dim) * kv
    if context_tokens is None or not m.n_sliding_layers:
        if context_tokens is not None:
            v.check_int("context_tokens", context_tokens, minimum=1, maximum=10**9)
        return m.n_layers * per_layer
    length = v.check_int("context_tokens", context_tokens, minimum=1, maximum=10**9)
    full = m.n_layers - m.n_sliding_layers
    kept = full * length + m.n_sliding_layers * min(length, m.sliding_window)
    return per_layer * kept / length


def kv_bytes_per_sequence(model: Model | str, context_tokens: int,
                          kv_precision: str = "bf16") -> float:
    """KV-cache bytes one sequence of ``context_tokens`` tokens holds, all layers (sliding-window
    layers capped at their window): ``context_tokens`` × :func:`kv_bytes_per_token` at that length."""
    length = v.check_int("context_tokens", context_tokens, minimum=1, maximum=10**9)
    return length * kv_bytes_per_token(model, kv_precision, context_tokens=length)


def default_kv_precision(precision: str) -> str:
    """KV precision when none is given: the weights' precision, except 16-bit for weight-only int4
    and fp8 for fp4 weights (engines keep the cache at fp8 at most)."""
    p = get_precision(precision).id
    return {"int4": "bf16", "fp4": "fp8"}.get(p, p)


def activation_bytes_per_gpu(model: Model, tp: int, batched_tokens: int) -> float:
    """Activation memory one GPU reserves for an iteration of ``batched_tokens`` tokens, bytes.

    Formula: tokens · (4·d + 3·k·d_ff/tp) · 2 bytes — the residual stream and the attention and MLP
    intermediates of one layer at a time (k = experts a token uses).
    """
    per_token = (4 * model.d_model + 3 * model.experts_per_token * model.d_ff / tp) * ACTIVATION_BYTES
    return batched_tokens * per_token


def reserve_bytes(model: Model, tp: int, batched_tokens: int) -> float:
    """Per-GPU memory an engine keeps out of the KV cache besides the weights: the runtime reserve
    (:data:`~vidya_lab.sizing.engine.RUNTIME_RESERVE_BYTES`) plus the activations of a full token
    budget, bytes."""
    return RUNTIME_RESERVE_BYTES + activation_bytes_per_gpu(model, tp, batched_tokens)


def kv_budget_bytes(rule: str, fraction: float, total_bytes: float, weights_bytes_per_gpu: float,
                    reserve: float) -> float:
    """Bytes per GPU left for the KV cache by an engine's memory rule (0 if nothing is left).

    vLLM: f·total − weights − reserve. TensorRT-LLM: f·(total − weights − reserve), where the
    reserve is the runtime's memory plus the activations (:func:`reserve_bytes`).
    """
    v.check_choice("memory_rule", rule, MEMORY_RULES)
    taken = weights_bytes_per_gpu + reserve
    budget = fraction * total_bytes - taken if rule == "vllm" else fraction * (total_bytes - taken)
    return max(0.0, budget)


def usable_bytes(rule: str, fraction: float, total_bytes: float) -> float:
    """Memory per GPU the rule lets weights, activations and runtime use: f·total (vLLM) or the
    whole total (TensorRT-LLM takes its fraction of what is left)."""
    return fraction * total_bytes if rule == "vllm" else total_bytes
