"""From a benchmark's request timelines to observations the cost model predicts.

Two kinds of observation come out of a :class:`~vidya_lab.traces.Trace`:

``ttft_idle``
    the TTFT of a request that arrived to an idle replica and had it to itself until its first
    token (no other request was in flight at any moment of ``[arrival, first token]``): the model
    predicts ``request_overhead_s`` + :func:`~vidya_lab.sizing.prefill_time_s` of its prompt.
    Requests of one prompt length are averaged into one observation.
``decode_step``
    the gap between two consecutive one-token emissions of a request is one engine iteration. At
    its midpoint ``m`` the timelines say which requests were decoding (first token < m < finish)
    and whether any prompt was waiting or being prefilled (arrival < m < first token): only gaps
    with no prompt pending are kept, so the iteration was a pure decode of ``b`` sequences whose
    contexts are their prompts plus the tokens they had emitted before ``m``. The model predicts
    :meth:`~vidya_lab.sizing.Replica.step_time_s` of that batch. Gaps are averaged per batch size
    and context band (half an octave of context per sequence): the step time is linear in the
    context sum within a band, so the mean gap is predicted at the mean context sum. Gaps longer
    than :data:`OUTLIER_FACTOR` × the median of their group (a client stall) are dropped.

Both need each request's send time. A file without send times (LLMPerf; vLLM results saved
before ``start_times``) is still usable when its run had ONE request in flight at a time
(``concurrency`` 1 in its settings): every request then met an idle replica, its TTFT is a
``ttft_idle`` observation, and its TPOT is the mean of its decode steps at batch 1
(``decode_step``, context sum averaged over the steps). Otherwise it gives nothing, and says why.

Every count here is a ``numpy.searchsorted`` over sorted event times: a trace of 100,000 requests
takes well under a second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from vidya_lab import sizing

#: A decode gap longer than this many times its group's median is a client stall, not a step.
OUTLIER_FACTOR = 5.0
#: Fewest gaps that make a ``decode_step`` observation.
MIN_GAPS = 3
#: Context bands per doubling of the context per sequence.
BANDS_PER_OCTAVE = 2
#: Most ``ttft_idle`` observations per file (prompt lengths beyond it are banded).
MAX_PROMPT_GROUPS = 48


@dataclass(frozen=True)
class Observation:
    """One measured quantity and how the cost model predicts it.

    Attributes
    ----------
    kind : ``"ttft_idle"``, ``"decode_step"``, or an aggregate row's kind
        (:mod:`~vidya_lab.calibration.own.aggregate`).
    measured : the measurement in SI units (seconds, tokens/s).
    predict : ``replica -> float``, the model's value under the replica's calibration.
    count : requests or gaps averaged into it.
    source : the file it came from.
    condition : JSON-ready description (prompt tokens, batch, context, ...).
    """

    kind: str
    measured: float
    predict: Callable[[sizing.Replica], float] = field(repr=False, compare=False)
    count: int
    source: str
    condition: dict


def _ttft_predictor(prompt: int):
    return lambda r: r.calibration.request_overhead_s + sizing.prefill_time_s(r, prompt)


def _step_predictor(batch: int, ctx_sum: float):
    return lambda r: r.step_time_s(0, 0, 0, 0, batch, ctx_sum)


def _before(sorted_times: np.ndarray, m: np.ndarray) -> np.ndarray:
    """How many of ``sorted_times`` are strictly before each ``m``."""
    return np.searchsorted(sorted_times, m, side="left")


def _sum_before(times: np.ndarray, weights: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Σ weights of the events strictly before each ``m``."""
    order = np.argsort(times, kind="stable")
    cum = np.concatenate([[0.0], np.cumsum(weights[order], dtype=float)])
    return cum[_before(times[order], m)]


def alone_mask(starts, firsts, busy_start, busy_end) -> np.ndarray:
    """Which requests (``starts``, ``firsts``) had the replica to themselves from arrival to first
    token, given every busy request's interval ``[busy_start, busy_end]`` (their own included)."""
    overlap = (_before(np.sort(busy_start), firsts)
               - np.searchsorted(np.sort(busy_end), starts, side="right"))
    return overlap == 1


def ttft_observations(starts, firsts, prompts, alone, source: str, **condition) -> list:
    """``ttft_idle`` observations of the requests marked ``alone``: one per prompt length, or,
    past :data:`MAX_PROMPT_GROUPS` lengths, one per quantile band of prompt lengths (predicted at
    the band's mean prompt: prefill time is close to linear in the prompt within a narrow band)."""
    a, f, p = (np.asarray(x) for x in (starts, firsts, prompts))
    use = np.asarray(alone) & (p >= 1)
    lengths = np.unique(p[use])
    if lengths.size > MAX_PROMPT_GROUPS:
        edges = np.quantile(p[use], np.linspace(0.0, 1.0, MAX_PROMPT_GROUPS + 1))[1:-1]
        group = np.searchsorted(edges, p, side="right")
    else:
        group = np.searchsorted(lengths, p)
    out = []
    for g in np.unique(group[use]):
        sel = use & (group == g)
        prompt = int(round(float(np.mean(p[sel]))))
        cond = {"prompt_tokens": prompt, **condition}
        if lengths.size > MAX_PROMPT_GROUPS:
            cond["prompt_tokens_range"] = [int(p[sel].min()), int(p[sel].max())]
        out.append(Observation("ttft_idle", float(np.mean(f[sel] - a[sel])),
                               _ttft_predictor(prompt), int(sel.sum()), source, cond))
    return out


def _emissions(trace, fin: np.ndarray):
    """(request index, time, tokens) of every emission of the finished requests, in request
    order; None when the file does not say how many tokens each emission carried."""
    t = trace.timelines
    if t.token_times_s is not None:
        counts = np.diff(t.token_offsets)
        req = np.repeat(np.arange(len(t)), counts)
        tt = t.token_times_s
        new = np.ones(tt.size, dtype=bool)
        new[1:] = (req[1:] != req[:-1]) | (tt[1:] > tt[:-1])
        pos = np.flatnonzero(new)
        tokens = np.diff(np.concatenate([pos, [tt.size]]))
        req, times = req[pos], tt[pos]
    elif trace.chunk_times_s is not None and trace.chunk_tokens is not None:
        req = np.repeat(np.arange(len(t)), np.diff(trace.chunk_offsets))
        times, tokens = trace.chunk_times_s, trace.chunk_tokens
    else:
        return None
    keep = fin[req]
    return req[keep], np.asarray(times, dtype=float)[keep], np.asarray(tokens)[keep]


def _gaps(req, times, tokens):
    """Start, end of each gap between consecutive emissions of one request whose second emission
    carries one token (one engine iteration)."""
    same = (req[1:] == req[:-1]) & (tokens[1:] == 1)
    return times[:-1][same], times[1:][same]


def decode_observations(trace, source: str) -> tuple[list, str | None]:
    """``decode_step`` observations of a trace with send times, and a note when it has none."""
    t = trace.timelines
    fin = t.finished
    em = _emissions(trace, fin)
    if em is None:
        return [], ("no decode steps: the file does not say how many tokens each chunk carried, "
                    "so a gap between chunks is not one iteration")
    req, times, tokens = em
    start, end = _gaps(req, times, tokens)
    if start.size == 0:
        return [], "no decode steps: no request emitted two single-token chunks in a row"
    m = 0.5 * (start + end)
    a, f, c, n = t.arrival_s, t.first_token_s, t.finish_s, t.output_tokens
    p = trace.prompt_tokens.astype(float)
    fa, ff, fc, fn, fp = a[fin], f[fin], c[fin], n[fin].astype(float), p[fin]
    decoding = _before(np.sort(ff), m) - _before(np.sort(fc), m)
    waiting = t.outcome == 2                                # timed out: pending until it gave up
    ends = np.where(np.isnan(c[waiting]), np.inf, c[waiting])
    pending = (_before(np.sort(fa), m) - _before(np.sort(ff), m)
               + _before(np.sort(a[waiting]), m) - _before(np.sort(ends), m))
    unknown = fp < 0
    blind = _sum_before(ff, unknown * 1.0, m) - _sum_before(fc, unknown * 1.0, m)
    prompts = _sum_before(ff, fp, m) - _sum_before(fc, fp, m)
    emitted = _sum_before(times, tokens.astype(float), m) - _sum_before(fc, fn, m)
    ok = (pending == 0) & (blind == 0) & (decoding >= 1)
    if not ok.any():
        why = ("every decoder's prompt length is unknown" if (blind > 0).all()
               else "a prompt was waiting or prefilling during every gap")
        return [], f"no decode steps: {why}"
    return _group_steps(end[ok] - start[ok], decoding[ok], prompts[ok] + emitted[ok], source), None


def _group_steps(durations, batches, ctx_sums, source: str) -> list:
    """Average gaps per (batch, context band) into ``decode_step`` observations."""
    band = np.floor(BANDS_PER_OCTAVE * np.log2(np.maximum(ctx_sums / batches, 1.0))).astype(int)
    out = []
    keys = np.unique(np.stack([batches, band]), axis=1).T
    for b, k in keys:
        sel = (batches == b) & (band == k)
        d = durations[sel]
        keep = d <= OUTLIER_FACTOR * np.median(d)
        if keep.sum() < MIN_GAPS:
            continue
        ctx = float(np.mean(ctx_sums[sel][keep]))
        out.append(Observation("decode_step", float(np.mean(d[keep])),
                               _step_predictor(int(b), ctx), int(keep.sum()), source,
                               {"batch": int(b), "mean_context_tokens": ctx / int(b)}))
    return out


def sequential_observations(trace, source: str) -> list:
    """A one-at-a-time run without send times: TTFTs at idle, and each request's decode steps
    at batch 1 (:func:`decode_observations`' grouping, one pooled gap per request)."""
    t = trace.timelines
    fin = t.finished & (trace.prompt_tokens >= 1)
    p, n = trace.prompt_tokens[fin].astype(float), t.output_tokens[fin].astype(float)
    f, c, a = t.first_token_s[fin], t.finish_s[fin], t.arrival_s[fin]
    out = ttft_observations(a, f, p, np.ones(p.size, dtype=bool), source, one_at_a_time=True)
    two = n >= 2
    steps, ctx = n[two] - 1, p[two] * (n[two] - 1) + (n[two] - 1) * n[two] / 2
    band = np.floor(BANDS_PER_OCTAVE * np.log2(ctx / steps)).astype(int)
    for k in np.unique(band):
        sel = band == k
        total = float(steps[sel].sum())
        out.append(Observation("decode_step", float((c[two][sel] - f[two][sel]).sum()) / total,
                               _step_predictor(1, float(ctx[sel].sum()) / total),
                               int(sel.sum()), source,
                               {"batch": 1, "mean_context_tokens": float(ctx[sel].sum()) / total,
                                "one_at_a_time": True}))
    return out


def trace_observations(trace, source: str) -> tuple[list, list[str]]:
    """Every observation a trace gives, and notes on what it could not give (module docstring)."""
    t = trace.timelines
    notes = []
    if not t.finished.any():
        return [], ["no finished request"]
    if (trace.prompt_tokens[t.finished] < 0).all():
        return [], ["no finished request says how many prompt tokens it had"]
    if not trace.arrivals_known:
        if trace.metadata.get("concurrency") == 1:
            return sequential_observations(trace, source), [
                "no send times, but one request in flight at a time (concurrency 1): every "
                "request met an idle replica; decode steps from each request's TPOT at batch 1"]
        return [], ["no send times and not a one-at-a-time run (concurrency "
                    f"{trace.metadata.get('concurrency', 'unknown')}): which requests shared the "
                    "replica, and so the batch of each step, cannot be recovered"]
    fin = t.finished
    busy = fin | (t.outcome == 2)
    ends = np.where(np.isnan(t.finish_s), np.inf, t.finish_s)[busy]
    alone = alone_mask(t.arrival_s[fin], t.first_token_s[fin], t.arrival_s[busy], ends)
    obs = ttft_observations(t.arrival_s[fin], t.first_token_s[fin], trace.prompt_tokens[fin],
                            alone, source)
    if not obs:
        notes.append("no TTFT at idle: every request arrived while another was in flight")
    steps, note = decode_observations(trace, source)
    if note:
        notes.append(note)
    lost = int(np.count_nonzero((t.outcome == 2) & np.isnan(t.finish_s)))
    if lost:
        notes.append(f"{lost} timed-out request(s) with no end time count as pending from their "
                     f"send to the end of the run: no decode step after its send is used")
    return obs + steps, notes
