"""Latency metrics that users feel, from request timelines; percentiles; SLO attainment; goodput.

Every simulator in vidya-lab (the toy server of chapter 1, the replica simulator of chapter 5, the fleet
of chapter 6) and every recorded trace is reduced to the same thing: a **request timeline**, and every
metric below is defined from its timestamps, the way Vidur's ``docs/metrics.md`` does
(Agrawal et al., 2024).

The timeline of request ``r`` (all times in seconds on one clock)
---------------------------------------------------------------

============  ===============================================================================
``a_r``       ``arrival_s``: the request reaches the server (the client pressed *send*).
``s_r``       ``admitted_s`` (optional): the scheduler admits it into a running batch.
``f_r``       ``first_token_s``: the first output token is emitted (its prefill is done).
``t_r,i``     ``token_times_s`` (optional): the emit time of output token ``i`` (``i = 1..n_r``);
              tokens emitted by one step (speculative decoding, multi-step) share a time.
``c_r``       ``finish_s``: the last output token is emitted (or the request gave up).
``n_r``       ``output_tokens``: how many tokens were emitted.
outcome       ``finished``, ``rejected`` (turned away, never served) or ``timed_out`` (gave up).
============  ===============================================================================

Metrics, each from those timestamps
------------------------------------

* queue wait ``= s_r − a_r`` (:func:`queue_wait_s`);
* TTFT, time to first token ``= f_r − a_r`` (:func:`ttft_s`). It **includes queueing**: a reader waits
  for the queue, the prefill and the network alike. (Vidur logs both: ``prefill_time_e2e`` is
  ``f_r − a_r`` and ``prefill_time_execution_plus_preemption`` is ``f_r − s_r``; a "TTFT" measured
  inside the engine from admission is the second one and hides the queue.)
* end-to-end latency ``= c_r − a_r`` (:func:`e2e_s`);
* TPOT, time per output token ``= (c_r − f_r) / (n_r − 1)`` (:func:`tpot_s`): the mean gap between
  tokens after the first. Undefined for ``n_r = 1`` (no gap): reported as NaN and counted, never a
  crash. vLLM's ``benchmark_serving`` uses this definition and drops ``n_r = 1`` requests; NVIDIA's
  GenAI-Perf/AIPerf calls the same quantity "inter-token latency"; Ray's LLMPerf sums every gap
  from the send to the last token (TTFT included) and divides by ``n_r``, about ``(c_r − a_r) / n_r``. Check the
  definition before comparing numbers across tools.
* ITL, inter-token latency in vLLM's sense: the gaps between consecutive *emissions*
  ``t_r,i+1 − t_r,i`` over distinct emit times (:func:`itl_s`). When a step emits several tokens at
  once (speculative decoding accepts k tokens, or multi-step scheduling flushes a chunk), one ITL gap
  covers several tokens: ITL gaps are then larger and burstier than TPOT, which spreads the
  same wall time over every token. With one token per step the mean ITL of a request equals its TPOT.
* tokens per second per user ``= (n_r − 1) / (c_r − f_r) = 1 / TPOT`` (:func:`tokens_per_s_per_user`):
  the speed at which text streams once it has started.
* throughput ``= Σ n_r / (max c_r − min a_r)`` output tokens/s and ``N_finished / (max c_r − min a_r)``
  requests/s (:func:`throughput`).

Distributions, not means
------------------------
:func:`percentile` uses numpy's ``linear`` method (Hyndman and Fan's type 7, also R's default):
the p-th percentile of ``n`` sorted values interpolates linearly at rank ``(n − 1)·p/100``. Other tools
use nearest-rank (``numpy`` method ``"inverted_cdf"``/``"higher"``); on small samples they disagree.
:func:`percentile_summary` returns the p50/p90/p95/p99/mean object every vidya-lab command prints.
A p99 from 100 requests rests on the single largest one or two: :func:`bootstrap_percentile_ci`
says how uncertain it is (Efron, 1979). Tails add up across a fleet in one way only: the fleet p99 is
the p99 of *all* requests pooled (:func:`pooled_percentile`), not the mean of per-replica p99s
(:func:`mean_of_percentiles`, the pitfall).

Targets
-------
An :class:`SLO` holds per-request targets (TTFT, TPOT, end-to-end; ``None`` = no target).
:func:`meets_slo` marks which requests meet every target; :func:`attainment` is the fraction of *all*
requests that do (a rejected or timed-out request counts as missed). Goodput has two meanings in the
field; vidya-lab names them apart:

* :func:`goodput_requests_per_s` — the **rate of requests that met the SLO** over a run
  (what vLLM's ``benchmark_serving --goodput`` reports);
* :func:`max_rate_meeting_slo` — **DistServe's goodput** (Zhong et al., 2024): the highest offered
  request rate at which attainment stays at or above a target (e.g. 90 %), found by searching over a
  function ``rate -> timelines`` (a simulator).

:func:`latency_budget` splits a TTFT target into network, prefill and what is left for queueing;
:func:`tpot_for_reading_speed` turns a reading speed into the TPOT that keeps text ahead of the reader.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from vidya_lab._validate import check_choice, check_fraction, check_int, check_labels, check_real

__all__ = [
    "OUTCOMES",
    "RequestTimeline",
    "Timelines",
    "as_timelines",
    "queue_wait_s",
    "ttft_s",
    "e2e_s",
    "tpot_s",
    "itl_s",
    "tokens_per_s_per_user",
    "throughput",
    "PERCENTILES",
    "percentile",
    "percentile_summary",
    "bootstrap_percentile_ci",
    "pooled_percentile",
    "mean_of_percentiles",
    "SLO",
    "meets_slo",
    "attainment",
    "goodput_requests_per_s",
    "max_rate_meeting_slo",
    "GoodputSearch",
    "latency_budget",
    "LatencyBudget",
    "tpot_for_reading_speed",
    "READING_WORDS_PER_MIN",
    "TOKENS_PER_WORD",
    "summarize",
    "read_trace_csv",
    "write_trace_csv",
    "TRACE_COLUMNS",
]

#: Outcomes of a request, in the order of their integer codes in :class:`Timelines`.
OUTCOMES: tuple[str, ...] = ("finished", "rejected", "timed_out")
FINISHED, REJECTED, TIMED_OUT = 0, 1, 2

#: The percentiles every summary reports (as p-numbers).
PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)


def _opt_time(name: str, value) -> float:
    """A time in seconds or NaN for 'not recorded' (None / NaN)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number of seconds or None, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class RequestTimeline:
    """What happened to one request, as timestamps (seconds on one clock).

    This is the record every simulator emits and every metric reads; see the module docstring for
    the definitions. For many requests use :class:`Timelines` (columnar) instead of a list of these.

    Parameters
    ----------
    request_id : an id (int or str), unique within a trace.
    arrival_s : ``a``: when the request arrived.
    first_token_s : ``f``: when the first output token was emitted; ``None`` if none was.
    finish_s : ``c``: when the last token was emitted (finished), or when the request was turned
        away / gave up; ``None`` if not recorded.
    output_tokens : ``n``: tokens emitted (≥ 1 for a finished request).
    admitted_s : ``s``: when the scheduler admitted it (optional).
    token_times_s : the emit time of each output token (optional; ``n`` non-decreasing values from
        ``f`` to ``c``; equal values = one step emitted several tokens).
    outcome : ``"finished"``, ``"rejected"`` or ``"timed_out"``.
    klass : priority class label (``""`` for none).

    Checks: a finished request needs ``a ≤ s ≤ f ≤ c`` and ``n ≥ 1``.
    """

    request_id: int | str
    arrival_s: float
    first_token_s: float | None
    finish_s: float | None
    output_tokens: int
    admitted_s: float | None = None
    token_times_s: tuple[float, ...] | None = None
    outcome: str = "finished"
    klass: str = ""

    def __post_init__(self) -> None:
        check_real("arrival_s", self.arrival_s)
        check_choice("outcome", self.outcome, OUTCOMES)
        check_int("output_tokens", self.output_tokens, minimum=0)
        f = _opt_time("first_token_s", self.first_token_s)
        c = _opt_time("finish_s", self.finish_s)
        s = _opt_time("admitted_s", self.admitted_s)
        if not isinstance(self.klass, str):
            raise TypeError(f"klass must be a string, got {type(self.klass).__name__}")
        if self.token_times_s is not None:
            object.__setattr__(self, "token_times_s",
                               tuple(float(x) for x in self.token_times_s))
        problem = _row_problem(self.arrival_s, s, f, c, self.output_tokens,
                               OUTCOMES.index(self.outcome))
        if problem is None and self.token_times_s is not None:
            problem = _token_times_problem(self.token_times_s, f, c, self.output_tokens)
        if problem:
            raise ValueError(f"request {self.request_id!r}: {problem}")


def _row_problem(a: float, s: float, f: float, c: float, n: int, outcome: int) -> str | None:
    """The first thing wrong with one timeline, in words; None if it is consistent."""
    if not math.isfinite(a):
        return f"arrival_s must be a finite time, got {a}"
    if n < 0:
        return f"output_tokens must be >= 0, got {n}"
    if not math.isnan(s) and s < a:
        return f"admitted_s ({s}) is before arrival_s ({a})"
    if not math.isnan(f) and f < a:
        return f"first_token_s ({f}) is before arrival_s ({a})"
    if not math.isnan(f) and not math.isnan(s) and f < s:
        return f"first_token_s ({f}) is before admitted_s ({s})"
    if not math.isnan(c) and not math.isnan(f) and c < f:
        return f"finish_s ({c}) is before first_token_s ({f})"
    if not math.isnan(c) and c < a:
        return f"finish_s ({c}) is before arrival_s ({a})"
    if outcome == FINISHED:
        if math.isnan(f) or math.isnan(c):
            return "a finished request needs first_token_s and finish_s"
        if n < 1:
            return f"a finished request needs output_tokens >= 1, got {n}"
    return None


def _token_times_problem(times: Sequence[float], f: float, c: float, n: int) -> str | None:
    t = np.asarray(times, dtype=float)
    if t.size != n:
        return f"token_times_s has {t.size} times for output_tokens = {n}"
    if t.size == 0:
        return None
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        return "token_times_s must be finite and non-decreasing"
    if not (math.isclose(t[0], f, abs_tol=1e-9) and math.isclose(t[-1], c, abs_tol=1e-9)):
        return (f"token_times_s must start at first_token_s ({f}) and end at finish_s ({c}), "
                f"got {t[0]} .. {t[-1]}")
    return None


@dataclass(frozen=True, eq=False)
class Timelines:
    """Many request timelines in columnar form: one numpy array per field, one entry per request.

    This is what metrics compute on; a 24-hour fleet run with a million requests is a handful of
    arrays, not a million objects. Build it with :meth:`from_arrays` (fast, vectorised checks),
    :meth:`from_records` (from :class:`RequestTimeline` objects) or :func:`read_trace_csv`.

    Attributes
    ----------
    request_id : array of ids (int or str).
    arrival_s, admitted_s, first_token_s, finish_s : float64 seconds; NaN = not recorded.
    output_tokens : int64.
    outcome : int8 codes into :data:`OUTCOMES` (0 finished, 1 rejected, 2 timed out).
    klass : str array of class labels.
    token_times_s, token_offsets : optional per-token emit times, flattened (CSR layout): request
        ``i``'s times are ``token_times_s[token_offsets[i]:token_offsets[i + 1]]``; ``None`` if absent.
    """

    request_id: np.ndarray
    arrival_s: np.ndarray
    admitted_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    output_tokens: np.ndarray
    outcome: np.ndarray
    klass: np.ndarray
    token_times_s: np.ndarray | None = None
    token_offsets: np.ndarray | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_arrays(cls, *, arrival_s, first_token_s, finish_s, output_tokens, admitted_s=None,
                    outcome=None, request_id=None, klass=None,
                    token_times_s: Sequence[Sequence[float]] | None = None) -> Timelines:
        """Validate columns (vectorised) and build a :class:`Timelines`.

        Parameters
        ----------
        arrival_s, first_token_s, finish_s : seconds, one per request; NaN where not recorded
            (allowed only for requests that did not finish).
        output_tokens : tokens emitted per request.
        admitted_s : seconds (optional; NaN where not recorded).
        outcome : ``None`` (all finished), or per request a code (0/1/2) or a name from
            :data:`OUTCOMES`.
        request_id : ids (default ``0..N-1``).
        klass : a label for all, or one per request (default ``""``).
        token_times_s : optional, per request a sequence of token emit times (seconds).

        Raises
        ------
        ValueError naming the first inconsistent request (index and id) and the problem.
        """
        a = _float_col("arrival_s", arrival_s)
        n = a.size
        f = _float_col("first_token_s", first_token_s, n)
        c = _float_col("finish_s", finish_s, n)
        s = np.full(n, np.nan) if admitted_s is None else _float_col("admitted_s", admitted_s, n)
        tokens = np.asarray(output_tokens)
        if tokens.shape != (n,):
            raise ValueError(f"output_tokens must have one entry per request ({n}), got "
                             f"shape {tokens.shape}")
        if n and not np.issubdtype(tokens.dtype, np.integer):
            if not (np.issubdtype(tokens.dtype, np.floating) and np.all(tokens == np.round(tokens))):
                raise TypeError(f"output_tokens must be whole numbers, got dtype {tokens.dtype}")
        tokens = tokens.astype(np.int64)
        oc = _outcome_codes(outcome, n)
        ids = np.arange(n) if request_id is None else np.asarray(request_id)
        if ids.shape != (n,):
            raise ValueError(f"request_id must have one entry per request ({n}), got {ids.shape}")
        kl = check_labels("klass", klass, n)
        bad = _first_bad_row(a, s, f, c, tokens, oc)
        if bad is not None:
            problem = _row_problem(a[bad], s[bad], f[bad], c[bad], int(tokens[bad]), int(oc[bad]))
            raise ValueError(f"request {bad} (id {_plain(ids[bad])!r}): {problem}")
        tt = offsets = None
        if token_times_s is not None:
            seqs = list(token_times_s)
            if len(seqs) != n:
                raise ValueError(f"token_times_s must have one sequence per request ({n}), "
                                 f"got {len(seqs)}")
            lengths = np.fromiter((len(x) for x in seqs), dtype=np.int64, count=n)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            tt = (np.concatenate([np.asarray(x, dtype=float) for x in seqs]) if n
                  else np.empty(0))
            for i, x in enumerate(seqs):
                if len(x) == 0 and oc[i] != FINISHED:
                    continue
                problem = _token_times_problem(x, f[i], c[i], int(tokens[i]))
                if problem:
                    raise ValueError(f"request {i} (id {_plain(ids[i])!r}): {problem}")
        return cls(ids, a, s, f, c, tokens, oc, kl, tt, offsets)

    @classmethod
    def from_records(cls, records: Iterable[RequestTimeline]) -> Timelines:
        """Columnar timelines from :class:`RequestTimeline` objects (each already validated)."""
        recs = list(records)
        for r in recs:
            if not isinstance(r, RequestTimeline):
                raise TypeError(f"records must be RequestTimeline objects, got {type(r).__name__}")
        have_tokens = [r.token_times_s is not None for r in recs]
        if any(have_tokens) and not all(have_tokens):
            tt = [r.token_times_s if r.token_times_s is not None else () for r in recs]
            if any(r.token_times_s is None and r.outcome == "finished" for r in recs):
                raise ValueError("token_times_s must be given for every finished request or none")
        else:
            tt = [r.token_times_s for r in recs] if recs and all(have_tokens) else None
        ids = np.empty(len(recs), dtype=object)
        ids[:] = [r.request_id for r in recs]
        if recs and all(isinstance(i, Integral) for i in ids):
            ids = ids.astype(np.int64)
        return cls.from_arrays(
            arrival_s=[r.arrival_s for r in recs],
            first_token_s=[_opt_time("first_token_s", r.first_token_s) for r in recs],
            finish_s=[_opt_time("finish_s", r.finish_s) for r in recs],
            output_tokens=np.asarray([r.output_tokens for r in recs], dtype=np.int64),
            admitted_s=[_opt_time("admitted_s", r.admitted_s) for r in recs],
            outcome=[r.outcome for r in recs], request_id=ids,
            klass=[r.klass for r in recs] if recs else None, token_times_s=tt)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return int(self.arrival_s.size)

    def __getitem__(self, key) -> Timelines | RequestTimeline:
        """``t[i]``: one :class:`RequestTimeline`; ``t[mask]`` / ``t[a:b]`` / ``t[idx]``: a subset."""
        if isinstance(key, Integral):
            return self.record(int(key))
        idx = np.arange(len(self))[key]
        tt = offs = None
        if self.token_times_s is not None:
            lengths = np.diff(self.token_offsets)[idx]
            offs = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            tt = (np.concatenate([self.token_times_s[self.token_offsets[i]:self.token_offsets[i + 1]]
                                  for i in idx]) if idx.size else np.empty(0))
        return Timelines(self.request_id[idx], self.arrival_s[idx], self.admitted_s[idx],
                         self.first_token_s[idx], self.finish_s[idx], self.output_tokens[idx],
                         self.outcome[idx], self.klass[idx], tt, offs)

    def record(self, i: int) -> RequestTimeline:
        """Request ``i`` as a :class:`RequestTimeline`."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"request index {i} out of range for {len(self)} requests")
        i %= len(self)

        def opt(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        tt = None
        if self.token_times_s is not None:
            tt = tuple(self.token_times_s[self.token_offsets[i]:self.token_offsets[i + 1]].tolist())
        rid = self.request_id[i]
        rid = rid.item() if isinstance(rid, np.generic) else rid
        return RequestTimeline(rid, float(self.arrival_s[i]), opt(self.first_token_s[i]),
                               opt(self.finish_s[i]), int(self.output_tokens[i]),
                               opt(self.admitted_s[i]), tt, OUTCOMES[int(self.outcome[i])],
                               str(self.klass[i]))

    def records(self) -> list[RequestTimeline]:
        """All requests as :class:`RequestTimeline` objects (slow for millions)."""
        return [self.record(i) for i in range(len(self))]

    @property
    def finished(self) -> np.ndarray:
        """Boolean mask of finished requests."""
        return self.outcome == FINISHED

    def counts(self) -> dict[str, int]:
        """How many requests had each outcome, plus ``"count"`` (all of them)."""
        out = {"count": len(self)}
        for code, name in enumerate(OUTCOMES):
            out[name] = int(np.count_nonzero(self.outcome == code))
        return out

    @staticmethod
    def concat(parts: Sequence[Timelines]) -> Timelines:
        """Join several :class:`Timelines` (e.g. per-replica traces into a fleet trace)."""
        parts = [as_timelines(p) for p in parts]
        if not parts:
            raise ValueError("concat needs at least one Timelines")
        with_tokens = [p.token_times_s is not None for p in parts]
        tt = offs = None
        if all(with_tokens):
            tt = np.concatenate([p.token_times_s for p in parts])
            lengths = np.concatenate([np.diff(p.token_offsets) for p in parts])
            offs = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        ids = np.concatenate([np.asarray(p.request_id, dtype=object) for p in parts])
        if all(np.issubdtype(p.request_id.dtype, np.integer) for p in parts):
            ids = ids.astype(np.int64)
        return Timelines(ids, *(np.concatenate([getattr(p, name) for p in parts]) for name in
                                ("arrival_s", "admitted_s", "first_token_s", "finish_s",
                                 "output_tokens", "outcome", "klass")), tt, offs)


def _plain(value):
    """A numpy scalar as the Python value (for readable messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _float_col(name: str, values, n: int | None = None) -> np.ndarray:
    try:
        arr = np.asarray([np.nan if v is None else v for v in values]
                         if isinstance(values, list | tuple) else values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers of seconds") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have one entry per request ({n}), got {arr.size}")
    if np.any(np.isinf(arr)):
        raise ValueError(f"{name} must be finite (NaN means 'not recorded'), got an infinity")
    return arr


def _outcome_codes(outcome, n: int) -> np.ndarray:
    if outcome is None or (n == 0 and len(outcome) == 0):
        return np.zeros(n, dtype=np.int8)
    if isinstance(outcome, str):
        return np.full(n, OUTCOMES.index(check_choice("outcome", outcome, OUTCOMES)), dtype=np.int8)
    arr = np.asarray(outcome)
    if arr.shape != (n,):
        raise ValueError(f"outcome must have one entry per request ({n}), got {arr.shape}")
    if arr.dtype.kind in "US" or arr.dtype == object:
        codes = np.full(n, -1, dtype=np.int8)
        for code, name in enumerate(OUTCOMES):
            codes[arr == name] = code
        if np.any(codes < 0):
            i = int(np.argmax(codes < 0))
            raise ValueError(f"outcome of request {i} must be one of {', '.join(OUTCOMES)}; "
                             f"got {arr[i]!r}")
        return codes
    if not np.issubdtype(arr.dtype, np.integer) or (n and (arr.min() < 0 or arr.max() > 2)):
        raise ValueError("outcome codes must be 0 (finished), 1 (rejected) or 2 (timed_out)")
    return arr.astype(np.int8)


def _first_bad_row(a, s, f, c, n, oc) -> int | None:
    """Index of the first inconsistent timeline (vectorised), or None."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(a)
        bad |= n < 0
        bad |= s < a
        bad |= f < a
        bad |= f < s
        bad |= c < f
        bad |= c < a
        fin = oc == FINISHED
        bad |= fin & (np.isnan(f) | np.isnan(c) | (n < 1))
    if np.any(bad):
        return int(np.argmax(bad))
    return None


def as_timelines(timelines) -> Timelines:
    """Accept a :class:`Timelines`, or a sequence of :class:`RequestTimeline`, and return columns."""
    if isinstance(timelines, Timelines):
        return timelines
    if isinstance(timelines, RequestTimeline):
        return Timelines.from_records([timelines])
    try:
        return Timelines.from_records(list(timelines))
    except TypeError as exc:
        raise TypeError(f"timelines must be a Timelines or a sequence of RequestTimeline: {exc}") \
            from None


# ----------------------------------------------------------------------------- per-request metrics

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


# ----------------------------------------------------------------------------- percentiles

def _values(values, name: str = "values") -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if np.any(np.isinf(arr)):
        raise ValueError(f"{name} must be finite (NaN = undefined, skipped)")
    return arr[~np.isnan(arr)]


def percentile(values, q: float, *, method: str = "linear") -> float:
    """The ``q``-th percentile (0..100) of ``values``, NaNs skipped.

    ``method`` is numpy's: ``"linear"`` (default; Hyndman and Fan type 7: interpolate at rank
    ``(n − 1)·q/100`` of the sorted values), ``"inverted_cdf"`` (nearest rank, type 1),
    ``"higher"``, ``"lower"``, ``"nearest"``, ``"median_unbiased"`` (type 8).
    Raises ``ValueError`` when no values are left.
    """
    qv = check_real("q", q, minimum=0.0, maximum=100.0)
    check_choice("method", method, ("linear", "inverted_cdf", "higher", "lower", "nearest",
                                    "median_unbiased"))
    arr = _values(values)
    if arr.size == 0:
        raise ValueError("percentile of no values is undefined")
    return float(np.percentile(arr, qv, method=method))


def percentile_summary(values) -> dict[str, float | None]:
    """``{"p50", "p90", "p95", "p99", "mean"}`` of ``values`` (NaNs skipped; linear method).

    The percentile object of every vidya-lab JSON output. With no defined values every entry is
    ``None`` (JSON ``null``), never an exception: e.g. the TPOT of a trace of one-token answers.
    """
    arr = _values(values)
    if arr.size == 0:
        return {"p50": None, "p90": None, "p95": None, "p99": None, "mean": None}
    ps = np.percentile(arr, PERCENTILES, method="linear")
    out: dict[str, float | None] = {f"p{p}": float(v) for p, v in zip(PERCENTILES, ps, strict=True)}
    out["mean"] = float(arr.mean())
    return out


def bootstrap_percentile_ci(values, q: float, *, confidence: float = 0.95, n_boot: int = 2000,
                            seed: int | np.random.Generator = 0) -> tuple[float, float]:
    """A percentile-bootstrap confidence interval for the ``q``-th percentile (Efron, 1979).

    Resample ``values`` with replacement ``n_boot`` times, take the percentile of each resample,
    and return the ``(1 − confidence)/2`` and ``(1 + confidence)/2`` quantiles of those. Seeded.
    A wide interval means the sample is too small to pin the tail down (a p99 from 100 requests is
    set by its largest one or two).

    Returns
    -------
    (low, high), in the unit of ``values``.
    """
    qv = check_real("q", q, minimum=0.0, maximum=100.0)
    conf = check_fraction("confidence", confidence, allow_zero=False, allow_one=False)
    nb = check_int("n_boot", n_boot, minimum=10)
    arr = _values(values)
    if arr.size == 0:
        raise ValueError("bootstrap of no values is undefined")
    if isinstance(seed, np.random.Generator):
        rng = seed
    else:
        rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    est = np.empty(nb)
    # in blocks, so memory stays bounded for large samples
    block = max(1, min(nb, 2_000_000 // max(arr.size, 1)))
    for start in range(0, nb, block):
        k = min(block, nb - start)
        idx = rng.integers(0, arr.size, size=(k, arr.size))
        est[start:start + k] = np.percentile(arr[idx], qv, axis=1, method="linear")
    lo, hi = np.quantile(est, [(1 - conf) / 2, (1 + conf) / 2])
    return float(lo), float(hi)


def pooled_percentile(groups: Sequence, q: float) -> float:
    """The percentile of all values of all ``groups`` pooled: the right fleet percentile."""
    arrays = [_values(g, "groups") for g in groups]
    if not arrays:
        raise ValueError("groups must hold at least one group")
    return percentile(np.concatenate(arrays), q)


def mean_of_percentiles(groups: Sequence, q: float) -> float:
    """The mean of per-group percentiles: **a pitfall**, shown for contrast, not a fleet metric.

    Averaging per-replica p99s is not the fleet p99: a replica with a bad tail and little traffic
    weighs as much as a busy healthy one, and a tail is not linear in its samples. Use
    :func:`pooled_percentile`.
    """
    if not len(groups):
        raise ValueError("groups must hold at least one group")
    return float(np.mean([percentile(g, q) for g in groups]))


# ----------------------------------------------------------------------------- SLOs

@dataclass(frozen=True)
class SLO:
    """Per-request latency targets (seconds); ``None`` = no target on that metric.

    A request meets the SLO when it finished and meets every target given: ``TTFT ≤ ttft_s``,
    ``TPOT ≤ tpot_s`` (vacuously true for a one-token answer, whose TPOT is undefined) and
    ``end-to-end ≤ e2e_s``.
    """

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("ttft_s", "tpot_s", "e2e_s"):
            v = getattr(self, name)
            if v is not None:
                check_real(name, v, minimum=0.0, min_inclusive=False)

    @property
    def empty(self) -> bool:
        return self.ttft_s is None and self.tpot_s is None and self.e2e_s is None


def meets_slo(timelines, slo: SLO) -> np.ndarray:
    """Boolean per request (all requests, in order): finished and within every target."""
    if not isinstance(slo, SLO):
        raise TypeError(f"slo must be an SLO, got {type(slo).__name__}")
    t = as_timelines(timelines)
    ok = t.finished.copy()
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


def attainment(timelines, slo: SLO) -> float:
    """SLO attainment: the fraction (0..1) of **all** requests that finished within every target.

    Rejected and timed-out requests count as missed (a server must not look better by turning
    users away). Raises ``ValueError`` for an empty trace.
    """
    ok = meets_slo(timelines, slo)
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


def max_rate_meeting_slo(simulate: Callable[[float], object], slo: SLO, *,
                         target_attainment: float = 0.9, rate_lo_per_s: float,
                         rate_hi_per_s: float, rel_tol: float = 0.02,
                         max_evals: int = 30) -> GoodputSearch:
    """Goodput, second sense (DistServe's): the highest request rate whose attainment ≥ target.

    ``simulate(rate_per_s)`` must return timelines (a :class:`Timelines` or a list of
    :class:`RequestTimeline`) for that offered rate; use a fixed seed inside it so the answer is
    reproducible. Bisection on ``[rate_lo_per_s, rate_hi_per_s]`` until the bracket is narrower than
    ``rel_tol`` of its upper end, assuming attainment falls as the rate rises (true in expectation;
    a noisy simulation can make the answer wobble by about the noise).

    Returns
    -------
    :class:`GoodputSearch`. If attainment at ``rate_hi_per_s`` still meets the target, that rate is
    returned (the true goodput may be higher: widen the bracket).
    """
    if not callable(simulate):
        raise TypeError("simulate must be a function rate_per_s -> timelines")
    target = check_fraction("target_attainment", target_attainment, allow_zero=False)
    lo = check_real("rate_lo_per_s", rate_lo_per_s, minimum=0.0, min_inclusive=False)
    hi = check_real("rate_hi_per_s", rate_hi_per_s, minimum=0.0, min_inclusive=False)
    if hi <= lo:
        raise ValueError(f"rate_hi_per_s ({hi}) must be > rate_lo_per_s ({lo})")
    tol = check_real("rel_tol", rel_tol, minimum=0.0, min_inclusive=False, maximum=1.0)
    evals = check_int("max_evals", max_evals, minimum=2)
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


# ----------------------------------------------------------------------------- budgets

@dataclass(frozen=True)
class LatencyBudget:
    """A TTFT target split into its parts (seconds). ``queueing_s < 0`` means over budget."""

    ttft_target_s: float
    network_s: float
    prefill_s: float
    queueing_s: float

    @property
    def feasible(self) -> bool:
        """True when network and prefill leave time (≥ 0) for queueing."""
        return self.queueing_s >= 0


def latency_budget(ttft_target_s: float, *, prefill_s: float, network_s: float) -> LatencyBudget:
    """Split a TTFT target: ``queueing = TTFT target − network − prefill`` (seconds).

    ``network_s`` is the round trip the user's request and first token spend on the wire;
    ``prefill_s`` the time the server computes the prompt. What is left is the most a request may
    wait in the queue; if negative, no queueing policy can meet the target.
    """
    target = check_real("ttft_target_s", ttft_target_s, minimum=0.0, min_inclusive=False)
    pre = check_real("prefill_s", prefill_s, minimum=0.0)
    net = check_real("network_s", network_s, minimum=0.0)
    return LatencyBudget(target, net, pre, target - net - pre)


#: Mean silent reading rate of adults reading English non-fiction, words per minute
#: (Brysbaert, 2019, a meta-analysis of 190 studies: 238 wpm for non-fiction, 260 for fiction).
READING_WORDS_PER_MIN = 238.0

#: Tokens per English word for GPT-style BPE tokenizers: "1 token ≈ ¾ of a word", so 4/3
#: (OpenAI Help Center, "What are tokens and how to count them?"), for English text; words of other
#: scripts are often split into more tokens: measure it on your own traffic.
TOKENS_PER_WORD = 4.0 / 3.0


def tpot_for_reading_speed(words_per_min: float, tokens_per_word: float,
                           headroom: float = 1.0) -> float:
    """The TPOT (seconds per token) at which text streams ``headroom``× as fast as a person reads.

    ``TPOT = 60 / (words_per_min × tokens_per_word × headroom)``. A TPOT at or below this keeps the
    text ahead of the reader; above it the reader waits for each word. ``headroom > 1`` leaves room for
    skimming and for the tail of the TPOT distribution.
    """
    wpm = check_real("words_per_min", words_per_min, minimum=0.0, min_inclusive=False)
    tpw = check_real("tokens_per_word", tokens_per_word, minimum=0.0, min_inclusive=False)
    h = check_real("headroom", headroom, minimum=0.0, min_inclusive=False)
    return 60.0 / (wpm * tpw * h)


# ----------------------------------------------------------------------------- one summary

def summarize(timelines, slo: SLO | None = None) -> dict:
    """The summary every vidya-lab report prints, as a JSON-ready dict.

    Keys: ``count`` (all requests), ``finished``, ``rejected``, ``timed_out``, ``ttft_s``,
    ``tpot_s``, ``e2e_s`` (each a :func:`percentile_summary` over finished requests, seconds),
    ``tpot_undefined`` (finished one-token answers, left out of ``tpot_s``), and ``attainment``
    (0..1, over all requests) when ``slo`` has any target.
    """
    t = as_timelines(timelines)
    counts = t.counts()
    tp = tpot_s(t)
    out: dict = {"count": counts["count"], "finished": counts["finished"],
                 "rejected": counts["rejected"], "timed_out": counts["timed_out"],
                 "ttft_s": percentile_summary(ttft_s(t)),
                 "tpot_s": percentile_summary(tp),
                 "e2e_s": percentile_summary(e2e_s(t)),
                 "tpot_undefined": int(np.count_nonzero(np.isnan(tp)))}
    if slo is not None and not slo.empty:
        out["attainment"] = attainment(t, slo) if len(t) else None
    return out


# ----------------------------------------------------------------------------- CSV traces

#: Columns a trace CSV must have (more are allowed; ``outcome``, ``admitted_s`` and ``klass``
#: are read when present).
TRACE_COLUMNS: tuple[str, ...] = ("request_id", "arrival_s", "first_token_s", "finish_s",
                                  "output_tokens")


def _parse_time(text: str, column: str, where: str, *, optional: bool) -> float:
    text = text.strip()
    if text == "" or text.lower() in ("nan", "none", "null"):
        if optional:
            return math.nan
        raise ValueError(f"{where}: {column} is empty (or NaN); a finished request needs it")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: {column} is not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{where}: {column} must be finite, got {text!r}")
    return value


def read_trace_csv(path) -> Timelines:
    """Read a trace CSV into :class:`Timelines`, with errors that name the row and the problem.

    The file needs a header with at least :data:`TRACE_COLUMNS`; optional columns ``outcome``
    (``finished``/``rejected``/``timed_out``, default finished), ``admitted_s`` and ``klass``.
    Times in seconds. For rejected or timed-out rows, empty times are allowed.

    Raises
    ------
    ValueError : ``"TRACE.csv row 3 (line 4): first_token_s (1.0) is before arrival_s (2.0)"`` —
        rows count data rows from 1; lines count the file's lines, header included.
    FileNotFoundError : no such file.
    """
    name = str(path)
    try:
        handle = open(path, newline="", encoding="utf-8-sig")
    except IsADirectoryError:
        raise ValueError(f"{name}: is a directory, not a CSV file") from None
    with handle:
        try:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None or not any(h.strip() for h in header):
                raise ValueError(f"{name}: empty file (expected a header with "
                                 f"{','.join(TRACE_COLUMNS)})")
            cols = [h.strip() for h in header]
            missing = [c for c in TRACE_COLUMNS if c not in cols]
            if missing:
                raise ValueError(f"{name} line 1: missing column(s) {', '.join(missing)}; the header "
                                 f"needs {','.join(TRACE_COLUMNS)}")
            index = {c: i for i, c in enumerate(cols)}
            ids, a, s, f, c, n, oc, kl = [], [], [], [], [], [], [], []
            row = 0
            for line_fields in reader:
                if not any(x.strip() for x in line_fields):
                    continue  # blank line
                row += 1
                where = f"{name} row {row} (line {reader.line_num})"
                if len(line_fields) != len(cols):
                    raise ValueError(f"{where}: has {len(line_fields)} fields, the header has "
                                     f"{len(cols)}")

                def get(col: str, _fields=line_fields) -> str:
                    return _fields[index[col]].strip() if col in index else ""

                outcome = get("outcome") or "finished"
                if outcome not in OUTCOMES:
                    raise ValueError(f"{where}: outcome must be one of {', '.join(OUTCOMES)}; "
                                     f"got {outcome!r}")
                code = OUTCOMES.index(outcome)
                done = code == FINISHED
                rid = get("request_id")
                if rid == "":
                    raise ValueError(f"{where}: request_id is empty")
                arrival = _parse_time(get("arrival_s"), "arrival_s", where, optional=False)
                first = _parse_time(get("first_token_s"), "first_token_s", where, optional=not done)
                finish = _parse_time(get("finish_s"), "finish_s", where, optional=not done)
                admitted = _parse_time(get("admitted_s"), "admitted_s", where, optional=True)
                tok_text = get("output_tokens")
                if tok_text == "" and not done:
                    tokens = 0
                else:
                    try:
                        tokens_f = float(tok_text)
                    except ValueError:
                        raise ValueError(f"{where}: output_tokens is not a number: "
                                         f"{tok_text!r}") from None
                    if not math.isfinite(tokens_f) or tokens_f != int(tokens_f):
                        raise ValueError(f"{where}: output_tokens must be a whole number, got "
                                         f"{tok_text!r}")
                    tokens = int(tokens_f)
                problem = _row_problem(arrival, admitted, first, finish, tokens, code)
                if problem:
                    raise ValueError(f"{where}: {problem}")
                ids.append(rid)
                a.append(arrival)
                s.append(admitted)
                f.append(first)
                c.append(finish)
                n.append(tokens)
                oc.append(code)
                kl.append(get("klass"))
        except csv.Error as exc:
            raise ValueError(f"{name}: not a readable CSV file ({exc})") from None
        except UnicodeDecodeError:
            raise ValueError(f"{name}: not a UTF-8 text file") from None
    if not ids:
        raise ValueError(f"{name}: no data rows after the header")
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for i, rid in enumerate(ids):
            if rid in seen:
                raise ValueError(f"{name} row {i + 1}: duplicate request_id {rid!r}")
            seen.add(rid)
    return Timelines.from_arrays(arrival_s=a, first_token_s=f, finish_s=c,
                                 output_tokens=np.asarray(n, dtype=np.int64), admitted_s=s,
                                 outcome=np.asarray(oc, dtype=np.int8),
                                 request_id=np.asarray(ids, dtype=str), klass=kl)


def write_trace_csv(timelines, path) -> None:
    """Write timelines as a trace CSV that :func:`read_trace_csv` and ``vidya-lab slo`` read.

    Columns: :data:`TRACE_COLUMNS`, then ``outcome``, ``admitted_s`` and ``klass``; times in seconds
    with full precision, empty where not recorded.
    """
    t = as_timelines(timelines)

    def cell(x: float) -> str:
        return "" if math.isnan(x) else repr(float(x))

    with open(path, "w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle)
        w.writerow([*TRACE_COLUMNS, "outcome", "admitted_s", "klass"])
        for i in range(len(t)):
            w.writerow([_plain(t.request_id[i]), cell(t.arrival_s[i]), cell(t.first_token_s[i]),
                        cell(t.finish_s[i]), int(t.output_tokens[i]), OUTCOMES[int(t.outcome[i])],
                        cell(t.admitted_s[i]), str(t.klass[i])])
