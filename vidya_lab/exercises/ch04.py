"""Chapter 4's exercise data: what a prefix cache saves and costs, and what speculative decoding buys.

The constants and helpers the chapter and its exercises share (the same for every reader:
no per-student givens yet); the answers are in the answer key, ``key/ch04.py``.
"""

from __future__ import annotations

from vidya_lab import caching, sizing
from vidya_lab.scenario import TANVI

#: Exercise 4.1: a short burst of requests, so the first one's miss shows.
BURST_REQUESTS = 10
#: Exercise 4.3: acceptance rate and draft tokens per step.
ALPHA, GAMMA = 0.6, 5
#: Exercise 4.4: the cache Tanvi sets aside for the syllabus and conversation histories, bytes per GPU.
BIG_CACHE_BYTES = 24e9

SYL = TANVI.syllabus_prompt_tokens
Q = TANVI.question_tokens_mean
PROMPT = TANVI.prompt_tokens_mean  # syllabus + subject prompt + question
SHARED = TANVI.syllabus_prompt_tokens + TANVI.subject_prompt_tokens


def replica() -> sizing.Replica:
    """Tanvi's replica: the smallest TP layout of her model on her first-choice GPU."""
    return caching.default_replica()


def block() -> int:
    return replica().block_tokens


def _cached_shared_tokens() -> int:
    return (SHARED // block()) * block()
