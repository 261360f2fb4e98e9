"""The replica simulator: one serving replica, one engine iteration at a time (simpy).

Chapter 5 asks why one teacher's 50-page upload froze every student's answer, and what a scheduler
can do about it. This module answers with a discrete-event model of ONE replica at **iteration
level**, the way vLLM's and Sarathi-Serve's schedulers work: each engine step is one simpy event; its
duration is THE cost model, :meth:`vidya_lab.sizing.Replica.step_time_s` fed with
:func:`vidya_lab.sizing.prefill_work` aggregates (nothing here re-derives a step time).

What one iteration does
-----------------------
At each iteration boundary (time ``t``) the scheduler, in this order:

1. takes in the requests that arrived since the last boundary, in arrival order, and applies
   **admission control** to each at its arrival time (see below);
2. sheds waiting requests whose queue deadline has passed (if ``queue_deadline_s`` is set);
3. if decodes will run, makes sure the KV-block pool can hold this step's new tokens (the **KV
   policy**, below), preempting if it must;
4. picks the step's work by the **policy**, and runs it for ``r.step_time_s(...)`` seconds.

At the end of the step every decoding sequence emits one token (all at the step's end time), and a
sequence whose prefill completed emits its first token. A request with ``n`` output tokens finishes
at the step that emits its ``n``-th token. Arrivals during a step wait for the next boundary; an idle
replica jumps to the next arrival.

Policies (:data:`POLICIES`)
---------------------------
``"fcfs"``
    vLLM's original (V0) scheduler: prompts are prefilled **whole**, in arrival order, in
    prefill-only steps of up to ``max_batched_tokens`` tokens (a longer prompt is taken alone);
    whenever a waiting prompt can be admitted, the next step is a prefill step and every running
    decode waits for it. A 40,000-token upload is one step of several seconds: **the freeze**.
``"chunked"``
    Sarathi-Serve's stall-free batching (Agrawal et al., OSDI 2024): every step carries all running
    decodes (one token each) and fills the rest of a token budget of ``chunk_tokens`` with prompt
    chunks, oldest first. No decode ever waits for a whole long prefill; the price is that a long
    prompt is split into many steps, each re-reading the weights and the prompt's KV so far.
``"priority"``
    ``"chunked"`` with the prompt work ordered by class (``class_priority``: lower number first;
    students ahead of uploads by default) instead of by arrival: at each step the admitted partial
    prefills and the head of each class's queue compete by (rank − waited/``aging_s``, arrival). A
    low class can starve while the high class keeps the budget busy; ``aging_s`` lifts a waiting
    request by one class per ``aging_s`` seconds waited (anti-starvation). ``"chunked"`` instead
    finishes the prompts it has started before admitting new ones (vLLM schedules its running
    requests before its waiting queue).

KV memory (:data:`KV_POLICIES`)
-------------------------------
The pool has ``r.kv_blocks`` blocks of ``r.block_tokens`` tokens (the sizing memory model).

``"preempt"`` (vLLM's paged allocation)
    A request is admitted only if its whole prompt's blocks are free with a 1 % watermark left over
    (vLLM's default); decode steps take a new block when a sequence crosses a block boundary. When a
    step needs more blocks than are free, the **newest** admitted request is preempted: its blocks
    are freed, it goes back to the front of its queue, and later its prompt plus the tokens it had
    already generated are prefilled again (**recompute**); the tokens it already streamed stay
    streamed. Never lost.
``"reserve"`` (TensorRT-LLM's "guaranteed no evict")
    A request is admitted only if the blocks for its prompt AND all its output are free; nothing
    is ever preempted, at the price of admitting fewer requests.

Admission control (a request is always counted: finished, rejected, or in flight)
--------------------------------------------------------------------------------
Each arrival is checked in this order; a refused request gets outcome ``"rejected"`` at its arrival
time with a reason (:data:`REJECT_REASONS`), what a client sees as HTTP 429 (too many requests) or
413 (too long):

* ``"too_long"`` — its prompt plus output could never fit in the whole KV pool;
* ``"queue_full"`` — ``max_queue`` requests are already waiting;
* ``"tokens_in_flight"`` — its prompt + output tokens would push the tokens of all accepted,
  unfinished requests above ``max_tokens_in_flight``;
* ``"deadline"`` — shed later: it was still waiting (never admitted) ``queue_deadline_s`` after it
  arrived; its ``finish_s`` is that moment.

At the end ``arrived = finished + rejected + in_flight`` exactly (:meth:`SimResult.counts`).

Queueing-theory mode
--------------------
``service_time_s`` (one time per request) replaces the cost model: with policy ``"fcfs"``,
``max_batch=1`` and one output token per request, a step serves exactly one request for its given
time, and the replica is a single-server FIFO queue: M/M/1 with exponential times, M/D/1 with a fixed
time (the tests check both against :mod:`vidya_lab.queueing`). Same simulator, no fork.

Output
------
:class:`SimResult`: the requests that finished or were rejected as a columnar
:class:`vidya_lab.slo.Timelines` (per-token emit times included, shared by the batch that emitted
them, so ITL is exact), the reasons, the ids still in flight, and the iteration log (start, duration,
batch size, prefill tokens, decode count, KV blocks used, queue length) for plots. Same seed, same
result: the simulator draws no random numbers of its own.

Limits: prefix caching is not modelled (every prompt is prefilled in full; chapter 4 covers the
cache), nor speculative decoding (one token per sequence per step). With pipeline parallelism
(``pp > 1``) a step runs through all stages in turn, as the cost model's step time says; the
micro-batches an engine keeps in flight to fill the pipeline are not modelled, so throughput is
understated for ``pp > 1`` (:func:`vidya_lab.sizing.saturated_throughput` assumes ``pp``
micro-batches in flight).

Speed: bookkeeping is aggregate (the decode set is a count, a context sum and a block-phase
histogram; finishing times are bucketed by step), so a step costs the same whether 2 or 200
sequences decode; see ``benchmarks/bench_simulator.py``.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import simpy

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.scenario import TANVI
from vidya_lab.slo import FINISHED, REJECTED, Timelines, itl_s, percentile_summary, summarize
from vidya_lab.workload import (
    FixedLength,
    Workload,
    _LengthDist,
    as_rng,
    poisson_arrivals,
)

__all__ = [
    "POLICIES",
    "KV_POLICIES",
    "REJECT_REASONS",
    "STUDENT",
    "UPLOAD",
    "DEFAULT_CLASS_PRIORITY",
    "SchedulerConfig",
    "IterationLog",
    "SimResult",
    "simulate",
    "poisson_workload",
    "upload_workload",
    "saturation_rate_per_s",
    "itl_timeline",
    "worst_gap_by_time",
    "window_summary",
    "upload_report",
    "chunked_prefill_time_s",
]

POLICIES: tuple[str, ...] = ("fcfs", "chunked", "priority")
KV_POLICIES: tuple[str, ...] = ("preempt", "reserve")
REJECT_REASONS: tuple[str, ...] = ("too_long", "queue_full", "tokens_in_flight", "deadline")
#: Class labels of the upload scenario.
STUDENT, UPLOAD = "student", "upload"
#: Lower number = scheduled first. Classes not listed get 0 (interactive).
DEFAULT_CLASS_PRIORITY: tuple[tuple[str, int], ...] = ((STUDENT, 0), (UPLOAD, 1))
#: Fraction of the KV pool kept free when admitting under "preempt" (vLLM's default watermark).
WATERMARK_FRACTION = 0.01

_WAIT, _PREFILL, _DECODE, _DONE = 0, 1, 2, 3


@dataclass(frozen=True)
class SchedulerConfig:
    """How the replica schedules, what it admits, and what it does when memory runs out.

    Parameters
    ----------
    policy : ``"fcfs"``, ``"chunked"`` or ``"priority"`` (module docstring).
    chunk_tokens : token budget of one step under ``"chunked"``/``"priority"`` (decodes count one
        token each; the rest goes to prompt chunks), tokens (≥ 1). Sarathi-Serve uses 512–2048.
    max_batch : most sequences admitted at once (prefilling + decoding); ``None`` → the replica's
        ``max_num_seqs``.
    max_batched_tokens : prompt tokens in one ``"fcfs"`` prefill step; ``None`` → the replica's
        ``max_batched_tokens`` (a single longer prompt is still taken, alone).
    kv_policy : ``"preempt"`` or ``"reserve"`` (module docstring).
    max_queue : most requests waiting for admission; an arrival finding this many is rejected
        (``"queue_full"``). ``None``: no cap.
    max_tokens_in_flight : most prompt + output tokens of accepted, unfinished requests; ``None``:
        no cap.
    queue_deadline_s : a request still waiting this long after arriving is shed (``"deadline"``),
        seconds (> 0); ``None``: never.
    class_priority : ``{class label: rank}``, lower first (``"priority"`` only); unlisted classes
        rank 0. Default: students 0, uploads 1.
    aging_s : under ``"priority"``, a waiting request moves up one rank per ``aging_s`` seconds
        waited (> 0); ``None``: strict priority (a low class can starve).
    """

    policy: str = "chunked"
    chunk_tokens: int = 2048
    max_batch: int | None = None
    max_batched_tokens: int | None = None
    kv_policy: str = "preempt"
    max_queue: int | None = None
    max_tokens_in_flight: int | None = None
    queue_deadline_s: float | None = None
    class_priority: Mapping[str, int] | tuple[tuple[str, int], ...] = DEFAULT_CLASS_PRIORITY
    aging_s: float | None = None

    def __post_init__(self) -> None:
        v.check_choice("policy", self.policy, POLICIES)
        v.check_int("chunk_tokens", self.chunk_tokens, minimum=1)
        if self.max_batch is not None:
            v.check_int("max_batch", self.max_batch, minimum=1)
        if self.max_batched_tokens is not None:
            v.check_int("max_batched_tokens", self.max_batched_tokens, minimum=1)
        v.check_choice("kv_policy", self.kv_policy, KV_POLICIES)
        if self.max_queue is not None:
            v.check_int("max_queue", self.max_queue, minimum=1)
        if self.max_tokens_in_flight is not None:
            v.check_int("max_tokens_in_flight", self.max_tokens_in_flight, minimum=1)
        if self.queue_deadline_s is not None:
            v.check_real("queue_deadline_s", self.queue_deadline_s, minimum=0.0,
                         min_inclusive=False)
        if self.aging_s is not None:
            v.check_real("aging_s", self.aging_s, minimum=0.0, min_inclusive=False)
        cp = self.class_priority
        items = tuple(cp.items()) if isinstance(cp, Mapping) else tuple(cp)
        for pair in items:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise TypeError(f"class_priority must map class labels (str) to ranks (int), "
                                f"got {pair!r}")
            v.check_int(f"class_priority[{pair[0]!r}]", pair[1])
        object.__setattr__(self, "class_priority", tuple(sorted(items)))

    def rank_of(self, klass: str) -> int:
        """The rank of a class label (0 if unlisted)."""
        return dict(self.class_priority).get(klass, 0)


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
    """

    start_s: np.ndarray
    duration_s: np.ndarray
    batch_size: np.ndarray
    prefill_tokens: np.ndarray
    prefill_seqs: np.ndarray
    decode_count: np.ndarray
    kv_blocks_used: np.ndarray
    waiting: np.ndarray

    def __len__(self) -> int:
        return int(self.start_s.size)

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


# ----------------------------------------------------------------------------- the engine

class _Engine:
    """The mutable state of one run. Per-request state lives in plain lists (fast scalar access)."""

    def __init__(self, r: sizing.Replica, w: Workload, cfg: SchedulerConfig, horizon_s: float,
                 drain: bool, service: list[float] | None) -> None:
        self.r, self.cfg, self.horizon, self.drain, self.service = r, cfg, horizon_s, drain, service
        self.n = n = len(w)
        self.arr = w.arrival_s.tolist()
        self.p0 = w.prompt_tokens.tolist()
        self.m0 = w.output_tokens.tolist()
        self.B = B = r.block_tokens
        self.total_blocks = r.kv_blocks
        self.free = self.total_blocks
        self.reserve = cfg.kv_policy == "reserve"
        self.watermark = 0 if self.reserve else int(math.ceil(WATERMARK_FRACTION * self.total_blocks))
        self.max_batch = cfg.max_batch if cfg.max_batch is not None else r.max_num_seqs
        self.fcfs_budget = (cfg.max_batched_tokens if cfg.max_batched_tokens is not None
                            else r.max_batched_tokens)
        self.policy = cfg.policy
        # per request
        self.peff = list(self.p0)          # tokens to prefill (prompt, + generated after preemption)
        self.pdone = [0] * n               # tokens of peff prefilled so far
        self.rem = list(self.m0)           # tokens still to emit
        self.state = [_WAIT] * n
        self.blocks = [0] * n              # blocks held while prefilling (or reserved)
        self.admit_t = [math.nan] * n
        self.first_t = [math.nan] * n
        self.fin_t = [math.nan] * n
        self.outcome = [-1] * n
        self.reason = [""] * n
        self.r0 = [0] * n                  # first decode round of the current decode segment
        self.jrem = [0] * n                # tokens emitted by decode rounds in that segment
        self.emit0 = [math.nan] * n        # time of the segment's prefill emission
        self.pre: list[list[float] | None] = [None] * n   # emissions before a preemption
        self.epoch = [0] * n
        self.ever_admitted = [False] * n
        # queues: one deque per rank (priority) or a single FIFO; ranks looked up per class label
        if cfg.policy == "priority":
            labels, inverse = np.unique(w.klass, return_inverse=True)
            label_rank = [cfg.rank_of(str(k)) for k in labels]
            ranks = sorted(set(label_rank)) or [0]
            index = {rk: q for q, rk in enumerate(ranks)}
            self.qof = [index[label_rank[j]] for j in inverse.tolist()]
            self.qrank = ranks
        else:
            self.qof = [0] * n
            self.qrank = [0]
        self.queues = [deque() for _ in self.qrank]
        self.n_waiting = 0
        self.tokens_in_flight = 0
        self.running: dict[int, None] = {}   # admitted, in admission order (newest last)
        self.prefilling: list[int] = []      # admitted, prompt not yet complete (admission order)
        # decode set aggregates
        self.n_dec = 0
        self.off_sum = 0
        self.phase = [0] * B               # decoders by (offset mod B): who needs a block when
        self.off = [0] * n
        self.buckets: dict[int, list[tuple[int, int]]] = {}
        self.rounds: list[float] = []      # end time of each decode round
        self.nxt = 0                       # next arrival to take in
        self.preemptions = 0
        # iteration log
        self.log_start: list[float] = []
        self.log_dur: list[float] = []
        self.log_pf: list[int] = []
        self.log_pfs: list[int] = []
        self.log_dec: list[int] = []
        self.log_blocks: list[int] = []
        self.log_wait: list[int] = []

    # ------------------------------------------------------------------ request life
    def _max_blocks(self, i: int) -> int:
        return -(-(self.peff[i] + self.rem[i] - 1) // self.B)

    def _reject(self, i: int, t: float, reason: str, accepted: bool) -> None:
        self.state[i] = _DONE
        self.outcome[i] = REJECTED
        self.fin_t[i] = t
        self.reason[i] = reason
        if accepted:
            self.tokens_in_flight -= self.p0[i] + self.m0[i]

    def _finish(self, i: int, t: float) -> None:
        self.state[i] = _DONE
        self.outcome[i] = FINISHED
        self.fin_t[i] = t
        del self.running[i]
        self.tokens_in_flight -= self.p0[i] + self.m0[i]

    def _intake(self, t: float) -> None:
        cfg, arr, deadline = self.cfg, self.arr, self.cfg.queue_deadline_s
        while self.nxt < self.n and arr[self.nxt] <= t:
            i = self.nxt
            self.nxt += 1
            a = arr[i]
            if deadline is not None:
                self._shed(a)
            size = self.p0[i] + self.m0[i]
            if -(-(size - 1) // self.B) + self.watermark > self.total_blocks:
                self._reject(i, a, "too_long", False)
            elif cfg.max_queue is not None and self.n_waiting >= cfg.max_queue:
                self._reject(i, a, "queue_full", False)
            elif (cfg.max_tokens_in_flight is not None
                  and self.tokens_in_flight + size > cfg.max_tokens_in_flight):
                self._reject(i, a, "tokens_in_flight", False)
            else:
                self.tokens_in_flight += size
                self.n_waiting += 1
                self.queues[self.qof[i]].append(i)
        if deadline is not None:
            self._shed(t)

    def _shed(self, t: float) -> None:
        """Shed never-admitted waiting requests whose deadline is at or before ``t``."""
        d = self.cfg.queue_deadline_s
        for q in self.queues:
            j = 0
            while j < len(q):
                i = q[j]
                if self.ever_admitted[i]:
                    j += 1
                    continue
                if self.arr[i] + d > t:
                    break
                del q[j]
                self.n_waiting -= 1
                self._reject(i, self.arr[i] + d, "deadline", True)

    def _admit(self, i: int, now: float) -> bool:
        """Admit request ``i`` (reserve its blocks) if the batch and the pool allow it."""
        if len(self.running) >= self.max_batch:
            return False
        need = self._max_blocks(i) if self.reserve else -(-self.peff[i] // self.B)
        if need + self.watermark > self.free:
            return False
        self.free -= need
        self.blocks[i] = need
        self.state[i] = _PREFILL
        self.running[i] = None
        self.prefilling.append(i)
        self.n_waiting -= 1
        if not self.ever_admitted[i]:
            self.ever_admitted[i] = True
            self.admit_t[i] = now
        return True

    def _leave_decode(self, i: int, kv_tokens: int) -> None:
        """Take ``i`` out of the decode set, freeing its blocks."""
        o = self.off[i]
        self.n_dec -= 1
        self.off_sum -= o
        self.phase[o % self.B] -= 1
        self.free += self.blocks[i] if self.reserve else -(-kv_tokens // self.B)

    def _preempt_newest(self, k: int) -> None:
        """Preempt the newest admitted request at a boundary before decode round ``k``."""
        i, _ = self.running.popitem()
        self.preemptions += 1
        if self.state[i] == _DECODE:
            done = k - self.r0[i]                      # decode rounds it ran in this segment
            self._leave_decode(i, self.peff[i] + done)
            self.epoch[i] += 1
            times = (self.pre[i] or []) + [self.emit0[i]] + self.rounds[self.r0[i]:k]
            self.pre[i] = times
            self.rem[i] = self.jrem[i] - done
            self.peff[i] = self.p0[i] + len(times)     # recompute prompt + generated tokens
            self.queues[self.qof[i]].appendleft(i)
        else:                                          # prefilling: back to the front of its queue
            self.free += self.blocks[i]
            self.prefilling.remove(i)
            self.queues[self.qof[i]].appendleft(i)
        self.blocks[i] = 0
        self.pdone[i] = 0
        self.state[i] = _WAIT
        self.n_waiting += 1

    def _complete_prefill(self, i: int, t: float, next_round: int) -> None:
        """Request ``i``'s prefill finished at ``t``: it emits a token and starts decoding."""
        if math.isnan(self.first_t[i]):
            self.first_t[i] = t
        self.emit0[i] = t
        self.rem[i] -= 1
        if self.rem[i] == 0:
            self.jrem[i] = 0
            self.r0[i] = next_round
            self.free += self.blocks[i]
            self.blocks[i] = 0
            self._finish(i, t)
            return
        self.state[i] = _DECODE
        self.r0[i] = next_round
        self.jrem[i] = self.rem[i]
        o = self.peff[i] - next_round + 1              # context at round k is o + k
        self.off[i] = o
        self.n_dec += 1
        self.off_sum += o
        self.phase[o % self.B] += 1
        if not self.reserve:                           # its prompt blocks join the decode count
            self.blocks[i] = 0
        self.buckets.setdefault(next_round + self.rem[i] - 1, []).append((i, self.epoch[i]))

    # ------------------------------------------------------------------ choosing prefill work
    def _fcfs_prefills(self, now: float) -> list[tuple[int, int]]:
        q = self.queues[0]
        picked: list[tuple[int, int]] = []
        tokens = 0
        while q:
            i = q[0]
            c = self.peff[i]
            if picked and tokens + c > self.fcfs_budget:
                break
            if not self._admit(i, now):
                break
            q.popleft()
            picked.append((i, c))
            tokens += c
        self.prefilling.clear()                        # whole prompts: done within the step
        return picked

    def _key(self, i: int, rank: int, now: float) -> tuple[float, float]:
        aging = self.cfg.aging_s
        return (rank - (now - self.arr[i]) / aging if aging is not None else rank, self.arr[i])

    def _chunk_prefills(self, now: float, budget: int) -> list[tuple[int, int]]:
        """Prompt chunks for this step within ``budget`` tokens.

        ``"chunked"``: the admitted partial prefills first (admission order, as vLLM schedules its
        running queue before its waiting queue), then waiting requests in arrival order.
        ``"priority"``: admitted partial prefills and the head of each class queue compete by
        (rank − waited/aging_s, arrival); the lowest goes first.
        A waiting request that cannot be admitted (batch full, KV pool short) stops the walk: the
        head of the line waits, nobody jumps it.
        """
        picked: list[tuple[int, int]] = []
        peff, pdone = self.peff, self.pdone
        if self.policy == "chunked":
            for i in self.prefilling:
                if budget <= 0:
                    return picked
                c = min(budget, peff[i] - pdone[i])
                picked.append((i, c))
                budget -= c
            q = self.queues[0]
            while budget > 0 and q:
                i = q[0]
                if not self._admit(i, now):
                    break
                q.popleft()
                c = min(budget, peff[i])
                picked.append((i, c))
                budget -= c
            return picked
        # priority
        qrank = self.qrank
        partial = sorted(self.prefilling,
                         key=lambda i: self._key(i, qrank[self.qof[i]], now))
        pi = 0
        while budget > 0:
            best, src = None, -2
            if pi < len(partial):
                i = partial[pi]
                best, src = self._key(i, qrank[self.qof[i]], now), -1
            for j, q in enumerate(self.queues):
                if q:
                    key = self._key(q[0], qrank[j], now)
                    if best is None or key < best:
                        best, src = key, j
            if best is None:
                break
            if src == -1:
                i = partial[pi]
                pi += 1
                c = min(budget, peff[i] - pdone[i])
            else:
                q = self.queues[src]
                i = q[0]
                if not self._admit(i, now):
                    break
                q.popleft()
                c = min(budget, peff[i])
            picked.append((i, c))
            budget -= c
        return picked

    # ------------------------------------------------------------------ the process
    def run(self, env: simpy.Environment):
        r_step = self.r.step_time_s
        prefill_work = sizing.prefill_work
        B = self.B
        rounds, buckets, phase = self.rounds, self.buckets, self.phase
        fcfs = self.policy == "fcfs"
        chunk = self.cfg.chunk_tokens
        while True:
            now = env.now
            self._intake(now)
            if not self.drain and now >= self.horizon:
                break
            k = len(rounds)
            picked: list[tuple[int, int]] = []
            decode = False
            if fcfs:
                if self.queues[0] and len(self.running) < self.max_batch:
                    picked = self._fcfs_prefills(now)
                decode = not picked and self.n_dec > 0
            else:
                decode = self.n_dec > 0
            if decode and not self.reserve:
                need = phase[(1 - k) % B]
                while need > self.free:
                    self._preempt_newest(k)
                    need = phase[(1 - k) % B]
                self.free -= need
                decode = self.n_dec > 0
            if not fcfs:
                budget = chunk - self.n_dec if decode else chunk
                if budget > 0 and (self.prefilling or any(self.queues)):
                    picked = self._chunk_prefills(now, budget)
            if not picked and not decode:
                if self.nxt < self.n:                  # idle: wait for the next arrival
                    nxt_t = self.arr[self.nxt]
                    if not self.drain and nxt_t >= self.horizon:
                        yield env.timeout(self.horizon - now)
                        continue
                    yield env.timeout(nxt_t - now)
                    continue
                break                                  # nothing left at all
            n_dec = self.n_dec if decode else 0
            if self.service is not None:
                dur = sum(self.service[i] for i, _ in picked)
            else:
                pdone = self.pdone
                pt, pairs, kvt, seqs = prefill_work([(c, pdone[i]) for i, c in picked]) \
                    if picked else (0.0, 0.0, 0.0, 0.0)
                dur = r_step(pt, pairs, kvt, seqs, n_dec, self.off_sum + n_dec * k if n_dec else 0)
            self.log_start.append(now)
            self.log_dur.append(dur)
            ptok = 0
            for _, c in picked:
                ptok += c
            self.log_pf.append(ptok)
            self.log_pfs.append(len(picked))
            self.log_dec.append(n_dec)
            self.log_blocks.append(self.total_blocks - self.free)
            self.log_wait.append(self.n_waiting)
            yield env.timeout(dur)
            t = env.now
            if n_dec:
                rounds.append(t)
                for i, ep in buckets.pop(k, ()):
                    if ep == self.epoch[i] and self.state[i] == _DECODE:
                        self._leave_decode(i, self.peff[i] + k - self.r0[i] + 1)
                        self._finish(i, t)
            next_round = len(rounds)
            completed = 0
            for i, c in picked:
                self.pdone[i] += c
                if self.pdone[i] >= self.peff[i]:
                    completed += 1
                    self._complete_prefill(i, t, next_round)
            if not fcfs and completed:
                self.prefilling = [i for i in self.prefilling if self.state[i] == _PREFILL]
        self.end = env.now
        self._intake(self.horizon if not self.drain else env.now)


def _check_workload(w) -> Workload:
    if not isinstance(w, Workload):
        raise TypeError(f"workload must be a vidya_lab.workload.Workload, got {type(w).__name__}")
    if len(w) and int(w.prompt_tokens.min()) < 1:
        i = int(np.argmin(w.prompt_tokens))
        raise ValueError(f"every request needs prompt_tokens >= 1; request {i} has "
                         f"{int(w.prompt_tokens[i])}")
    if len(w) and int(w.output_tokens.min()) < 1:
        i = int(np.argmin(w.output_tokens))
        raise ValueError(f"every request needs output_tokens >= 1; request {i} has "
                         f"{int(w.output_tokens[i])}")
    return w


def simulate(replica: sizing.Replica, workload: Workload, config: SchedulerConfig | None = None,
             *, duration_s: float | None = None, drain: bool = True,
             service_time_s=None) -> SimResult:
    """Simulate one replica serving a workload, one engine iteration per simpy event.

    Parameters
    ----------
    replica : the :class:`vidya_lab.sizing.Replica` (cost model, KV pool, engine caps).
    workload : a :class:`vidya_lab.workload.Workload` (every request needs ≥ 1 prompt and ≥ 1
        output token); see :func:`poisson_workload` and :func:`upload_workload`.
    config : the :class:`SchedulerConfig` (default: chunked, 512-token budget, vLLM-style KV).
    duration_s : only requests arriving before this time (seconds) are simulated; ``None``: all.
    drain : ``True`` (default) runs until every admitted request has finished or been rejected;
        ``False`` starts no step at or after ``duration_s`` (the step under way completes), and
        whatever is still waiting or running is reported in flight.
    service_time_s : queueing-theory mode (module docstring): one service time per workload row,
        seconds (> 0), replacing the cost model; needs policy ``"fcfs"`` and one output token per
        request.

    Returns
    -------
    SimResult. Conservation ``arrived = finished + rejected + in_flight`` holds exactly.
    """
    if not isinstance(replica, sizing.Replica):
        raise TypeError(f"replica must be a vidya_lab.sizing.Replica, got {type(replica).__name__}")
    w = _check_workload(workload)
    cfg = SchedulerConfig() if config is None else config
    if not isinstance(cfg, SchedulerConfig):
        raise TypeError(f"config must be a SchedulerConfig, got {type(cfg).__name__}")
    if replica.kv_blocks < 1:
        raise ValueError(f"{replica.model.id} on {replica.n_gpus} x {replica.gpu.id} leaves no KV "
                         f"memory (kv_blocks = 0); choose more GPUs per replica or a smaller model")
    if duration_s is None:
        horizon = w.duration_s + 1.0 if len(w) else 0.0
        if not drain:
            raise ValueError("drain=False needs duration_s (when to stop)")
    else:
        horizon = v.check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
        w = w[w.arrival_s < horizon]
    service = None
    if service_time_s is not None:
        st = np.asarray(service_time_s, dtype=float)
        full = len(workload)
        if st.shape != (full,):
            raise ValueError(f"service_time_s must have one time per workload request ({full}), "
                             f"got shape {st.shape}")
        if not np.all(np.isfinite(st)) or np.any(st <= 0):
            raise ValueError("service_time_s must be finite and > 0 seconds")
        if cfg.policy != "fcfs":
            raise ValueError(f"service_time_s needs policy 'fcfs', got {cfg.policy!r}")
        if len(w) and int(w.output_tokens.max()) != 1:
            raise ValueError("service_time_s needs output_tokens == 1 for every request (each "
                             "request is one step)")
        service = st[:len(w)].tolist()
    start = time.perf_counter()
    eng = _Engine(replica, w, cfg, horizon, drain, service)
    env = simpy.Environment()
    env.process(eng.run(env))
    env.run()
    res = _result(eng, w, cfg, time.perf_counter() - start)
    return res


def _result(eng: _Engine, w: Workload, cfg: SchedulerConfig, wall_before: float) -> SimResult:
    t0 = time.perf_counter()
    outcome = np.asarray(eng.outcome, dtype=np.int8)
    done = np.flatnonzero(outcome >= 0)
    in_flight = np.flatnonzero(outcome < 0)
    fin = outcome[done] == FINISHED
    # per-token emit times, CSR: [earlier emissions] + [segment's prefill emission] + rounds
    rounds = np.asarray(eng.rounds, dtype=float)
    jrem = np.asarray(eng.jrem, dtype=np.int64)[done]
    r0 = np.asarray(eng.r0, dtype=np.int64)[done]
    emit0 = np.asarray(eng.emit0, dtype=float)[done]
    pre_len = np.fromiter((len(eng.pre[i]) if eng.pre[i] else 0 for i in done), dtype=np.int64,
                          count=done.size)
    lengths = np.where(fin, pre_len + 1 + jrem, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tt = np.empty(int(offsets[-1]), dtype=float)
    if fin.any():
        fi = np.flatnonzero(fin)
        tt[offsets[fi] + pre_len[fi]] = emit0[fi]
        dj = jrem[fi]
        rep = np.repeat(fi, dj)
        within = np.arange(rep.size) - np.repeat(np.cumsum(dj) - dj, dj)
        tt[offsets[rep] + pre_len[rep] + 1 + within] = rounds[r0[rep] + within]
        for j in np.flatnonzero(fin & (pre_len > 0)):
            tt[offsets[j]:offsets[j] + pre_len[j]] = eng.pre[done[j]]
    ids = done.astype(np.int64)
    timelines = Timelines(
        request_id=ids, arrival_s=w.arrival_s[done].astype(float),
        admitted_s=np.asarray(eng.admit_t, dtype=float)[done],
        first_token_s=np.asarray(eng.first_t, dtype=float)[done],
        finish_s=np.asarray(eng.fin_t, dtype=float)[done],
        output_tokens=np.where(fin, w.output_tokens[done], 0).astype(np.int64),
        outcome=outcome[done], klass=w.klass[done], token_times_s=tt, token_offsets=offsets)
    log = IterationLog(np.asarray(eng.log_start, dtype=float), np.asarray(eng.log_dur, dtype=float),
                       np.asarray(eng.log_pfs, dtype=np.int64) + np.asarray(eng.log_dec,
                                                                            dtype=np.int64),
                       np.asarray(eng.log_pf, dtype=np.int64), np.asarray(eng.log_pfs, dtype=np.int64),
                       np.asarray(eng.log_dec, dtype=np.int64),
                       np.asarray(eng.log_blocks, dtype=np.int64),
                       np.asarray(eng.log_wait, dtype=np.int64))
    wall = wall_before + (time.perf_counter() - t0)
    return SimResult(timelines=timelines, reject_reason=np.asarray(eng.reason, dtype=object)[done]
                     .astype(str), in_flight_ids=in_flight.astype(np.int64), arrived=len(w),
                     iterations=log, preemptions=eng.preemptions, end_s=float(eng.end),
                     wall_s=wall, kv_blocks_total=eng.total_blocks,
                     kv_blocks_free_end=eng.free, config=cfg)


# ----------------------------------------------------------------------------- workloads

def _length(name: str, value) -> _LengthDist:
    if isinstance(value, _LengthDist):
        return value
    return FixedLength(v.check_int(name, value, minimum=1))


def poisson_workload(rate_per_s: float, duration_s: float, *, seed: int | np.random.Generator,
                     prompt_tokens=TANVI.prompt_tokens_mean,
                     output_tokens=TANVI.answer_tokens_mean, klass: str = STUDENT) -> Workload:
    """Students asking questions: Poisson arrivals with the given lengths.

    Parameters
    ----------
    rate_per_s : requests per second.
    duration_s : window, seconds.
    seed : int or Generator (same seed, same workload).
    prompt_tokens, output_tokens : an int (every request the same) or a length distribution from
        :mod:`vidya_lab.workload`; defaults: the scenario's mean prompt and answer lengths.
    klass : the class label of every request.
    """
    rng = as_rng(seed)
    pdist = _length("prompt_tokens", prompt_tokens)
    odist = _length("output_tokens", output_tokens)
    arr = poisson_arrivals(rate_per_s, duration_s, seed=rng)
    n = arr.size
    p = np.maximum(pdist.sample(n, rng), 1)
    o = np.maximum(odist.sample(n, rng), 1)
    return Workload.from_arrays(arr, p, o, klass=np.full(n, klass))


def upload_workload(rate_per_s: float, duration_s: float, *, seed: int | np.random.Generator,
                    upload_at_s: float, upload_tokens: int = TANVI.upload_tokens,
                    upload_output_tokens: int = TANVI.answer_tokens_mean,
                    prompt_tokens=TANVI.prompt_tokens_mean,
                    output_tokens=TANVI.answer_tokens_mean) -> Workload:
    """The chapter's scenario: students (class ``"student"``) plus ONE long upload (``"upload"``).

    The upload is a teacher's document of ``upload_tokens`` tokens (default the scenario's 50-page
    upload) arriving at ``upload_at_s`` seconds and asking for ``upload_output_tokens`` tokens.
    Students are :func:`poisson_workload` at ``rate_per_s``.
    """
    at = v.check_real("upload_at_s", upload_at_s, minimum=0.0)
    dur = v.check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    if at >= dur:
        raise ValueError(f"upload_at_s ({at}) must be inside the window [0, duration_s = {dur})")
    up = v.check_int("upload_tokens", upload_tokens, minimum=1)
    upo = v.check_int("upload_output_tokens", upload_output_tokens, minimum=1)
    s = poisson_workload(rate_per_s, dur, seed=seed, prompt_tokens=prompt_tokens,
                         output_tokens=output_tokens)
    return Workload.from_arrays(np.append(s.arrival_s, at), np.append(s.prompt_tokens, up),
                                np.append(s.output_tokens, upo),
                                klass=np.append(s.klass, UPLOAD).astype(str))


def saturation_rate_per_s(replica: sizing.Replica, prompt_tokens: int, output_tokens: int) -> float:
    """Requests/s one replica sustains when saturated: output tokens/s ÷ output tokens per request.

    From :func:`vidya_lab.sizing.saturated_throughput` (the cost model's steady state); a load of
    ``u × this`` keeps the replica about ``u`` busy.
    """
    osl = v.check_int("output_tokens", output_tokens, minimum=1)
    sat = sizing.saturated_throughput(replica, prompt_tokens, osl)
    return sat["output_tokens_per_s"] / osl


# ----------------------------------------------------------------------------- reading results

def itl_timeline(result: SimResult, klass: str | None = STUDENT) -> tuple[np.ndarray, np.ndarray]:
    """Every inter-token gap of finished requests, with the time it ended (for plots).

    Returns ``(emit_s, gap_s)``: for each consecutive pair of tokens of a request (of class
    ``klass``; ``None`` = all), the emit time of the later token and the gap, seconds, sorted by time.
    """
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
    emit, gaps = itl_timeline(result, klass)
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


def chunked_prefill_time_s(replica: sizing.Replica, prompt_tokens: int, chunk_tokens: int) -> float:
    """Time to prefill one prompt alone, in chunks of ``chunk_tokens``, seconds.

    Σ over chunks of :func:`vidya_lab.sizing.iteration_time_s` with ``prefill=[(c, k)]`` (chunk ``c``
    after ``k`` tokens already cached): what the prompt costs when no other work shares its steps.
    Smaller chunks take more steps; each pays the step overhead and, when it is memory-bound, a
    full read of the weights; the attention work is the same.
    """
    if not isinstance(replica, sizing.Replica):
        raise TypeError(f"replica must be a vidya_lab.sizing.Replica, got {type(replica).__name__}")
    p = v.check_int("prompt_tokens", prompt_tokens, minimum=1)
    c = v.check_int("chunk_tokens", chunk_tokens, minimum=1)
    total, done = 0.0, 0
    while done < p:
        step = min(c, p - done)
        total += sizing.iteration_time_s(replica, prefill=[(step, done)])
        done += step
    return total
