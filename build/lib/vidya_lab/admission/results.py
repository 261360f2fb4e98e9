"""What a run produced: request timelines, reject reasons, the iteration log, and one summary.

:class:`SimResult` holds the requests that finished or were rejected as a columnar
:class:`vidya_lab.slo.Timelines` (per-token emit times included, shared by the batch that emitted
them, so ITL is exact), the reasons, the ids still in flight, and the iteration log
(:class:`IterationLog`: start, duration, batch size, prefill tokens, decode count, KV blocks used,
queue length) for plots. The simulator records; :mod:`vidya_lab.slo` computes every metric
(:meth:`SimResult.summary`).

:func:`collect` turns the engine's state into a :class:`SimResult`. Token emit times are rebuilt,
not stored as they happen: a request's decode tokens are emitted at the ends of consecutive decode
rounds, so its times are ``[times before a preemption] + [its prefill's token] + rounds[r0 : r0 + j]``
(:func:`_token_times`). The engine writes the log as it goes into a :class:`StepRecorder`.
"""

from __future__ import annotations

import itertools
import time
from array import array
from dataclasses import dataclass

import numpy as np

from vidya_lab.admission.config import REJECT_REASONS, SchedulerConfig
from vidya_lab.slo import FINISHED, REJECTED, Timelines, itl_s, summarize
from vidya_lab.workload import Workload


class StepRecorder:
    """The iteration log as it is written: one entry per step in compact arrays (8 bytes a value,
    not a Python object per value; :func:`~vidya_lab.admission.results.collect` reads them without
    copying)."""

    def __init__(self) -> None:
        self.start = array("d")
        self.duration = array("d")
        self.prefill_tokens = array("q")
        self.prefill_seqs = array("q")
        self.decode_count = array("q")
        self.kv_blocks_used = array("q")
        self.waiting = array("q")
        self.chunk_request = array("q")   # every prompt chunk: its request and its tokens
        self.chunk_tokens = array("q")

    def __len__(self) -> int:
        return len(self.start)

    def record(self, start: float, duration: float, picked, decode_count: int, blocks_used: int,
               waiting: int) -> None:
        """One step: its start and duration (s), its prompt chunks, decodes, blocks and queue."""
        self.start.append(start)
        self.duration.append(duration)
        tokens = 0
        for i, c in picked:
            tokens += c
            self.chunk_request.append(i)
            self.chunk_tokens.append(c)
        self.prefill_tokens.append(tokens)
        self.prefill_seqs.append(len(picked))
        self.decode_count.append(decode_count)
        self.kv_blocks_used.append(blocks_used)
        self.waiting.append(waiting)

    def decodes(self, steps: int, decode_count: int) -> None:
        """The columns a run of ``steps`` decode-only steps shares (their start, duration, blocks
        and queue were appended one by one): no prompt work, ``decode_count`` decodes each."""
        zeros = bytes(8 * steps)
        self.prefill_tokens.frombytes(zeros)
        self.prefill_seqs.frombytes(zeros)
        self.decode_count.extend(itertools.repeat(decode_count, steps))

    def chunks(self, steps: int, decode_count: int, request: int, tokens: int) -> None:
        """The shared columns of ``steps`` steps of ``decode_count`` decodes and one prompt chunk
        of ``tokens`` tokens of ``request`` each (start, duration, blocks and queue appended)."""
        self.prefill_tokens.extend(itertools.repeat(tokens, steps))
        self.prefill_seqs.extend(itertools.repeat(1, steps))
        self.decode_count.extend(itertools.repeat(decode_count, steps))
        self.chunk_request.extend(itertools.repeat(request, steps))
        self.chunk_tokens.extend(itertools.repeat(tokens, steps))


@dataclass(frozen=True, eq=False)
class IterationLog:
    """One row per engine step (numpy arrays, seconds and tokens).

    Attributes
    ----------
    start_s, duration_s : when the step began and how long it ran.
    batch_size : sequences in the step (decodes + sequences with a prompt chunk).
    prefill_tokens : prompt tokens processed.
    prefill_seqs : sequences with a prompt chunk.
    decode_count : decoding sequences (one token each).
    kv_blocks_used : blocks held when the step started (after any preemption and admission).
    waiting : requests waiting for admission when the step started.
    chunk_offsets, chunk_request, chunk_tokens : every prompt chunk of every step (CSR): the
        chunks of step ``j`` are ``chunk_request[chunk_offsets[j]:chunk_offsets[j + 1]]`` (workload
        rows, in the order the policy picked them) with their tokens in ``chunk_tokens``.
    """

    start_s: np.ndarray
    duration_s: np.ndarray
    batch_size: np.ndarray
    prefill_tokens: np.ndarray
    prefill_seqs: np.ndarray
    decode_count: np.ndarray
    kv_blocks_used: np.ndarray
    waiting: np.ndarray
    chunk_offsets: np.ndarray
    chunk_request: np.ndarray
    chunk_tokens: np.ndarray

    def __len__(self) -> int:
        return int(self.start_s.size)

    def step_chunks(self, j: int) -> list[tuple[int, int]]:
        """The prompt chunks of step ``j``: ``[(workload row, tokens), ...]`` in the order picked."""
        a, b = int(self.chunk_offsets[j]), int(self.chunk_offsets[j + 1])
        return list(zip(self.chunk_request[a:b].tolist(), self.chunk_tokens[a:b].tolist(), strict=True))

    @property
    def end_s(self) -> np.ndarray:
        """When each step ended, seconds."""
        return self.start_s + self.duration_s


@dataclass(frozen=True, eq=False)
class SimResult:
    """What a simulation produced.

    Attributes
    ----------
    timelines : :class:`vidya_lab.slo.Timelines` of every request that finished or was rejected
        (``request_id`` = its row in the workload), with per-token emit times.
    reject_reason : one label per timeline (``""`` for finished requests).
    in_flight_ids : workload rows still waiting or running when the simulation stopped.
    arrived : requests that arrived before the stop (the workload rows simulated).
    iterations : the :class:`IterationLog`.
    preemptions : how many times a request was preempted (KV pool full).
    end_s : simulated time at the stop, seconds.
    wall_s : wall-clock time the simulation took, seconds.
    kv_blocks_total : the pool size, blocks.
    kv_blocks_free_end : blocks free at the stop (equals the total after a full drain: no leak).
    config : the :class:`SchedulerConfig` used.
    """

    timelines: Timelines
    reject_reason: np.ndarray
    in_flight_ids: np.ndarray
    arrived: int
    iterations: IterationLog
    preemptions: int
    end_s: float
    wall_s: float
    kv_blocks_total: int
    kv_blocks_free_end: int
    config: SchedulerConfig

    @property
    def finished(self) -> int:
        return int(np.count_nonzero(self.timelines.outcome == FINISHED))

    @property
    def rejected(self) -> int:
        return int(np.count_nonzero(self.timelines.outcome == REJECTED))

    @property
    def in_flight(self) -> int:
        return int(self.in_flight_ids.size)

    def counts(self) -> dict[str, int]:
        """``arrived``, ``finished``, ``rejected``, ``in_flight`` and one count per reject reason.

        Always ``arrived == finished + rejected + in_flight``.
        """
        out = {"arrived": self.arrived, "finished": self.finished, "rejected": self.rejected,
               "in_flight": self.in_flight}
        for reason in REJECT_REASONS:
            out[f"rejected_{reason}"] = int(np.count_nonzero(self.reject_reason == reason))
        return out

    @property
    def busy_fraction(self) -> float:
        """Fraction of the simulated time the engine was running a step (0..1)."""
        return float(self.iterations.duration_s.sum() / self.end_s) if self.end_s > 0 else 0.0

    def summary(self) -> dict:
        """The JSON object of ``vidya-lab simulate``.

        Keys: ``arrived``, ``finished``, ``rejected``, ``in_flight`` (counts); ``ttft_s``,
        ``tpot_s``, ``e2e_s`` (:func:`vidya_lab.slo.percentile_summary` over finished requests,
        seconds); ``itl_s`` (``p50``, ``p99``, ``max`` over every gap between consecutive tokens of
        every finished request, seconds; ``null`` if there is none); ``wall_s``; and extras:
        ``rejected_by_reason``, ``preemptions``, ``iterations``, ``busy_fraction``,
        ``simulated_s``.
        """
        t = self.timelines
        s = summarize(t)
        gaps = itl_s(t)
        if gaps.size:
            itl = {"p50": float(np.percentile(gaps, 50)), "p99": float(np.percentile(gaps, 99)),
                   "max": float(gaps.max())}
        else:
            itl = {"p50": None, "p99": None, "max": None}
        c = self.counts()
        return {"arrived": c["arrived"], "finished": c["finished"], "rejected": c["rejected"],
                "in_flight": c["in_flight"], "ttft_s": s["ttft_s"], "tpot_s": s["tpot_s"],
                "e2e_s": s["e2e_s"], "itl_s": itl, "wall_s": self.wall_s,
                "rejected_by_reason": {r: c[f"rejected_{r}"] for r in REJECT_REASONS},
                "preemptions": self.preemptions, "iterations": len(self.iterations),
                "busy_fraction": self.busy_fraction, "simulated_s": self.end_s}


def collect(eng, w: Workload, cfg: SchedulerConfig, wall_before: float) -> SimResult:
    """A :class:`SimResult` from the state of a finished :class:`~vidya_lab.admission.engine.Engine`
    run on workload ``w``; ``wall_before`` is the wall time the run took, seconds."""
    t0 = time.perf_counter()
    book = eng.book
    outcome = np.asarray(book.outcome, dtype=np.int8)
    done = np.flatnonzero(outcome >= 0)
    in_flight = np.flatnonzero(outcome < 0)
    fin = outcome[done] == FINISHED
    tt, offsets = _token_times(book, eng.decoders.rounds, done, fin)
    timelines = Timelines(
        request_id=done.astype(np.int64), arrival_s=w.arrival_s[done].astype(float),
        admitted_s=np.asarray(book.admit_t, dtype=float)[done],
        first_token_s=np.asarray(book.first_t, dtype=float)[done],
        finish_s=np.asarray(book.fin_t, dtype=float)[done],
        output_tokens=np.where(fin, w.output_tokens[done], 0).astype(np.int64),
        outcome=outcome[done], klass=w.klass[done], token_times_s=tt, token_offsets=offsets)
    rec = eng.log
    f8, i8 = (lambda a: _column(a, np.float64)), (lambda a: _column(a, np.int64))
    prefill_seqs, decodes = i8(rec.prefill_seqs), i8(rec.decode_count)
    chunk_offsets = np.zeros(prefill_seqs.size + 1, dtype=np.int64)
    np.cumsum(prefill_seqs, out=chunk_offsets[1:])
    log = IterationLog(f8(rec.start), f8(rec.duration), prefill_seqs + decodes,
                       i8(rec.prefill_tokens), prefill_seqs, decodes, i8(rec.kv_blocks_used),
                       i8(rec.waiting), chunk_offsets, i8(rec.chunk_request), i8(rec.chunk_tokens))
    wall = wall_before + (time.perf_counter() - t0)
    return SimResult(timelines=timelines,
                     reject_reason=np.asarray(book.reason, dtype=object)[done].astype(str),
                     in_flight_ids=in_flight.astype(np.int64), arrived=len(w), iterations=log,
                     preemptions=eng.preemptions, end_s=float(eng.end), wall_s=wall,
                     kv_blocks_total=eng.pool.total, kv_blocks_free_end=eng.pool.free, config=cfg)


def _column(values, dtype) -> np.ndarray:
    """A numpy column of an ``array`` the engine wrote (shares its memory), or of a list."""
    if isinstance(values, array):
        return np.frombuffer(values, dtype=dtype) if len(values) else np.empty(0, dtype=dtype)
    return np.asarray(values, dtype=dtype)


def _token_times(book, rounds, done: np.ndarray, fin: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per-token emit times of the requests ``done`` (CSR: flat times, offsets); only finished
    ones (mask ``fin``) have any: [earlier emissions] + [the segment's prefill emission] + rounds."""
    rounds_a = _column(rounds, np.float64)
    jrem = np.asarray(book.jrem, dtype=np.int64)[done]
    r0 = np.asarray(book.r0, dtype=np.int64)[done]
    emit0 = np.asarray(book.emit0, dtype=float)[done]
    pre = book.pre
    pre_len = np.fromiter((len(pre[i]) if pre[i] else 0 for i in done), dtype=np.int64,
                          count=done.size)
    lengths = np.where(fin, pre_len + 1 + jrem, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tt = np.empty(int(offsets[-1]), dtype=float)
    if fin.any():   # request by request: no temporary as large as the token times themselves
        fi = np.flatnonzero(fin)
        base = offsets[fi] + pre_len[fi]
        tt[base] = emit0[fi]
        for b, k, j in zip(base.tolist(), r0[fi].tolist(), jrem[fi].tolist(), strict=True):
            tt[b + 1:b + 1 + j] = rounds_a[k:k + j]
        for j in np.flatnonzero(fin & (pre_len > 0)):
            tt[offsets[j]:offsets[j] + pre_len[j]] = pre[done[j]]
    return tt, offsets
