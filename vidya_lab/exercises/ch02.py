"""Chapter 2's exercise data: memory first, then throughput, then the GPU count and the bill.

The constants and helpers the chapter and its exercises share (the same for every reader:
no per-student givens yet); the answers are in the answer key, ``key/ch02.py``.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import sizing
from vidya_lab.scenario import TANVI

#: The chapter's deployment: Tanvi's model in bf16 on 4 x H100 with tensor parallelism 4 (vLLM rule).
GPU_ID = "h100-sxm"
TP = 4
#: Exercise 2.5: keep replicas at most this busy at the peak (headroom for bursts).
UTILISATION = 0.8


@cache
def tanvi_replica() -> sizing.Replica:
    """One replica of Tanvi's model: bf16 weights and KV, 4 x H100, TP 4, vLLM's memory rule."""
    return sizing.Replica(TANVI.model_id, GPU_ID, tp=TP)


def sequence_tokens() -> int:
    """Tokens one conversation holds in the KV cache: mean prompt + mean answer."""
    return TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean


@cache
def peak_plan() -> dict:
    """GPUs for the exam-season peak under the TPOT target (:func:`sizing.gpus_for_peak_load`)."""
    return sizing.gpus_for_peak_load(tanvi_replica(), TANVI.exam_peak_rps, TANVI.prompt_tokens_mean,
                                     TANVI.answer_tokens_mean, tpot_slo_s=TANVI.tpot_target_s,
                                     utilisation=UTILISATION)
