"""Tensor- and pipeline-parallel arithmetic: how a model splits over GPUs and what talking costs.

This module sits *below* the cost model (:mod:`vidya_lab.sizing` imports it; it imports only the
catalog), so the layout search of chapter 3 (:mod:`vidya_lab.layouts`) can sit above both.

What is here (Megatron-style tensor parallelism, contiguous pipeline stages):

* :func:`check_layout` — which (tp, pp) a model admits: tp divides the query heads, and tp divides the
  KV heads or the KV heads divide tp (then each KV head is *replicated* tp/kv times); pp ≤ layers.
* :func:`kv_heads_per_gpu` — ceil(kv_heads / tp): 1 when tp > kv_heads (replication).
* :func:`layers_per_stage` — ceil(layers / pp), the layers of the fullest stage.
* :func:`weight_params_per_gpu` — parameters stored on the fullest GPU (k/v projections replicated
  with their heads; embeddings vocabulary-parallel; the first stage holds the embedding and the last
  the output head).
* :func:`ring_allreduce_time_s` — 2(n−1)/n · bytes / link bandwidth + a fixed latency.
* :func:`p2p_time_s` — one point-to-point send of activations between pipeline stages.
* :func:`pipeline_bubble_fraction` — (p−1)/(m+p−1) of a pipeline's time is idle with m micro-batches.

References: Shoeybi et al., *Megatron-LM* (arXiv:1909.08053) for the TP split and its two
all-reduces per layer; Patarasuk & Yuan (2009) for the ring all-reduce cost; Huang et al., *GPipe*
(arXiv:1811.06965) for the bubble.
"""

from __future__ import annotations

import math

from vidya_lab import _validate as v
from vidya_lab.catalog import GPU, Model, get_model

#: All-reduces per transformer block under tensor parallelism (after attention, after the MLP).
ALLREDUCES_PER_LAYER = 2


def check_layout(model: Model | str, tp: int, pp: int = 1) -> None:
    """Raise a ``ValueError`` naming the rule if ``model`` cannot be split ``tp`` × ``pp`` ways.

    Rules: tp ≥ 1 divides the query heads; tp divides the KV heads or the KV heads divide tp;
    1 ≤ pp ≤ layers.
    """
    m = get_model(model)
    tp = v.check_int("tp", tp, minimum=1)
    pp = v.check_int("pp", pp, minimum=1)
    if m.n_heads % tp:
        divisors = [d for d in range(1, m.n_heads + 1) if m.n_heads % d == 0]
        raise ValueError(f"tp must divide {m.id}'s {m.n_heads} attention heads "
                         f"(one of {divisors}), got {tp}")
    if m.n_kv_heads % tp and tp % m.n_kv_heads:
        raise ValueError(f"tp must divide {m.id}'s {m.n_kv_heads} KV heads or be a multiple of "
                         f"them, got {tp}")
    if pp > m.n_layers:
        raise ValueError(f"pp must be <= {m.id}'s {m.n_layers} layers, got {pp}")


def kv_heads_per_gpu(model: Model, tp: int) -> int:
    """KV heads each GPU holds: kv/tp, or 1 (a replica of one head) when tp > kv heads."""
    return max(1, math.ceil(model.n_kv_heads / tp))


def layers_per_stage(model: Model, pp: int) -> int:
    """Layers on the fullest pipeline stage: ceil(layers / pp)."""
    return math.ceil(model.n_layers / pp)


def kv_replication(model: Model, tp: int) -> float:
    """Stored KV heads over all tp GPUs ÷ the model's KV heads (1 unless tp > kv heads)."""
    return kv_heads_per_gpu(model, tp) * tp / model.n_kv_heads


def layer_params_per_gpu(model: Model, tp: int, *, active: bool = False) -> float:
    """Parameters of one block held (or, with ``active``, used per token) by one of tp GPUs.

    Everything splits 1/tp except the k/v projections, which split with their heads (and are
    replicated when tp > kv heads), and the norms, which every GPU keeps whole.
    """
    kv = model.kv_projection_params_per_layer()
    split = model.layer_params(active=active) - kv - model.norm_params_per_layer()
    kv_per_gpu = kv * kv_heads_per_gpu(model, tp) / model.n_kv_heads
    return split / tp + kv_per_gpu + model.norm_params_per_layer()


def weight_params_per_gpu(model: Model | str, tp: int = 1, pp: int = 1) -> float:
    """Parameters stored on the fullest GPU of a tp × pp layout.

    Formula: ceil(L/pp)·(block params per GPU) + (embedding + head)/tp when pp = 1, else the larger
    of embedding/tp and head/tp (the first stage holds one, the last the other).
    """
    m = get_model(model)
    check_layout(m, tp, pp)
    blocks = layers_per_stage(m, pp) * layer_params_per_gpu(m, tp)
    head = m.vocab_size * m.d_model if not m.tied_embeddings else 0
    if pp == 1:
        ends = (m.embedding_params() + head) / tp + m.final_norm_params()
    else:
        # a tied head still needs its own copy of the matrix on the last stage
        last = m.vocab_size * m.d_model / tp + m.final_norm_params()
        ends = max(m.embedding_params() / tp, last)
    return blocks + ends


def ring_allreduce_time_s(nbytes: float, n: int, link_bytes_per_s: float, latency_s: float) -> float:
    """Time of one ring all-reduce of ``nbytes`` over ``n`` GPUs, seconds.

    Formula: 2(n−1)/n · nbytes / link_bytes_per_s + latency_s; 0 when n = 1.
    Each GPU sends and receives 2(n−1)/n of the buffer (reduce-scatter then all-gather).
    """
    if n <= 1:
        return 0.0
    return 2.0 * (n - 1) / n * nbytes / link_bytes_per_s + latency_s


def p2p_time_s(nbytes: float, link_bytes_per_s: float, latency_s: float) -> float:
    """One point-to-point transfer of ``nbytes`` between neighbouring pipeline stages, seconds."""
    return nbytes / link_bytes_per_s + latency_s


def tp_comm_time_s(model: Model, gpu: GPU, tp: int, pp: int, tokens: float,
                   activation_bytes: float = 2.0) -> float:
    """All-reduce time of one iteration on one pipeline stage, seconds.

    Formula: 2 all-reduces × ceil(L/pp) layers × ring(tokens · d_model · activation_bytes).
    """
    if tp <= 1 or tokens <= 0:
        return 0.0
    per = ring_allreduce_time_s(tokens * model.d_model * activation_bytes, tp,
                                gpu.interconnect_bytes_per_s, gpu.collective_latency_s)
    return ALLREDUCES_PER_LAYER * layers_per_stage(model, pp) * per


def pp_comm_time_s(model: Model, gpu: GPU, pp: int, tokens: float,
                   activation_bytes: float = 2.0) -> float:
    """Activation hand-offs of one iteration through pp stages: (pp−1) sends, seconds."""
    if pp <= 1 or tokens <= 0:
        return 0.0
    return (pp - 1) * p2p_time_s(tokens * model.d_model * activation_bytes,
                                 gpu.interconnect_bytes_per_s, gpu.collective_latency_s)


def pipeline_bubble_fraction(pp: int, microbatches: int) -> float:
    """Fraction of a pipeline's time that stages sit idle: (p−1)/(m+p−1) (GPipe)."""
    pp = v.check_int("pp", pp, minimum=1)
    microbatches = v.check_int("microbatches", microbatches, minimum=1)
    return (pp - 1) / (microbatches + pp - 1)
