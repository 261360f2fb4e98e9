"""Three things a split model meets in practice: experts, a long upload, and an adapter per subject.

Chapter 3's practice topic (issue 17, item 6). Each question is memory or traffic arithmetic on the
catalog, the same arithmetic as :mod:`vidya_lab.parallelism` and :mod:`vidya_lab.sizing`; nothing
here is fitted. Read it in this order:

1. **Expert parallelism (EP)** for a mixture-of-experts model such as Mixtral-8x7B.
   :func:`expert_layout` — with EP over n GPUs each GPU holds E/n whole experts of every layer and a
   full copy of the dense part (attention, norms, router, embeddings), and runs attention for its own
   1/n of the batch (data-parallel attention, as vLLM and SGLang deploy EP); with TP over n GPUs
   each holds 1/n of everything. :func:`moe_exchange` — what one MoE layer sends per GPU for an
   iteration of T tokens: EP sends each of its T/n tokens to the k experts it routes to and back
   (a *dispatch* and a *combine* all-to-all, (n−1)/n of the copies leaving the GPU), TP all-reduces
   every token twice. Per GPU that is

       EP: 2 · (T/n) · k · d · b · (n−1)/n          TP: 2 · 2(n−1)/n · T · d · b

   so TP moves 2n/k times as many bytes per GPU. :func:`all_to_all_time_s` times one all-to-all.
2. **Long context**: :func:`long_context_kv` — the KV cache of one long sequence (a teacher's
   40,000-token upload) per GPU, against the replica's KV budget.
3. **Multi-LoRA**: :func:`lora_adapter_params` and :func:`adapter_budget` — a rank-r LoRA adapter
   adds r·(d_in + d_out) parameters to each adapted matrix; what one adapter per subject takes from
   the KV budget (S-LoRA keeps adapters and KV pages in one pool, so they compete for the same
   bytes).

References: Jiang et al., *Mixtral of Experts* (arXiv:2401.04088); vLLM's expert- and data-parallel
deployment guides; DeepEP ``docs/legacy.md`` (deepseek-ai/DeepEP) for the all-to-all bandwidth an
engine reaches; Hu et al., *LoRA* (arXiv:2106.09685); Sheng et al., *S-LoRA* (arXiv:2311.03285).
"""

from __future__ import annotations

import math

from vidya_lab import _validate as v
from vidya_lab import parallelism as par
from vidya_lab import sizing
from vidya_lab.catalog import Link, Model, bytes_per_element, get_link, get_model

#: Share of a link's per-direction bandwidth that an engine's all-to-all reaches at large messages,
#: by link scope. DeepEP (deepseek-ai/DeepEP, docs/legacy.md, "normal kernels"): 153 GB/s dispatch
#: over H800 NVLink (~160 GB/s), 43 GB/s over one 400 Gb/s CX7 NIC (~50 GB/s) at EP16.
ALL_TO_ALL_EFFICIENCY = {"intra-node": 153.0 / 160.0, "inter-node": 43.0 / 50.0}
#: All-to-alls per MoE layer: the dispatch (tokens to their experts) and the combine (results back).
ALL_TO_ALLS_PER_LAYER = 2
#: The matrices a LoRA adapter may adapt, with their (input, output) widths (see :func:`_shapes`).
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")
#: Largest token count the functions here accept (a bound on nonsense, not on the arithmetic).
MAX_TOKENS = 10_000_000


def _model(model) -> Model:
    return get_model(model)


def _degree(name: str, n, m: Model | None = None) -> int:
    n = v.check_int(name, n, minimum=1, maximum=par.MAX_DEGREE)
    if m is not None and m.n_experts % n:
        raise ValueError(f"{name} must divide {m.id}'s {m.n_experts} experts "
                         f"(one of {[d for d in range(1, m.n_experts + 1) if m.n_experts % d == 0]})"
                         f", got {n}")
    return n


# ----------------------------------------------------------------------------- 1. experts

def expert_layout(model, n: int, precision: str = "bf16") -> dict:
    """Weights per GPU of a mixture-of-experts model split n ways by EP and, for comparison, by TP.

    EP (data-parallel attention): every GPU holds the dense part whole (attention, norms, router,
    embeddings, head) and E/n of each layer's experts. TP: the fullest GPU of a TP = n layout
    (:func:`vidya_lab.parallelism.weight_params_per_gpu`). Returns ``experts_per_gpu`` (per layer),
    ``dense_params``, ``expert_params`` (all layers, all experts), ``ep_weights_bytes_per_gpu``,
    ``tp_weights_bytes_per_gpu`` and ``replicated_bytes_per_gpu`` (what EP stores in excess of an
    even split: the dense part × (1 − 1/n)), bytes.
    """
    m = _model(model)
    if not m.is_moe:
        raise ValueError(f"{m.id} is dense (one MLP per layer): expert parallelism needs an MoE model")
    n = _degree("n", n, m)
    b = bytes_per_element(precision)
    experts = m.n_moe_layers * m.n_experts * m.expert_params()  # routed; shared ones are dense
    dense = m.total_params() - experts
    ep = dense + experts / n
    tp = par.weight_params_per_gpu(m, n) if m.n_heads % n == 0 else math.nan
    return {"experts_per_gpu": m.n_experts // n, "dense_params": dense, "expert_params": experts,
            "ep_weights_bytes_per_gpu": ep * b, "tp_weights_bytes_per_gpu": tp * b,
            "replicated_bytes_per_gpu": dense * (1 - 1 / n) * b}


def all_to_all_time_s(nbytes_per_gpu: float, link: Link | str) -> float:
    """One all-to-all in which every GPU sends ``nbytes_per_gpu`` in all, seconds.

    Formula: p2p_latency + nbytes / (efficiency × link bytes/s). The n − 1 sends of a GPU go out
    at once, so one send's fixed cost is paid once; ``efficiency`` is
    :data:`ALL_TO_ALL_EFFICIENCY` for the link's scope (measured by DeepEP).
    """
    lk = get_link(link)
    nbytes = v.check_real("nbytes_per_gpu", nbytes_per_gpu, minimum=0.0, maximum=1e15)
    if nbytes == 0:
        return 0.0
    return lk.p2p_latency_s + nbytes / (ALL_TO_ALL_EFFICIENCY[lk.scope] * lk.bytes_per_s)


def moe_exchange(model, tokens: int, n: int, link: Link | str = "nvlink4",
                 activation_bytes: float = 2.0) -> dict:
    """What one MoE layer costs in traffic for an iteration of ``tokens`` tokens, EP vs TP over n GPUs.

    Returns ``ep_bytes_per_gpu`` (the dispatch and the combine: 2·(T/n)·k·d·b·(n−1)/n, bytes),
    ``ep_time_s`` (two :func:`all_to_all_time_s`), ``tp_bytes_per_gpu`` (two ring all-reduces of
    T·d·b: 2·2(n−1)/n·T·d·b), ``tp_time_s`` (two :meth:`~vidya_lab.catalog.Link.allreduce_time_s`)
    and ``ratio_bytes`` = tp/ep bytes (= 2n/k). Routing is taken as uniform: a token's expert is on
    another GPU with probability (n−1)/n.
    """
    m = _model(model)
    if not m.is_moe:
        raise ValueError(f"{m.id} is dense (one MLP per layer): expert parallelism needs an MoE model")
    t = v.check_int("tokens", tokens, minimum=1, maximum=MAX_TOKENS)
    n = _degree("n", n, m)
    act = m.d_model * v.check_real("activation_bytes", activation_bytes, minimum=0.0,
                                   min_inclusive=False, maximum=16.0)
    lk = get_link(link)
    leave = (n - 1) / n
    one_way = (t / n) * m.experts_per_token * act * leave
    ep = ALL_TO_ALLS_PER_LAYER * one_way
    tp = par.ALLREDUCES_PER_LAYER * 2.0 * leave * t * act
    return {"ep_bytes_per_gpu": ep,
            "ep_time_s": ALL_TO_ALLS_PER_LAYER * all_to_all_time_s(one_way, lk),
            "tp_bytes_per_gpu": tp,
            "tp_time_s": par.ALLREDUCES_PER_LAYER * lk.allreduce_time_s(t * act, n),
            "ratio_bytes": tp / ep if ep else math.nan}


# ----------------------------------------------------------------------------- 2. long context

def long_context_kv(r: sizing.Replica, tokens: int, typical_tokens: int | None = None) -> dict:
    """The KV cache of one sequence of ``tokens`` tokens on replica ``r``.

    Returns ``kv_bytes`` (the whole sequence, every GPU together), ``kv_bytes_per_gpu`` (what one GPU
    holds: its KV heads' share), ``kv_budget_bytes_per_gpu``, ``share_of_budget`` (per GPU),
    ``fits`` (at least one such sequence fits in the cache, in whole KV blocks) and, given
    ``typical_tokens`` (an ordinary conversation's length), ``typical_displaced``: how many ordinary
    conversations the one long sequence displaces.
    """
    v.check_instance("r", r, sizing.Replica, "sizing.Replica")
    t = v.check_int("tokens", tokens, minimum=1, maximum=MAX_TOKENS)
    per_gpu = t * r.kv_bytes_per_token_per_gpu
    budget = r.kv_budget_bytes
    out = {"kv_bytes": t * sizing.kv_bytes_per_token(r.model, r.kv_precision),
           "kv_bytes_per_gpu": per_gpu, "kv_budget_bytes_per_gpu": budget,
           "share_of_budget": per_gpu / budget if budget > 0 else math.inf,
           "fits": sizing.max_concurrent_sequences(r, t) >= 1}
    if typical_tokens is not None:
        typical = v.check_int("typical_tokens", typical_tokens, minimum=1, maximum=MAX_TOKENS)
        out["typical_displaced"] = t / typical
    return out


# ----------------------------------------------------------------------------- 3. adapters

def _shapes(m: Model) -> dict[str, tuple[int, int]]:
    """(input, output) width of each matrix a LoRA adapter may adapt, per layer and expert."""
    q, kv = m.n_heads * m.head_dim, m.n_kv_heads * m.head_dim
    return {"q": (m.d_model, q), "k": (m.d_model, kv), "v": (m.d_model, kv), "o": (q, m.d_model),
            "gate": (m.d_model, m.d_ff), "up": (m.d_model, m.d_ff), "down": (m.d_ff, m.d_model)}


def _targets(targets) -> tuple[str, ...]:
    if isinstance(targets, str) or not hasattr(targets, "__iter__"):
        raise TypeError(f"targets must be a list of matrix names from {LORA_TARGETS}, "
                        f"got {targets!r}")
    out = tuple(targets)
    if not out:
        raise ValueError(f"targets must name at least one of {LORA_TARGETS}")
    for i, t in enumerate(out):
        v.check_choice(f"targets[{i}]", t, LORA_TARGETS)
    return out


def lora_adapter_params(model, rank: int, targets=LORA_TARGETS) -> int:
    """Parameters of one rank-``rank`` LoRA adapter of ``model``.

    Formula: layers × Σ over the adapted matrices of rank·(d_in + d_out) (the A and B factors;
    an MLP matrix counts once per expert in an MoE model).
    """
    m = _model(model)
    rank = v.check_int("rank", rank, minimum=1, maximum=4096)
    shapes = _shapes(m)
    per_layer = 0
    for t in _targets(targets):
        d_in, d_out = shapes[t]
        copies = m.n_experts if t in ("gate", "up", "down") else 1
        per_layer += copies * rank * (d_in + d_out)
    return m.n_layers * per_layer


def adapter_budget(r: sizing.Replica, adapters: int, rank: int, targets=LORA_TARGETS,
                   precision: str = "bf16", typical_tokens: int | None = None) -> dict:
    """What ``adapters`` LoRA adapters resident on replica ``r`` take from its KV cache, per GPU.

    Each GPU keeps its TP share of every resident adapter (S-LoRA shards adapters with the base
    model), from the same pool as the KV pages. Returns ``adapter_bytes`` (one adapter, whole),
    ``adapters_bytes_per_gpu``, ``share_of_budget``, ``kv_tokens_displaced`` (KV tokens those bytes
    would hold) and, given ``typical_tokens``, ``typical_displaced`` (ordinary conversations).
    """
    v.check_instance("r", r, sizing.Replica, "sizing.Replica")
    n = v.check_int("adapters", adapters, minimum=0, maximum=100_000)
    one = lora_adapter_params(r.model, rank, targets) * bytes_per_element(precision)
    per_gpu = n * one / (r.tp * r.pp)
    budget = r.kv_budget_bytes
    out = {"adapter_bytes": one, "adapters_bytes_per_gpu": per_gpu,
           "share_of_budget": per_gpu / budget if budget > 0 else math.inf,
           "kv_tokens_displaced": per_gpu / r.kv_bytes_per_token_per_gpu}
    if typical_tokens is not None:
        typical = v.check_int("typical_tokens", typical_tokens, minimum=1, maximum=MAX_TOKENS)
        out["typical_displaced"] = out["kv_tokens_displaced"] / typical
    return out


# ----------------------------------------------------------------------------- 4. EP layouts

#: GPU counts :func:`ep_layouts` tries for one replica (powers of two up to four 8-GPU nodes).
EP_GROUP_SIZES = (1, 2, 4, 8, 16, 32)


def experts_touched_per_gpu(model, tokens: int, n: int) -> float:
    """Expected distinct experts of one layer that ``tokens`` tokens hit on one of n EP ranks.

    Formula: (E/n)·(1 − (1 − k/E)^T) under uniform routing (each token picks k of E experts): a
    decode step reads only the experts some token routed to, so at small batches an MoE model reads
    far fewer bytes than it stores.
    """
    m = _model(model)
    t = v.check_int("tokens", tokens, minimum=1, maximum=MAX_TOKENS)
    n = _degree("n", n, m)
    return (m.n_experts / n) * (1.0 - (1.0 - m.experts_per_token / m.n_experts) ** t)


def ep_layouts(model, gpu, *, batch: int, context_tokens: int, precision: str = "fp8",
               kv_precision: str = "bf16", sizes=EP_GROUP_SIZES) -> list[dict]:
    """Rank expert-parallel (EP = n, attention data-parallel) against tensor-parallel (TP = n)
    layouts of an MoE model for a decode step of ``batch`` sequences of ``context_tokens`` tokens
    per replica; a bandwidth roofline, not the calibrated cost model.

    Per GPU and step: weight bytes read (the dense part — whole under EP, 1/n under TP — plus the
    experts some token hit, :func:`experts_touched_per_gpu`), KV bytes read (its share of the batch
    under EP, every sequence's 1/n of heads under TP; an MLA latent is not split by TP), divided by the
    GPU's achievable bandwidth, plus the MoE layers' communication (:func:`moe_exchange`: two
    all-to-alls for EP, two all-reduces for TP) over NVLink within 8 GPUs and over
    :data:`~vidya_lab.catalog.DEFAULT_INTER_NODE_LINK` beyond. A layout fits when weights plus the
    batch's KV fit in 90% of the GPU's memory. Each dict: ``kind`` ("ep" or "tp"), ``ep``, ``tp``,
    ``gpus``, ``weights_bytes_per_gpu``, ``kv_bytes_per_gpu``, ``fits``, ``step_s`` (seconds),
    ``comm_s``, ``tokens_per_s_per_gpu``; fitting layouts first, by tokens/s per GPU.
    """
    from vidya_lab.catalog import DEFAULT_INTER_NODE_LINK, get_gpu
    m, g = _model(model), get_gpu(gpu)
    if not m.is_moe:
        raise ValueError(f"{m.id} is dense (one MLP per layer): expert parallelism needs an MoE model")
    b = v.check_int("batch", batch, minimum=1, maximum=MAX_TOKENS)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=MAX_TOKENS)
    wb = bytes_per_element(precision)
    kv_token = sizing.kv_bytes_per_token(m, kv_precision, context_tokens=ctx)
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes must be a list of GPU counts, got {sizes!r}")
    sizes = [v.check_int(f"sizes[{i}]", n, minimum=1, maximum=par.MAX_DEGREE)
             for i, n in enumerate(sizes)]
    out = []
    for n in sizes:
        if m.n_experts % n:
            continue
        lay = expert_layout(m, n, precision)
        link = g.intra_link if n <= par.GPUS_PER_NODE else get_link(DEFAULT_INTER_NODE_LINK)
        ex = moe_exchange(m, b, n, link)
        hit = experts_touched_per_gpu(m, b, n) * m.expert_params() * m.n_moe_layers * wb
        seqs = math.ceil(b / n)
        candidates = [("ep", lay["ep_weights_bytes_per_gpu"], lay["dense_params"] * wb + hit,
                       seqs * ctx * kv_token, ex["ep_time_s"])]
        if m.n_heads % n == 0 and (m.n_kv_heads % n == 0 or n % m.n_kv_heads == 0):
            kv_share = 1.0 if m.is_mla else max(1, m.n_kv_heads // n) / m.n_kv_heads
            candidates.append(("tp", lay["tp_weights_bytes_per_gpu"],
                               (lay["dense_params"] * wb + hit * n) / n,
                               b * ctx * kv_token * kv_share, ex["tp_time_s"]))
        for kind, weights, read, kv, comm_layer in candidates:
            comm = comm_layer * m.n_moe_layers
            step = (read + kv) / g.hbm_achievable_bytes_per_s + comm
            out.append({"kind": kind, "ep": n if kind == "ep" else 1, "tp": n if kind == "tp" else 1,
                        "gpus": n, "weights_bytes_per_gpu": weights, "kv_bytes_per_gpu": kv,
                        "fits": weights + kv <= 0.9 * g.hbm_bytes, "step_s": step, "comm_s": comm,
                        "tokens_per_s_per_gpu": b / step / n})
    return sorted(out, key=lambda x: (not x["fits"], -x["tokens_per_s_per_gpu"]))


def explain_ep_winner(ranked: list[dict]) -> str:
    """One sentence on why the first fitting layout of :func:`ep_layouts` wins."""
    keys = ("kind", "gpus", "fits", "weights_bytes_per_gpu", "step_s", "comm_s",
            "tokens_per_s_per_gpu")
    if not isinstance(ranked, (list, tuple)) or not all(
            isinstance(x, dict) and all(k in x for k in keys) for x in ranked):
        raise TypeError(f"ranked must be the list of dicts ep_layouts returns (keys {keys}), "
                        f"got {type(ranked).__name__}")
    fit = [x for x in ranked if x["fits"]]
    if not fit:
        return "no layout fits: every candidate's weights plus KV exceed 90% of one GPU's memory"
    w = fit[0]
    rival = next((x for x in fit[1:] if x["kind"] != w["kind"]), None)
    s = (f"{w['kind'].upper()}={w['gpus']} wins at {w['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU "
         f"({w['weights_bytes_per_gpu'] / 1e9:.1f} GB of weights per GPU, step {w['step_s'] * 1e3:.2f} ms"
         f" of which communication {w['comm_s'] * 1e3:.2f} ms)")
    if rival is not None:
        s += (f"; the best {rival['kind'].upper()} layout ({rival['kind'].upper()}={rival['gpus']}) "
              f"reaches {rival['tokens_per_s_per_gpu']:,.0f} with communication "
              f"{rival['comm_s'] * 1e3:.2f} ms per step")
    smaller = [x for x in ranked if not x["fits"] and x["gpus"] < w["gpus"]]
    if smaller:
        s += f"; fewer than {w['gpus']} GPUs do not hold the weights and the batch's KV"
    return s + "."
