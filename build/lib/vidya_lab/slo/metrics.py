"""Per-request latency metrics, each one formula on a request's timestamps.

With ``a`` arrival, ``s`` admission, ``f`` first token, ``c`` finish and ``n`` output tokens
(package docstring):

=====================  ======================================  ==================================
metric                 formula                                 function
=====================  ======================================  ==================================
queue wait             ``s − a``                               :func:`queue_wait_s`
TTFT                   ``f − a`` (includes queueing)           :func:`ttft_s`
end-to-end             ``c − a``                               :func:`e2e_s`
TPOT                   ``(c − f) / (n − 1)``; NaN for n = 1    :func:`tpot_s`
ITL                    gaps between distinct emit times        :func:`itl_s`
longest gap            a request's largest ITL (its stall)     :func:`longest_gap_s`
tokens/s per user      ``(n − 1) / (c − f) = 1 / TPOT``        :func:`tokens_per_s_per_user`
throughput             ``Σ n / (max c − min a)``               :func:`throughput`
=====================  ======================================  ==================================

Every function takes a :class:`~vidya_lab.slo.Timelines` (or a list of
:class:`~vidya_lab.slo.RequestTimeline`) and returns one value per **finished** request, in order,
as a numpy array: percentiles and attainment are taken from these (:mod:`vidya_lab.slo.percentiles`,
:mod:`vidya_lab.slo.attainment`).
"""

from __future__ import annotations

import numpy as np

from vidya_lab.slo.timelines import as_timelines


def queue_wait_s(timelines) -> np.ndarray:
    """Queue wait ``s − a`` (seconds) of each finished request with a recorded admission time."""
    t = as_timelines(timelines)
    keep = t.finished & ~np.isnan(t.admitted_s)
    return t.admitted_s[keep] - t.arrival_s[keep]


def ttft_s(timelines) -> np.ndarray:
    """Time to first token ``f − a`` (seconds) of each finished request. Includes queueing."""
    t = as_timelines(timelines)
    fin = t.finished
    return t.first_token_s[fin] - t.arrival_s[fin]


def e2e_s(timelines) -> np.ndarray:
    """End-to-end latency ``c − a`` (seconds) of each finished request."""
    t = as_timelines(timelines)
    fin = t.finished
    return t.finish_s[fin] - t.arrival_s[fin]


def tpot_s(timelines) -> np.ndarray:
    """Time per output token ``(c − f) / (n − 1)`` (seconds) of each finished request.

    Aligned with :func:`ttft_s` (one entry per finished request); NaN where ``n = 1`` (a one-token
    answer has no gap between tokens: TPOT is undefined, and that is reported, not a crash).
    """
    t = as_timelines(timelines)
    fin = t.finished
    gaps = (t.output_tokens[fin] - 1).astype(float)
    span = t.finish_s[fin] - t.first_token_s[fin]
    out = np.full(gaps.shape, np.nan)
    ok = gaps > 0
    out[ok] = span[ok] / gaps[ok]
    return out


def itl_s(timelines) -> np.ndarray:
    """Inter-token latencies (seconds): gaps between consecutive *emissions* of each finished request.

    ``t_{i+1} − t_i`` over the distinct emit times of a request (tokens emitted in the same step
    form one emission). Needs ``token_times_s``; a trace without them raises ``ValueError``.
    With one token per step the mean ITL of a request equals its TPOT; with k tokens per step ITL gaps
    are about k times the TPOT.
    """
    t = as_timelines(timelines)
    if t.token_times_s is None:
        raise ValueError("itl_s needs per-token emit times (token_times_s); this trace has none")
    times = t.token_times_s
    if times.size < 2:
        return np.empty(0)
    owner = np.repeat(np.arange(len(t)), np.diff(t.token_offsets))
    gaps = np.diff(times)
    same_req = owner[1:] == owner[:-1]
    finished = t.finished[owner[1:]]
    keep = same_req & finished & (gaps > 0)
    return gaps[keep]


def longest_gap_s(timelines) -> np.ndarray:
    """Each request's longest inter-token gap (seconds), its worst stall: the largest ``t_{i+1} −
    t_i`` over its distinct emit times (:func:`itl_s`), one value per request **of the trace** (not
    only the finished ones, so it lines up with :func:`~vidya_lab.slo.meets_slo`); NaN for a
    request that did not finish or emitted fewer than two distinct times.

    A mean TPOT hides a stall that a reader sees (Agrawal et al., *Metron*, arXiv:2407.07000): a
    350-token answer at 50 ms a token with one 1.2 s pause still has a TPOT of 53 ms. Needs
    ``token_times_s``; a trace without them raises ``ValueError``.
    """
    t = as_timelines(timelines)
    if t.token_times_s is None:
        raise ValueError("longest_gap_s needs per-token emit times (token_times_s); this trace has "
                         "none")
    out = np.full(len(t), -np.inf)
    times = t.token_times_s
    if times.size >= 2:
        owner = np.repeat(np.arange(len(t)), np.diff(t.token_offsets))
        gaps = np.diff(times)
        keep = (owner[1:] == owner[:-1]) & (gaps > 0)
        np.maximum.at(out, owner[1:][keep], gaps[keep])
    out[~np.isfinite(out) | ~t.finished] = np.nan
    return out


def tokens_per_s_per_user(timelines) -> np.ndarray:
    """Streaming speed ``(n − 1) / (c − f)`` = 1 / TPOT (tokens/s) per finished request; NaN for
    ``n = 1`` and for a zero-length decode span."""
    tp = tpot_s(timelines)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 / tp
    out[~np.isfinite(out)] = np.nan
    return out


def throughput(timelines) -> dict[str, float]:
    """Output tokens/s and requests/s over the run ``[min a, max c]``.

    ``output_tokens_per_s = Σ n (finished) / (max c − min a)``;
    ``requests_per_s = N_finished / (max c − min a)``.
    """
    t = as_timelines(timelines)
    fin = t.finished
    if not np.any(fin):
        return {"output_tokens_per_s": 0.0, "requests_per_s": 0.0, "duration_s": 0.0}
    span = float(np.nanmax(t.finish_s) - np.min(t.arrival_s))
    if span <= 0:
        raise ValueError("throughput needs a run longer than 0 s")
    return {"output_tokens_per_s": float(t.output_tokens[fin].sum()) / span,
            "requests_per_s": float(np.count_nonzero(fin)) / span,
            "duration_s": span}
