"""Targets: did each request meet its SLO, what fraction did, and goodput in both of its senses.

An :class:`SLO` holds per-request targets (TTFT, TPOT, end-to-end, and the longest inter-token gap,
ITL; ``None`` = no target).
:func:`meets_slo` marks which requests meet every target; :func:`attainment` is the fraction of *all*
requests that do (a rejected or timed-out request counts as missed: a server must not look better
by turning users away). Goodput has two meanings in the field; vidya-lab names them apart:

* :func:`goodput_requests_per_s` — the **rate of requests that met the SLO** over a run (what
  vLLM's ``benchmark_serving --goodput`` reports);
* :func:`max_rate_meeting_slo` — **DistServe's goodput** (Zhong et al., 2024): the highest offered
  request rate at which attainment stays at or above a target (e.g. 90 %), found by searching over
  a function ``rate -> timelines`` (a simulator).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vidya_lab._validate import check_fraction, check_instance, check_int, check_real
from vidya_lab.slo.timelines import as_timelines


@dataclass(frozen=True)
class SLO:
    """Per-request latency targets (seconds); ``None`` = no target on that metric.

    A request meets the SLO when it finished and meets every target given: ``TTFT ≤ ttft_s``,
    ``TPOT ≤ tpot_s`` (vacuously true for a one-token answer, whose TPOT is undefined),
    ``end-to-end ≤ e2e_s`` and **every** gap between two of its tokens ``≤ itl_s`` (its longest
    stall, :func:`~vidya_lab.slo.longest_gap_s`; vacuous with fewer than two emissions). TPOT is a
    mean over the answer and hides a stall; the ITL target holds every token. Attainment ≥ 0.99 of
    such an SLO puts the p99 of the per-request longest gaps, and so the p99 of all gaps, within
    ``itl_s``.
    """

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    itl_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("ttft_s", "tpot_s", "e2e_s", "itl_s"):
            v = getattr(self, name)
            if v is not None:
                check_real(name, v, minimum=0.0, min_inclusive=False)

    @property
    def empty(self) -> bool:
        """True when no target is set (every finished request meets it)."""
        return (self.ttft_s is None and self.tpot_s is None and self.e2e_s is None
                and self.itl_s is None)


def meets_slo(timelines, slo: SLO, *, longest_gap_s=None) -> np.ndarray:
    """Boolean per request (all requests, in order): finished and within every target.

    An ITL target reads each request's longest gap from its token times
    (:func:`~vidya_lab.slo.longest_gap_s`), or from ``longest_gap_s`` (one value per request,
    seconds; NaN = no gap) where a coarser simulator states it instead of recording every token;
    a trace with neither raises ``ValueError``.
    """
    check_instance("slo", slo, SLO)
    t = as_timelines(timelines)
    ok = t.finished.copy()
    if slo.itl_s is not None:
        ok &= _within_gap(t, slo.itl_s, longest_gap_s)
    with np.errstate(invalid="ignore"):
        if slo.ttft_s is not None:
            ok &= (t.first_token_s - t.arrival_s) <= slo.ttft_s
        if slo.e2e_s is not None:
            ok &= (t.finish_s - t.arrival_s) <= slo.e2e_s
        if slo.tpot_s is not None:
            gaps = t.output_tokens - 1
            span = t.finish_s - t.first_token_s
            # span <= target × gaps  ⇔  TPOT <= target (gaps > 0); gaps == 0: undefined, vacuous
            ok &= (gaps <= 0) | (span <= slo.tpot_s * gaps)
    return ok


def _within_gap(t, itl_s: float, longest_gap_s) -> np.ndarray:
    from vidya_lab.slo.metrics import longest_gap_s as from_tokens

    if longest_gap_s is None:
        if t.token_times_s is None:
            raise ValueError("an ITL target needs each request's token times (token_times_s) or "
                             "its longest gap (longest_gap_s=); this trace has neither")
        gap = from_tokens(t)
    else:
        gap = np.asarray(longest_gap_s, dtype=float)
        if gap.shape != (len(t),):
            raise ValueError(f"longest_gap_s must hold one value per request ({len(t)}), got "
                             f"shape {gap.shape}")
    with np.errstate(invalid="ignore"):
        return np.isnan(gap) | (gap <= itl_s)


def attainment(timelines, slo: SLO, *, longest_gap_s=None) -> float:
    """SLO attainment: the fraction (0..1) of **all** requests that finished within every target.

    Rejected and timed-out requests count as missed (a server must not look better by turning
    users away). Raises ``ValueError`` for an empty trace. ``longest_gap_s``: as
    :func:`meets_slo`.
    """
    ok = meets_slo(timelines, slo, longest_gap_s=longest_gap_s)
    if ok.size == 0:
        raise ValueError("attainment of an empty trace is undefined")
    return float(np.count_nonzero(ok)) / ok.size


def goodput_requests_per_s(timelines, slo: SLO, *, duration_s: float | None = None) -> float:
    """Goodput, first sense: requests per second that **met the SLO** over the run.

    ``= (number of requests meeting the SLO) / duration_s``; ``duration_s`` defaults to the span of
    the run ``max c − min a``. This is the "request goodput" vLLM's ``benchmark_serving --goodput``
    reports. Compare :func:`max_rate_meeting_slo` (DistServe's sense).
    """
    t = as_timelines(timelines)
    ok = meets_slo(t, slo)
    if duration_s is None:
        if len(t) == 0:
            raise ValueError("goodput of an empty trace is undefined")
        ends = np.where(np.isnan(t.finish_s), t.arrival_s, t.finish_s)
        duration = float(np.max(ends) - np.min(t.arrival_s))
        if duration <= 0:
            raise ValueError("goodput needs a run longer than 0 s; pass duration_s")
    else:
        duration = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    return float(np.count_nonzero(ok)) / duration


@dataclass(frozen=True)
class GoodputSearch:
    """The result of :func:`max_rate_meeting_slo`.

    Attributes
    ----------
    rate_per_s : the highest rate found with attainment ≥ target (requests/s); 0.0 if even
        ``rate_lo_per_s`` fails.
    attainment : attainment at that rate.
    evaluated : every ``(rate_per_s, attainment)`` tried, in order.
    """

    rate_per_s: float
    attainment: float
    evaluated: tuple[tuple[float, float], ...]


#: Most simulations :func:`max_rate_meeting_slo` may run (each is a whole simulation).
MAX_GOODPUT_EVALS = 200


def max_rate_meeting_slo(simulate: Callable[[float], object], slo: SLO, *,
                         target_attainment: float = 0.9, rate_lo_per_s: float,
                         rate_hi_per_s: float, rel_tol: float = 0.02,
                         max_evals: int = 30) -> GoodputSearch:
    """Goodput, second sense (DistServe's): the highest request rate whose attainment ≥ target.

    ``simulate(rate_per_s)`` must return timelines (a :class:`~vidya_lab.slo.Timelines` or a list of
    :class:`~vidya_lab.slo.RequestTimeline`) for that offered rate; use a fixed seed inside it so
    the answer is reproducible. Bisection on ``[rate_lo_per_s, rate_hi_per_s]`` until the bracket
    is narrower than ``rel_tol`` of its upper end, assuming attainment falls as the rate rises (true
    in expectation; a noisy simulation can make the answer wobble by about the noise).

    Returns
    -------
    :class:`GoodputSearch`. If attainment at ``rate_hi_per_s`` still meets the target, that rate is
    returned (the true goodput may be higher: widen the bracket).
    """
    if not callable(simulate):
        raise TypeError("simulate must be a function rate_per_s -> timelines")
    check_instance("slo", slo, SLO)
    target = check_fraction("target_attainment", target_attainment, allow_zero=False)
    lo = check_real("rate_lo_per_s", rate_lo_per_s, minimum=0.0, min_inclusive=False)
    hi = check_real("rate_hi_per_s", rate_hi_per_s, minimum=0.0, min_inclusive=False)
    if hi <= lo:
        raise ValueError(f"rate_hi_per_s ({hi}) must be > rate_lo_per_s ({lo})")
    tol = check_real("rel_tol", rel_tol, minimum=0.0, min_inclusive=False, maximum=1.0)
    evals = check_int("max_evals", max_evals, minimum=2, maximum=MAX_GOODPUT_EVALS)
    tried: list[tuple[float, float]] = []

    def att(rate: float) -> float:
        value = attainment(simulate(rate), slo)
        tried.append((rate, value))
        return value

    a_lo = att(lo)
    if a_lo < target:
        return GoodputSearch(0.0, a_lo, tuple(tried))
    a_hi = att(hi)
    if a_hi >= target:
        return GoodputSearch(hi, a_hi, tuple(tried))
    best, best_att = lo, a_lo
    while hi - lo > tol * hi and len(tried) < evals:
        mid = 0.5 * (lo + hi)
        a_mid = att(mid)
        if a_mid >= target:
            lo, best, best_att = mid, mid, a_mid
        else:
            hi = mid
    return GoodputSearch(best, best_att, tuple(tried))
