"""Chapter 2's answer key: memory first, then the time of one step, then the GPU count and the bill.

Every answer is a function of the reader's givens ``g`` (:data:`vidya_lab.exercises.ch02.GIVENS`)
computed by :mod:`vidya_lab.sizing` from the catalog and Tanvi's scenario; each :class:`Mistake`
recomputes what a reader who took a common wrong path would answer, from the same givens, so the
hint names that path.
"""

from __future__ import annotations

import math
from dataclasses import replace

from vidya_lab import catalog, sizing
from vidya_lab.exercises.ch02 import (
    DESIGN_PRECISIONS,
    DESIGN_TPS,
    GIVENS,
    GPU_ID,
    UTILISATION,
    peak_plan,
    plan,
    replica,
    tanvi_replica,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI

ISL, OSL = TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean


def _pick(*names: str) -> dict:
    return {k: GIVENS[k] for k in names}


# ----------------------------------------------------------------------------- 2.1 KV per token

def _kv_per_token(g, heads: str = "kv", factor: int = 2, layers: bool = True) -> float:
    m = catalog.get_model(g["model_id"])
    h = m.n_kv_heads if heads == "kv" else m.n_heads
    return (factor * (m.n_layers if layers else 1) * h * m.head_dim
            * catalog.bytes_per_element(g["kv_precision"]))


# ----------------------------------------------------------------------------- 2.10 a 2026 model

def _sequence_kv_gb(g, path: str = "right") -> float:
    """GB of bf16 KV one conversation holds; ``path`` names a wrong one: "uncapped" (sliding layers
    over the whole conversation; for MLA, the grouped-query formula on its heads), "factor2" (the
    K/V factor 2 dropped for GQA, added for MLA's single latent), "one_layer"."""
    m = catalog.get_model(g["new_model_id"])
    t = g["context_tokens"]
    right = sizing.kv_bytes_per_sequence(m, t, "bf16") / 1e9
    if path == "uncapped":
        per = (2 * m.n_layers * m.n_kv_heads * m.head_dim * catalog.bytes_per_element("bf16")
               if m.is_mla else sizing.kv_bytes_per_token(m, "bf16"))
        return t * per / 1e9
    if path == "factor2":
        return 2 * right if m.is_mla else right / 2
    if path == "one_layer":
        return right / m.n_layers
    return right


# ----------------------------------------------------------------------------- 2.2 KV budget

def _kv_budget_gb(g, total_bytes: float | None = None, rule: str = "vllm",
                  reserve: bool = True) -> float:
    r = tanvi_replica()
    f = g["memory_fraction"]
    total = r.gpu.hbm_bytes if total_bytes is None else total_bytes
    taken = r.weights_bytes_per_gpu + (r.activation_reserve_bytes if reserve else 0.0)
    return (f * total - taken if rule == "vllm" else f * (total - taken)) / 1e9


def _kv_budget_package_gb(g) -> float:
    return replace(tanvi_replica(), memory_fraction=g["memory_fraction"]).kv_budget_bytes / 1e9


# ----------------------------------------------------------------------------- 2.3 conversations

def _sequences(g, kv_per_token_per_gpu: float | None = None, gpus_pooled: int = 1) -> int:
    r = tanvi_replica()
    per = r.kv_bytes_per_token_per_gpu if kv_per_token_per_gpu is None else kv_per_token_per_gpu
    blocks = math.floor(gpus_pooled * r.kv_budget_bytes / (r.block_tokens * per))
    return blocks // math.ceil(g["context_tokens"] / r.block_tokens)


# ----------------------------------------------------------------------------- 2.4 bandwidth floor

def _floor_replica(g) -> sizing.Replica:
    return replica(tanvi_replica().tp, "bf16", g["gpu_id"])


def _decode_floor(g, bytes_per_param: float = 2.0, gpus: int | None = None,
                  ceiling: str = "peak") -> float:
    r = _floor_replica(g)
    n = r.tp if gpus is None else gpus
    bw = r.gpu.hbm_bytes_per_s if ceiling == "peak" else r.gpu.hbm_achievable_bytes_per_s
    return r.model.total_params() * bytes_per_param / n / bw


def _decode_compute_time(g) -> float:
    r = _floor_replica(g)
    return 2 * r.model.total_params() / (r.tp * r.gpu.bf16_flops_per_s)


# ----------------------------------------------------------------------------- 2.5 two rules

def _fp8_one_gpu(g, rule: str) -> sizing.Replica:
    return replica(1, "fp8", GPU_ID, rule, g["max_batched_tokens"])


def _rule_ratio(g, trt_of_whole: bool = False, activations: bool = True) -> float:
    v, t = _fp8_one_gpu(g, "vllm"), _fp8_one_gpu(g, "trtllm")
    reserve = v.activation_reserve_bytes if activations else sizing.RUNTIME_RESERVE_BYTES
    taken = v.weights_bytes_per_gpu + reserve
    total = v.gpu.hbm_bytes
    vllm = v.memory_fraction * total - taken
    trt = (t.memory_fraction * total - taken if trt_of_whole
           else t.memory_fraction * (total - taken))
    return trt / vllm


# ----------------------------------------------------------------------------- 2.6 the cycle

def _mixed_fraction(g) -> float:
    return sizing.cycle(tanvi_replica(), g["batch"], ISL, OSL)["mixed_fraction"]


def _mixed_by_hand(g, prefill_tokens: int = ISL, per_iteration: bool = True) -> float:
    b, budget = g["batch"], tanvi_replica().max_batched_tokens
    n_mix = b * prefill_tokens / (budget - b)
    return n_mix / OSL if per_iteration else n_mix


# ----------------------------------------------------------------------------- 2.7, 2.8 the fleet

def _gpus(g, utilisation: float = UTILISATION, rounding=math.ceil, per_replica: bool = False,
          multiply: bool = False) -> int:
    cap = peak_plan(g["peak_rps"])["capacity_rps_per_replica"]
    lam = g["peak_rps"]
    n = rounding(lam * utilisation / cap if multiply else lam / (cap * utilisation))
    return n if per_replica else n * tanvi_replica().tp


def _usd_per_million(g, tokens_per_request: int = OSL, seconds_per_hour: float = 3600.0) -> float:
    hourly = _gpus(g) * g["price_usd"]
    return hourly / (seconds_per_hour * g["peak_rps"] * tokens_per_request) * 1e6


# ----------------------------------------------------------------------------- 2.9 design

def _design_options(target_s: float) -> list[dict]:
    """Every precision × TP on H100 that fits and meets ``target_s``: its GPUs for the book's peak."""
    out = []
    for precision in DESIGN_PRECISIONS:
        for tp in DESIGN_TPS:
            r = replica(tp, precision)
            if not r.weights_fit or r.kv_blocks == 0:
                continue
            try:
                p = plan(TANVI.exam_peak_rps, target_s, tp, precision)
            except ValueError:  # even batch 1 misses the target
                continue
            out.append({"precision": precision, "tp": tp, "gpus": p["gpus"]})
    return out


def _design(g, precision: str | None = None, target_s: float | None = None,
            replicas: bool = False) -> int:
    opts = _design_options(g["tpot_target_s"] if target_s is None else target_s)
    best = min((o for o in opts if precision is None or o["precision"] == precision),
               key=lambda o: (o["gpus"], o["tp"]))
    return best["gpus"] // best["tp"] if replicas else best["gpus"]


EXERCISES = [
    Exercise(
        id="2.1", level="compute",
        prompt="KV-cache bytes of one token of your model, in your KV precision",
        answer=lambda g: sizing.kv_bytes_per_token(g["model_id"], g["kv_precision"]),
        givens=_pick("model_id", "kv_precision"), unit="bytes", rel_tol=0.001,
        mistakes=(
            Mistake(lambda g: _kv_per_token(g, heads="query"),
                    "you used the query heads; grouped-query attention stores only the KV heads "
                    "(the classic calculator bug)"),
            Mistake(lambda g: _kv_per_token(g, factor=1),
                    "half the answer: each token stores a key AND a value, a factor 2"),
            Mistake(lambda g: _kv_per_token(g, layers=False),
                    "that is one layer; every layer keeps its own K and V"),
            Mistake(lambda g: _kv_per_token(g, heads="query", factor=1),
                    "query heads instead of KV heads, and the factor 2 for K and V is missing"),
        ),
        hint="2 (K and V) × layers × KV heads × head_dim × bytes per value (2 in bf16, 1 in fp8)",
    ),
    Exercise(
        id="2.2", level="compute",
        prompt="GB per GPU vLLM's rule leaves for the KV cache on the book's replica, at your "
               "gpu_memory_utilization",
        answer=_kv_budget_package_gb, givens=_pick("memory_fraction"), unit="GB",
        mistakes=(
            Mistake(lambda g: _kv_budget_gb(g, total_bytes=catalog.get_gpu(GPU_ID).hbm_marketing_bytes),
                    "you used the datasheet's 80 GB; engines budget from what the device reports "
                    "(81,559 MiB on an H100)"),
            Mistake(lambda g: _kv_budget_gb(g, rule="trtllm"),
                    "that is TensorRT-LLM's rule (a fraction of what is left); vLLM takes its "
                    "fraction of the WHOLE memory, then subtracts weights and reserve"),
            Mistake(lambda g: _kv_budget_gb(g, reserve=False),
                    "you forgot the runtime and activation reserve each GPU keeps out of the cache"),
        ),
        hint="utilisation × reported memory − weights per GPU − reserve per GPU, in GB (1e9 bytes)",
    ),
    Exercise(
        id="2.3", level="compute",
        prompt="conversations of your length that fit at once on the book's replica",
        answer=lambda g: sizing.max_concurrent_sequences(tanvi_replica(), g["context_tokens"]),
        givens=_pick("context_tokens"), kind="integer", unit="conversations",
        mistakes=(
            Mistake(lambda g: _sequences(g, sizing.kv_bytes_per_token(TANVI.model_id)),
                    "you charged each GPU the whole model's KV per token; with tensor parallelism "
                    "each GPU holds its share of the KV heads, so its share of every token"),
            Mistake(lambda g: _sequences(g, tanvi_replica().kv_bytes_per_token_per_gpu
                                         * catalog.get_model(TANVI.model_id).n_heads
                                         / catalog.get_model(TANVI.model_id).n_kv_heads),
                    "you used query heads for the KV size; only the KV heads are stored"),
            Mistake(lambda g: _sequences(g, gpus_pooled=tanvi_replica().tp),
                    "you added up the budgets of all the GPUs but charged each token only one "
                    "GPU's share; every GPU holds its share of EVERY conversation, so count one "
                    "GPU's blocks"),
        ),
        hint="blocks = floor(budget per GPU / (16 tokens × KV bytes per token per GPU)); "
             "conversations = floor(blocks / ceil(tokens / 16))",
    ),
    Exercise(
        id="2.4", level="compute",
        prompt="bandwidth floor (s) of one decode step at batch 1 on your GPU, at the book's TP",
        answer=_decode_floor, givens=_pick("gpu_id"), unit="s", rel_tol=0.02,
        mistakes=(
            Mistake(lambda g: _decode_floor(g, gpus=1),
                    "you streamed all the weights through one GPU's memory; with tensor "
                    "parallelism each GPU reads its share at the same time"),
            Mistake(lambda g: _decode_floor(g, bytes_per_param=1.0),
                    "bf16 stores 2 bytes per parameter, not 1"),
            Mistake(_decode_compute_time,
                    "that is the compute time 2·P/FLOP/s; at batch 1 the step waits on memory, "
                    "which takes far longer"),
            Mistake(lambda g: _decode_floor(g, ceiling="achievable"),
                    "that is at the measured achievable bandwidth (a real step's figure, closer "
                    "to what engines see); the floor asked for is at the datasheet's peak"),
        ),
        hint="each GPU reads its weights once per step: (weight bytes ÷ TP) / (peak HBM bytes/s)",
    ),
    Exercise(
        id="2.5", level="explain",
        prompt="fp8 on one H100: how many times more KV memory TensorRT-LLM's rule leaves than "
               "vLLM's, at your token budget",
        answer=_rule_ratio, givens=_pick("max_batched_tokens"), unit="(ratio)", rel_tol=0.02,
        mistakes=(
            Mistake(lambda g: 1.0 / _rule_ratio(g),
                    "inverted: vLLM's rule leaves LESS, so the ratio TensorRT-LLM ÷ vLLM is above 1"),
            Mistake(lambda g: _rule_ratio(g, trt_of_whole=True),
                    "you applied both fractions to the whole GPU; TensorRT-LLM takes its fraction "
                    "of what weights and reserve LEAVE"),
            Mistake(lambda g: _rule_ratio(g, activations=False),
                    "you kept only the runtime's reserve; each GPU also reserves the activations "
                    "of a full token budget, and that budget is your given"),
        ),
        hint="vLLM: f·total − weights − reserve; TensorRT-LLM: f'·(total − weights − reserve); "
             "reserve = runtime + activations of the token budget; divide the second by the first",
    ),
    Exercise(
        id="2.6", level="explain",
        prompt="share of a saturated replica's iterations that carry a prompt chunk, at your batch",
        answer=_mixed_fraction, givens=_pick("batch"), unit="(fraction)",
        mistakes=(
            Mistake(lambda g: _mixed_by_hand(g, per_iteration=False),
                    "that is the number of mixed iterations in one cycle; divide by the cycle's "
                    "osl iterations for their share"),
            Mistake(lambda g: g["batch"] / OSL,
                    "one mixed iteration per finished conversation is too many: a mixed iteration "
                    "fills the budget's C − B free tokens, more than one prompt's worth"),
            Mistake(lambda g: _mixed_by_hand(g, prefill_tokens=ISL + OSL),
                    "only the prompt is prefilled; the answer's tokens arrive one per iteration "
                    "as decodes"),
        ),
        hint="per cycle of osl iterations, B prompts of isl tokens are prefilled in chunks of "
             "C − B tokens: n_mix = B·isl / (C − B); the share is n_mix / osl",
    ),
    Exercise(
        id="2.7", level="compute",
        prompt="GPUs for your exam peak on the book's replica, at the chapter's utilisation",
        answer=lambda g: peak_plan(g["peak_rps"])["gpus"],
        givens=_pick("peak_rps"), kind="integer", unit="GPUs",
        mistakes=(
            Mistake(lambda g: _gpus(g, per_replica=True),
                    "that is the number of replicas; multiply by the GPUs of one replica"),
            Mistake(lambda g: _gpus(g, utilisation=1.0),
                    "no headroom: the replicas may be only 80% utilised at the peak, so each "
                    "counts for 0.8 of its capacity"),
            Mistake(lambda g: _gpus(g, rounding=math.floor),
                    "you rounded down; a fraction of a replica must be a whole replica more"),
            Mistake(lambda g: _gpus(g, multiply=True),
                    "you multiplied by the utilisation; divide: each replica may carry only "
                    "0.8 × its capacity, so more replicas are needed, not fewer"),
        ),
        hint="replicas = ceil(requests/s ÷ (capacity per replica × utilisation)); GPUs = TP × "
             "replicas",
    ),
    Exercise(
        id="2.8", level="compute",
        prompt="USD per million output tokens at your peak, for your fleet of 2.7 at your price",
        answer=_usd_per_million, givens=_pick("peak_rps", "price_usd"), unit="USD",
        mistakes=(
            Mistake(lambda g: _usd_per_million(g, tokens_per_request=ISL + OSL),
                    "you divided by prompt + answer tokens; the question is per OUTPUT token"),
            Mistake(lambda g: _usd_per_million(g, seconds_per_hour=1.0),
                    "the price is per hour and the rate per second: multiply the rate by 3,600"),
            Mistake(lambda g: _usd_per_million(g, seconds_per_hour=60.0),
                    "an hour has 3,600 seconds, not 60"),
        ),
        hint="fleet USD/hour ÷ (3600 × requests/s × answer tokens) × 1e6",
    ),
    Exercise(
        id="2.9", level="design",
        prompt="a tighter TPOT target: the fewest H100s for the exam peak over precision and TP",
        answer=_design, givens=_pick("tpot_target_s"), kind="integer", unit="GPUs",
        mistakes=(
            Mistake(lambda g: _design(g, precision="bf16"),
                    "that is the best bf16 layout; fp8 halves the bytes every step reads, so a "
                    "replica meets a tight target at a larger batch"),
            Mistake(lambda g: _design(g, target_s=TANVI.tpot_target_s),
                    "that fleet meets the book's 100 ms target, not the tighter one: size every "
                    "layout again at the new target"),
            Mistake(lambda g: _design(g, replicas=True),
                    "that is the number of replicas of the best layout; the question asks for GPUs"),
        ),
        hint="for each precision and TP: capacity at the new target, then "
             "TP × ceil(peak ÷ (capacity × 0.8)); keep the smallest",
    ),
    Exercise(
        id="2.10", level="compute",
        prompt="GB of bf16 KV cache one conversation of your length holds in your 2026 model",
        answer=_sequence_kv_gb, givens=_pick("new_model_id", "context_tokens"), unit="GB",
        rel_tol=0.001,
        mistakes=(
            Mistake(lambda g: _sequence_kv_gb(g, "uncapped"),
                    "the plain grouped-query count: a sliding-window layer keeps only its last "
                    "window of tokens, and an MLA layer caches one latent plus one rope key per "
                    "token whatever its head count"),
            Mistake(lambda g: _sequence_kv_gb(g, "factor2"),
                    "the factor 2: grouped-query layers store a K and a V per KV head; MLA's one "
                    "latent stands for both, so it has none"),
            Mistake(lambda g: _sequence_kv_gb(g, "one_layer"),
                    "that is one layer; every layer keeps its own cache"),
        ),
        hint="MLA: tokens × layers × (kv_lora_rank + qk_rope_head_dim) × 2 bytes. Sliding window: "
             "2 × KV heads × head_dim × 2 bytes × (full layers × tokens + sliding layers × "
             "min(tokens, window))",
    ),
]
