"""Chapter 5's exercise data: the replica, and the numbers each exercise gives its reader.

The replica is the chapter's (the scenario's model on four H100s with TP 4, the engine's defaults).
Every number an exercise depends on is a given (:data:`GIVENS`), with the book's value as its
default; a student's own come from their instructor (:mod:`vidya_lab.exercises.givens`). The
answers are in the answer key, ``key/ch05.py``.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import sizing
from vidya_lab.exercises.givens import Between, Pick, given, my_givens
from vidya_lab.scenario import TANVI

__all__ = ["CHAPTER", "COST_CHUNK_TOKENS", "GIVENS", "GPU_ID", "TP", "given_value", "my_givens",
           "replica"]

CHAPTER = 5
GPU_ID, TP = "h100-sxm", 4
#: Exercise 5.4: the chunk size whose extra cost per iteration the reader explains, tokens.
COST_CHUNK_TOKENS = 512

#: The numbers chapter 5's exercises depend on; defaults are the book's.
GIVENS = {
    # 5.1, 5.3, 5.6, 5.7: the teacher's upload
    "upload_tokens": Between(TANVI.upload_tokens, 20_000, 60_000, step=1_000, unit="tokens",
                             about="the teacher's upload"),
    # 5.2: one student's answer during the freeze
    "answer_tokens": Between(TANVI.answer_tokens_mean, 200, 500, step=1, unit="tokens",
                             about="tokens in the student's answer"),
    "stall_s": Between(4.0, 2.0, 9.0, step=0.1, unit="s", about="the one long gap in it"),
    "step_ms": Between(25.0, 15.0, 40.0, step=0.5, unit="ms", about="every other gap"),
    # 5.3: chunked prefill
    "chunk_tokens": Pick(512, (256, 384, 512), unit="tokens", about="the token budget of a step"),
    "decoding_students": Between(32, 16, 128, step=1, unit="students",
                                 about="decoding while the upload is chunked"),
    # 5.5, 5.9: the exam peak and the TPOT target
    "peak_rps": Between(TANVI.exam_peak_rps, 30.0, 240.0, step=1.0, unit="requests/s",
                        about="the exam peak of your school district"),
    "tpot_target_s": Pick(TANVI.tpot_target_s, (0.04, 0.05, 0.07, 0.1, 0.12), unit="s",
                          about="the TPOT target"),
    "cache": Pick("cold", ("cold", "warm"),
                  about="whether the syllabus and subject prompt are in the prefix cache"),
    # 5.6, 5.7: a replica for uploads only
    "upload_rate_per_s": Between(0.05, 0.02, 0.12, step=0.005, unit="uploads/s",
                                 about="uploads reaching the summary replica"),
    "exam_upload_rate_per_s": Between(1.0, 0.5, 2.0, step=0.1, unit="uploads/s",
                                      about="uploads in exam week"),
    "max_wait_probability": Pick(0.1, (0.05, 0.1, 0.2), about="largest share of uploads that "
                                 "may wait"),
    # 5.8: the KV transfer
    "link": Pick("infiniband-ndr", ("nvlink4", "infiniband-ndr", "ethernet-100g"),
                 about="the link from the prefill replica to the decode replica"),
    "prompt_tokens": Between(TANVI.prompt_tokens_mean, 1_000, 8_000, step=50, unit="tokens",
                             about="prompt tokens whose KV is sent"),
}


def given_value(name: str):
    """The reader's own value of a given (the book's if none was issued)."""
    return given(CHAPTER, name, GIVENS[name].default)


@cache
def replica() -> sizing.Replica:
    """The chapter's replica (scenario model, 4 × H100, TP 4, the engine's defaults)."""
    return sizing.Replica(TANVI.model_id, GPU_ID, tp=TP)
