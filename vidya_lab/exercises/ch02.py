"""Chapter 2's exercise data: memory first, then the time of one step, then the GPU count and the bill.

The chapter's deployment (the book's replica: Tanvi's model in bf16 on H100s at the
tensor-parallel degree of :func:`vidya_lab.layouts.reference_tp`, vLLM's memory rule), the numbers
the exercises depend on (:data:`GIVENS`, the book's by default, a student's own when an instructor
issued them) and small helpers that read them, so the chapter's solutions run unchanged on a
student's own numbers. The answers are in the answer key, ``key/ch02.py``.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import catalog, layouts, sizing
from vidya_lab.exercises.givens import Between, Pick, given, my_givens
from vidya_lab.scenario import TANVI

__all__ = ["DESIGN_PRECISIONS", "DESIGN_TPS", "GIVENS", "GPU_ID", "UTILISATION", "gpu",
           "my_givens", "peak_plan", "plan", "replica", "sequence_tokens",
           "tanvi_replica"]

CHAPTER = 2
#: The chapter's GPU; its tensor-parallel degree is the book's (:func:`tanvi_replica`).
GPU_ID = "h100-sxm"
#: Chapters 2 and 3 keep this share of a replica's capacity in use at the peak (one definition:
#: offered requests/s ÷ (replicas × capacity)).
UTILISATION = layouts.DEFAULT_UTILISATION
#: Exercise 2.9: the layouts a student may choose between.
DESIGN_PRECISIONS = ("bf16", "fp8")
DESIGN_TPS = (1, 2, 4, 8)

#: The numbers chapter 2's exercises depend on; defaults are the book's.
GIVENS = {
    "model_id": Pick(TANVI.model_id, ("llama-3.3-70b", "llama-3.1-8b", "llama-3.1-405b"),
                     about="the model of exercise 2.1"),
    "kv_precision": Pick("bf16", ("bf16", "fp8"), about="the KV cache's number format"),
    "memory_fraction": Pick(0.90, (0.80, 0.82, 0.84, 0.86, 0.90, 0.88),
                            about="vLLM's gpu_memory_utilization in exercise 2.2"),
    "context_tokens": Pick(3900, (2900, 3900, 4900, 6100, 7000), unit="tokens",
                           about="tokens one conversation holds"),
    "gpu_id": Pick(GPU_ID, ("h200", "b200", "mi300x", "h100-sxm"), about="the GPU of exercise 2.4"),
    "max_batched_tokens": Pick(8192, (4096, 8192, 12288, 16384), unit="tokens",
                               about="the engine's token budget per iteration in exercise 2.5"),
    "batch": Pick(96, (64, 80, 112, 96, 128), unit="conversations",
                  about="conversations decoding in exercise 2.6"),
    "peak_rps": Between(TANVI.exam_peak_rps, 30.0, 90.0, step=5.0, unit="requests/s",
                        about="the exam peak"),
    "price_usd": Between(catalog.get_gpu(GPU_ID).price_per_hour_usd, 2.0, 4.0, step=0.1,
                         unit="USD per GPU-hour", about="your H100 quote"),
    "new_model_id": Pick("gpt-oss-120b", ("gpt-oss-120b", "deepseek-v3"),
                         about="the 2026 model of exercise 2.10 (sliding-window or latent attention)"),
    "tpot_target_s": Pick(0.05, (0.04, 0.05, 0.06, 0.07, 0.08), unit="s",
                          about="the tighter TPOT target of exercise 2.9"),
}


def _given(name: str, value=None):
    return given(CHAPTER, name, GIVENS[name].default) if value is None else value


@cache
def replica(tp: int | None = None, precision: str = "bf16", gpu_id: str = GPU_ID,
            memory_rule: str = "vllm", max_batched_tokens: int | None = None) -> sizing.Replica:
    """One replica of Tanvi's model (default: the book's, :func:`tanvi_replica`)."""
    tp = layouts.reference_tp(TANVI.model_id, gpu_id) if tp is None else tp
    return sizing.Replica(TANVI.model_id, gpu_id, tp=tp, precision=precision,
                          memory_rule=memory_rule, max_batched_tokens=max_batched_tokens)


def tanvi_replica() -> sizing.Replica:
    """The book's replica: Tanvi's model in bf16 on H100s at the book's TP, vLLM's rule."""
    return replica()


def gpu(gpu_id: str | None = None) -> catalog.GPU:
    """The GPU of exercise 2.4 (default: the reader's ``gpu_id``)."""
    return catalog.get_gpu(_given("gpu_id", gpu_id))


def sequence_tokens() -> int:
    """Tokens one of Tanvi's conversations holds in the KV cache: mean prompt + mean answer."""
    return TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean


@cache
def plan(peak_rps: float, tpot_target_s: float, tp: int, precision: str = "bf16") -> dict:
    """:func:`vidya_lab.sizing.gpus_for_peak_load` for one layout of Tanvi's model on H100s at the
    chapter's utilisation (cached: the chapter and its exercises ask for the same few)."""
    return sizing.gpus_for_peak_load(replica(tp, precision), peak_rps, TANVI.prompt_tokens_mean,
                                     TANVI.answer_tokens_mean, tpot_slo_s=tpot_target_s,
                                     utilisation=UTILISATION)


def peak_plan(peak_rps: float | None = None) -> dict:
    """GPUs for the exam peak on the book's replica at the TPOT target
    (:func:`vidya_lab.sizing.gpus_for_peak_load`); ``peak_rps`` default: the reader's."""
    r = tanvi_replica()
    return plan(float(_given("peak_rps", peak_rps)), TANVI.tpot_target_s, r.tp, r.precision)
