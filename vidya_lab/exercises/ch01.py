"""Chapter 1's exercise data: the traces the exercises are about, each seeded by the reader's givens.

The traces are simulated, seeded, by :mod:`vidya_lab.toyserver` (whose step times are the cost
model's, straightened) on Tanvi's traffic (:func:`vidya_lab.toyserver.tutor_workload`). Each helper
takes its seed from the reader's own numbers when an instructor issued them
(:mod:`vidya_lab.exercises.givens`), else the book's seed, so the chapter's solution code works
unchanged on a student's own trace. The answers are in the answer key, ``key/ch01.py``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from vidya_lab import slo
from vidya_lab._validate import check_int
from vidya_lab.exercises.givens import Between, Pick, Seed, given, my_givens
from vidya_lab.scenario import TANVI
from vidya_lab.toyserver import ToyServer, simulate, tutor_workload

__all__ = ["GIVENS", "READING_CASES", "busy_trace", "example_request", "my_givens",
           "overloaded_trace", "replica_traces", "tutor_slo"]

CHAPTER = 1
#: Loads of the exercise traces (requests/s) and their length (seconds).
BUSY_RATE_PER_S, QUIET_RATE_PER_S, OVERLOAD_RATE_PER_S = 1.4, 0.5, 2.2
TRACE_DURATION_S = 600.0
OVERLOAD_MAX_QUEUE = 3  # exercise 1.5: requests allowed to wait before new ones are turned away
HEADROOM = 2.0  # exercise 1.4: stream twice as fast as the student reads
#: The book's seeds (a student's own come from their givens).
BUSY_SEED, REPLICA_SEED, OVERLOAD_SEED = 101, 202, 303

#: The numbers chapter 1's exercises depend on; defaults are the book's.
GIVENS = {
    "busy_seed": Seed(BUSY_SEED, about="seed of your busy trace, ex1.busy_trace()"),
    "replica_seed": Seed(REPLICA_SEED, about="seed of your two replicas, ex1.replica_traces()"),
    "overload_seed": Seed(OVERLOAD_SEED, about="seed of your overloaded trace, ex1.overloaded_trace()"),
    "words_per_min": Between(slo.READING_WORDS_PER_MIN, 180.0, 300.0, step=1.0, unit="words/min",
                             about="how fast your student reads"),
    "headroom": Pick(HEADROOM, (1.5, 2.0, 2.5, 3.0),
                     about="how many times faster than reading the answer must stream"),
}

#: Public cases of exercise 1.6 (words/min, tokens per word, headroom); the grader adds its own.
READING_CASES = ((238.0, 4.0 / 3.0, 2.0), (200.0, 1.5, 1.0), (300.0, 2.0, 1.5), (150.0, 1.2, 3.0))


def _seed(name: str, seed: int | None, default: int) -> int:
    return check_int("seed", given(CHAPTER, name, default) if seed is None else seed,
                     minimum=0, maximum=2**32 - 1)


@lru_cache(maxsize=64)
def _simulated(rate_per_s: float, seed: int, max_queue: int | None = None) -> slo.Timelines:
    server = ToyServer() if max_queue is None else ToyServer(max_queue=max_queue)
    return simulate(tutor_workload(rate_per_s, TRACE_DURATION_S, seed=seed), server)


def busy_trace(seed: int | None = None) -> slo.Timelines:
    """Ten minutes of one toy replica at a busy but sustainable load (exercises 1.1 and 1.2).

    ``seed`` default: the reader's ``busy_seed`` (the book's is 101)."""
    return _simulated(BUSY_RATE_PER_S, _seed("busy_seed", seed, BUSY_SEED))


def replica_traces(seed: int | None = None) -> tuple[slo.Timelines, slo.Timelines]:
    """Two replicas behind an uneven router: one busy, one quiet (exercise 1.3).

    ``seed`` default: the reader's ``replica_seed`` (the book's is 202); the quiet one uses seed + 1."""
    s = _seed("replica_seed", seed, REPLICA_SEED)
    return _simulated(BUSY_RATE_PER_S, s), _simulated(QUIET_RATE_PER_S, s + 1)


def overloaded_trace(seed: int | None = None) -> slo.Timelines:
    """An overloaded replica that turns requests away when 3 are waiting (exercise 1.5).

    ``seed`` default: the reader's ``overload_seed`` (the book's is 303)."""
    return _simulated(OVERLOAD_RATE_PER_S, _seed("overload_seed", seed, OVERLOAD_SEED),
                      OVERLOAD_MAX_QUEUE)


def example_request(seed: int | None = None) -> slo.RequestTimeline:
    """The request of exercise 1.2: the one of the busy trace that waited longest for its first token
    among those with a short answer (5 to 40 output tokens, so every mistake shows)."""
    t = busy_trace(seed)
    ok = t.finished & (t.output_tokens >= 5) & (t.output_tokens <= 40)
    if not np.any(ok):  # pragma: no cover - a 10-minute busy trace always has some
        raise RuntimeError("the busy trace has no short answer to use as the example")
    ttft = np.where(ok, t.first_token_s - t.arrival_s, -np.inf)
    return t.record(int(np.argmax(ttft)))


def tutor_slo() -> slo.SLO:
    """Tanvi's targets (TTFT and TPOT, seconds) from the scenario."""
    return slo.SLO(ttft_s=TANVI.ttft_target_s, tpot_s=TANVI.tpot_target_s)
