"""THE cost model: the time of one engine iteration. Every chapter's latency and throughput is this.

One iteration processes some prefill chunks (each: new tokens, and the context already cached
before them) and some decoding sequences (each: the context it attends to). On one GPU of a stage
(L_s = ceil(L/pp) layers; the output head counted on every stage, so each is as slow as the last,
which carries it)::

    compute_s = (2·P_act·T + 2·V·d/tp·R + 4·(h/tp)·hd·L_s·pairs) / (peak FLOP/s · η_compute)
    memory_s  = (W_layers + W_head + kv_tok·(ctx_read + T)) / (achievable bytes/s · η_memory)
    stage_s   = max(compute_s, memory_s) + all-reduce_s(T) + L_s · layer_overhead
    iteration_s = step_overhead + S · sequence_overhead + pp · stage_s + (pp − 1) · send_s(T)

T = tokens in the iteration (prefill + one per decoding sequence); S = sequences in it; R = logit rows (decoding
sequences + prefill sequences); pairs = (query, key) pairs attended; P_act = parameters a token
multiplies on this GPU (top-k experts only for an MoE); W = weight bytes read once per iteration
(the input embedding is a look-up, not read; an MoE reads only the experts some token routes to:
E·(1 − (1 − k/E)^T) per layer in expectation). The all-reduce and send times are the measured link
figures of :mod:`vidya_lab.catalog.links` through :mod:`vidya_lab.parallelism`; η and the overheads
come from the :class:`~vidya_lab.sizing.efficiency.Calibration`.

Pipeline parallelism as engines run it: the batch is cut into m = min(pp, sequences) micro-batches
(vLLM's virtual engines) that follow each other through the stages. Decodes spread evenly over them,
but a prompt's prefill chunk cannot be split, so the heaviest micro-batch carries it. An iteration
then takes the longest of: the heaviest micro-batch's way through the pp stages (the formula above
for its work), one stage's work for all m micro-batches, and the host's scheduling of all of them
(one engine core schedules every micro-batch). The stages idle for the rest — the bubble: a lone
request (m = 1) keeps pp − 1 of the pp stages waiting, and so does a long prefill chunk among
short decodes. Tensor parallelism has no bubble but pays two all-reduces per layer.
"""

from __future__ import annotations

from vidya_lab import _validate as v
from vidya_lab import parallelism as par
from vidya_lab.catalog import bytes_per_element
from vidya_lab.sizing.memory import ACTIVATION_BYTES
from vidya_lab.sizing.replica import Replica, _as_replica


class StepCost:
    """Per-replica coefficients of the step-time formula, precomputed once (plain floats)."""

    __slots__ = ("flops_per_token", "flops_per_logit_row", "flops_per_pair", "flops_per_s",
                 "dense_weight_bytes", "expert_weight_bytes", "n_experts", "miss_prob",
                 "kv_bytes_per_token", "bytes_per_s", "tp_comm_per_token", "tp_comm_fixed",
                 "pp_comm_per_token", "pp_comm_fixed", "pp", "overhead", "layer_overhead",
                 "seq_overhead")

    def __init__(self, r: Replica) -> None:
        m, g, cal = _as_replica(r, "r").model, r.gpu, r.calibration
        ls = par.layers_per_stage(m, r.pp)
        wbytes = bytes_per_element(r.precision)
        # compute: parameters a token multiplies on one GPU of the fullest stage, and the head
        self.flops_per_token = 2.0 * ls * par.layer_params_per_gpu(m, r.tp, active=True)
        self.flops_per_logit_row = 2.0 * m.vocab_size * m.d_model / r.tp
        self.flops_per_pair = 4.0 * (m.n_heads / r.tp) * m.head_dim * ls
        self.flops_per_s = g.flops_per_s(r.precision) * cal.compute_efficiency(r.precision, g.id)
        # memory: the stage's layers and the output head, read once per iteration
        layers = ls * par.layer_params_per_gpu(m, r.tp) * wbytes
        expert = ls * m.n_experts * m.expert_params() / r.tp * wbytes if m.is_moe else 0.0
        head = (m.vocab_size * m.d_model / r.tp + m.final_norm_params()) * wbytes
        self.dense_weight_bytes = layers - expert + head
        self.expert_weight_bytes = expert
        self.n_experts = m.n_experts
        self.miss_prob = 1.0 - m.experts_per_token / m.n_experts
        self.kv_bytes_per_token = r.kv_bytes_per_token_per_gpu
        self.bytes_per_s = g.hbm_bytes_per_s * cal.memory_fraction_of_peak(g)
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
        self.layer_overhead = ls * cal.layer_overhead_s
        self.seq_overhead = cal.sequence_overhead_for(g.id)

    def microbatches(self, seqs: float) -> float:
        """Micro-batches the iteration is cut into: min(pp, sequences), at least 1."""
        return min(float(self.pp), max(1.0, seqs))

    def weight_read_bytes(self, tokens: float) -> float:
        """Weight bytes one stage reads for ``tokens`` tokens (all experts some token routes to)."""
        if self.n_experts == 1:
            return self.dense_weight_bytes
        touched = 1.0 - self.miss_prob ** tokens  # expected fraction of experts some token uses
        return self.dense_weight_bytes + self.expert_weight_bytes * touched

    def _stage(self, tokens, logit_rows, pairs, kv_tokens) -> tuple[float, ...]:
        """One stage's parts for one micro-batch's work, seconds: (compute, weight read, KV read,
        TP all-reduces, the stage)."""
        compute = (self.flops_per_token * tokens + self.flops_per_logit_row * logit_rows
                   + self.flops_per_pair * pairs) / self.flops_per_s
        weights = self.weight_read_bytes(tokens) / self.bytes_per_s
        kv = self.kv_bytes_per_token * kv_tokens / self.bytes_per_s
        tp = self.tp_comm_per_token * tokens + self.tp_comm_fixed
        return compute, weights, kv, tp, max(compute, weights + kv) + tp + self.layer_overhead

    def _round_parts(self, prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs,
                     n_decode, decode_ctx_sum, microbatches):
        """(m, heaviest micro-batch's stage parts, mean micro-batch's stage s, send s, host s per
        micro-batch, host s for all): what :meth:`parts` reports and :meth:`step_time_s` adds."""
        m = self.microbatches(prefill_seqs + n_decode) if microbatches is None else microbatches
        mp = min(m, max(1.0, prefill_seqs)) if prefill_tokens > 0 else m
        heavy = self._stage(prefill_tokens / mp + n_decode / m,
                            prefill_seqs / mp + n_decode / m,
                            prefill_pairs / mp + decode_ctx_sum / m,
                            prefill_kv_tokens / mp + (decode_ctx_sum + n_decode) / m)
        mean = heavy[4] if mp == m else self._stage(
            (prefill_tokens + n_decode) / m, (prefill_seqs + n_decode) / m,
            (prefill_pairs + decode_ctx_sum) / m,
            (prefill_kv_tokens + decode_ctx_sum + n_decode) / m)[4]
        tokens = prefill_tokens / mp + n_decode / m
        pp = self.pp_comm_per_token * tokens + self.pp_comm_fixed if self.pp > 1 else 0.0
        sequences = prefill_seqs + n_decode
        return (m, heavy, mean, pp, self.overhead + self.seq_overhead * sequences / m,
                m * self.overhead + self.seq_overhead * sequences)

    def parts(self, prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs, n_decode,
              decode_ctx_sum, microbatches: float | None = None) -> dict:
        """The iteration's parts: one stage for the HEAVIEST micro-batch (seconds), the micro-batch
        count (default :meth:`microbatches`), and what the round is the largest of.

        Decodes spread evenly over the m micro-batches; a prompt's prefill chunk cannot be split
        between them, so the prefill work spreads over at most as many micro-batches as there are
        prefilling sequences — with one prompt in prefill, one micro-batch carries all of it, and the
        stages wait for it (the bubble of continuous batching through a pipeline).
        """
        m, heavy, mean, pp, host, host_total = self._round_parts(
            prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs, n_decode,
            decode_ctx_sum, microbatches)
        compute, weights, kv, tp, stage = heavy
        return {"compute_s": compute, "weight_read_s": weights, "kv_read_s": kv, "tp_comm_s": tp,
                "microbatches": m, "pp_comm_s": pp, "layer_overhead_s": self.layer_overhead,
                "host_s": host, "stage_s": stage,
                "all_stages_s": m * mean,  # what one stage must do for all micro-batches
                "host_total_s": host_total}

    def _round(self, host_s, stage_s, pp_comm_s, all_stages_s, host_total_s) -> float:
        traversal = host_s + self.pp * stage_s + pp_comm_s
        return max(traversal, all_stages_s, host_total_s)

    def round_s(self, p: dict) -> float:
        """One iteration (every sequence gains a token): the heaviest micro-batch's traversal, or a
        stage's work for all of them, or the host's work for all of them — whichever is longest."""
        return self._round(p["host_s"], p["stage_s"], p["pp_comm_s"], p["all_stages_s"],
                           p["host_total_s"])

    def step_time_s(self, prefill_tokens=0.0, prefill_pairs=0.0, prefill_kv_tokens=0.0,
                    prefill_seqs=0.0, n_decode=0.0, decode_ctx_sum=0.0) -> float:
        """:meth:`round_s` of :meth:`parts` without building the dicts (the simulators' path)."""
        if prefill_tokens + n_decode <= 0:
            return 0.0
        m, heavy, mean, pp, host, host_total = self._round_parts(
            prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs, n_decode,
            decode_ctx_sum, None)
        return self._round(host, heavy[4], pp, m * mean, host_total)


# ----------------------------------------------------------------------------- friendly forms

def prefill_work(chunks) -> tuple[float, float, float, float]:
    """Aggregates of prefill chunks ``[(chunk_tokens, prior_tokens), ...]``.

    Returns (prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs) where pairs = Σ c·k +
    c(c+1)/2 (causal attention: token i of the chunk sees the k cached tokens and i of its own).
    """
    _sequence("prefill", chunks, "list of (chunk_tokens, prior_tokens) pairs")
    tokens = pairs = kv = 0.0
    n = 0
    for i, chunk in enumerate(chunks):
        try:
            c, k = chunk
        except (TypeError, ValueError):
            raise TypeError(f"prefill[{i}] must be a (chunk_tokens, prior_tokens) pair, "
                            f"got {v._show(chunk)}") from None
        c = v.check_int(f"prefill[{i}] chunk_tokens", c, minimum=1, maximum=10**7)
        k = v.check_int(f"prefill[{i}] prior_tokens", k, minimum=0, maximum=10**7)
        tokens += c
        pairs += c * k + c * (c + 1) / 2
        kv += k + c
        n += 1
    return tokens, pairs, kv, float(n)


#: Most prefill chunks or decoding sequences one iteration may hold (far above any engine's batch).
MAX_ITERATION_ENTRIES = 1_000_000


def _sequence(name: str, values, what: str):
    """``values`` if it is a list, tuple or array of at most :data:`MAX_ITERATION_ENTRIES`."""
    import numpy as np

    if not isinstance(values, (list, tuple, np.ndarray)):
        raise TypeError(f"{name} must be a {what}, got {type(values).__name__}")
    if len(values) > MAX_ITERATION_ENTRIES:
        raise ValueError(f"{name} may hold at most {MAX_ITERATION_ENTRIES:,} entries, "
                         f"got {len(values):,}")
    return values


def _decode_aggregates(decode_contexts) -> tuple[float, float]:
    _sequence("decode_contexts", decode_contexts, "list of context lengths")
    ctxs = decode_contexts if isinstance(decode_contexts, (list, tuple)) else decode_contexts.tolist()
    if not ctxs:
        return 0.0, 0.0
    if all(type(c) is int for c in ctxs) and 1 <= min(ctxs) and max(ctxs) <= 10**7:
        return float(len(ctxs)), float(sum(ctxs))  # the common case, at C speed
    total = 0.0
    for i, ctx in enumerate(ctxs):  # slow path: name the offending entry
        total += v.check_int(f"decode_contexts[{i}]", ctx, minimum=1, maximum=10**7)
    return float(len(ctxs)), total


def iteration_time_s(r: Replica, prefill=(), decode_contexts=()) -> float:
    """Time of one engine iteration, seconds: THE cost model (module docstring).

    Parameters
    ----------
    r : the replica.
    prefill : ``[(chunk_tokens, prior_tokens), ...]``: prompt chunks processed this iteration and the
        tokens of the same sequence already in the KV cache.
    decode_contexts : for each decoding sequence, the context tokens it attends to.
    """
    _as_replica(r)
    pt, pairs, kv, seqs = prefill_work(prefill)
    nd, ctx = _decode_aggregates(decode_contexts)
    return r.step_time_s(pt, pairs, kv, seqs, nd, ctx)


def iteration_breakdown(r: Replica, prefill=(), decode_contexts=()) -> dict:
    """The iteration's time split into its parts, seconds.

    Keys, per stage and for one micro-batch: ``compute_s``, ``weight_read_s``, ``kv_read_s``,
    ``memory_s`` (weights + KV), ``tp_comm_s``, ``layer_overhead_s``; per iteration:
    ``pp_comm_s`` (the hand-offs), ``overhead_s`` (the host: per iteration and per sequence of the
    micro-batch), ``microbatches``, ``stage_s`` (of the heaviest micro-batch), ``all_stages_s`` (a
    stage's work for every micro-batch), ``host_total_s``, ``bound`` ("compute" or "memory"),
    ``idle_fraction`` (the pipeline bubble: 1 − all_stages/total) and ``total_s``, equal to
    :func:`iteration_time_s`: the largest of host + pp·stage + hand-offs, all_stages and
    host_total (with pp = 1, simply host + stage).
    """
    _as_replica(r)
    pt, pairs, kv, seqs = prefill_work(prefill)
    nd, ctx = _decode_aggregates(decode_contexts)
    c = r._cost
    p = c.parts(pt, pairs, kv, seqs, nd, ctx)
    busy = pt + nd > 0
    memory = p["weight_read_s"] + p["kv_read_s"]
    stage = p["stage_s"] if busy else 0.0
    total = r.step_time_s(pt, pairs, kv, seqs, nd, ctx)
    return {**p, "memory_s": memory, "overhead_s": p["host_s"] if busy else 0.0, "stage_s": stage,
            "layer_overhead_s": p["layer_overhead_s"] if busy else 0.0,
            "pp_comm_s": p["pp_comm_s"] if busy else 0.0, "stages": r.pp,
            "bound": "compute" if p["compute_s"] > memory else "memory",
            "idle_fraction": 1.0 - p["all_stages_s"] / total if total > 0 else 0.0,
            "total_s": total}
