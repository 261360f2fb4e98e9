"""Chapter 5's answer key: the freeze, chunked prefill and its cost, and the queueing answers.

Every expected value is computed by the package: step times by the cost model
(:func:`vidya_lab.sizing.iteration_time_s`), chunked prefill by
:func:`vidya_lab.admission.chunked_prefill_time_s`, waits and staffing by :mod:`vidya_lab.queueing`.
The replica is the chapter's: the scenario's model on four H100s with TP 4.
"""

from __future__ import annotations

import math

from vidya_lab import admission, queueing, sizing
from vidya_lab.exercises.ch05 import (
    CHUNK_TOKENS,
    DECODING_STUDENTS,
    EXAM_UPLOAD_RATE_PER_S,
    MAX_WAIT_PROBABILITY,
    UPLOAD_RATE_PER_S,
    replica,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI


def upload_step_s() -> float:
    """The FCFS freeze: one prefill step of the whole upload, seconds."""
    return sizing.iteration_time_s(replica(), prefill=[(TANVI.upload_tokens, 0)])


def _token_by_token_s() -> float:
    return TANVI.upload_tokens * sizing.iteration_time_s(
        replica(), decode_contexts=[TANVI.upload_tokens])


def _student_prompt_step_s() -> float:
    return sizing.iteration_time_s(replica(), prefill=[(TANVI.prompt_tokens_mean, 0)])


def _chunked_512_s() -> float:
    return admission.chunked_prefill_time_s(replica(), TANVI.upload_tokens, CHUNK_TOKENS)


def _steps_to_first_token() -> int:
    return math.ceil(TANVI.upload_tokens / (CHUNK_TOKENS - DECODING_STUDENTS))


def _chunking_cost_s() -> float:
    return _chunked_512_s() - upload_step_s()


def _overhead_only_s() -> float:
    chunks = math.ceil(TANVI.upload_tokens / CHUNK_TOKENS)
    return (chunks - 1) * replica().calibration.step_overhead_s


def _md1_wait_s() -> float:
    return queueing.md1_mean_wait_s(UPLOAD_RATE_PER_S, upload_step_s())


def _replicas_needed() -> int:
    return queueing.servers_needed(EXAM_UPLOAD_RATE_PER_S, 1.0 / upload_step_s(),
                                   max_wait_probability=MAX_WAIT_PROBABILITY).servers


EXERCISES = [
    Exercise(
        id="5.1",
        prompt="how long FCFS freezes every decoding student while the upload prefills, in seconds",
        answer=lambda g: upload_step_s(),
        unit="s",
        mistakes=(
            Mistake(lambda g: _token_by_token_s(),
                    "a prefill is not one token per step: the whole prompt goes through the model "
                    "in ONE step, all positions in parallel (compute-bound)"),
            Mistake(lambda g: _student_prompt_step_s(),
                    "that is the step of a student's prompt; the freeze is the upload's step, "
                    f"{TANVI.upload_tokens:,} tokens"),
            Mistake(lambda g: _chunked_512_s(),
                    "that is the upload prefilled in 512-token chunks; FCFS takes the whole prompt "
                    "in one step"),
        ),
        hint="sizing.iteration_time_s(r, prefill=[(upload_tokens, 0)]): one step, no tokens cached",
    ),
    Exercise(
        id="5.2",
        prompt="steps until the upload's first token under chunked prefill (budget 512, 32 decodes)",
        answer=lambda g: _steps_to_first_token(),
        kind="integer",
        unit="steps",
        mistakes=(
            Mistake(lambda g: math.ceil(TANVI.upload_tokens / CHUNK_TOKENS),
                    "the 32 decoding students take one token each of every step's budget: only "
                    "512 − 32 tokens per step are left for the upload"),
            Mistake(lambda g: TANVI.upload_tokens // (CHUNK_TOKENS - DECODING_STUDENTS),
                    "rounded down: the last, partial chunk is a step too (round up)"),
        ),
        hint="ceil(upload tokens / (budget − decoding sequences))",
    ),
    Exercise(
        id="5.3",
        prompt="extra seconds the upload's prefill takes alone in 512-token chunks vs one step",
        answer=lambda g: _chunking_cost_s(),
        unit="s",
        rel_tol=0.02,
        mistakes=(
            Mistake(lambda g: _overhead_only_s(),
                    "the fixed step overhead is only part of it: a 512-token step is not "
                    "compute-bound, so each one also pays a full read of the weights"),
            Mistake(lambda g: _chunked_512_s(),
                    "that is the whole chunked prefill time; the question asks how much LONGER it "
                    "is than one step"),
        ),
        hint="admission.chunked_prefill_time_s(r, upload, 512) − the one-step time of 5.1",
    ),
    Exercise(
        id="5.4",
        prompt="mean wait (s) of an upload at a one-at-a-time replica, 0.1 uploads/s, fixed service",
        answer=lambda g: _md1_wait_s(),
        unit="s",
        mistakes=(
            Mistake(lambda g: queueing.mm1_mean_wait_s(UPLOAD_RATE_PER_S, 1.0 / upload_step_s()),
                    "that is M/M/1 (exponential service); every upload takes the same time, so "
                    "M/D/1: Pollaczek–Khinchine with no variance halves the wait"),
            Mistake(lambda g: _md1_wait_s() + upload_step_s(),
                    "you added the service itself: the question asks for the wait BEFORE service"),
            Mistake(lambda g: (UPLOAD_RATE_PER_S * upload_step_s())
                    / (1.0 - UPLOAD_RATE_PER_S * upload_step_s()),
                    "ρ/(1 − ρ) is a number of requests (M/M/1's mean in system), not a time"),
        ),
        hint="queueing.md1_mean_wait_s(λ, S) = ρ·S / (2(1 − ρ)) with S the step of exercise 5.1",
    ),
    Exercise(
        id="5.5",
        prompt="replicas so that at most 10% of uploads wait (1 upload/s, exponential service)",
        answer=lambda g: _replicas_needed(),
        kind="integer",
        unit="replicas",
        mistakes=(
            Mistake(lambda g: math.ceil(EXAM_UPLOAD_RATE_PER_S * upload_step_s()),
                    "that only makes the queue stable (ρ < 1); at that utilisation most uploads "
                    "still wait: use Erlang C"),
            Mistake(lambda g: queueing.servers_needed(EXAM_UPLOAD_RATE_PER_S, upload_step_s(),
                                                    max_wait_probability=MAX_WAIT_PROBABILITY
                                                    ).servers,
                    "service_rate_per_s is a rate: 1 / (seconds per upload), not the seconds"),
        ),
        hint="queueing.servers_needed(λ, 1/S, max_wait_probability=0.1).servers",
    ),
]
