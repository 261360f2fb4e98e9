"""Chapter 3's answer key: splitting a model that does not fit over GPUs.

Every expected answer is computed by the package (sizing, parallelism, layouts) from Tanvi's scenario;
each :class:`Mistake` computes what a reader who took a common wrong path would answer.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import layouts, sizing
from vidya_lab import parallelism as par
from vidya_lab.catalog import get_gpu, get_model
from vidya_lab.exercises.ch03 import (
    EX1_SEQUENCES,
    EX1_TP,
    EX2_GPU,
    EX2_TOKENS,
    EX2_TP,
    EX3_GPU,
    EX3_PRECISION,
    EX3_TPOT_S,
    EX4_GPU,
    EX4_INTER,
    EX4_ISL,
    EX4_MODEL,
    EX4_OSL,
    _pp_over_tp,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI


def _memory_gb(weights_split: bool = True, kv_split: bool = True, kv_factor: float = 1.0) -> float:
    m = get_model(TANVI.model_id)
    w = sizing.weights_bytes(m, "bf16")
    kv = sizing.kv_bytes_per_token(m, "bf16") * kv_factor * EX1_SEQUENCES * TANVI.prompt_tokens_mean
    r = sizing.Replica(m, "h100-sxm", tp=EX1_TP)
    w_gpu = r.weights_bytes_per_gpu if weights_split else w
    kv_gpu = EX1_SEQUENCES * TANVI.prompt_tokens_mean * r.kv_bytes_per_token_per_gpu * kv_factor \
        if kv_split else kv
    return (w_gpu + kv_gpu) / 1e9


def _query_heads_factor() -> float:
    m = get_model(TANVI.model_id)
    return m.n_heads / m.n_kv_heads


def _allreduce_s(per_layer: int = par.ALLREDUCES_PER_LAYER, ring: bool = True, gpu: str = EX2_GPU,
                 latency: bool = True, half_ring: bool = False) -> float:
    m, g = get_model(TANVI.model_id), get_gpu(gpu)
    if per_layer == par.ALLREDUCES_PER_LAYER and ring and latency and not half_ring:
        return par.tp_comm_time_s(m, g, EX2_TP, 1, EX2_TOKENS)  # the package's answer
    nbytes = EX2_TOKENS * m.d_model * 2.0
    factor = (EX2_TP - 1) / EX2_TP if half_ring else 2.0 * (EX2_TP - 1) / EX2_TP if ring else 1.0
    one = factor * nbytes / g.interconnect_bytes_per_s + (g.collective_latency_s if latency else 0)
    return per_layer * m.n_layers * one


def _search(tpot_target_s: float = EX3_TPOT_S, **kw) -> list[layouts.Layout]:
    args = dict(peak_rps=TANVI.exam_peak_rps, isl=TANVI.prompt_tokens_mean,
                osl=TANVI.answer_tokens_mean, ttft_target_s=TANVI.ttft_target_s,
                tpot_target_s=tpot_target_s, precision=EX3_PRECISION)
    args.update(kw)
    return _cached_search(tuple(sorted(args.items())))


@cache
def _cached_search(items) -> list[layouts.Layout]:
    return layouts.search_layouts(TANVI.model_id, EX3_GPU, **dict(items))


def _cheapest_cost(**kw) -> float:
    return next(x.cost_per_hour for x in _search(**kw) if x.meets_slo)


def _cheapest_ignoring_slo() -> float:
    return min(x.cost_per_hour for x in _search())


def _one_replica_cost() -> float:
    best = next(x for x in _search() if x.meets_slo)
    return best.gpus_per_replica * get_gpu(EX3_GPU).price_per_hour_usd


def _cheapest_tp_only() -> float:
    return min(x.cost_per_hour for x in _search() if x.meets_slo and x.pp == 1)


def _latency_ratio() -> float:
    ctx = EX4_ISL + EX4_OSL // 2
    tp16 = sizing.Replica(EX4_MODEL, EX4_GPU, tp=16, inter_node=EX4_INTER)
    pp2 = sizing.Replica(EX4_MODEL, EX4_GPU, tp=8, pp=2, inter_node=EX4_INTER)
    return sizing.decode_step_time_s(tp16, 1, ctx) / sizing.decode_step_time_s(pp2, 1, ctx)


def _distinct(expected, mistakes, rel_tol=0.01):
    """Keep only the mistakes whose value differs from the right answer and from every earlier
    mistake (a wrong path that lands on the right number, or on another wrong path's number, cannot
    be told apart by its value)."""
    seen = [expected()]  # no givens in this chapter yet: every reader has the book's numbers
    out = []
    for m in mistakes:
        try:
            got = m.value({})
        except Exception:  # pragma: no cover - a broken mistake is dropped, not fatal
            continue
        if all(abs(got - x) > rel_tol * abs(x) for x in seen):
            out.append(m)
            seen.append(got)
    return tuple(out)


EXERCISES = [
    Exercise(
        id="3.1",
        prompt=f"GB per GPU for weights + KV of {EX1_SEQUENCES} prompts at TP={EX1_TP} (bf16)",
        answer=lambda g: _memory_gb(),
        unit="GB",
        mistakes=(
            Mistake(lambda g: _memory_gb(kv_split=False),
                    "the KV cache splits too: each GPU keeps only its own KV heads (8 / 4 = 2 of "
                    "them), so divide the KV bytes by the TP degree as well"),
            Mistake(lambda g: _memory_gb(weights_split=False),
                    "the weights split over the TP GPUs: each holds a quarter of every matrix"),
            Mistake(lambda g: _memory_gb(kv_factor=_query_heads_factor()),
                    "you sized the KV cache with the 64 query heads; Llama stores only its 8 KV "
                    "heads (grouped-query attention)"),
            Mistake(lambda g: _memory_gb(kv_factor=0.5),
                    "the cache stores both K and V: 2 × layers × KV heads × head_dim × bytes"),
            Mistake(lambda g: _memory_gb(weights_split=False, kv_split=False),
                    "that is the whole replica's memory; the question asks what ONE of the four "
                    "GPUs holds"),
        ),
        hint="weights/4 + sequences × tokens × (2·layers·KV heads·head_dim·2 bytes)/4, in GB (1e9)",
    ),
    Exercise(
        id="3.2",
        prompt=f"all-reduce time of one {EX2_TOKENS}-token iteration at TP={EX2_TP} on the L40S "
               "box, seconds",
        answer=lambda g: _allreduce_s(),
        unit="s",
        mistakes=_distinct(_allreduce_s, (
            Mistake(lambda g: _allreduce_s(per_layer=1),
                    "a Megatron block all-reduces twice: after attention and after the MLP"),
            Mistake(lambda g: _allreduce_s(latency=False),
                    "add the fixed latency of every collective (10 µs over PCIe, from the catalog)"),
            Mistake(lambda g: _allreduce_s(ring=False),
                    "a ring all-reduce moves 2(n−1)/n of the buffer through each GPU's link, not "
                    "the buffer once"),
            Mistake(lambda g: _allreduce_s(half_ring=True),
                    "(n−1)/n is only the reduce-scatter half; the all-gather moves as much again: "
                    "2(n−1)/n"),
            Mistake(lambda g: _allreduce_s(gpu="h100-sxm"),
                    "that is NVLink's 450 GB/s; the L40S box talks over PCIe Gen4 (32 GB/s per "
                    "direction)"),
            Mistake(lambda g: _allreduce_s() / get_model(TANVI.model_id).n_layers,
                    "that is one layer; every one of the 80 layers all-reduces"),
        )),
        hint="2 all-reduces × 80 layers × (2(n−1)/n × tokens × d_model × 2 bytes ÷ link bytes/s "
             "+ latency)",
    ),
    Exercise(
        id="3.3",
        prompt=f"USD per hour of the cheapest {EX3_GPU} {EX3_PRECISION} fleet meeting a "
               f"{EX3_TPOT_S * 1e3:.0f} ms TPOT at the exam peak",
        answer=lambda g: _cheapest_cost(),
        unit="USD/hour",
        rel_tol=1e-6,
        mistakes=_distinct(_cheapest_cost, (
            Mistake(lambda g: _cheapest_ignoring_slo(),
                    "that layout misses the 50 ms TPOT (it is the cheapest at Tanvi's usual "
                    "100 ms, or ignoring the target): search with tpot_target_s=0.05 and keep only "
                    "layouts with meets_slo"),
            Mistake(lambda g: _cheapest_cost(tpot_target_s=TANVI.tpot_target_s),
                    "that is the cost at Tanvi's usual 100 ms target; the question tightens TPOT "
                    "to 50 ms"),
            Mistake(lambda g: _one_replica_cost(),
                    "that is one replica; the fleet needs enough replicas for the exam peak"),
            Mistake(lambda g: _cheapest_tp_only(),
                    "you only tried tensor parallelism; a pipeline (pp > 1) is cheaper here"),
        ), rel_tol=1e-6),
        hint="layouts.search_layouts(..., tpot_target_s=0.05) in bf16, then the first "
             "layout with meets_slo; answer its cost_per_hour",
    ),
    Exercise(
        id="3.4",
        prompt="throughput of PP2×TP8 ÷ TP16 for 405B bf16 on two H100 nodes without InfiniBand",
        answer=lambda g: _pp_over_tp(),
        unit="(ratio)",
        rel_tol=0.01,
        mistakes=_distinct(_pp_over_tp, (
            Mistake(lambda g: 1.0 / _pp_over_tp(),
                    "upside down: that is TP16 ÷ PP2×TP8"),
            Mistake(lambda g: _pp_over_tp("infiniband-ndr"),
                    "that is with InfiniBand between the nodes; the question's nodes have only "
                    "100 Gb/s Ethernet"),
            Mistake(lambda g: _latency_ratio(),
                    "that compares batch-1 TPOTs (latency); the question asks for saturated "
                    "throughput (saturated_throughput's output_tokens_per_s)"),
        )),
        hint="build both Replicas with inter_node='ethernet-100g' and compare "
             "sizing.saturated_throughput(r, 1000, 200)['output_tokens_per_s']",
    ),
]
