"""Chapter 2's answer key: memory first, then throughput, then the GPU count and the bill.

Every expected answer is computed by :mod:`vidya_lab.sizing` from the catalog and Tanvi's scenario
(:data:`vidya_lab.scenario.TANVI`); each :class:`Mistake` recomputes what a reader who took a common
wrong path would answer, so the hint names that path.
"""

from __future__ import annotations

import math

from vidya_lab import catalog, sizing
from vidya_lab.exercises.ch02 import (
    GPU_ID,
    TP,
    UTILISATION,
    peak_plan,
    sequence_tokens,
    tanvi_replica,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI


def _kv_per_token(heads: str = "kv", factor: int = 2, layers: bool = True) -> float:
    m = catalog.get_model(TANVI.model_id)
    h = m.n_kv_heads if heads == "kv" else m.n_heads
    return factor * (m.n_layers if layers else 1) * h * m.head_dim * 2


def _max_sequences(kv_bytes_per_token_per_gpu: float | None = None, tokens: int | None = None) -> int:
    r = tanvi_replica()
    per = r.kv_bytes_per_token_per_gpu if kv_bytes_per_token_per_gpu is None else kv_bytes_per_token_per_gpu
    ctx = sequence_tokens() if tokens is None else tokens
    blocks = math.floor(r.kv_budget_bytes / (r.block_tokens * per))
    return blocks // math.ceil(ctx / r.block_tokens)


def _decode_floor(bytes_per_param: float = 2.0, gpus: int = TP) -> float:
    m = catalog.get_model(TANVI.model_id)
    g = catalog.get_gpu(GPU_ID)
    return m.total_params() * bytes_per_param / gpus / g.hbm_bytes_per_s


def _decode_compute_time() -> float:
    m = catalog.get_model(TANVI.model_id)
    g = catalog.get_gpu(GPU_ID)
    return 2 * m.total_params() / (TP * g.bf16_flops_per_s)


def _critical_fp8(flops: str = "fp8", bytes_per_param: float = 1.0, flops_per_param: float = 2.0) -> float:
    g = catalog.get_gpu(GPU_ID)
    return g.flops_per_s(flops) * bytes_per_param / (flops_per_param * g.hbm_bytes_per_s)


def _gpus(utilisation: float = UTILISATION, tokens_per_request: int | None = None,
          rounding=math.ceil, per_replica: bool = False) -> int:
    tput = peak_plan()["tokens_per_s_per_replica"]
    tokens = TANVI.answer_tokens_mean if tokens_per_request is None else tokens_per_request
    replicas = rounding(TANVI.exam_peak_rps * tokens / (tput * utilisation))
    return replicas if per_replica else replicas * TP


def _usd_per_million(tokens_per_request: int | None = None, seconds_per_hour: float = 3600.0) -> float:
    hourly = peak_plan()["gpus"] * catalog.get_gpu(GPU_ID).price_per_hour_usd
    tokens = TANVI.answer_tokens_mean if tokens_per_request is None else tokens_per_request
    return hourly / (seconds_per_hour * TANVI.exam_peak_rps * tokens) * 1e6


EXERCISES = [
    Exercise(
        id="2.1",
        prompt="KV-cache bytes of one token of Tanvi's model (Llama-3.3-70B) in bf16",
        answer=lambda g: sizing.kv_bytes_per_token(TANVI.model_id, "bf16"),
        unit="bytes",
        rel_tol=0.001,
        mistakes=(
            Mistake(lambda g: _kv_per_token(heads="query"),
                    "you used the 64 query heads; grouped-query attention stores only the 8 KV "
                    "heads (the classic calculator bug)"),
            Mistake(lambda g: _kv_per_token(factor=1),
                    "half the answer: each token stores a key AND a value, a factor 2"),
            Mistake(lambda g: _kv_per_token(layers=False),
                    "that is one layer; every one of the 80 layers keeps its own K and V"),
            Mistake(lambda g: _kv_per_token(heads="query", factor=1),
                    "query heads instead of KV heads, and the factor 2 for K and V is missing"),
        ),
        hint="2 (K and V) × layers × KV heads × head_dim × 2 bytes",
    ),
    Exercise(
        id="2.2",
        prompt="conversations of 3,900 tokens that fit at once on one 4 x H100 replica (TP 4)",
        answer=lambda g: sizing.max_concurrent_sequences(tanvi_replica(), sequence_tokens()),
        kind="integer",
        unit="sequences",
        mistakes=(
            Mistake(lambda g: _max_sequences(kv_bytes_per_token_per_gpu=sizing.kv_bytes_per_token(
                        TANVI.model_id)),
                    "you charged each GPU the whole model's KV per token; with TP 4 each GPU holds "
                    "2 of the 8 KV heads, a quarter of every token"),
            Mistake(lambda g: _max_sequences(kv_bytes_per_token_per_gpu=_kv_per_token("query") / TP),
                    "you used query heads for the KV size; only the 8 KV heads are stored"),
            Mistake(lambda g: _max_sequences(tokens=TANVI.prompt_tokens_mean),
                    "a conversation also holds its answer in the cache: use prompt + answer tokens"),
        ),
        hint="blocks = floor(budget / (16 tokens × KV bytes per token per GPU)); sequences = "
             "floor(blocks / ceil(3900 / 16))",
    ),
    Exercise(
        id="2.3",
        prompt="bandwidth floor of one decode step at batch 1 (weights only), seconds",
        answer=lambda g: tanvi_replica().weights_bytes_per_gpu / catalog.get_gpu(GPU_ID).hbm_bytes_per_s,
        unit="s",
        rel_tol=0.02,
        mistakes=(
            Mistake(lambda g: _decode_floor(gpus=1),
                    "you streamed all the weights through one GPU's memory; with TP 4 each GPU "
                    "reads its quarter at the same time"),
            Mistake(lambda g: _decode_floor(bytes_per_param=1.0),
                    "bf16 stores 2 bytes per parameter, not 1"),
            Mistake(lambda g: _decode_compute_time(),
                    "that is the compute time 2·P/FLOP/s; at batch 1 the step waits on memory, "
                    "which takes far longer"),
        ),
        hint="each GPU reads its weights once per step: (weight bytes per GPU) / (HBM bytes/s)",
    ),
    Exercise(
        id="2.4",
        prompt="critical batch size on H100 for fp8 weights with fp8 math (ignore attention)",
        answer=lambda g: _critical_fp8(),
        unit="sequences",
        rel_tol=0.02,
        mistakes=(
            Mistake(lambda g: _critical_fp8(flops_per_param=1.0),
                    "twice too large: that is the ridge point in FLOP per byte (peak FLOP/s ÷ "
                    "bytes/s); a token does 2 FLOPs per parameter, and fp8 stores 1 byte (not 2) "
                    "per parameter"),
            Mistake(lambda g: _critical_fp8(flops="bf16"),
                    "you used the bf16 peak; with fp8 math the tensor cores run at the fp8 peak"),
            Mistake(lambda g: 1.0 / _critical_fp8(),
                    "you inverted the ratio: the batch is FLOP/s over bytes/s, not bytes/s over "
                    "FLOP/s"),
        ),
        hint="compute 2·P·B / FLOP/s equals memory P·bytes / (bytes/s): B* = FLOP/s × bytes "
             "per parameter / (2 × bytes/s)",
    ),
    Exercise(
        id="2.5",
        prompt="GPUs for the exam-season peak, replicas at most 80% busy",
        answer=lambda g: peak_plan()["gpus"],
        kind="integer",
        unit="GPUs",
        mistakes=(
            Mistake(lambda g: _gpus(per_replica=True),
                    "that is the number of replicas; each replica is 4 GPUs"),
            Mistake(lambda g: _gpus(utilisation=1.0),
                    "no headroom: the replicas may only be 80% busy at the peak, so divide the "
                    "capacity by 0.8"),
            Mistake(lambda g: _gpus(rounding=math.floor),
                    "you rounded down; a fraction of a replica must be a whole replica more"),
            Mistake(lambda g: _gpus(tokens_per_request=sequence_tokens()),
                    "the throughput is in OUTPUT tokens per second: multiply the request rate by "
                    "the answer's tokens, not prompt + answer"),
        ),
        hint="replicas = ceil(requests/s × answer tokens / (tokens/s per replica × 0.8)); "
             "GPUs = 4 × replicas",
    ),
    Exercise(
        id="2.6",
        prompt="USD per million output tokens at the exam peak, for the fleet of 2.5",
        answer=lambda g: _usd_per_million(),
        unit="USD",
        mistakes=(
            Mistake(lambda g: _usd_per_million(tokens_per_request=sequence_tokens()),
                    "you divided by prompt + answer tokens; the question is per OUTPUT token"),
            Mistake(lambda g: _usd_per_million(seconds_per_hour=1.0),
                    "the price is per hour and the rate per second: multiply the rate by 3,600"),
            Mistake(lambda g: _usd_per_million(seconds_per_hour=60.0),
                    "an hour has 3,600 seconds, not 60"),
        ),
        hint="fleet USD/hour ÷ (3600 × requests/s × answer tokens) × 1e6",
    ),
]
