"""Reading a run: the gaps between tokens over time, latency in a window, and the upload report.

These turn a :class:`~vidya_lab.admission.SimResult` into what chapter 5 plots and tabulates: every
inter-token gap with the time it ended (:func:`itl_timeline`), the worst gap per step (the freeze,
:func:`worst_gap_by_time`), what one class felt in a window (:func:`window_summary`), and before /
during / after a teacher's upload (:func:`upload_report`). Percentiles come from
:mod:`vidya_lab.slo`.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import _validate as v
from vidya_lab.admission.config import STUDENT, UPLOAD
from vidya_lab.admission.results import SimResult
from vidya_lab.slo import FINISHED, percentile_summary, summarize


def _klass(klass: str | None) -> str | None:
    return None if klass is None else v.check_str("klass", klass, allow_empty=True)

def itl_timeline(result: SimResult, klass: str | None = STUDENT) -> tuple[np.ndarray, np.ndarray]:
    """Every inter-token gap of finished requests, with the time it ended (for plots).

    Returns ``(emit_s, gap_s)``: for each consecutive pair of tokens of a request (of class
    ``klass``; ``None`` = all), the emit time of the later token and the gap, seconds, sorted by time.
    """
    v.check_instance("result", result, SimResult, "vidya_lab.admission.SimResult")
    klass = _klass(klass)
    t = result.timelines
    keep = t.finished if klass is None else t.finished & (t.klass == klass)
    lengths = np.diff(t.token_offsets)
    owner = np.repeat(np.arange(len(t)), lengths)
    times = t.token_times_s
    if times.size < 2:
        return np.empty(0), np.empty(0)
    same = (owner[1:] == owner[:-1]) & keep[owner[1:]]
    emit = times[1:][same]
    gaps = np.diff(times)[same]
    order = np.argsort(emit, kind="stable")
    return emit[order], gaps[order]


def window_summary(result: SimResult, start_s: float, end_s: float,
                   klass: str | None = STUDENT) -> dict:
    """Latency of one class in a time window: what students felt before/during/after an upload.

    ``ttft_s`` and ``tpot_s``: :func:`vidya_lab.slo.percentile_summary` over finished requests of
    the class that ARRIVED in ``[start_s, end_s)``; ``itl_s``: over the gaps between tokens EMITTED
    in the window (:func:`itl_timeline`); ``itl_max_s``: the longest such gap; ``requests``: how many
    arrived in the window.
    """
    v.check_instance("result", result, SimResult, "vidya_lab.admission.SimResult")
    klass = _klass(klass)
    a = v.check_real("start_s", start_s)
    b = v.check_real("end_s", end_s)
    if b <= a:
        raise ValueError(f"end_s ({b}) must be after start_s ({a})")
    t = result.timelines
    sel = (t.arrival_s >= a) & (t.arrival_s < b)
    if klass is not None:
        sel &= t.klass == klass
    sub = t[sel]
    s = summarize(sub)
    emit, gaps = itl_timeline(result, klass)
    g = gaps[(emit >= a) & (emit < b)]
    return {"requests": int(sel.sum()), "ttft_s": s["ttft_s"], "tpot_s": s["tpot_s"],
            "itl_s": percentile_summary(g), "itl_max_s": float(g.max()) if g.size else None}


def worst_gap_by_time(result: SimResult, klass: str | None = STUDENT
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The longest inter-token gap ending at each distinct emit time (what a plot of "the freeze"
    shows): ``(emit_s, worst_gap_s)``, sorted by time. Decoding sequences share each step's emit time,
    so this is about one point per engine step instead of one per token."""
    emit, gaps = itl_timeline(result, klass)   # checks result and klass
    if emit.size == 0:
        return emit, gaps
    times, start = np.unique(emit, return_index=True)
    return times, np.maximum.reduceat(gaps, start)


def upload_report(result: SimResult, klass: str = STUDENT) -> dict:
    """What the other users felt before, during and after the upload.

    The phases come from the upload's own timeline (the first request of class ``"upload"``):
    ``before`` = ``[0, its arrival)``, ``during`` = ``[its arrival, its finish]`` (or the end of the
    run if it did not finish), ``after`` = the rest. Each phase is a :func:`window_summary` of class
    ``klass``. ``upload`` holds the upload's own ``ttft_s`` and ``e2e_s`` (None if it did not
    finish) and ``outcome``.
    """
    v.check_instance("result", result, SimResult, "vidya_lab.admission.SimResult")
    klass = v.check_str("klass", klass, allow_empty=True)
    t = result.timelines
    up = np.flatnonzero(t.klass == UPLOAD)
    if up.size == 0:
        inflight = result.in_flight_ids
        raise ValueError("upload_report needs a request of class 'upload' that finished or was "
                         f"rejected; this run has none ({inflight.size} requests in flight)")
    u = int(up[0])
    a = float(t.arrival_s[u])
    end = float(max(result.end_s, np.nanmax(t.finish_s))) + 1e-9
    done = float(t.finish_s[u]) if t.outcome[u] == FINISHED else end
    fin = t.outcome[u] == FINISHED
    out = {"upload": {"arrival_s": a,
                      "ttft_s": float(t.first_token_s[u] - a) if fin else None,
                      "e2e_s": float(t.finish_s[u] - a) if fin else None,
                      "outcome": "finished" if fin else str(result.reject_reason[u])}}
    for name, lo, hi in (("before", 0.0, a), ("during", a, done), ("after", done, end)):
        out[name] = window_summary(result, lo, hi, klass) if hi > lo else None
    return out

