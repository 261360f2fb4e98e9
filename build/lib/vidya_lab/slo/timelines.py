"""The request timeline: what happened to each request, as timestamps on one clock.

Every simulator of the book (the toy server of chapter 1, the replica of chapter 5, the fleet of
chapter 6) and every recorded trace is reduced to this one record, and every metric of
:mod:`vidya_lab.slo` is a formula on its timestamps (the definitions are in the package docstring).

Two forms of the same data:

* :class:`RequestTimeline` — one request, a frozen record you can read and build by hand;
* :class:`Timelines` — many requests in columns (one numpy array per field). This is what metrics
  compute on: a 24-hour fleet run with a million requests is a handful of arrays, not a million
  objects. :func:`as_timelines` accepts either.

Both are checked once, when built, by :mod:`vidya_lab.slo.consistency` (``a ≤ s ≤ f ≤ c``; a
finished request has a first token, a finish and at least one token), so the metrics trust them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from vidya_lab._validate import check_choice, check_int, check_labels, check_real
from vidya_lab.slo.consistency import (
    FINISHED,
    OUTCOMES,
    first_bad_row,
    float_col,
    opt_time,
    outcome_codes,
    plain,
    row_problem,
    token_counts,
    token_times_problem,
)

#: Most request records :meth:`Timelines.from_records` takes (a million-request day is columns, not
#: objects: build it with :meth:`Timelines.from_arrays`).
MAX_RECORDS = 10_000_000


@dataclass(frozen=True)
class RequestTimeline:
    """What happened to one request, as timestamps (seconds on one clock).

    This is the record every simulator emits and every metric reads; see the package docstring for
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
        if isinstance(self.request_id, bool) or not isinstance(self.request_id, Integral | str):
            raise TypeError(f"request_id must be an int or a str, got {self.request_id!r:.60} "
                            f"({type(self.request_id).__name__})")
        check_real("arrival_s", self.arrival_s)
        check_choice("outcome", self.outcome, OUTCOMES)
        check_int("output_tokens", self.output_tokens, minimum=0)
        f = opt_time("first_token_s", self.first_token_s)
        c = opt_time("finish_s", self.finish_s)
        s = opt_time("admitted_s", self.admitted_s)
        if not isinstance(self.klass, str):
            raise TypeError(f"klass must be a string, got {type(self.klass).__name__}")
        if self.token_times_s is not None:
            if not isinstance(self.token_times_s, list | tuple | np.ndarray):
                raise TypeError(f"token_times_s must be a sequence of times (s), got "
                                f"{type(self.token_times_s).__name__}")
            if len(self.token_times_s) != self.output_tokens:  # before converting a huge one
                raise ValueError(f"token_times_s has {len(self.token_times_s)} times for "
                                 f"output_tokens = {self.output_tokens}")
            object.__setattr__(self, "token_times_s",
                               tuple(opt_time("token_times_s", x) for x in self.token_times_s))
        problem = row_problem(self.arrival_s, s, f, c, self.output_tokens,
                              OUTCOMES.index(self.outcome))
        if problem is None and self.token_times_s is not None:
            problem = token_times_problem(self.token_times_s, f, c, self.output_tokens)
        if problem:
            raise ValueError(f"request {self.request_id!r}: {problem}")


@dataclass(frozen=True, eq=False)
class Timelines:
    """Many request timelines in columnar form: one numpy array per field, one entry per request.

    Build it with :meth:`from_arrays` (fast, vectorised checks), :meth:`from_records` (from
    :class:`RequestTimeline` objects) or :func:`vidya_lab.slo.read_trace_csv`.

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
        output_tokens : tokens emitted per request (whole numbers, at most
            :data:`~vidya_lab.slo.consistency.MAX_OUTPUT_TOKENS_PER_REQUEST`).
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
        a = float_col("arrival_s", arrival_s)
        n = a.size
        f = float_col("first_token_s", first_token_s, n)
        c = float_col("finish_s", finish_s, n)
        s = np.full(n, np.nan) if admitted_s is None else float_col("admitted_s", admitted_s, n)
        tokens = token_counts(output_tokens, n)
        oc = outcome_codes(outcome, n)
        ids = np.arange(n) if request_id is None else np.asarray(request_id)
        if ids.shape != (n,):
            raise ValueError(f"request_id must have one entry per request ({n}), got {ids.shape}")
        kl = check_labels("klass", klass, n)
        bad = first_bad_row(a, s, f, c, tokens, oc)
        if bad is not None:
            problem = row_problem(a[bad], s[bad], f[bad], c[bad], int(tokens[bad]), int(oc[bad]))
            raise ValueError(f"request {bad} (id {plain(ids[bad])!r}): {problem}")
        tt = offsets = None
        if token_times_s is not None:
            tt, offsets = _token_columns(token_times_s, f, c, tokens, oc, ids)
        return cls(ids, a, s, f, c, tokens, oc, kl, tt, offsets)

    @classmethod
    def from_records(cls, records: Iterable[RequestTimeline]) -> Timelines:
        """Columnar timelines from :class:`RequestTimeline` objects (each already validated; at
        most :data:`MAX_RECORDS`)."""
        if isinstance(records, str | bytes | dict) or not isinstance(records, Iterable):
            raise TypeError(f"records must be an iterable of RequestTimeline objects, got "
                            f"{type(records).__name__}")
        recs = []
        for i, r in enumerate(records):  # checked one by one: a huge range fails at its first
            if i >= MAX_RECORDS:
                raise ValueError(f"records may hold at most {MAX_RECORDS:,} timelines")
            if not isinstance(r, RequestTimeline):
                raise TypeError(f"records must be RequestTimeline objects, got {type(r).__name__} "
                                f"at records[{i}]")
            recs.append(r)
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
            first_token_s=[opt_time("first_token_s", r.first_token_s) for r in recs],
            finish_s=[opt_time("finish_s", r.finish_s) for r in recs],
            output_tokens=np.asarray([r.output_tokens for r in recs], dtype=np.int64),
            admitted_s=[opt_time("admitted_s", r.admitted_s) for r in recs],
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
        return RequestTimeline(plain(self.request_id[i]), float(self.arrival_s[i]),
                               opt(self.first_token_s[i]), opt(self.finish_s[i]),
                               int(self.output_tokens[i]), opt(self.admitted_s[i]), tt,
                               OUTCOMES[int(self.outcome[i])], str(self.klass[i]))

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


def _token_columns(token_times_s, f, c, tokens, oc, ids) -> tuple[np.ndarray, np.ndarray]:
    """Per-request token emit times as one flat array and CSR offsets, each request checked."""
    n = f.size
    seqs = list(token_times_s)
    if len(seqs) != n:
        raise ValueError(f"token_times_s must have one sequence per request ({n}), "
                         f"got {len(seqs)}")
    lengths = np.fromiter((len(x) for x in seqs), dtype=np.int64, count=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tt = np.concatenate([np.asarray(x, dtype=float) for x in seqs]) if n else np.empty(0)
    for i, x in enumerate(seqs):
        if len(x) == 0 and oc[i] != FINISHED:
            continue
        problem = token_times_problem(x, f[i], c[i], int(tokens[i]))
        if problem:
            raise ValueError(f"request {i} (id {plain(ids[i])!r}): {problem}")
    return tt, offsets


def as_timelines(timelines) -> Timelines:
    """Accept a :class:`Timelines`, or a sequence of :class:`RequestTimeline`, and return columns."""
    if isinstance(timelines, Timelines):
        return timelines
    if isinstance(timelines, RequestTimeline):
        return Timelines.from_records([timelines])
    if isinstance(timelines, str | bytes | dict) or not isinstance(timelines, Iterable):
        raise TypeError(f"timelines must be a Timelines or a sequence of RequestTimeline, got "
                        f"{type(timelines).__name__}")
    try:
        return Timelines.from_records(list(timelines))
    except TypeError as exc:
        raise TypeError(f"timelines must be a Timelines or a sequence of RequestTimeline: {exc}") \
            from None
