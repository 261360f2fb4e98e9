"""Chapter 4's answer key: what a prefix cache saves and costs, and what speculative decoding buys.

Every expected answer is computed by :mod:`vidya_lab.caching` (and through it the cost model of
:mod:`vidya_lab.sizing`) from Tanvi's scenario; the mistakes compute what a reader who took a common
wrong path would answer.
"""

from __future__ import annotations

from vidya_lab import caching, sizing
from vidya_lab.exercises.ch04 import (
    ALPHA,
    BIG_CACHE_BYTES,
    BURST_REQUESTS,
    GAMMA,
    PROMPT,
    SYL,
    Q,
    _cached_shared_tokens,
    block,
    replica,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI


def _burst_hit_rate() -> float:
    trace = caching.tutor_trace(BURST_REQUESTS, seed=41, syllabus_tokens=SYL, subjects=1,
                                subject_tokens=0, question_tokens=Q)
    return caching.simulate(trace).summary["token_hit_rate"]


def _ttft_saved() -> float:
    r = replica()
    return caching.ttft_with_cache_s(r, PROMPT, 0) - caching.ttft_with_cache_s(r, PROMPT, _cached_shared_tokens())


def _ttft_with() -> float:
    return caching.ttft_with_cache_s(replica(), PROMPT, _cached_shared_tokens())


def _ttft_without() -> float:
    return caching.ttft_with_cache_s(replica(), PROMPT, 0)


def _tput(**kw) -> float:
    r = replica()
    args = {"cache_bytes": BIG_CACHE_BYTES, "cached_tokens": SYL} | kw
    return caching.saturated_throughput_with_cache(
        r, PROMPT, TANVI.answer_tokens_mean, args.pop("cache_bytes"), args.pop("cached_tokens"),
        **args)["output_tokens_per_s"]


def _tput_small_cache() -> float:
    # the syllabus alone, in a cache just big enough for it
    r = replica()
    return _tput(cache_bytes=(SYL // r.block_tokens) * r.block_tokens * r.kv_bytes_per_token_per_gpu)


def _syllabus_cache_bytes() -> float:
    r = replica()
    return (SYL // r.block_tokens) * r.block_tokens * r.kv_bytes_per_token_per_gpu


EXERCISES = [
    Exercise(
        id="4.1",
        prompt="best-case token hit rate of 10 requests sharing the 3,000-token syllabus",
        answer=lambda g: _burst_hit_rate(),
        rel_tol=0.001,
        mistakes=(
            Mistake(lambda g: SYL / (SYL + Q),
                    "the first request finds the cache empty, and only whole 16-token blocks of the "
                    "syllabus can be shared"),
            Mistake(lambda g: (BURST_REQUESTS - 1) / BURST_REQUESTS * SYL / (SYL + Q),
                    "only whole blocks are shared: the block holding the syllabus's last tokens also "
                    "holds the question's first, so it differs from request to request"),
            Mistake(lambda g: (SYL // block()) * block() / (SYL + Q),
                    "the first request finds the cache empty: it reuses nothing"),
            Mistake(lambda g: (BURST_REQUESTS - 1) / BURST_REQUESTS,
                    "that is the request-level hit rate; the question asks for the share of prompt "
                    "tokens served from the cache"),
        ),
        hint="(requests − 1) × (whole blocks of the syllabus × 16) / (requests × prompt tokens)",
    ),
    Exercise(
        id="4.2",
        prompt="TTFT saved (s) on an idle replica when syllabus and subject prompt are cached",
        answer=lambda g: _ttft_saved(),
        unit="s",
        mistakes=(
            Mistake(lambda g: _ttft_with(), "that is the TTFT with the cache; the question asks how much it saves"),
            Mistake(lambda g: _ttft_without(), "that is the TTFT without the cache; subtract the TTFT with it"),
            Mistake(lambda g: _ttft_without() * _cached_shared_tokens() / PROMPT,
                    "time is not proportional to tokens: the short uncached suffix still reads every "
                    "weight once, so it costs far more than its share of the tokens"),
        ),
        hint="TTFT without − TTFT with, where TTFT with prefills only the uncached suffix "
             "(caching.ttft_with_cache_s)",
    ),
    Exercise(
        id="4.3",
        prompt="expected tokens per target step for α = 0.6, γ = 5",
        answer=lambda g: caching.spec_expected_tokens(ALPHA, GAMMA),
        unit="tokens",
        mistakes=(
            Mistake(lambda g: ALPHA * GAMMA,
                    "acceptances are not independent of position: the first rejection ends the run, "
                    "so sum α^i rather than multiplying γ by α"),
            Mistake(lambda g: 1 + ALPHA * GAMMA,
                    "the first rejection discards every later draft token: sum α^i, i = 0..γ"),
            Mistake(lambda g: (1 - ALPHA ** GAMMA) / (1 - ALPHA),
                    "you left out the bonus token: when all γ drafts are accepted the target adds "
                    "one of its own, so the exponent is γ + 1"),
            Mistake(lambda g: 1 / (1 - ALPHA),
                    "that is the limit of an unbounded γ (an oracle); with γ draft tokens the sum "
                    "stops at α^γ"),
            Mistake(lambda g: GAMMA + 1.0, "γ + 1 is the best case (α = 1): every draft accepted"),
        ),
        hint="E = (1 − α^(γ+1)) / (1 − α)",
    ),
    Exercise(
        id="4.4",
        prompt="saturated output tokens/s with a 24 GB-per-GPU prefix cache holding the syllabus",
        answer=lambda g: _tput(),
        unit="tokens/s",
        mistakes=(
            Mistake(lambda g: _tput_small_cache(),
                    "the 24 GB per GPU come out of the KV pool: fewer sequences run at once than "
                    "with a cache just big enough for the syllabus"),
            Mistake(lambda g: sizing.saturated_throughput(replica(), PROMPT, TANVI.answer_tokens_mean)
                    ["output_tokens_per_s"],
                    "that is the replica without any cache"),
            Mistake(lambda g: _tput(share_blocks=False),
                    "running requests share the cached syllabus blocks: each holds only its own "
                    "suffix in the pool"),
            Mistake(lambda g: _tput(skip_cached_prefill=False),
                    "cached tokens are not prefilled again: new requests compute only their "
                    "uncached suffix"),
        ),
        hint="caching.saturated_throughput_with_cache(r, isl, osl, cache_bytes, cached_tokens)",
    ),
    Exercise(
        id="4.5",
        prompt="bytes per GPU one cached copy of the syllabus occupies",
        answer=lambda g: _syllabus_cache_bytes(),
        unit="bytes",
        rel_tol=0.001,
        mistakes=(
            Mistake(lambda g: SYL * replica().kv_bytes_per_token_per_gpu,
                    "only whole 16-token blocks are cached: the syllabus's last tokens share a block "
                    "with the question"),
            Mistake(lambda g: (SYL // block()) * block() * sizing.kv_bytes_per_token(TANVI.model_id),
                    "that is the whole replica; with tensor parallelism each GPU holds its share of "
                    "the KV heads"),
            Mistake(lambda g: SYL * sizing.kv_bytes_per_token(TANVI.model_id),
                    "that is the whole replica and counts a partial block; per GPU and whole "
                    "blocks only"),
        ),
        hint="whole blocks × 16 tokens × KV bytes per token per GPU (Replica.kv_bytes_per_token_per_gpu)",
    ),
]
