"""Chapter 1's answer key: reading latency from request timelines.

Every answer is a function of the reader's givens ``g`` (:data:`vidya_lab.exercises.ch01.GIVENS`):
the traces are the reader's own (seeded by ``g``), and so are the reading speed and headroom of 1.4.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import slo
from vidya_lab.exercises.ch01 import (
    GIVENS,
    READING_CASES,
    busy_trace,
    example_request,
    overloaded_trace,
    replica_traces,
    tutor_slo,
)
from vidya_lab.exercises.core import Exercise, Mistake

BUSY = {k: GIVENS[k] for k in ("busy_seed",)}
READING = {k: GIVENS[k] for k in ("words_per_min", "headroom")}


# ----------------------------------------------------------------------------- 1.1

def _busy(g) -> slo.Timelines:
    return busy_trace(g["busy_seed"])


def _p99_ttft(g) -> float:
    return slo.percentile(slo.ttft_s(_busy(g)), 99)


def _p99_from_admission(g) -> float:
    t = _busy(g)
    return slo.percentile(t.first_token_s[t.finished] - t.admitted_s[t.finished], 99)


# ----------------------------------------------------------------------------- 1.2

def _tpot_example(g, gaps: int = -1, start: str = "first_token_s") -> float:
    r = example_request(g["busy_seed"])
    return (r.finish_s - getattr(r, start)) / (r.output_tokens + gaps)


# ----------------------------------------------------------------------------- 1.3

def _ttfts(g) -> list[np.ndarray]:
    return [slo.ttft_s(t) for t in replica_traces(g["replica_seed"])]


def _fleet_p99(g) -> float:
    return slo.pooled_percentile(_ttfts(g), 99)


def _mean_of_p99s(g) -> float:
    return slo.mean_of_percentiles(_ttfts(g), 99)


def _weighted_p99s(g) -> float:
    ttfts = _ttfts(g)
    return float(np.average([slo.percentile(x, 99) for x in ttfts], weights=[len(x) for x in ttfts]))


# ----------------------------------------------------------------------------- 1.4

def _tpot_reading(g, tokens_per_word: float = slo.TOKENS_PER_WORD, headroom: float | None = None) -> float:
    return slo.tpot_for_reading_speed(g["words_per_min"], tokens_per_word=tokens_per_word,
                                      headroom=g["headroom"] if headroom is None else headroom)


# ----------------------------------------------------------------------------- 1.5

def _attainment(g) -> float:
    return slo.attainment(overloaded_trace(g["overload_seed"]), tutor_slo())


def _attainment_of_finished(g) -> float:
    t = overloaded_trace(g["overload_seed"])
    return slo.attainment(t[t.finished], tutor_slo())


EXERCISES = [
    Exercise(
        id="1.1",
        prompt="p99 TTFT of your busy trace, in seconds",
        answer=_p99_ttft,
        givens=BUSY,
        unit="s",
        mistakes=(
            Mistake(lambda g: float(np.mean(slo.ttft_s(_busy(g)))),
                    "that is the mean TTFT; the question asks for the 99th percentile, the tail"),
            Mistake(lambda g: slo.percentile(slo.ttft_s(_busy(g)), 50),
                    "that is the median (p50); the question asks for p99"),
            Mistake(_p99_from_admission,
                    "you measured from admission; TTFT starts when the request arrives and "
                    "includes the time it waited in the queue"),
            Mistake(lambda g: slo.percentile(slo.e2e_s(_busy(g)), 99),
                    "that is the end-to-end latency; TTFT stops at the first token"),
        ),
        hint="TTFT = first_token_s − arrival_s of each finished request; then numpy's default "
             "(linear) 99th percentile",
    ),
    Exercise(
        id="1.2",
        prompt="TPOT of the example request of your busy trace, in seconds per token",
        answer=_tpot_example,
        givens=BUSY,
        unit="s",
        mistakes=(
            Mistake(lambda g: _tpot_example(g, gaps=0),
                    "n tokens have n − 1 gaps between them: divide by output_tokens − 1"),
            Mistake(lambda g: _tpot_example(g, gaps=0, start="arrival_s"),
                    "you spread the whole latency, TTFT included, over the tokens (LLMPerf's "
                    "per-request figure); TPOT starts at the first token"),
            Mistake(lambda g: _tpot_example(g, start="arrival_s"),
                    "TPOT starts at the first token, not at arrival: use finish_s − first_token_s"),
            Mistake(lambda g: 1.0 / _tpot_example(g),
                    "that is tokens per second; TPOT is its inverse, seconds per token"),
        ),
        hint="TPOT = (finish_s − first_token_s) / (output_tokens − 1)",
    ),
    Exercise(
        id="1.3",
        prompt="fleet p99 TTFT over both of your replicas, in seconds",
        answer=_fleet_p99,
        givens={"replica_seed": GIVENS["replica_seed"]},
        unit="s",
        rel_tol=0.02,
        mistakes=(
            Mistake(_mean_of_p99s,
                    "you averaged the two replicas' p99s; a percentile does not average: pool "
                    "every request of the fleet and take the p99 of all of them"),
            Mistake(lambda g: max(slo.percentile(x, 99) for x in _ttfts(g)),
                    "that is the worse replica's p99; the fleet p99 pools every request, and the "
                    "quiet replica's fast requests pull it down"),
            Mistake(_weighted_p99s,
                    "weighting the p99s by traffic is closer but still not a percentile: pool the "
                    "requests and take the p99 of all of them"),
        ),
        hint="np.concatenate the TTFTs of both replicas, then take the 99th percentile",
    ),
    Exercise(
        id="1.4",
        prompt="largest TPOT (s) that streams `headroom` times as fast as your student reads",
        answer=_tpot_reading,
        givens=READING,
        unit="s",
        mistakes=(
            Mistake(lambda g: _tpot_reading(g, tokens_per_word=1.0),
                    "you treated a word as one token; a word is about 4/3 tokens, so the text "
                    "needs more tokens per second"),
            Mistake(lambda g: _tpot_reading(g, tokens_per_word=3.0 / 4.0),
                    "you used 3/4 tokens per word; it is the other way round: 3/4 of a word per "
                    "token, so 4/3 tokens per word"),
            Mistake(lambda g: _tpot_reading(g, headroom=1.0),
                    "that TPOT only keeps pace with the reader; the answer must stream `headroom` "
                    "times as fast as they read"),
            Mistake(lambda g: 1.0 / _tpot_reading(g),
                    "that is a speed in tokens per second; TPOT is seconds per token, its inverse"),
        ),
        hint="words/min → tokens/s: × tokens per word ÷ 60; × headroom; TPOT is 1 / that",
    ),
    Exercise(
        id="1.5",
        prompt="SLO attainment of your overloaded trace (fraction 0..1)",
        answer=_attainment,
        givens={"overload_seed": GIVENS["overload_seed"]},
        unit="(fraction)",
        # a count over ~150 requests, computed from the trace: exact, so a tight tolerance (1 %
        # would let classmates' answers, which differ by a request or two, pass for each other)
        rel_tol=1e-4,
        mistakes=(
            Mistake(_attainment_of_finished,
                    "you counted only the finished requests; a request turned away also missed the "
                    "SLO, so divide by all requests"),
            Mistake(lambda g: 1.0 - _attainment(g),
                    "that is the fraction that missed; attainment is the fraction that met it"),
        ),
        hint="meets = finished and TTFT ≤ target and TPOT ≤ target (one-token answers have no TPOT "
             "to miss); attainment = count(meets) / count(all requests)",
    ),
    Exercise(
        id="1.6",
        prompt="a function: the largest TPOT (s) that streams headroom times as fast as a reader",
        reference=slo.tpot_for_reading_speed,
        kind="function",
        unit="s",
        cases=READING_CASES,
        answer_name="tpot_target",
        hint="tokens/s the reader needs = words/min × tokens per word ÷ 60; multiply by the "
             "headroom; TPOT is one over that",
    ),
]
