"""Chapter 1 exercises: reading latency from request timelines.

The traces the exercises use are simulated, seeded, by :mod:`vidya_lab.toyserver` (whose step times
are the cost model's, straightened) on Tanvi's traffic
(:func:`vidya_lab.toyserver.tutor_workload`); the chapter loads them with the functions below, and the
grader recomputes the expected answers from the same seeds in its own process.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from vidya_lab import slo
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI
from vidya_lab.toyserver import ToyServer, simulate, tutor_workload

#: Seeds and loads of the exercise traces (requests/s, seconds).
BUSY_RATE_PER_S, QUIET_RATE_PER_S, OVERLOAD_RATE_PER_S = 1.4, 0.5, 2.2
TRACE_DURATION_S = 600.0
OVERLOAD_MAX_QUEUE = 3  # exercise 1.5: requests allowed to wait before new ones are turned away
HEADROOM = 2.0  # exercise 1.4: stream twice as fast as the student reads


@cache
def busy_trace() -> slo.Timelines:
    """Ten minutes of one toy replica at a busy but sustainable load (exercises 1.1 and 1.2)."""
    return simulate(tutor_workload(BUSY_RATE_PER_S, TRACE_DURATION_S, seed=101), ToyServer())


@cache
def replica_traces() -> tuple[slo.Timelines, slo.Timelines]:
    """Two replicas behind an uneven router: one busy, one quiet (exercise 1.3)."""
    busy = simulate(tutor_workload(BUSY_RATE_PER_S, TRACE_DURATION_S, seed=202), ToyServer())
    quiet = simulate(tutor_workload(QUIET_RATE_PER_S, TRACE_DURATION_S, seed=203), ToyServer())
    return busy, quiet


@cache
def overloaded_trace() -> slo.Timelines:
    """An overloaded replica that turns requests away when 3 are waiting (exercise 1.5)."""
    return simulate(tutor_workload(OVERLOAD_RATE_PER_S, TRACE_DURATION_S, seed=303),
                    ToyServer(max_queue=OVERLOAD_MAX_QUEUE))


def example_request() -> slo.RequestTimeline:
    """The request of exercise 1.2: the one of the busy trace that waited longest for its first token
    among those with a short answer (5 to 40 output tokens, so every mistake shows)."""
    t = busy_trace()
    ok = t.finished & (t.output_tokens >= 5) & (t.output_tokens <= 40)
    if not np.any(ok):  # pragma: no cover - the seeded trace has some
        raise RuntimeError("the busy trace has no short answer to use as the example")
    ttft = np.where(ok, t.first_token_s - t.arrival_s, -np.inf)
    return t.record(int(np.argmax(ttft)))


def tutor_slo() -> slo.SLO:
    """Tanvi's targets (TTFT and TPOT, seconds) from the scenario."""
    return slo.SLO(ttft_s=TANVI.ttft_target_s, tpot_s=TANVI.tpot_target_s)


# ----------------------------------------------------------------------------- 1.1

def _p99_ttft() -> float:
    return slo.percentile(slo.ttft_s(busy_trace()), 99)


def _p99_from_admission() -> float:
    t = busy_trace()
    return slo.percentile(t.first_token_s[t.finished] - t.admitted_s[t.finished], 99)


# ----------------------------------------------------------------------------- 1.2

def _tpot_example() -> float:
    r = example_request()
    return (r.finish_s - r.first_token_s) / (r.output_tokens - 1)


# ----------------------------------------------------------------------------- 1.3

def _fleet_p99() -> float:
    return slo.pooled_percentile([slo.ttft_s(t) for t in replica_traces()], 99)


def _mean_of_p99s() -> float:
    return slo.mean_of_percentiles([slo.ttft_s(t) for t in replica_traces()], 99)


# ----------------------------------------------------------------------------- 1.4

def _tpot_reading(tokens_per_word: float = slo.TOKENS_PER_WORD, headroom: float = HEADROOM) -> float:
    return slo.tpot_for_reading_speed(slo.READING_WORDS_PER_MIN, tokens_per_word=tokens_per_word,
                                      headroom=headroom)


# ----------------------------------------------------------------------------- 1.5

def _attainment() -> float:
    return slo.attainment(overloaded_trace(), tutor_slo())


def _attainment_of_finished() -> float:
    t = overloaded_trace()
    return slo.attainment(t[t.finished], tutor_slo())


# ----------------------------------------------------------------------------- 1.6

#: Public cases of exercise 1.6 (words/min, tokens per word, headroom); the grader adds its own.
READING_CASES = ((238.0, 4.0 / 3.0, 2.0), (200.0, 1.5, 1.0), (300.0, 2.0, 1.5), (150.0, 1.2, 3.0))


EXERCISES = [
    Exercise(
        id="1.1",
        prompt="p99 TTFT of the busy trace, in seconds",
        expected=_p99_ttft,
        unit="s",
        mistakes=(
            Mistake(lambda: float(np.mean(slo.ttft_s(busy_trace()))),
                    "that is the mean TTFT; the question asks for the 99th percentile, the tail"),
            Mistake(lambda: slo.percentile(slo.ttft_s(busy_trace()), 50),
                    "that is the median (p50); the question asks for p99"),
            Mistake(_p99_from_admission,
                    "you measured from admission; TTFT starts when the request arrives and "
                    "includes the time it waited in the queue"),
            Mistake(lambda: slo.percentile(slo.e2e_s(busy_trace()), 99),
                    "that is the end-to-end latency; TTFT stops at the first token"),
        ),
        hint="TTFT = first_token_s − arrival_s of each finished request; then numpy's default "
             "(linear) 99th percentile",
    ),
    Exercise(
        id="1.2",
        prompt="TPOT of the example request, in seconds per token",
        expected=_tpot_example,
        unit="s",
        mistakes=(
            Mistake(lambda: (example_request().finish_s - example_request().first_token_s)
                    / example_request().output_tokens,
                    "n tokens have n − 1 gaps between them: divide by output_tokens − 1"),
            Mistake(lambda: (example_request().finish_s - example_request().arrival_s)
                    / example_request().output_tokens,
                    "you spread the whole latency, TTFT included, over the tokens (LLMPerf's "
                    "per-request figure); TPOT starts at the first token"),
            Mistake(lambda: (example_request().finish_s - example_request().arrival_s)
                    / (example_request().output_tokens - 1),
                    "TPOT starts at the first token, not at arrival: use finish_s − first_token_s"),
            Mistake(lambda: 1.0 / _tpot_example(),
                    "that is tokens per second; TPOT is its inverse, seconds per token"),
        ),
        hint="TPOT = (finish_s − first_token_s) / (output_tokens − 1)",
    ),
    Exercise(
        id="1.3",
        prompt="fleet p99 TTFT over both replicas, in seconds",
        expected=_fleet_p99,
        unit="s",
        rel_tol=0.02,
        mistakes=(
            Mistake(_mean_of_p99s,
                    "you averaged the two replicas' p99s; a percentile does not average: pool "
                    "every request of the fleet and take the p99 of all of them"),
            Mistake(lambda: max(slo.percentile(slo.ttft_s(t), 99) for t in replica_traces()),
                    "that is the worse replica's p99; the fleet p99 pools every request, and the "
                    "quiet replica's fast requests pull it down"),
            Mistake(lambda: float(np.average([slo.percentile(slo.ttft_s(t), 99)
                                              for t in replica_traces()],
                                             weights=[len(slo.ttft_s(t))
                                                      for t in replica_traces()])),
                    "weighting the p99s by traffic is closer but still not a percentile: pool the "
                    "requests and take the p99 of all of them"),
        ),
        hint="np.concatenate the TTFTs of both replicas, then take the 99th percentile",
    ),
    Exercise(
        id="1.4",
        prompt="largest TPOT (s) that streams twice as fast as a student reads",
        expected=_tpot_reading,
        unit="s",
        mistakes=(
            Mistake(lambda: _tpot_reading(tokens_per_word=1.0),
                    "you treated a word as one token; a word is about 4/3 tokens, so the text "
                    "needs more tokens per second"),
            Mistake(lambda: _tpot_reading(tokens_per_word=3.0 / 4.0),
                    "you used 3/4 tokens per word; it is the other way round: 3/4 of a word per "
                    "token, so 4/3 tokens per word"),
            Mistake(lambda: _tpot_reading(headroom=1.0),
                    "that TPOT only keeps pace with the reader; the question asks for twice the "
                    "reading speed"),
            Mistake(lambda: 1.0 / _tpot_reading(),
                    "that is a speed in tokens per second; TPOT is seconds per token, its inverse"),
        ),
        hint="words/min → tokens/s: × tokens per word ÷ 60; × 2 for the headroom; TPOT is 1 / that",
    ),
    Exercise(
        id="1.5",
        prompt="SLO attainment of the overloaded trace (fraction 0..1)",
        expected=_attainment,
        unit="(fraction)",
        mistakes=(
            Mistake(_attainment_of_finished,
                    "you counted only the finished requests; a request turned away also missed the "
                    "SLO, so divide by all requests"),
            Mistake(lambda: 1.0 - _attainment(),
                    "that is the fraction that missed; attainment is the fraction that met it"),
        ),
        hint="meets = finished and TTFT ≤ target and TPOT ≤ target (one-token answers have no TPOT "
             "to miss); attainment = count(meets) / count(all requests)",
    ),
    Exercise(
        id="1.6",
        prompt="a function: the largest TPOT (s) that streams headroom times as fast as a reader",
        expected=lambda: slo.tpot_for_reading_speed,
        kind="function",
        unit="s",
        cases=READING_CASES,
        answer_name="tpot_target",
        hint="tokens/s the reader needs = words/min × tokens per word ÷ 60; multiply by the "
             "headroom; TPOT is one over that",
    ),
]
