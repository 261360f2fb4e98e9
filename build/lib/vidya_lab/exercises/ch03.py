"""Chapter 3's exercise data: splitting a model that does not fit over GPUs.

The constants, the per-student numbers (``GIVENS``) and the helpers the chapter and its solutions
share; the answers are in the answer key, ``key/ch03.py``. Imports stay free of numpy, so the checks
run in the book's in-browser notebooks.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import layouts, sizing
from vidya_lab.exercises.givens import Between, Pick, my_givens
from vidya_lab.scenario import TANVI

__all__ = ["CHAPTER", "GIVENS", "my_givens", "pp_over_tp_throughput", "tanvi_fleet",
           "tanvi_targets"]

CHAPTER = 3
#: The GPU the chapter's H100 examples run on.
GPU_ID = "h100-sxm"
#: Exercise 3.1: conversations in the cache (each holding Tanvi's mean prompt) and the TP degree.
EX1_SEQUENCES, EX1_TP = 32, 4
#: Exercise 3.2: tokens in one iteration (a prefill chunk) all-reduced on the L40S box, and its TP.
EX2_TOKENS, EX2_TP, EX2_GPU = 512, 4, "l40s"
#: Exercise 3.3: the TP degree compared with TP = 1 at batch 1 (the chapter's first step table).
EX3_TP = 8
#: Exercise 3.4: a lone request through a pipeline of this many fp8 stages on H100s (TP = 1).
EX4_PP, EX4_PRECISION = 8, "fp8"
#: Exercise 3.5: a tighter TPOT target than Tanvi's, seconds (H100, bf16).
EX5_TPOT_S = 0.05
#: Exercise 3.6: a PCIe-only box of L40S cards, Tanvi's model in fp8, replicas within one box.
EX6_GPU, EX6_PRECISION, EX6_MAX_GPUS = "l40s", "fp8", 8
#: Exercise 3.7: the TP degree of the replica holding a teacher's upload (TANVI.upload_tokens).
EX7_TP = 4
#: Exercise 3.8: Mixtral-8x7B split over 8 GPUs, experts (EP) or tensors (TP).
EX8_MODEL, EX8_N = "mixtral-8x7b", 8
#: Llama 3.1 405B in bf16 on two H100 servers: prompt and answer lengths of the comparison.
BIG_MODEL, BIG_ISL, BIG_OSL = "llama-3.1-405b", 1000, 200
#: The practice topic's adapters: one per subject, LoRA rank 16 on every linear layer (an
#: assumption of the example; rank 16 is a common choice for instruction adapters).
LORA_RANK = 16

#: The numbers chapter 3's exercises depend on; the defaults are the book's.
GIVENS = {
    "sequences": Between(EX1_SEQUENCES, 16, 96, step=1, unit="conversations",
                         about="conversations in the cache, each of Tanvi's mean prompt"),
    "chunk_tokens": Between(EX2_TOKENS, 256, 8192, step=256, unit="tokens",
                            about="tokens in the iteration"),
    "box_tp": Pick(EX2_TP, (4, 8), about="TP degree on the L40S box"),
    "upload_tokens": Between(TANVI.upload_tokens, 10_000, 100_000, step=1_000, unit="tokens",
                             about="tokens of the teacher's upload"),
}


def tanvi_targets(**changes) -> dict:
    """Tanvi's exam peak and targets as :func:`vidya_lab.layouts.search_layouts` takes them."""
    out = dict(peak_rps=TANVI.exam_peak_rps, isl=TANVI.prompt_tokens_mean,
               osl=TANVI.answer_tokens_mean, ttft_target_s=TANVI.ttft_target_s,
               tpot_target_s=TANVI.tpot_target_s)
    out.update(changes)
    return out


@cache
def tanvi_fleet(gpu: str = GPU_ID, precision: str = "bf16") -> layouts.Layout | None:
    """The layout the search ranks first for Tanvi's exam peak (the chapter's fleet)."""
    return layouts.cheapest_layout(TANVI.model_id, gpu, precision=precision, **tanvi_targets())


def _saturated(tp: int, pp: int, inter_node: str) -> float:
    r = sizing.Replica(BIG_MODEL, GPU_ID, tp=tp, pp=pp, inter_node=inter_node)
    return sizing.saturated_throughput(r, BIG_ISL, BIG_OSL)["output_tokens_per_s"]


def pp_over_tp_throughput(inter_node: str) -> float:
    """405B on two H100 servers: saturated output tokens/s of TP8 × PP2 ÷ those of TP16."""
    return _saturated(8, 2, inter_node) / _saturated(16, 1, inter_node)

