"""Chapter 3's answer key: splitting a model that does not fit over GPUs.

Every expected answer is computed by the package (sizing, parallelism, layouts, experts) from
Tanvi's scenario and the reader's givens ``g``; each :class:`Mistake` computes what a reader who took
a common wrong path would answer.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import experts, layouts, sizing
from vidya_lab import parallelism as par
from vidya_lab.catalog import get_gpu, get_model
from vidya_lab.exercises.ch03 import (
    EX1_TP,
    EX2_GPU,
    EX3_TP,
    EX4_PP,
    EX4_PRECISION,
    EX5_TPOT_S,
    EX6_GPU,
    EX6_MAX_GPUS,
    EX6_PRECISION,
    EX7_TP,
    EX8_MODEL,
    EX8_N,
    GIVENS,
    GPU_ID,
    tanvi_targets,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI


def _given(*names):
    return {k: GIVENS[k] for k in names}


# ----------------------------------------------------------------------------- 3.1 memory per GPU

def _memory_gb(g, weights_split: bool = True, kv_split: bool = True, kv_factor: float = 1.0,
               tokens: int | None = None) -> float:
    m, tp = get_model(TANVI.model_id), EX1_TP
    r = sizing.Replica(m, GPU_ID, tp=tp)
    w = r.weights_bytes_per_gpu if weights_split else sizing.weights_bytes(m, "bf16")
    per_token = r.kv_bytes_per_token_per_gpu if kv_split else sizing.kv_bytes_per_token(m, "bf16")
    tokens = TANVI.prompt_tokens_mean if tokens is None else tokens
    return (w + g["sequences"] * tokens * per_token * kv_factor) / 1e9


# ----------------------------------------------------------------------------- 3.2 all-reduces

def _allreduce_s(g, per_layer: int = par.ALLREDUCES_PER_LAYER, ring: float | None = None,
                 gpu: str = EX2_GPU, bandwidth: str = "bus") -> float:
    m, n = get_model(TANVI.model_id), g["box_tp"]
    link = get_gpu(gpu).intra_link
    nbytes = g["chunk_tokens"] * m.d_model * 2.0
    factor = 2.0 * (n - 1) / n if ring is None else ring
    bw = link.allreduce_bus_bytes_per_s if bandwidth == "bus" else link.bytes_per_s
    return per_layer * m.n_layers * (link.allreduce_latency_s(n) + factor * nbytes / bw)


# ----------------------------------------------------------------------------- 3.3 TP at batch 1

def _step_parts(tp: int) -> dict:
    r = sizing.Replica(TANVI.model_id, GPU_ID, tp=tp)
    return layouts.tpot_parts(r, 1, TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean // 2)


def _speedup_without(part: str | None = "communication", tp: int = EX3_TP) -> float:
    one, n = _step_parts(1), _step_parts(tp)
    drop = n["communication_s"] if part == "communication" else 0.0
    return one["total_s"] / (n["total_s"] - drop)


def _speedup_without_fixed_both() -> float:
    one, n = _step_parts(1), _step_parts(EX3_TP)
    fixed = lambda p: p["layer_overhead_s"] + p["overhead_s"]  # noqa: E731
    return (one["total_s"] - fixed(one)) / (n["total_s"] - fixed(n))


# ----------------------------------------------------------------------------- 3.4 the bubble

def _lone_idle() -> float:
    r = sizing.Replica(TANVI.model_id, GPU_ID, pp=EX4_PP, precision=EX4_PRECISION)
    ctx = TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean // 2
    return sizing.iteration_breakdown(r, decode_contexts=[ctx])["idle_fraction"]


# ----------------------------------------------------------------------------- 3.5, 3.6 layouts

@cache
def _search(gpu: str = GPU_ID, precision: str = "bf16", tpot_target_s: float = EX5_TPOT_S,
            max_gpus: int = layouts.DEFAULT_MAX_GPUS_PER_REPLICA) -> tuple[layouts.Layout, ...]:
    return tuple(layouts.search_layouts(TANVI.model_id, gpu, precision=precision,
                                        max_gpus_per_replica=max_gpus,
                                        **tanvi_targets(tpot_target_s=tpot_target_s)))


def _first_cost(**kw) -> float:
    return _search(**kw)[0].cost_per_hour


def _cheapest_ignoring_ties(**kw) -> float:
    return min(x.cost_per_hour for x in _search(**kw) if x.meets_slo)


def _layout_cost(tp: int, pp: int = 1, **kw) -> float:
    return next(x.cost_per_hour for x in _search(**kw) if (x.tp, x.pp) == (tp, pp))


def _one_replica_cost(**kw) -> float:
    best = _search(**kw)[0]
    return best.gpus_per_replica * get_gpu(best.gpu).price_per_hour_usd


_BOX = dict(gpu=EX6_GPU, precision=EX6_PRECISION, tpot_target_s=TANVI.tpot_target_s,
            max_gpus=EX6_MAX_GPUS)


# ----------------------------------------------------------------------------- 3.7, 3.8 practice

def _upload_gb(g, split: bool = True, kv_factor: float = 1.0, tokens: int | None = None) -> float:
    r = sizing.Replica(TANVI.model_id, GPU_ID, tp=EX7_TP)
    tokens = g["upload_tokens"] if tokens is None else tokens
    per = r.kv_bytes_per_token_per_gpu if split else sizing.kv_bytes_per_token(r.model, "bf16")
    return tokens * per * kv_factor / 1e9


def _moe_ratio(tokens: int = 4096) -> float:
    return experts.moe_exchange(EX8_MODEL, tokens, EX8_N)["ratio_bytes"]


def _query_heads_factor() -> float:
    m = get_model(TANVI.model_id)
    return m.n_heads / m.n_kv_heads


EXERCISES = [
    Exercise(
        id="3.1", level="compute",
        prompt=f"GB per GPU for weights + KV of your conversations at TP={EX1_TP} (bf16)",
        givens=_given("sequences"),
        answer=lambda g: _memory_gb(g), unit="GB",
        mistakes=(
            Mistake(lambda g: _memory_gb(g, kv_split=False),
                    "the KV cache splits too: each GPU keeps only its own KV heads, so divide the "
                    "KV bytes by the TP degree as well"),
            Mistake(lambda g: _memory_gb(g, weights_split=False),
                    "the weights split over the TP GPUs: each holds 1/TP of every matrix"),
            Mistake(lambda g: _memory_gb(g, kv_factor=_query_heads_factor()),
                    "you sized the KV cache with the 64 query heads; Llama stores only its 8 KV "
                    "heads (grouped-query attention)"),
            Mistake(lambda g: _memory_gb(g, kv_factor=0.5),
                    "the cache stores both K and V: 2 × layers × KV heads × head_dim × bytes"),
            Mistake(lambda g: _memory_gb(g, weights_split=False, kv_split=False),
                    "that is the whole replica's memory; the question asks what ONE GPU holds"),
        ),
        hint="weights/TP + conversations × prompt tokens × (2·layers·KV heads·head_dim·2 bytes)/TP, "
             "in GB (1e9)",
    ),
    Exercise(
        id="3.2", level="compute",
        prompt="all-reduce time of one iteration of your tokens at your TP on the L40S box, seconds",
        givens=_given("chunk_tokens", "box_tp"),
        answer=lambda g: _allreduce_s(g), unit="s",
        mistakes=(
            Mistake(lambda g: _allreduce_s(g, per_layer=1),
                    "a Megatron block all-reduces twice: after attention and after the MLP"),
            Mistake(lambda g: _allreduce_s(g, ring=1.0),
                    "a ring all-reduce moves 2(n−1)/n of the buffer through each GPU's link, not "
                    "the buffer once"),
            Mistake(lambda g: _allreduce_s(g, bandwidth="line"),
                    "use the measured all-reduce bus bandwidth, not the PCIe line rate"),
            Mistake(lambda g: _allreduce_s(g, gpu="h100-sxm"),
                    "those are NVLink's figures; the L40S box talks over PCIe Gen4"),
            Mistake(lambda g: _allreduce_s(g) / get_model(TANVI.model_id).n_layers,
                    "that is one layer; every one of the 80 layers all-reduces"),
        ),
        hint="2 all-reduces × 80 layers × (base + 2(n−1)·hop + 2(n−1)/n × tokens × d_model × "
             "2 bytes ÷ bus bandwidth)",
    ),
    Exercise(
        id="3.3", level="explain",
        prompt=f"speed-up of TP{EX3_TP} over TP1 at batch 1 if its all-reduces cost nothing",
        answer=lambda g: _speedup_without("communication"), unit="×",
        mistakes=(
            Mistake(lambda g: _speedup_without(None),
                    "that is the speed-up with the all-reduces: remove them from the TP8 step"),
            Mistake(lambda g: float(EX3_TP),
                    "free all-reduces do not make TP8 eight times faster: the fixed costs per "
                    "layer and per step stay"),
            Mistake(lambda g: _speedup_without_fixed_both(),
                    "you removed the fixed costs from both steps; the question removes only "
                    "TP8's all-reduces"),
        ),
        hint="TPOT at TP1 ÷ (TPOT at TP8 − TP8's all-reduces), from the batch-1 table",
    ),
    Exercise(
        id="3.4", level="explain",
        prompt=f"share of the time each stage of a {EX4_PP}-stage pipeline idles for a lone request",
        answer=lambda g: _lone_idle(), unit="(fraction)", rel_tol=0.025,
        mistakes=(
            Mistake(lambda g: 0.0,
                    "a pipeline is never fully busy with one request: its token is on one stage "
                    "at a time"),
            Mistake(lambda g: 1.0 / EX4_PP,
                    "that is the share each stage WORKS; the question asks how long it idles"),
            Mistake(lambda g: par.pipeline_bubble_fraction(EX4_PP, EX4_PP),
                    "that is GPipe's bubble for as many micro-batches as stages; a lone request is "
                    "one micro-batch"),
        ),
        hint="one token is on one stage at a time: each stage works 1/p of the round",
    ),
    Exercise(
        id="3.5", level="design",
        prompt=f"USD per hour of the H100 bf16 fleet the search picks for a "
               f"{EX5_TPOT_S * 1e3:.0f} ms TPOT target at the exam peak",
        answer=lambda g: _first_cost(), unit="USD/hour", rel_tol=1e-6,
        mistakes=(
            Mistake(lambda g: _cheapest_ignoring_ties(),
                    "that is the lowest price, but a layout within 5 % of it is a tie the model "
                    "cannot resolve, and ties go to the simplest layout (no pipeline): take the "
                    "search's first"),
            Mistake(lambda g: _first_cost(tpot_target_s=TANVI.tpot_target_s),
                    "that is the fleet at Tanvi's usual 100 ms; the question tightens TPOT to 50 ms"),
            Mistake(lambda g: _one_replica_cost(),
                    "that is one replica; the fleet needs enough replicas for the exam peak"),
            Mistake(lambda g: _layout_cost(8),
                    "TP8 meets 50 ms too, but it is not the layout the search ranks first"),
        ),
        hint="search with tpot_target_s=0.05, take the first layout (ties within 5 % go to the "
             "simplest); answer its cost_per_hour",
    ),
    Exercise(
        id="3.6", level="design",
        prompt="USD per hour of the fleet of PCIe L40S boxes (fp8, replicas within one box) the "
               "search picks for Tanvi's exam peak",
        answer=lambda g: _first_cost(**_BOX), unit="USD/hour", rel_tol=1e-6,
        mistakes=(
            Mistake(lambda g: _layout_cost(8, **_BOX),
                    "TP8 is the NVLink habit; over PCIe its all-reduces cost too much: compare the "
                    "layouts' costs"),
            Mistake(lambda g: _layout_cost(4, **_BOX),
                    "TP4 meets the targets, but a smaller TP group serves more per GPU here"),
            Mistake(lambda g: _first_cost(**{**_BOX, "precision": "bf16"}),
                    "that is bf16; the box serves the model in fp8"),
            Mistake(lambda g: _one_replica_cost(**_BOX),
                    "that is one replica; the fleet needs enough replicas for the exam peak"),
        ),
        hint="search_layouts on 'l40s' in fp8 with max_gpus_per_replica=8 and Tanvi's targets; the "
             "first layout's cost_per_hour",
    ),
    Exercise(
        id="3.7", level="compute",
        prompt=f"GB of KV cache one GPU of a TP={EX7_TP} replica holds for your upload (bf16)",
        givens=_given("upload_tokens"),
        answer=lambda g: _upload_gb(g), unit="GB",
        mistakes=(
            Mistake(lambda g: _upload_gb(g, split=False),
                    "that is the whole replica's copy; each GPU keeps only its KV heads' share"),
            Mistake(lambda g: _upload_gb(g, kv_factor=_query_heads_factor()),
                    "you used the 64 query heads; the cache stores the 8 KV heads"),
            Mistake(lambda g: _upload_gb(g, kv_factor=0.5),
                    "the cache stores both K and V for every token"),
            Mistake(lambda g: _upload_gb(g, tokens=TANVI.prompt_tokens_mean),
                    "that is an ordinary prompt; the question is about the upload's tokens"),
        ),
        hint="upload tokens × 2 × layers × KV heads × head_dim × 2 bytes ÷ TP, in GB (1e9)",
    ),
    Exercise(
        id="3.8", level="explain",
        prompt=f"bytes per GPU of one MoE layer: TP{EX8_N} all-reduces ÷ EP{EX8_N} all-to-alls "
               "(Mixtral-8x7B)",
        answer=lambda g: _moe_ratio(), unit="×",
        mistakes=(
            Mistake(lambda g: 1.0 / _moe_ratio(),
                    "upside down: TP moves more than EP"),
            Mistake(lambda g: _moe_ratio() / EX8_N,
                    "with EP each GPU sends only its own 1/n of the tokens; with TP every GPU "
                    "handles every token"),
            Mistake(lambda g: _moe_ratio() * get_model(EX8_MODEL).experts_per_token,
                    "each token goes to its k = 2 experts, so EP sends k copies"),
            Mistake(lambda g: _moe_ratio() / 2,
                    "a ring all-reduce moves 2(n−1)/n of the buffer, an all-to-all (n−1)/n"),
        ),
        hint="TP: 2 × 2(n−1)/n × T·d·b per GPU; EP: 2 × (T/n)·k·d·b·(n−1)/n per GPU",
    ),
]
