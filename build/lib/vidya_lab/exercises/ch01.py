"""Chapter 1's exercise data: the traces the exercises are about, each seeded by the reader's givens.

The traces are simulated, seeded, by :mod:`vidya_lab.toyserver` (whose step times are the cost
model's, straightened) on Tanvi's traffic (:func:`vidya_lab.toyserver.tutor_workload`). Each helper
takes its seed from the reader's own numbers when an instructor issued them
(:mod:`vidya_lab.exercises.givens`), else the book's seed, so the chapter's solution code works
unchanged on a student's own trace. The answers are in the answer key, ``key/ch01.py``.
"""

from __future__ import annotations

import json
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from vidya_lab import slo, traces
from vidya_lab._validate import check_bool, check_int
from vidya_lab.bench.precision import RunIntervals, one_run_intervals
from vidya_lab.exercises.givens import Between, Pick, Seed, given, my_givens
from vidya_lab.scenario import TANVI
from vidya_lab.toyserver import ToyServer, simulate, tutor_workload

__all__ = ["GIVENS", "LOAD_CHOICES", "PILOT_BATCHES", "PILOT_DURATION_S", "PILOT_RATE_PER_S",
           "READING_CASES", "busy_trace", "example_request", "example_row", "llmperf_record",
           "my_givens", "overloaded_trace", "pilot_intervals", "pilot_trace", "replica_traces",
           "tutor_slo", "WAVES_OFF_S", "WAVES_ON_S", "WAVES_RATE_ON_PER_S"]

CHAPTER = 1
#: Loads of the exercise traces (requests/s) and their length (seconds).
BUSY_RATE_PER_S, QUIET_RATE_PER_S, OVERLOAD_RATE_PER_S = 1.4, 0.5, 2.2
TRACE_DURATION_S = 600.0
OVERLOAD_MAX_QUEUE = 3  # exercise 1.5: requests allowed to wait before new ones are turned away
HEADROOM = 2.0  # exercise 1.4: stream twice as fast as the student reads
#: Exercise 1.9's pilot benchmark: its load (requests/s, below the toy replica's goodput), its
#: length (seconds) and the batches of its batch-means interval.
PILOT_RATE_PER_S, PILOT_DURATION_S, PILOT_BATCHES = 1.0, 7200.0, 10
#: A stand-in for a recorded evening whose questions come in waves (a class asks together):
#: Poisson at this rate (requests/s) during "on" periods of this mean length (seconds), silent
#: "off" periods of this mean length between them; mean rate 1.0 requests/s, as the pilot's.
WAVES_RATE_ON_PER_S, WAVES_ON_S, WAVES_OFF_S = 1.5, 120.0, 60.0
#: The book's seeds (a student's own come from their givens).
BUSY_SEED, REPLICA_SEED, OVERLOAD_SEED, PILOT_SEED = 101, 202, 303, 5

#: The numbers chapter 1's exercises depend on; defaults are the book's.
GIVENS = {
    "busy_seed": Seed(BUSY_SEED, about="seed of your busy trace, ex1.busy_trace()"),
    "replica_seed": Seed(REPLICA_SEED, about="seed of your two replicas, ex1.replica_traces()"),
    "overload_seed": Seed(OVERLOAD_SEED, about="seed of your overloaded trace, ex1.overloaded_trace()"),
    "words_per_min": Between(slo.READING_WORDS_PER_MIN, 180.0, 300.0, step=1.0, unit="words/min",
                             about="how fast your student reads"),
    "headroom": Pick(HEADROOM, (1.5, 2.0, 2.5, 3.0),
                     about="how many times faster than reading the answer must stream"),
    "pilot_seed": Seed(PILOT_SEED, about="seed of your pilot benchmark, ex1.pilot_trace()"),
    "rel_half_width": Pick(0.05, (0.05, 0.08, 0.1),
                           about="the half-width of the 95 % interval, as a fraction of the p99"),
}

#: Exercise 1.7's choices: why a closed loop at the same mean rate shows a smaller p99 TTFT.
LOAD_CHOICES = {
    "faster steps": "the closed-loop run made the server's steps faster",
    "fewer requests": "the closed-loop run sent fewer requests in all",
    "bounded queue": "a closed-loop user sends only after its answer, so at most `users` "
                     "requests are ever in the system and a burst cannot pile up in the queue",
    "cold start": "the open-loop run started from an empty server",
}

#: Public cases of exercise 1.6 (words/min, tokens per word, headroom); the grader adds its own.
READING_CASES = ((238.0, 4.0 / 3.0, 2.0), (200.0, 1.5, 1.0), (300.0, 2.0, 1.5), (150.0, 1.2, 3.0))


def _seed(name: str, seed: int | None, default: int) -> int:
    return check_int("seed", given(CHAPTER, name, default) if seed is None else seed,
                     minimum=0, maximum=2**32 - 1)


@lru_cache(maxsize=64)
def _simulated(rate_per_s: float, seed: int, max_queue: int | None = None,
               token_times: bool = False, duration_s: float = TRACE_DURATION_S) -> slo.Timelines:
    server = ToyServer() if max_queue is None else ToyServer(max_queue=max_queue)
    return simulate(tutor_workload(rate_per_s, duration_s, seed=seed), server,
                    record_token_times=token_times)


def busy_trace(seed: int | None = None, *, token_times: bool = False) -> slo.Timelines:
    """Ten minutes of one toy replica at a busy but sustainable load (exercises 1.1, 1.2, 1.8).

    ``seed`` default: the reader's ``busy_seed`` (the book's is 101). ``token_times``: also record
    every token's emit time (the same run: the same timelines, plus the tokens)."""
    return _simulated(BUSY_RATE_PER_S, _seed("busy_seed", seed, BUSY_SEED),
                      token_times=check_bool("token_times", token_times))


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


def example_row(seed: int | None = None) -> int:
    """The index, in the busy trace, of exercise 1.2's request: the one that waited longest for its
    first token among those with a short answer (5 to 40 output tokens, so every mistake shows)."""
    t = busy_trace(seed)
    ok = t.finished & (t.output_tokens >= 5) & (t.output_tokens <= 40)
    if not np.any(ok):  # pragma: no cover - a 10-minute busy trace always has some
        raise RuntimeError("the busy trace has no short answer to use as the example")
    return int(np.argmax(np.where(ok, t.first_token_s - t.arrival_s, -np.inf)))


def example_request(seed: int | None = None) -> slo.RequestTimeline:
    """The request of exercise 1.2 (:func:`example_row` of the busy trace)."""
    return busy_trace(seed).record(example_row(seed))


@lru_cache(maxsize=16)
def _llmperf_rows(seed: int) -> tuple[dict, ...]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "busy_individual_responses.json"
        traces.write_llmperf(busy_trace(seed), path)
        return tuple(json.loads(path.read_text()))


def llmperf_record(seed: int | None = None) -> dict:
    """Exercise 1.8's record: the busy trace written as LLMPerf writes it (its
    ``..._individual_responses.json``), and of its records the one with the longest ``ttft_s``
    among its shortest answers (the fewest tokens, at least 3, so that dividing by n instead of
    n − 1 shows). ``seed`` default: the reader's ``busy_seed``."""
    rows = _llmperf_rows(_seed("busy_seed", seed, BUSY_SEED))
    ok = [r for r in rows if r["error_code"] is None and r["number_output_tokens"] >= 3]
    return dict(min(ok, key=lambda r: (r["number_output_tokens"], -r["ttft_s"])))


def pilot_trace(seed: int | None = None) -> slo.Timelines:
    """Exercise 1.9's pilot benchmark: two hours of Tanvi's traffic at 1.0 requests/s on the toy
    replica. ``seed`` default: the reader's ``pilot_seed`` (the book's is 5)."""
    return _simulated(PILOT_RATE_PER_S, _seed("pilot_seed", seed, PILOT_SEED),
                      duration_s=PILOT_DURATION_S)


def pilot_intervals(seed: int | None = None) -> RunIntervals:
    """The pilot's p99 TTFT with its 95 % intervals (batch means over 10 batches, in time order)."""
    return _pilot_intervals(_seed("pilot_seed", seed, PILOT_SEED))


@lru_cache(maxsize=16)
def _pilot_intervals(seed: int) -> RunIntervals:
    return one_run_intervals(pilot_trace(seed), batches=PILOT_BATCHES)


def tutor_slo() -> slo.SLO:
    """Tanvi's targets (TTFT and TPOT, seconds) from the scenario."""
    return slo.SLO(ttft_s=TANVI.ttft_target_s, tpot_s=TANVI.tpot_target_s)
