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
* :func:`ring_allreduce_time_s` — 2(n−1)/n · bytes / bus bandwidth + base + 2(n−1)·α: the
  bandwidth term and the latency term of a ring over n GPUs (nccl-tests conventions; the figures
  per link are in :mod:`vidya_lab.catalog.links`).
* :func:`p2p_time_s` — one point-to-point send of activations between pipeline stages.
* :func:`pipeline_bubble_fraction` — (p−1)/(m+p−1) of a pipeline's time is idle with m micro-batches.
* :func:`layout_links` — which link each collective runs over: tp innermost inside a node of
  ``GPUS_PER_NODE`` GPUs (NVLink or PCIe), pipeline stages laid out in order, so a hand-off between
  stages on different nodes, and a TP ring wider than a node, go over the inter-node link (InfiniBand).
* :func:`comm_coefficients` — the communication time of one iteration as (seconds per token, fixed
  seconds) for TP and for PP: what the cost model (:mod:`vidya_lab.sizing`) adds to each step.

References: Shoeybi et al., *Megatron-LM* (arXiv:1909.08053) for the TP split and its two
all-reduces per layer; Patarasuk & Yuan (2009) for the ring all-reduce cost; NVIDIA nccl-tests
``doc/PERFORMANCE.md`` for the bus-bandwidth convention; Huang et al., *GPipe* (arXiv:1811.06965)
for the bubble.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vidya_lab import _validate as v
from vidya_lab.catalog import (
    DEFAULT_INTER_NODE_LINK,
    GPU,
    GPUS_PER_NODE,
    Link,
    Model,
    get_gpu,
    get_link,
    get_model,
    gpu_link,
)

#: Largest parallel degree any function here accepts (a 72-GPU NVLink domain is the largest real one).
MAX_DEGREE = 1024

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


def _tp(tp) -> int:
    return v.check_int("tp", tp, minimum=1, maximum=MAX_DEGREE)


def kv_heads_per_gpu(model: Model | str, tp: int) -> int:
    """KV heads each GPU holds: kv/tp, or 1 (a replica of one head) when tp > kv heads."""
    return max(1, math.ceil(get_model(model).n_kv_heads / _tp(tp)))


def layers_per_stage(model: Model | str, pp: int) -> int:
    """Layers on the fullest pipeline stage: ceil(layers / pp)."""
    m = get_model(model)
    return math.ceil(m.n_layers / v.check_int("pp", pp, minimum=1, maximum=m.n_layers))


def kv_replication(model: Model | str, tp: int) -> float:
    """Stored KV heads over all tp GPUs ÷ the model's KV heads (1 unless tp > kv heads)."""
    m = get_model(model)
    return kv_heads_per_gpu(m, tp) * tp / m.n_kv_heads


def layer_params_per_gpu(model: Model | str, tp: int, *, active: bool = False) -> float:
    """Parameters of one block held (or, with ``active``, used per token) by one of tp GPUs.

    Everything splits 1/tp except the k/v projections, which split with their heads (and are
    replicated when tp > kv heads), and the norms, which every GPU keeps whole.
    """
    model, tp = get_model(model), _tp(tp)
    v.check_bool("active", active)
    kv = model.kv_projection_params_per_layer()
    split = model.mean_layer_params(active=active) - kv - model.norm_params_per_layer()
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


def ring_allreduce_time_s(nbytes: float, n: int, bus_bytes_per_s: float, hop_latency_s: float,
                          base_latency_s: float = 0.0) -> float:
    """Time of one ring all-reduce of ``nbytes`` over ``n`` GPUs, seconds.

    Formula: 2(n−1)/n · nbytes / bus_bytes_per_s + base_latency_s + 2(n−1) · hop_latency_s;
    0 when n = 1. Each GPU sends and receives 2(n−1)/n of the buffer (reduce-scatter then
    all-gather), in 2(n−1) steps that each pay one hop's latency. ``bus_bytes_per_s`` is the bus
    bandwidth nccl-tests reports (for a ring it approaches the per-direction link bandwidth).
    """
    nbytes = v.check_real("nbytes", nbytes, minimum=0.0)
    n = v.check_int("n", n, minimum=1, maximum=MAX_DEGREE)
    bw = v.check_real("bus_bytes_per_s", bus_bytes_per_s, minimum=0.0, min_inclusive=False)
    hop = v.check_real("hop_latency_s", hop_latency_s, minimum=0.0, maximum=1.0)
    base = v.check_real("base_latency_s", base_latency_s, minimum=0.0, maximum=1.0)
    if n == 1:
        return 0.0
    return 2.0 * (n - 1) / n * nbytes / bw + base + 2 * (n - 1) * hop


def p2p_time_s(nbytes: float, link_bytes_per_s: float, latency_s: float) -> float:
    """One point-to-point transfer of ``nbytes`` between neighbouring pipeline stages, seconds:
    nbytes / link_bytes_per_s + latency_s."""
    nbytes = v.check_real("nbytes", nbytes, minimum=0.0)
    bw = v.check_real("link_bytes_per_s", link_bytes_per_s, minimum=0.0, min_inclusive=False)
    return nbytes / bw + v.check_real("latency_s", latency_s, minimum=0.0, maximum=1.0)


@dataclass(frozen=True)
class LayoutLinks:
    """The links a tp × pp layout's traffic runs over.

    Attributes
    ----------
    intra, inter : the intra-node link (the GPU's own unless overridden) and the inter-node link.
    nodes : servers the layout spans: ceil(tp·pp / gpus_per_node).
    tp_link : the link the TP ring is limited by: ``inter`` when tp > gpus_per_node, else ``intra``.
    inter_node_sends, intra_node_sends : of the pp − 1 hand-offs between consecutive stages, how many
        cross a node boundary and how many stay inside one.
    """

    intra: Link
    inter: Link
    nodes: int
    tp_link: Link
    inter_node_sends: int
    intra_node_sends: int


def layout_links(gpu: GPU | str, tp: int, pp: int = 1, *, interconnect: Link | str | None = None,
                 inter_node: Link | str | None = None,
                 gpus_per_node: int = GPUS_PER_NODE) -> LayoutLinks:
    """Which link each kind of traffic of a tp × pp layout uses.

    Placement (Megatron's convention): the tp GPUs of a stage are neighbours inside a node, stages
    follow each other, floor(gpus_per_node / tp) stages to a node. A TP ring wider than a node is
    limited by its slowest hop, the inter-node link; a stage hand-off between nodes uses it too.

    Parameters
    ----------
    gpu : the GPU (its own interconnect is the default intra-node link).
    tp, pp : the layout.
    interconnect : override the intra-node link (e.g. ``"pcie4"`` for an H100 PCIe box).
    inter_node : the link between nodes; default :data:`vidya_lab.catalog.DEFAULT_INTER_NODE_LINK`.
    gpus_per_node : GPUs in one server (default 8).
    """
    g = get_gpu(gpu)
    tp = _tp(tp)
    pp = v.check_int("pp", pp, minimum=1, maximum=MAX_DEGREE)
    gpn = v.check_int("gpus_per_node", gpus_per_node, minimum=1, maximum=MAX_DEGREE)
    intra = gpu_link(g) if interconnect is None else get_link(interconnect, name="interconnect")
    inter = get_link(DEFAULT_INTER_NODE_LINK if inter_node is None else inter_node,
                     name="inter_node")
    nodes = math.ceil(tp * pp / gpn)
    if tp >= gpn:
        crossing = pp - 1  # every stage fills (or overflows) a node: every hand-off leaves it
    else:
        crossing = math.ceil(pp / (gpn // tp)) - 1
    return LayoutLinks(intra=intra, inter=inter, nodes=nodes,
                       tp_link=inter if tp > gpn else intra,
                       inter_node_sends=crossing, intra_node_sends=pp - 1 - crossing)


def comm_coefficients(model: Model | str, gpu: GPU | str, tp: int, pp: int = 1, *,
                      interconnect: Link | str | None = None, inter_node: Link | str | None = None,
                      gpus_per_node: int = GPUS_PER_NODE,
                      activation_bytes: float = 2.0) -> dict[str, float]:
    """Communication of one iteration as a linear function of its tokens T, seconds.

    Returns ``tp_s_per_token``, ``tp_fixed_s`` (all-reduces of one pipeline stage:
    2·ceil(L/pp) rings, each 2(n−1)/n·T·d·bytes/busbw + base + 2(n−1)·hop over the TP link) and
    ``pp_s_per_token``, ``pp_fixed_s`` (the pp − 1 hand-offs, each T·d·bytes/BW + latency over the
    link it crosses). All zero at tp = pp = 1. The cost model multiplies the fixed parts by its
    collective-latency scale (1 unless a sensitivity study moves it).
    """
    m = get_model(model)
    links = layout_links(gpu, tp, pp, interconnect=interconnect, inter_node=inter_node,
                         gpus_per_node=gpus_per_node)
    act = m.d_model * v.check_real("activation_bytes", activation_bytes, minimum=0.0,
                                   min_inclusive=False, maximum=16.0)
    out = {"tp_s_per_token": 0.0, "tp_fixed_s": 0.0, "pp_s_per_token": 0.0, "pp_fixed_s": 0.0}
    if tp > 1:
        n_ar = ALLREDUCES_PER_LAYER * layers_per_stage(m, pp)
        link = links.tp_link
        out["tp_s_per_token"] = n_ar * 2.0 * (tp - 1) / tp * act / link.allreduce_bus_bytes_per_s
        out["tp_fixed_s"] = n_ar * link.allreduce_latency_s(tp)
    if pp > 1:
        a, b = links.intra, links.inter
        out["pp_s_per_token"] = (links.intra_node_sends * act / a.bytes_per_s
                                 + links.inter_node_sends * act / b.bytes_per_s)
        out["pp_fixed_s"] = (links.intra_node_sends * a.p2p_latency_s
                             + links.inter_node_sends * b.p2p_latency_s)
    return out


def tp_comm_time_s(model: Model, gpu: GPU, tp: int, pp: int, tokens: float,
                   activation_bytes: float = 2.0, **links) -> float:
    """All-reduce time of one iteration on one pipeline stage, seconds.

    Formula: 2 all-reduces × ceil(L/pp) layers × ring(tokens · d_model · activation_bytes) over the
    layout's TP link (:func:`layout_links`; ``links`` are its keyword arguments).
    """
    tokens = v.check_real("tokens", tokens, minimum=0.0)
    if _tp(tp) <= 1 or tokens == 0:
        return 0.0
    c = comm_coefficients(model, gpu, tp, pp, activation_bytes=activation_bytes, **links)
    return c["tp_s_per_token"] * tokens + c["tp_fixed_s"]


def pp_comm_time_s(model: Model, gpu: GPU, pp: int, tokens: float,
                   activation_bytes: float = 2.0, *, tp: int = 1, **links) -> float:
    """Activation hand-offs of one iteration through pp stages: (pp−1) sends, seconds.

    Each send goes over the intra-node link, or the inter-node one when it crosses a node boundary
    (which depends on ``tp``: see :func:`layout_links`).
    """
    tokens = v.check_real("tokens", tokens, minimum=0.0)
    if v.check_int("pp", pp, minimum=1, maximum=MAX_DEGREE) <= 1 or tokens == 0:
        return 0.0
    c = comm_coefficients(model, gpu, tp, pp, activation_bytes=activation_bytes, **links)
    return c["pp_s_per_token"] * tokens + c["pp_fixed_s"]


def pipeline_bubble_fraction(pp: int, microbatches: int) -> float:
    """Fraction of a pipeline's time that stages sit idle: (p−1)/(m+p−1) (GPipe)."""
    pp = v.check_int("pp", pp, minimum=1, maximum=MAX_DEGREE)
    microbatches = v.check_int("microbatches", microbatches, minimum=1, maximum=10**9)
    return (pp - 1) / (microbatches + pp - 1)
