"""Chapter 4's answer key: what a prefix cache saves and costs, what a CPU tier, speculation and a
cache salt buy.

Every expected answer is computed by :mod:`vidya_lab.caching` (and through it the cost model of
:mod:`vidya_lab.sizing`) from Tanvi's scenario and the reader's givens ``g``
(:data:`vidya_lab.exercises.ch04.GIVENS`); the mistakes compute what a reader who took a common
wrong path would answer, from the same givens.
"""

from __future__ import annotations

import math

from vidya_lab import caching, sizing
from vidya_lab.exercises.ch04 import (
    BIG_CACHE_BYTES,
    CACHED,
    GIVENS,
    PROMPT,
    SYL,
    Q,
    block,
    replica,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI


def _pick(*names: str) -> dict:
    return {n: GIVENS[n] for n in names}


# ----------------------------------------------------------------------------- 4.1

def _burst_hit_rate(g, whole_blocks: bool = True, first_misses: bool = True) -> float:
    n, b = g["burst_requests"], block()
    shared = (SYL // b) * b if whole_blocks else SYL
    return (n - 1 if first_misses else n) * shared / (n * (SYL + Q))


# ----------------------------------------------------------------------------- 4.2

def _ttft(cached: int) -> float:
    return caching.ttft_with_cache_s(replica(), PROMPT, cached)


# ----------------------------------------------------------------------------- 4.4

def _tput(cache_bytes: float = BIG_CACHE_BYTES, **kw) -> float:
    return caching.saturated_throughput_with_cache(replica(), PROMPT, TANVI.answer_tokens_mean,
                                                   cache_bytes, SYL, **kw)["output_tokens_per_s"]


def _syllabus_cache_bytes() -> float:
    r = replica()
    return (SYL // r.block_tokens) * r.block_tokens * r.kv_bytes_per_token_per_gpu


def _tput_small_cache() -> float:
    """The syllabus alone, in a cache just big enough for it."""
    return _tput(_syllabus_cache_bytes())


# ----------------------------------------------------------------------------- 4.6

def _capacity(cached: int) -> float:
    return sizing.capacity_rps(replica(), PROMPT, TANVI.answer_tokens_mean, TANVI.tpot_target_s,
                               cached_tokens=cached)


def _utilisation(g, cached: int = CACHED) -> float:
    return g["exam_peak_rps"] / (g["exam_replicas"] * _capacity(cached))


# ----------------------------------------------------------------------------- 4.7

def _restore_s(g, bytes_per_token: float | None = None, link: float | None = None) -> float:
    r = replica()
    per_token = r.kv_bytes_per_token_per_gpu if bytes_per_token is None else bytes_per_token
    rate = caching.host_to_device_bytes_per_s(r.gpu) if link is None else link
    return g["history_tokens"] * per_token / rate


# ----------------------------------------------------------------------------- 4.8

def _spec_compute_bound(g, verify_steps: float | None = None) -> float:
    e = caching.spec_expected_tokens(g["alpha"], g["gamma"])
    return e / (g["gamma"] + 1 if verify_steps is None else verify_steps)


# ----------------------------------------------------------------------------- 4.9

def _probe(g) -> dict:
    return caching.probe_signal(replica(), CACHED, g["guessed_tokens"], Q)


def _signal_known_uncached(g) -> float:
    r, k = replica(), CACHED
    total = k + g["guessed_tokens"] + Q
    return caching.ttft_with_cache_s(r, total, 0) - caching.ttft_with_cache_s(r, total, k + g["guessed_tokens"])


# ----------------------------------------------------------------------------- 4.10

def _schools(g, blocks_per_school: int | None = None, budget_gpus: int = 1) -> int:
    r = replica()
    blocks = (caching.tenant_prefix_blocks(r.block_tokens, subjects=g["subjects"])
              if blocks_per_school is None else blocks_per_school)
    budget = g["isolation_share"] * r.kv_budget_bytes * budget_gpus
    return math.floor(budget / (blocks * r.block_tokens * r.kv_bytes_per_token_per_gpu))


def _blocks_without_sharing(g) -> int:
    b = block()
    return g["subjects"] * ((SYL + TANVI.subject_prompt_tokens) // b)


EXERCISES = [
    Exercise(
        id="4.1",
        prompt="best-case token hit rate of your burst of requests sharing the 3,000-token syllabus",
        answer=lambda g: _burst_hit_rate(g),
        givens=_pick("burst_requests"),
        unit="(fraction)",
        rel_tol=0.001,
        mistakes=(
            Mistake(lambda g: SYL / (SYL + Q),
                    "the first request finds the cache empty, and only whole 16-token blocks of the "
                    "syllabus can be shared"),
            Mistake(lambda g: _burst_hit_rate(g, whole_blocks=False),
                    "only whole blocks are shared: the block holding the syllabus's last tokens also "
                    "holds the question's first, so it differs from request to request"),
            Mistake(lambda g: _burst_hit_rate(g, first_misses=False),
                    "the first request finds the cache empty: it reuses nothing"),
            Mistake(lambda g: (g["burst_requests"] - 1) / g["burst_requests"],
                    "that is the request-level hit rate; the question asks for the share of prompt "
                    "tokens served from the cache"),
        ),
        hint="(requests − 1) × (whole blocks of the syllabus × 16) / (requests × prompt tokens)",
    ),
    Exercise(
        id="4.2",
        prompt="TTFT saved (s) on an idle replica when syllabus and subject prompt are cached",
        answer=lambda g: _ttft(0) - _ttft(CACHED),
        unit="s",
        mistakes=(
            Mistake(lambda g: _ttft(CACHED), "that is the TTFT with the cache; the question asks how "
                    "much it saves"),
            Mistake(lambda g: _ttft(0), "that is the TTFT without the cache; subtract the TTFT with it"),
            Mistake(lambda g: _ttft(0) * CACHED / PROMPT,
                    "time is not proportional to tokens: the short uncached suffix still reads every "
                    "weight once, so it costs far more than its share of the tokens"),
        ),
        hint="TTFT without − TTFT with, where TTFT with prefills only the uncached suffix",
    ),
    Exercise(
        id="4.3",
        prompt="expected tokens per target step for your α and γ",
        answer=lambda g: caching.spec_expected_tokens(g["alpha"], g["gamma"]),
        givens=_pick("alpha", "gamma"),
        unit="tokens",
        mistakes=(
            Mistake(lambda g: 1 + g["alpha"] * g["gamma"],
                    "the first rejection discards every later draft token, so the guesses are not "
                    "accepted independently: sum α^i, i = 0..γ"),
            Mistake(lambda g: (1 - g["alpha"] ** g["gamma"]) / (1 - g["alpha"]),
                    "you left out the bonus token: when all γ drafts are accepted the target adds "
                    "one of its own, so the exponent is γ + 1"),
            Mistake(lambda g: g["gamma"] + 1.0, "γ + 1 is the best case (α = 1): every draft accepted"),
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
        hint="the cache's blocks leave the running batch fewer; the batch shares the cached "
             "syllabus and prefills only the uncached suffix",
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
        hint="whole blocks × 16 tokens × KV bytes per token per GPU",
    ),
    Exercise(
        id="4.6",
        prompt="utilisation (0..1) of your exam-peak fleet with the prefix cache counted",
        answer=_utilisation,
        givens=_pick("exam_peak_rps", "exam_replicas"),
        unit="(fraction)",
        rel_tol=0.03,  # the calculator's capacity and the fleet model's agree within 6 %
        mistakes=(
            Mistake(lambda g: _utilisation(g, cached=0),
                    "that divides by the capacity of a replica without the cache; a warm replica "
                    "prefills only the uncached suffix and holds only its own KV"),
            Mistake(lambda g: 1 / _utilisation(g),
                    "upside down: utilisation is offered requests/s ÷ (replicas × capacity)"),
            Mistake(lambda g: _utilisation(g) * g["exam_replicas"],
                    "divide by all the replicas' capacity, not one replica's"),
        ),
        hint="utilisation = peak requests/s ÷ (replicas × one replica's capacity with the cache)",
    ),
    Exercise(
        id="4.7",
        prompt="seconds to restore your history's KV from the CPU tier over PCIe",
        answer=_restore_s,
        givens=_pick("history_tokens"),
        unit="s",
        mistakes=(
            Mistake(lambda g: _restore_s(g, bytes_per_token=sizing.kv_bytes_per_token(TANVI.model_id)),
                    "each of the four GPUs copies only its own share of the KV heads over its own "
                    "link, all at once: use the KV bytes per token per GPU"),
            Mistake(lambda g: _restore_s(g, link=caching.host_to_device_bytes_per_s(replica().gpu) * 2),
                    "a restore is one direction, host to device: do not add the two directions"),
            Mistake(lambda g: caching.prefill_time_with_cache_s(
                        replica(), CACHED + g["history_tokens"] + Q, CACHED),
                    "that is the time to recompute the history (its prefill); the question asks how "
                    "long copying it back takes"),
        ),
        hint="history tokens × KV bytes per token per GPU ÷ host-to-device bytes/s",
    ),
    Exercise(
        id="4.8",
        prompt="speed-up of speculation with your α, γ at a batch where a step is compute-bound",
        answer=_spec_compute_bound,
        givens=_pick("alpha", "gamma"),
        unit="×",
        level="explain",
        mistakes=(
            Mistake(lambda g: caching.spec_expected_tokens(g["alpha"], g["gamma"]),
                    "that assumes checking γ + 1 tokens costs one plain step (true at batch 1); a "
                    "compute-bound step costs in proportion to the tokens it processes"),
            Mistake(lambda g: _spec_compute_bound(g, verify_steps=g["gamma"]),
                    "the verify step processes γ + 1 tokens per sequence: the γ guesses and the "
                    "position after them"),
            Mistake(lambda g: 1 / _spec_compute_bound(g),
                    "upside down: speed-up = tokens per step ÷ cost of a step, in plain steps"),
        ),
        hint="tokens per verify step ÷ (the verify step's cost in plain steps, when cost ∝ tokens)",
    ),
    Exercise(
        id="4.9",
        prompt="ms faster first token when your guessed worksheet was cached (the probe's signal)",
        answer=lambda g: _probe(g)["signal_s"] * 1e3,
        givens=_pick("guessed_tokens"),
        unit="ms",
        level="explain",
        mistakes=(
            Mistake(lambda g: _probe(g)["ttft_miss_s"] * 1e3,
                    "that is the TTFT of a miss; the signal is the difference between a miss and a hit"),
            Mistake(lambda g: _signal_known_uncached(g) * 1e3,
                    "the syllabus and subject prompt are public and cached for everyone: they are "
                    "computed in neither case, so they are not part of the signal"),
            Mistake(lambda g: caching.ttft_with_cache_s(replica(), g["guessed_tokens"]) * 1e3,
                    "the guessed tokens attend to the cached prefix before them, and the attacker's "
                    "own suffix is computed either way: use the difference of the two TTFTs"),
        ),
        hint="TTFT(miss: guess + suffix computed after the cached prefix) − TTFT(hit: suffix only)",
    ),
    Exercise(
        id="4.10",
        prompt="most schools one replica can isolate with every school's prefixes resident",
        answer=_schools,
        givens=_pick("isolation_share", "subjects"),
        kind="integer",
        unit="schools",
        level="design",
        mistakes=(
            Mistake(lambda g: _schools(g, blocks_per_school=_blocks_without_sharing(g)),
                    "within a school the syllabus is shared by its subjects: count its blocks once, "
                    "then each subject's blocks past it"),
            Mistake(lambda g: _schools(g, budget_gpus=replica().n_gpus),
                    "every GPU of the replica holds its share of every school's blocks: the budget "
                    "per GPU is compared with the KV bytes per token per GPU, not added up over GPUs"),
            Mistake(lambda g: _schools(g, blocks_per_school=(SYL + TANVI.subject_prompt_tokens)
                                       // block()),
                    "a school keeps all its subject prompts resident, not one: syllabus blocks once "
                    "plus each subject's own"),
        ),
        hint="floor(share × KV budget per GPU ÷ (blocks per school × 16 × KV bytes per token per GPU)),"
             " blocks per school = syllabus blocks + subjects × each subject's blocks past them",
    ),
]
