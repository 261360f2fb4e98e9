"""Chapter 3's exercise data: splitting a model that does not fit over GPUs.

The constants and helpers the chapter and its exercises share (the same for every reader:
no per-student givens yet); the answers are in the answer key, ``key/ch03.py``.
"""

from __future__ import annotations

from vidya_lab import sizing

#: Exercise 3.1: sequences in the KV cache, each holding Tanvi's mean prompt.
EX1_TP, EX1_SEQUENCES = 4, 32
#: Exercise 3.2: tokens in one iteration (a prefill chunk) all-reduced on the L40S box.
EX2_TP, EX2_TOKENS, EX2_GPU = 4, 512, "l40s"
#: Exercise 3.3: a tighter TPOT target than Tanvi's, seconds; precision and GPU searched.
EX3_TPOT_S, EX3_GPU, EX3_PRECISION = 0.05, "h100-sxm", "bf16"
#: Exercise 3.4: Llama-3.1-405B in bf16 on 16 H100s (two nodes) joined by Ethernet, not InfiniBand.
EX4_MODEL, EX4_GPU, EX4_INTER, EX4_ISL, EX4_OSL = "llama-3.1-405b", "h100-sxm", "ethernet-100g", 1000, 200


def _throughput(tp: int, pp: int, inter: str = EX4_INTER) -> float:
    r = sizing.Replica(EX4_MODEL, EX4_GPU, tp=tp, pp=pp, inter_node=inter)
    return sizing.saturated_throughput(r, EX4_ISL, EX4_OSL)["output_tokens_per_s"]


def _pp_over_tp(inter: str = EX4_INTER) -> float:
    return _throughput(8, 2, inter) / _throughput(16, 1, inter)
