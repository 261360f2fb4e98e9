"""Layout search: how to split a model over GPUs (TP × PP) and how many copies to run (replicas).

This module sits ABOVE the cost model. It never computes a step time itself: every latency and
throughput comes from :mod:`vidya_lab.sizing` (which takes its communication terms from
:mod:`vidya_lab.parallelism`), and every memory verdict from :func:`vidya_lab.sizing.estimate`.

The search
----------
:func:`search_layouts` enumerates (TP, PP) for a model on one GPU type, keeps the layouts whose
weights and at least one ``isl + osl``-token sequence fit, sizes the replicas for the peak load with
:func:`vidya_lab.sizing.gpus_for_peak_load` (each replica at the largest batch whose steady TPOT meets
the target), and ranks them: those meeting both targets first, then by cost (ties within
:data:`COST_TIE_TOLERANCE` to the simplest). It never returns a layout that does not fit;
:func:`evaluate_layout` scores one layout (and may say it does not fit), :func:`pareto_frontier`
keeps those no other beats on cost and TPOT, :func:`cost_vs_tpot_target` prices a TPOT target.

Chapter-level analyses
----------------------
* :func:`tpot_breakdown` — one decode step per TP degree, split into weight read, KV read, compute
  and communication (what TP buys, and where communication stops it).
* :func:`tpot_parts` — the same step as stacked parts that add up to it (the widget's bars).
* :func:`pipeline_schedule` — PP with m micro-batches: per-token latency, throughput and the idle
  share of the stages (the bubble).
* :func:`dp_scaling` — replicas multiply throughput; at a fixed load they only lower TPOT down to
  the batch-1 floor, which only TP moves.

TTFT here is the time to first token of one request on an idle replica (the floor); queueing and
interference from other requests are chapter 5's simulator.

References: Megatron-LM (arXiv:1909.08053); GPipe (arXiv:1811.06965); facts.md "Deployment sizing".
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

from vidya_lab import _validate as v
from vidya_lab import parallelism as par
from vidya_lab import sizing
from vidya_lab.catalog import GPUS_PER_NODE, get_gpu, get_model
from vidya_lab.sizing.replica import MAX_NUM_SEQS

#: The keys of the ``vidya-lab layouts --json`` contract (issue 5), in order.
LAYOUT_KEYS = ("tp", "pp", "replicas", "gpus", "fits", "ttft_s", "tpot_s",
               "max_output_tokens_per_s", "cost_per_hour", "meets_slo")

#: Parallel degrees the search tries by default (serving engines use powers of two).
DEFAULT_DEGREES = (1, 2, 4, 8, 16, 32)
#: Default cap on GPUs in one replica (four 8-GPU nodes).
DEFAULT_MAX_GPUS_PER_REPLICA = 32
#: Default busiest fraction of a replica's throughput the plan uses (as sizing.gpus_for_peak_load).
DEFAULT_UTILISATION = 0.8
#: Layouts whose cost is within this share of the cheapest are ties: the model cannot tell them
#: apart (its median throughput error is about 7-10 %, book/validation.md), and a replica count
#: rounded up decides a few per cent. Among ties the simplest layout wins.
COST_TIE_TOLERANCE = 0.05


@dataclass(frozen=True)
class Layout:
    """One (TP, PP, replicas) layout of a model on a GPU type, sized for a peak load.

    Attributes (the first ten are the CLI's JSON contract)
    ----------
    tp, pp : tensor- and pipeline-parallel degrees; replicas : copies; gpus : replicas × tp × pp.
    fits : weights, activation reserve and at least one isl+osl-token sequence fit in memory.
    ttft_s : time to first token of one prompt on an idle replica, seconds (None if it does not fit).
    tpot_s : steady decode step at the batch each replica runs at, seconds (None if it does not fit).
    max_output_tokens_per_s : output tokens/s of all replicas at that batch (the most they deliver
        while each keeps its TPOT), tokens/s.
    cost_per_hour : gpus × the catalog price, USD per hour; meets_slo : fits and meets both targets.
    batch_per_replica, max_batch_per_replica : sequences each replica decodes at once; that fit.
    nodes_per_replica : servers one replica spans (8 GPUs each).
    weights_bytes_per_gpu : weight bytes on the fullest GPU.
    min_tpot_s : decode step at batch 1 (the fastest this layout ever streams), seconds.
    cost_per_million_output_tokens : USD per 1e6 output tokens at the peak load.
    reason : why it does not fit or misses the SLO, else None.
    extrapolated : True when the GPU type has no published timing row behind the calibration.
    """

    tp: int
    pp: int
    replicas: int
    gpus: int
    fits: bool
    ttft_s: float | None
    tpot_s: float | None
    max_output_tokens_per_s: float
    cost_per_hour: float
    meets_slo: bool
    model: str = ""
    gpu: str = ""
    precision: str = "bf16"
    gpus_per_replica: int = 1
    nodes_per_replica: int = 1
    batch_per_replica: int = 0
    max_batch_per_replica: int = 0
    weights_bytes_per_gpu: float = 0.0
    min_tpot_s: float | None = None
    cost_per_million_output_tokens: float | None = None
    reason: str | None = None
    extrapolated: bool = False

    def as_dict(self) -> dict:
        """The contract keys first, then the extras (JSON-ready)."""
        d = asdict(self)
        return {**{k: d[k] for k in LAYOUT_KEYS}, **{k: d[k] for k in d if k not in LAYOUT_KEYS}}

    @property
    def label(self) -> str:
        """``"TP4×PP1 ×3"``: the layout in one short string."""
        return f"TP{self.tp}×PP{self.pp} ×{self.replicas}"


def _check_targets(peak_rps, isl, osl, ttft_target_s, tpot_target_s, utilisation):
    return (v.check_real("peak_rps", peak_rps, minimum=0.0, min_inclusive=False, maximum=1e5),
            v.check_int("isl", isl, minimum=1, maximum=10_000_000),
            v.check_int("osl", osl, minimum=1, maximum=10_000_000),
            v.check_real("ttft_target_s", ttft_target_s, minimum=0.0, min_inclusive=False,
                         maximum=3600.0),
            v.check_real("tpot_target_s", tpot_target_s, minimum=0.0, maximum=60.0,
                         min_inclusive=False),
            v.check_real("utilisation", utilisation, minimum=0.05, maximum=1.0))


def _replica(model, gpu, tp, pp, precision, memory_rule, kv_precision=None, interconnect=None,
             inter_node=None, calibration=None) -> sizing.Replica:
    return sizing.Replica(model, gpu, tp=tp, pp=pp, precision=precision, kv_precision=kv_precision,
                          memory_rule=memory_rule, interconnect=interconnect,
                          inter_node=inter_node, calibration=calibration)


def evaluate_layout(model, gpu, tp: int, pp: int = 1, *, peak_rps: float, isl: int, osl: int,
                    ttft_target_s: float, tpot_target_s: float, precision: str = "bf16",
                    kv_precision: str | None = None, memory_rule: str = "vllm",
                    utilisation: float = DEFAULT_UTILISATION, interconnect: str | None = None,
                    inter_node: str | None = None, calibration=None,
                    cached_tokens: int = 0) -> Layout:
    """Score one tp × pp layout for a peak load: fit, replicas, latency, throughput, cost.

    Memory comes from :func:`vidya_lab.sizing.estimate`; replicas, TPOT and TTFT from
    :func:`vidya_lab.sizing.gpus_for_peak_load` at the TPOT target. When no batch meets the TPOT
    target the replicas run at their saturated batch and ``meets_slo`` is False. A layout that does
    not fit has ``fits`` False, no latencies, zero replicas and zero cost. ``interconnect`` and
    ``inter_node`` choose the links, ``calibration`` the efficiencies (None: the fitted set; see
    :class:`vidya_lab.sizing.Replica`); ``cached_tokens`` of every prompt are found in a prefix
    cache (chapter 4), so only the rest is prefilled.

    Raises ``ValueError`` for a layout the model cannot be split into (see
    :func:`vidya_lab.parallelism.check_layout`) and ``KeyError`` for an unknown id.
    """
    lam, isl, osl, ttft_t, tpot_t, u = _check_targets(peak_rps, isl, osl, ttft_target_s,
                                                      tpot_target_s, utilisation)
    r = _replica(model, gpu, tp, pp, precision, memory_rule, kv_precision, interconnect, inter_node,
                 calibration)
    est = _fit(r, isl, osl)
    common = dict(tp=tp, pp=pp, model=r.model.id, gpu=r.gpu.id, precision=r.precision,
                  gpus_per_replica=r.n_gpus,
                  nodes_per_replica=par.layout_links(r.gpu, tp, pp).nodes,
                  weights_bytes_per_gpu=r.weights_bytes_per_gpu, extrapolated=r.extrapolated)
    if not est[0]:
        return Layout(replicas=0, gpus=0, fits=False, ttft_s=None, tpot_s=None,
                      max_output_tokens_per_s=0.0, cost_per_hour=0.0, meets_slo=False,
                      reason=est[1], **common)
    try:
        sized = sizing.gpus_for_peak_load(r, lam, isl, osl, tpot_slo_s=tpot_t, utilisation=u,
                                          cached_tokens=cached_tokens)
        tpot_met = True
    except ValueError:  # even batch 1 is slower than the target: run at full batch, miss the SLO
        sized = sizing.gpus_for_peak_load(r, lam, isl, osl, utilisation=u,
                                          cached_tokens=cached_tokens)
        tpot_met = False
    reasons = []
    if not tpot_met:
        reasons.append(f"TPOT at batch 1 exceeds the {tpot_t:g} s target")
    if sized["ttft_s"] > ttft_t:
        reasons.append(f"TTFT {sized['ttft_s']:.3g} s exceeds the {ttft_t:g} s target")
    sat = sizing.saturated_throughput(r, isl, osl)
    return Layout(
        replicas=sized["replicas"], gpus=sized["gpus"], fits=True, ttft_s=sized["ttft_s"],
        tpot_s=sized["tpot_s"],
        max_output_tokens_per_s=sized["replicas"] * sized["tokens_per_s_per_replica"],
        cost_per_hour=sized["cost_per_hour_usd"], meets_slo=not reasons,
        batch_per_replica=sized["batch_per_replica"], max_batch_per_replica=sat["batch"],
        min_tpot_s=sizing.steady_tpot_s(r, 1, isl, osl),
        cost_per_million_output_tokens=sized["cost_per_million_output_tokens_usd"],
        reason="; ".join(reasons) or None, **common)


@functools.lru_cache(maxsize=8192)  # the search (and the capstone's sliders) asks again
def _fit(r: sizing.Replica, isl: int, osl: int) -> tuple[bool, str | None]:
    est = sizing.estimate(r.model, r.gpu, gpus=r.n_gpus, tp=r.tp, pp=r.pp, precision=r.precision,
                          kv_precision=r.kv_precision, isl=isl, osl=osl,
                          memory_rule=r.memory_rule, calibration=r.calibration)
    return est["fits"], est["reason"]


def candidate_degrees(model, *, max_gpus_per_replica: int = DEFAULT_MAX_GPUS_PER_REPLICA,
                      tps=None, pps=None) -> list[tuple[int, int]]:
    """The (tp, pp) pairs the search tries: each from ``tps``/``pps`` (default powers of two up to
    32), valid for the model (:func:`~vidya_lab.parallelism.check_layout`), with tp·pp at most
    ``max_gpus_per_replica``."""
    m = get_model(model)
    cap = v.check_int("max_gpus_per_replica", max_gpus_per_replica, minimum=1, maximum=1024)
    tps = DEFAULT_DEGREES if tps is None else _degrees("tps", tps)
    pps = DEFAULT_DEGREES if pps is None else _degrees("pps", pps)
    out = []
    for tp in sorted(set(tps)):
        for pp in sorted(set(pps)):
            if tp * pp > cap:
                continue
            try:
                par.check_layout(m, tp, pp)
            except ValueError:
                continue
            out.append((tp, pp))
    return out


def _degrees(name: str, values, maximum: int = 1024) -> tuple[int, ...]:
    """A non-empty list of 1 to 64 integers in 1..maximum (parallel degrees), checked by name."""
    if isinstance(values, (str, bytes, bool)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list of integers such as [1, 2, 4], got {values!r}")
    values = tuple(values)
    if not values or len(values) > 64:
        raise ValueError(f"{name} must list 1 to 64 values, got {len(values)}")
    return tuple(v.check_int(f"{name}[{i}]", d, minimum=1, maximum=maximum)
                 for i, d in enumerate(values))


def _rank_key(x: Layout):
    # At equal cost: replicas inside one node first (no traffic between servers, fewer parts to
    # fail), then the layout that streams faster at low load (batch-1 TPOT) and answers first (idle
    # TTFT): every GPU of a TP group works on every token, while pipeline stages take turns. The
    # TPOT at the planned batch is no tie-break: every layout that meets the target runs at the
    # largest batch that just meets it. Then more capacity, fewer GPUs per replica, lower pp.
    return (not x.meets_slo, x.cost_per_hour, x.nodes_per_replica, x.min_tpot_s or 0.0,
            x.ttft_s or 0.0, -x.max_output_tokens_per_s, x.gpus_per_replica, x.pp)


def search_layouts(model, gpu, *, peak_rps: float, isl: int, osl: int, ttft_target_s: float,
                   tpot_target_s: float, precision: str = "bf16", kv_precision: str | None = None,
                   memory_rule: str = "vllm", utilisation: float = DEFAULT_UTILISATION,
                   max_gpus_per_replica: int = DEFAULT_MAX_GPUS_PER_REPLICA, tps=None, pps=None,
                   interconnect: str | None = None, inter_node: str | None = None,
                   calibration=None, cached_tokens: int = 0) -> list[Layout]:
    """Every layout of ``model`` on ``gpu`` that fits, sized for ``peak_rps``, ranked.

    Order: :func:`rank` (layouts meeting both targets within :data:`COST_TIE_TOLERANCE` of the
    cheapest, simplest first: the model cannot rank layouts that close; then the rest by cost).
    Layouts that do not fit are left out: an empty list means none fits.

    Parameters
    ----------
    model, gpu : catalog ids.
    peak_rps : the peak request rate the fleet must absorb, requests/s.
    isl, osl : mean prompt and answer lengths, tokens.
    ttft_target_s, tpot_target_s : the latency targets, seconds.
    precision, kv_precision, memory_rule : as for :class:`vidya_lab.sizing.Replica`.
    utilisation : the busiest fraction of a replica's throughput we plan to use (headroom), 0.05 to 1.
    max_gpus_per_replica, tps, pps : the space searched (:func:`candidate_degrees`).
    interconnect, inter_node : link ids overriding the GPU's own and the default InfiniBand.
    calibration : a :class:`vidya_lab.sizing.Calibration` (None: the fitted one).
    cached_tokens : tokens of every prompt found in a prefix cache (0: none counted).
    """
    get_gpu(gpu)
    _check_targets(peak_rps, isl, osl, ttft_target_s, tpot_target_s, utilisation)
    found = []
    for tp, pp in candidate_degrees(model, max_gpus_per_replica=max_gpus_per_replica, tps=tps,
                                    pps=pps):
        lay = evaluate_layout(model, gpu, tp, pp, peak_rps=peak_rps, isl=isl, osl=osl,
                              ttft_target_s=ttft_target_s, tpot_target_s=tpot_target_s,
                              precision=precision, kv_precision=kv_precision,
                              memory_rule=memory_rule, utilisation=utilisation,
                              interconnect=interconnect, inter_node=inter_node,
                              calibration=calibration, cached_tokens=cached_tokens)
        if lay.fits:
            found.append(lay)
    return rank(found)


def rank(found: list[Layout], tolerance: float = COST_TIE_TOLERANCE) -> list[Layout]:
    """Layouts in the search's order (:func:`search_layouts`): those meeting the targets within
    ``tolerance`` of the cheapest such layout's cost first, simplest first (fewer nodes per replica,
    no pipeline, fewer GPUs per replica, then cost); then the rest by :func:`_rank_key`."""
    found = v.check_instances("found", found, Layout)
    tolerance = v.check_fraction("tolerance", tolerance)
    met = [x.cost_per_hour for x in found if x.meets_slo]
    if not met:
        return sorted(found, key=_rank_key)
    limit = min(met) * (1.0 + tolerance)
    near = sorted((x for x in found if x.meets_slo and x.cost_per_hour <= limit),
                  key=lambda x: (x.nodes_per_replica, x.pp, x.gpus_per_replica, *_rank_key(x)[1:]))
    rest = sorted((x for x in found if x not in near), key=_rank_key)
    return near + rest


def cheapest_layout(model, gpu, **kwargs) -> Layout | None:
    """The first layout of :func:`search_layouts` that meets the SLO, or None when none does."""
    ranked = search_layouts(model, gpu, **kwargs)
    return ranked[0] if ranked and ranked[0].meets_slo else None


def pareto_frontier(layouts) -> list[Layout]:
    """The layouts no other fitting layout beats on both cost per hour and TPOT, cheapest first.

    A layout is dominated when another costs no more and streams no slower, and is better on one.
    """
    pts = sorted((x for x in v.check_instances("layouts", layouts, Layout) if x.fits),
                 key=lambda x: (x.cost_per_hour, x.tpot_s))
    out, best_tpot = [], math.inf
    for x in pts:
        if x.tpot_s < best_tpot:
            out.append(x)
            best_tpot = x.tpot_s
    return out


def cost_vs_tpot_target(model, gpu, tpot_targets, **kwargs) -> list[dict]:
    """The cheapest layout meeting each TPOT target: the price of streaming faster.

    Returns one dict per target: ``tpot_target_s``, ``layout`` (a :class:`Layout` or None) and
    ``cost_per_hour`` (None when no layout meets it). ``kwargs`` as :func:`search_layouts`.
    """
    rows = []
    for t in v.check_reals("tpot_targets", tpot_targets, minimum=0.0, min_inclusive=False,
                           max_length=1000):
        best = cheapest_layout(model, gpu, tpot_target_s=t, **kwargs)
        rows.append({"tpot_target_s": float(t), "layout": best,
                     "cost_per_hour": None if best is None else best.cost_per_hour})
    return rows


# ----------------------------------------------------------------------------- chapter analyses

def tpot_breakdown(model, gpu, tps=(1, 2, 4, 8), *, pp: int = 1, batch: int = 1,
                   context_tokens: int = 2048, precision: str = "bf16",
                   memory_rule: str = "vllm", interconnect: str | None = None,
                   inter_node: str | None = None) -> list[dict]:
    """One decode step at each TP degree, split into its parts (seconds).

    Each dict: ``tp``, ``pp``, ``weights_fit`` (bool), ``weights_bytes_per_gpu``, and
    :func:`vidya_lab.sizing.iteration_breakdown` of ``batch`` sequences at ``context_tokens``
    (``weight_read_s``, ``kv_read_s``, ``compute_s``, ``tp_comm_s``, ``pp_comm_s``, ``overhead_s``,
    ``total_s`` = the TPOT), plus ``comm_s`` (tp + pp) and ``speedup`` (total at the first tp ÷
    this total). A layout whose weights do not fit is still timed (as if memory were no limit).
    """
    b = v.check_int("batch", batch, minimum=1, maximum=MAX_BATCH)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=10_000_000)
    rows = []
    for tp in _degrees("tps", tps):
        r = _replica(model, gpu, tp, pp, precision, memory_rule, None, interconnect, inter_node)
        br = sizing.iteration_breakdown(r, decode_contexts=[ctx] * b)
        rows.append({"tp": tp, "pp": pp, "weights_fit": r.weights_fit,
                     "weights_bytes_per_gpu": r.weights_bytes_per_gpu, **br,
                     "comm_s": br["tp_comm_s"] + br["pp_comm_s"]})
    for row in rows:
        row["speedup"] = rows[0]["total_s"] / row["total_s"]
    return rows


#: The stacked parts of :func:`tpot_parts`, in drawing order.
TPOT_PARTS = ("weights_read_s", "kv_read_s", "compute_beyond_memory_s", "communication_s",
              "layer_overhead_s", "overhead_s")
#: Largest batch the chapter analyses take (a bound on their time and memory).
MAX_BATCH = MAX_NUM_SEQS


def _check_replica(r) -> sizing.Replica:
    return v.check_instance("r", r, sizing.Replica, "sizing.Replica")


def tpot_parts(r: sizing.Replica, batch: int, context_tokens: int) -> dict:
    """One decode step of ``batch`` sequences at ``context_tokens``, as parts that add up to it.

    From :func:`vidya_lab.sizing.iteration_breakdown` (per stage and micro-batch, pp stages in
    sequence): ``weights_read_s`` = pp·weight read, ``kv_read_s`` = pp·KV read,
    ``compute_beyond_memory_s`` = pp·max(0, compute − memory) (non-zero only when compute-bound),
    ``communication_s`` = pp·all-reduces + hand-offs, ``layer_overhead_s`` = pp·the stage's layer
    costs, ``overhead_s``; ``total_s`` is their sum and equals the step time.
    """
    _check_replica(r)
    b = v.check_int("batch", batch, minimum=1, maximum=MAX_BATCH)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=10_000_000)
    br = sizing.iteration_breakdown(r, decode_contexts=[ctx] * b)
    p = r.pp
    return {"weights_read_s": p * br["weight_read_s"], "kv_read_s": p * br["kv_read_s"],
            "compute_beyond_memory_s": p * max(0.0, br["compute_s"] - br["memory_s"]),
            "communication_s": p * br["tp_comm_s"] + br["pp_comm_s"],
            "layer_overhead_s": p * br["layer_overhead_s"], "overhead_s": br["overhead_s"],
            "total_s": br["total_s"], "bound": br["bound"]}


def pipeline_schedule(r: sizing.Replica, batch: int, context_tokens: int,
                      microbatches: int | None = None) -> dict:
    """Decode through pp stages with the batch cut into m micro-batches (default m = min(pp,
    batch); m must divide the batch).

    Each micro-batch of batch/m sequences passes the pp stages in turn; a stage serves one
    micro-batch at a time. A micro-batch's traversal takes host + pp·stage + hand-offs, a stage
    needs m·stage for all m, and the host schedules all m, so one token round takes

        TPOT = max(host + pp·stage(batch/m) + hand-offs, m·stage(batch/m), host for all m)

    throughput = batch / TPOT, and each stage idles 1 − m·stage/TPOT of the time (the bubble).
    ``gpipe_bubble`` is the one-pass figure (pp−1)/(m+pp−1) of
    :func:`vidya_lab.parallelism.pipeline_bubble_fraction`. With the default m this TPOT equals the
    cost model's :func:`~vidya_lab.sizing.iteration_time_s` of the whole batch.

    Returns ``microbatches``, ``stage_s``, ``tpot_s``, ``tokens_per_s``, ``idle_fraction``,
    ``gpipe_bubble``.
    """
    _check_replica(r)
    b = v.check_int("batch", batch, minimum=1, maximum=MAX_BATCH)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=10_000_000)
    m = min(r.pp, b) if microbatches is None else v.check_int("microbatches", microbatches,
                                                              minimum=1, maximum=b)
    if b % m:
        raise ValueError(f"batch must be a multiple of microbatches={m}, got {b}")
    c = r._cost
    p = c.parts(0, 0, 0, 0, b, b * ctx, microbatches=m)
    stage = p["stage_s"]
    tpot = c.round_s(p)
    return {"microbatches": m, "stage_s": stage, "tpot_s": tpot, "tokens_per_s": b / tpot,
            "idle_fraction": 1.0 - m * stage / tpot,
            "gpipe_bubble": par.pipeline_bubble_fraction(r.pp, m)}


def dp_scaling(r: sizing.Replica, requests_per_s: float, isl: int, osl: int,
               replicas=(1, 2, 4, 8, 16)) -> list[dict]:
    """What more replicas of one layout do at a fixed load.

    For n replicas each takes λ/n; it runs at the smallest batch whose output rate
    (batch / steady step) covers λ·osl/n tokens/s. Each dict: ``replicas``, ``gpus``, ``batch``,
    ``tpot_s`` (None when even the largest batch cannot keep up: overloaded),
    ``capacity_tokens_per_s`` (n × saturated throughput). Capacity grows n-fold; TPOT falls only to
    the batch-1 step, the floor that only a faster layout (more TP) lowers.
    """
    _check_replica(r)
    lam = v.check_real("requests_per_s", requests_per_s, minimum=0.0, min_inclusive=False,
                       maximum=1e6)
    isl = v.check_int("isl", isl, minimum=1, maximum=10_000_000)
    osl = v.check_int("osl", osl, minimum=1, maximum=10_000_000)
    replicas = _degrees("replicas", replicas, maximum=100_000)
    sat = sizing.saturated_throughput(r, isl, osl)
    bmax = sat["batch"]
    rows = []
    for n in replicas:
        need = lam * osl / n
        batch = tpot = None
        if bmax >= 1 and sat["output_tokens_per_s"] >= need:
            lo, hi = 1, bmax  # smallest batch with batch/step >= need (throughput grows with batch)
            while lo < hi:
                mid = (lo + hi) // 2
                if mid / sizing.steady_tpot_s(r, mid, isl, osl) >= need:
                    hi = mid
                else:
                    lo = mid + 1
            batch, tpot = lo, sizing.steady_tpot_s(r, lo, isl, osl)
        rows.append({"replicas": n, "gpus": n * r.n_gpus, "batch": batch, "tpot_s": tpot,
                     "capacity_tokens_per_s": n * sat["output_tokens_per_s"]})
    return rows


# ----------------------------------------------------------------------------- the book's replica

@functools.lru_cache(maxsize=64)
def reference_tp(model: str | None = None, gpu: str | None = None, precision: str = "bf16") -> int:
    """The tensor-parallel degree the book's running example uses for ``model`` on ``gpu``. For
    Tanvi's model: that of the cheapest single-node, pipeline-free layout meeting her targets at her
    exam peak (chapter 3's answer; when none meets them, the smallest that fits). For another model
    (no story to size it for): the smallest TP whose weights fit with room for a KV cache.
    Defaults: Tanvi's model and first candidate GPU.

    One place decides "the replica" that chapters 4-6 reason about, so it moves with the model.
    """
    from vidya_lab.scenario import TANVI

    model = TANVI.model_id if model is None else get_model(model).id
    gpu = TANVI.candidate_gpu_ids[0] if gpu is None else get_gpu(gpu).id
    if model != TANVI.model_id:  # another model has no story: the smallest TP that holds a cache
        for tp in (t for t in DEFAULT_DEGREES if t <= GPUS_PER_NODE):
            try:
                r = _replica(model, gpu, tp, 1, precision, "vllm")
            except ValueError:
                continue
            if r.weights_fit and r.kv_blocks > 0:
                return tp
        raise ValueError(f"{model} does not fit on up to {GPUS_PER_NODE} x {gpu} in {precision}")
    ranked = search_layouts(model, gpu, peak_rps=TANVI.exam_peak_rps, isl=TANVI.prompt_tokens_mean,
                            osl=TANVI.answer_tokens_mean, ttft_target_s=TANVI.ttft_target_s,
                            tpot_target_s=TANVI.tpot_target_s, precision=precision,
                            tps=tuple(t for t in DEFAULT_DEGREES if t <= GPUS_PER_NODE), pps=(1,))
    if ranked and ranked[0].meets_slo:
        return ranked[0].tp
    for lay in sorted(ranked, key=lambda x: x.tp):
        return lay.tp
    raise ValueError(f"{model} does not fit on up to {GPUS_PER_NODE} x {gpu} in {precision}")
