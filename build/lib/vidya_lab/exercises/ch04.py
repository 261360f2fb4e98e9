"""Chapter 4's exercise data: what a prefix cache saves and costs, what a CPU tier, speculation and a
cache salt buy.

``GIVENS`` holds the numbers the exercises depend on, each with the book's value as its default; a
student whose instructor issued their own numbers gets those through :func:`given`, so the
chapter's solution code runs unchanged on them. The answers are in the answer key,
``key/ch04.py``.
"""

from __future__ import annotations

from vidya_lab import caching, sizing
from vidya_lab.exercises.givens import Between, Pick, given, my_givens
from vidya_lab.plan import prefix_tokens
from vidya_lab.scenario import TANVI

__all__ = ["ALPHA", "BIG_CACHE_BYTES", "BURST_REQUESTS", "CACHED", "GAMMA", "GIVENS", "GUESSED_TOKENS",
           "HISTORY_TOKENS", "ISOLATION_SHARE", "PROMPT", "SHARED", "SUBJECTS", "SYL", "Q", "block",
           "g", "my_givens", "replica"]

CHAPTER = 4
#: Exercise 4.1: a short burst of requests, so the first one's miss shows.
BURST_REQUESTS = 10
#: Exercises 4.3 and 4.8: acceptance rate and draft tokens per step.
ALPHA, GAMMA = 0.6, 5
#: Exercise 4.4: the cache Tanvi sets aside for the syllabus and conversation histories, bytes per GPU.
BIG_CACHE_BYTES = 24e9
#: Exercise 4.6: replicas running at the exam peak.
EXAM_REPLICAS = 6
#: Exercise 4.7: tokens of a student's history waiting in the CPU tier.
HISTORY_TOKENS = 4000
#: Exercise 4.9: tokens of a teacher's private worksheet a probe guesses.
GUESSED_TOKENS = 2000
#: Exercise 4.10: the share of the KV budget per GPU the isolated schools' prefixes may take, and
#: the subject prompts each school keeps.
ISOLATION_SHARE = 0.1
SUBJECTS = TANVI.subjects

SYL = TANVI.syllabus_prompt_tokens
Q = TANVI.question_tokens_mean
PROMPT = TANVI.prompt_tokens_mean  # syllabus + subject prompt + question
SHARED = TANVI.syllabus_prompt_tokens + TANVI.subject_prompt_tokens
#: The prompt tokens a warm replica finds cached: syllabus and subject prompt in whole blocks (the
#: planner's own count).
CACHED = prefix_tokens(TANVI)

#: The numbers chapter 4's exercises depend on; defaults are the book's.
GIVENS = {
    "burst_requests": Between(BURST_REQUESTS, 5, 40, step=1, unit="requests",
                              about="requests in your burst"),
    "alpha": Pick(ALPHA, (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9),
                  about="acceptance rate of one draft token"),
    "gamma": Pick(GAMMA, (3, 4, 5, 6), about="draft tokens per step"),
    "exam_peak_rps": Between(TANVI.exam_peak_rps, 40.0, 80.0, step=1.0, unit="requests/s",
                             about="the exam-morning peak"),
    "exam_replicas": Between(EXAM_REPLICAS, 5, 12, step=1, unit="replicas",
                             about="replicas serving the peak"),
    "history_tokens": Between(HISTORY_TOKENS, 1000, 30000, step=100, unit="tokens",
                              about="history waiting in the CPU tier"),
    "guessed_tokens": Between(GUESSED_TOKENS, 500, 8000, step=50, unit="tokens",
                              about="tokens of the worksheet the probe guesses"),
    "isolation_share": Pick(ISOLATION_SHARE, (0.05, 0.1, 0.15, 0.2, 0.25, 0.3),
                            about="share of the KV budget per GPU for the schools' prefixes"),
    "subjects": Pick(SUBJECTS, (4, 5, 6, 7, 8, 9, 10), about="subject prompts per school"),
}


def g(name: str):
    """One of your numbers for chapter 4 (your own if issued, else the book's)."""
    return given(CHAPTER, name, GIVENS[name].default)


def replica() -> sizing.Replica:
    """Tanvi's replica: the book's reference TP layout of her model on her first-choice GPU."""
    return caching.default_replica()


def block() -> int:
    return replica().block_tokens
