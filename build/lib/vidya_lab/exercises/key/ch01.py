"""Chapter 1's answer key: reading latency from request timelines.

Every answer is a function of the reader's givens ``g`` (:data:`vidya_lab.exercises.ch01.GIVENS`):
the traces are the reader's own (seeded by ``g``), and so are the reading speed and headroom of 1.4.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import slo
from vidya_lab.exercises.ch01 import (
    GIVENS,
    LOAD_CHOICES,
    PILOT_DURATION_S,
    READING_CASES,
    busy_trace,
    example_request,
    llmperf_record,
    overloaded_trace,
    pilot_intervals,
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


# ----------------------------------------------------------------------------- 1.8

def _llmperf_tpot(g, gaps: int = -1, start: str = "ttft_s") -> float:
    r = llmperf_record(g["busy_seed"])
    begin = r[start] if start else 0.0
    return (r["end_to_end_latency_s"] - begin) / (r["number_output_tokens"] + gaps)


# ----------------------------------------------------------------------------- 1.9

#: The assurance chapter 1 sizes a benchmark's length with (bench.duration_for_precision).
ASSURANCE = 0.9


def _hours(g, half_width: str = "batch_means", power: float = 2.0, assured: bool = True) -> float:
    iv = pilot_intervals(g["pilot_seed"])
    h = iv.batch_means_half_width if half_width == "batch_means" else iv.bootstrap_half_width
    hours = PILOT_DURATION_S / 3600 * (h / (g["rel_half_width"] * iv.estimate)) ** power
    if not assured:
        return hours
    b = iv.batch_means.batches               # the pilot's spread comes from b batch statistics
    return hours * (b - 1) / slo.chi_square_quantile(1.0 - ASSURANCE, b - 1)


PILOT = {k: GIVENS[k] for k in ("pilot_seed", "rel_half_width")}

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
        level="compute",
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
        level="compute",
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
        level="explain",
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
        level="compute",
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
        level="explain",
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
        level="compute",
    ),
    Exercise(
        id="1.7",
        prompt="why a closed-loop benchmark shows a smaller p99 TTFT than an open loop at the same "
               "mean rate (one of ex1.LOAD_CHOICES)",
        kind="choice",
        answer=lambda g: "bounded queue",
        choices=tuple(LOAD_CHOICES),
        unit="",
        mistakes=(
            Mistake(lambda g: "faster steps",
                    "the server and its cost per step are the same in both runs; what differs is "
                    "how many requests are waiting when a burst comes"),
            Mistake(lambda g: "fewer requests",
                    "both runs offered the same mean rate for the same time, so about the same "
                    "number of requests; the difference is in when they arrive"),
            Mistake(lambda g: "cold start",
                    "an empty server at the start shapes the first few requests of a run, "
                    "not the p99 of the whole of it"),
        ),
        hint="the two runs offered the same mean rate of the same requests to the same server; "
             "ask what a closed-loop user does while its request waits",
        level="explain",
    ),
    Exercise(
        id="1.8",
        prompt="chapter 1's TPOT (s) of the LLMPerf record ex1.llmperf_record()",
        answer=_llmperf_tpot,
        givens=BUSY,
        unit="s",
        mistakes=(
            Mistake(lambda g: llmperf_record(g["busy_seed"])["inter_token_latency_s"],
                    "that is LLMPerf's inter_token_latency_s: it spreads the whole latency, TTFT "
                    "included, over the tokens; chapter 1's TPOT starts at the first token"),
            Mistake(lambda g: _llmperf_tpot(g, gaps=0),
                    "n tokens have n − 1 gaps between them: divide by number_output_tokens − 1"),
            Mistake(lambda g: _llmperf_tpot(g, start=""),
                    "end_to_end_latency_s includes the TTFT: subtract ttft_s first"),
        ),
        hint="TPOT = (end_to_end_latency_s − ttft_s) / (number_output_tokens − 1)",
        level="compute",
    ),
    Exercise(
        id="1.9",
        prompt="hours of benchmark for a p99 TTFT interval of ± rel_half_width with 90 % assurance, "
               "from your pilot",
        answer=_hours,
        givens=PILOT,
        unit="hours",
        rel_tol=0.02,
        mistakes=(
            Mistake(lambda g: _hours(g, assured=False),
                    "that length trusts the pilot's half-width as exact; it comes from 10 batches "
                    "and understates the spread more often than not: multiply by "
                    "(b - 1) / chi-square_{0.1, b - 1} for 90 % assurance"),
            Mistake(lambda g: _hours(g, half_width="bootstrap"),
                    "you used the bootstrap half-width: it treats the pilot's requests as "
                    "independent, which queued requests are not, and promises far too short a run"),
            Mistake(lambda g: _hours(g, power=1.0),
                    "a half-width falls as 1/√(length), not 1/length: the ratio must be squared"),
            Mistake(lambda g: _hours(g) * 3600 / PILOT_DURATION_S,
                    "the pilot ran two hours: multiply the squared ratio by the pilot's length"),
        ),
        hint="length = pilot length × (half-width ÷ (rel_half_width × p99))² × (b − 1) ÷ "
             "χ²_{0.1, b−1}, in hours; use the batch-means half-width",
        level="design",
    ),
]
