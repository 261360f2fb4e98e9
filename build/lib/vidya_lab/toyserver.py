"""A toy LLM server: enough to produce honest request timelines for chapter 1.

**A teaching stand-in.** Chapter 1 needs timelines that behave like a real server's (queues build up
with load, tails grow faster than means, a busy batch slows every stream) before the book has derived
a cost model (chapter 2) or built the iteration-level replica simulator (:mod:`vidya_lab.admission`,
chapter 5). Use those for any planning; use this to learn what the metrics mean.

The model, exactly
------------------
One replica runs continuous batching with at most ``max_batch`` requests in its batch. Time advances in
*steps*. At the start of each step the scheduler (FIFO):

1. turns away arrivals that find ``max_queue`` requests already waiting (outcome ``rejected``,
   ``finish_s`` = arrival time);
2. drops waiting requests that have waited longer than ``queue_timeout_s`` (outcome ``timed_out``,
   ``finish_s = arrival + queue_timeout_s``: the moment the user gave up);
3. admits waiting requests in arrival order while the batch has room (``admitted_s`` = step start).

The step then lasts ``step_base_s + step_per_seq_s × batch + prefill_s_per_token × P`` seconds, where
``batch`` counts every request in the step and ``P`` the prompt tokens of the requests admitted at its
start (their whole prefill runs in this step). At the end of the step each request in the batch emits
one token: a newly admitted request its first token, the others their next one. A request leaves after
its last token. Arrivals during a step wait for the next step boundary; an idle server starts a step
the moment a request arrives.

So TTFT = queue wait + one (prefill-heavy) step, TPOT = the mean step time while the request decodes,
and a fuller batch makes every step — every stream — slower. No request is lost: each ends
``finished``, ``rejected`` or ``timed_out`` (the simulation runs until the queue and batch are empty).
"""

from __future__ import annotations

import functools
import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from vidya_lab._validate import check_bool, check_instance, check_int, check_real, check_work
from vidya_lab.scenario import TANVI
from vidya_lab.slo import FINISHED, REJECTED, TIMED_OUT, Timelines
from vidya_lab.workload import (
    Workload,
    as_rng,
    poisson_arrivals,
    tutor_requests,
)

__all__ = ["ToyServer", "simulate", "tutor_workload"]


@dataclass(frozen=True)
class ToyServer:
    """Parameters of the toy continuous-batching server (see the module docstring).

    Parameters
    ----------
    max_batch : most requests in one step (≥ 1).
    step_base_s : fixed time of a step, seconds (reading the weights once per step).
    step_per_seq_s : extra step time per request in the batch, seconds (reading its KV cache).
    prefill_s_per_token : extra step time per prompt token prefilled in the step, seconds.
    max_queue : most requests allowed to wait; an arrival beyond it is rejected (``None``: no limit).
    queue_timeout_s : a request waiting longer than this gives up (``None``: never).

    The three step coefficients left as ``None`` are read off the book's one cost model
    (:func:`vidya_lab.sizing.iteration_time_s`) for :data:`REFERENCE_REPLICA`, Tanvi's model on four
    H100s, by :func:`linearised_step_coefficients`: the toy never invents a step time of its own, it
    only simplifies the real one to a straight line that chapter 1 can explain in a sentence.
    """

    max_batch: int = 32
    step_base_s: float | None = None
    step_per_seq_s: float | None = None
    prefill_s_per_token: float | None = None
    max_queue: int | None = None
    queue_timeout_s: float | None = None

    def __post_init__(self) -> None:
        if None in (self.step_base_s, self.step_per_seq_s, self.prefill_s_per_token):
            base, per_seq, per_token = linearised_step_coefficients()
            for name, value in (("step_base_s", base), ("step_per_seq_s", per_seq),
                                ("prefill_s_per_token", per_token)):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, value)
        check_int("max_batch", self.max_batch, minimum=1)
        check_real("step_base_s", self.step_base_s, minimum=0.0, min_inclusive=False)
        check_real("step_per_seq_s", self.step_per_seq_s, minimum=0.0)
        check_real("prefill_s_per_token", self.prefill_s_per_token, minimum=0.0)
        if self.max_queue is not None:
            check_int("max_queue", self.max_queue, minimum=0)
        if self.queue_timeout_s is not None:
            check_real("queue_timeout_s", self.queue_timeout_s, minimum=0.0)

    def step_s(self, batch: int, prefill_tokens: int = 0) -> float:
        """Duration of one step with ``batch`` requests and ``prefill_tokens`` to prefill, seconds."""
        return (self.step_base_s + self.step_per_seq_s * batch
                + self.prefill_s_per_token * prefill_tokens)


#: The replica whose cost-model step times the toy's defaults straighten: (model, GPU, tp).
REFERENCE_REPLICA = (TANVI.model_id, "h100-sxm", 4)


@functools.cache
def linearised_step_coefficients() -> tuple[float, float, float]:
    """(step_base_s, step_per_seq_s, prefill_s_per_token) of :data:`REFERENCE_REPLICA`, seconds.

    From the cost model at the scenario's mean context ``ctx`` (prompt + half an answer):
    base = one decode step at batch 1; per sequence = (step at batch 33 − step at batch 1) / 32;
    per prompt token = prefill of the mean prompt alone ÷ its tokens.
    """
    from vidya_lab import sizing

    model, gpu, tp = REFERENCE_REPLICA
    r = sizing.Replica(model, gpu, tp=tp)
    ctx = TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean // 2
    one = sizing.iteration_time_s(r, decode_contexts=[ctx])
    many = sizing.iteration_time_s(r, decode_contexts=[ctx] * 33)
    prompt = TANVI.prompt_tokens_mean
    prefill = sizing.iteration_time_s(r, prefill=[(prompt, 0)])
    return one, (many - one) / 32.0, prefill / prompt


#: Most requests and output tokens one toy run may hold (about a minute of work; the toy loop is
#: plain Python, one iteration per step, and a step emits at most ``max_batch`` tokens).
MAX_REQUESTS = 2_000_000
MAX_OUTPUT_TOKENS = 100_000_000


def simulate(workload: Workload, server: ToyServer, *,
             record_token_times: bool = False) -> Timelines:
    """Run ``workload`` through ``server`` and return every request's timeline.

    Parameters
    ----------
    workload : the requests (each needs ``output_tokens ≥ 1``).
    server : a :class:`ToyServer`.
    record_token_times : also record each token's emit time (for ITL and the timeline figure).

    Returns
    -------
    :class:`vidya_lab.slo.Timelines`, one per request in workload order (``request_id`` = index),
    with the workload's class labels.
    """
    check_instance("workload", workload, Workload, "vidya_lab.workload.Workload")
    check_instance("server", server, ToyServer)
    record = check_bool("record_token_times", record_token_times)
    out = workload.output_tokens
    if len(workload) and out.min() < 1:
        i = int(np.argmin(out))
        raise ValueError(f"every request needs output_tokens >= 1; request {i} has {int(out[i])}")
    hint = "simulate a shorter window or a lower rate"
    check_work("the workload", len(workload), MAX_REQUESTS, unit="requests", hint=hint)
    check_work("the workload", float(out.sum()) if len(workload) else 0.0, MAX_OUTPUT_TOKENS,
               unit="output tokens", hint=hint)
    run = _ToyRun(workload, server)
    run.loop()
    return run.timelines(record)


class _ToyRun:
    """The state of one toy run: the FIFO queue, the batch, and what happened to each request."""

    def __init__(self, workload: Workload, server: ToyServer) -> None:
        n = self.n = len(workload)
        self.w, self.server = workload, server
        self.arrival = workload.arrival_s
        self.arrival_list = workload.arrival_s.tolist()   # fast scalar reads in the loop
        self.admitted = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.outcome = np.full(n, FINISHED, dtype=np.int8)
        self.first_step = np.full(n, -1, dtype=np.int64)
        self.step_ends: list[float] = []
        self.queue: deque[int] = deque()
        self.finishing: list[tuple[int, int]] = []   # heap of (last step index, request)
        self.active = 0
        self.next_arrival = 0

    def loop(self) -> None:
        """Step until every request has finished, been rejected or timed out (module docstring).

        Each phase is called only when it has something to do, so an ordinary decode step costs
        one step time and one append.
        """
        arrival, n, server = self.arrival_list, self.n, self.server
        queue, finishing, step_ends = self.queue, self.finishing, self.step_ends
        timeout = server.queue_timeout_s
        now = 0.0
        while self.next_arrival < n or queue or self.active:
            if not self.active and not queue:
                now = max(now, arrival[self.next_arrival])
            if self.next_arrival < n and arrival[self.next_arrival] <= now:
                self.take_arrivals(now)
            if timeout is not None and queue:
                self.drop_timed_out(now)
            prefill = self.admit(now) if queue and self.active < server.max_batch else 0
            if not self.active:
                continue
            now += server.step_s(self.active, prefill)
            step_ends.append(now)
            if finishing[0][0] == len(step_ends) - 1:
                self.finish_step(now)

    def take_arrivals(self, now: float) -> None:
        """Queue the arrivals up to ``now``; turn away those that find the queue full."""
        max_queue, arrival = self.server.max_queue, self.arrival_list
        while self.next_arrival < self.n and arrival[self.next_arrival] <= now:
            i = self.next_arrival
            if max_queue is not None and len(self.queue) >= max_queue:
                self.outcome[i] = REJECTED
                self.finish[i] = self.arrival[i]
            else:
                self.queue.append(i)
            self.next_arrival += 1

    def drop_timed_out(self, now: float) -> None:
        """Requests that have waited longer than ``queue_timeout_s`` give up."""
        timeout = self.server.queue_timeout_s
        if timeout is None:
            return
        while self.queue and now - self.arrival[self.queue[0]] > timeout:
            i = self.queue.popleft()
            self.outcome[i] = TIMED_OUT
            self.finish[i] = self.arrival[i] + timeout

    def admit(self, now: float) -> int:
        """Admit waiting requests in order while the batch has room; their prompt tokens."""
        prefill = 0
        step_index = len(self.step_ends)
        prompt, out = self.w.prompt_tokens, self.w.output_tokens
        while self.queue and self.active < self.server.max_batch:
            i = self.queue.popleft()
            self.admitted[i] = now
            prefill += int(prompt[i])
            self.first_step[i] = step_index
            heapq.heappush(self.finishing, (step_index + int(out[i]) - 1, i))
            self.active += 1
        return prefill

    def finish_step(self, now: float) -> None:
        """The step just ended at ``now``: requests whose last token it emitted leave."""
        step_index = len(self.step_ends) - 1
        while self.finishing and self.finishing[0][0] == step_index:
            _, i = heapq.heappop(self.finishing)
            self.finish[i] = now
            self.active -= 1

    def timelines(self, record_token_times: bool) -> Timelines:
        """The run as :class:`vidya_lab.slo.Timelines` (first tokens from the step end times)."""
        ends = np.asarray(self.step_ends)
        out = self.w.output_tokens
        done = self.outcome == FINISHED
        first = np.full(self.n, np.nan)
        first[done] = ends[self.first_step[done]]
        token_times = None
        if record_token_times:
            token_times = [ends[self.first_step[i]:self.first_step[i] + out[i]] if done[i] else ()
                           for i in range(self.n)]
        return Timelines.from_arrays(arrival_s=self.arrival, admitted_s=self.admitted,
                                     first_token_s=first, finish_s=self.finish,
                                     output_tokens=np.where(done, out, 0), outcome=self.outcome,
                                     klass=self.w.klass, token_times_s=token_times)


def tutor_workload(rate_per_s: float, duration_s: float, *,
                   seed: int | np.random.Generator) -> Workload:
    """Tanvi's tutor traffic at a steady rate: Poisson arrivals, her prompt and answer lengths.

    Every prompt starts with the syllabus and a subject prompt (shared prefix id 0, from
    :data:`vidya_lab.scenario.TANVI`), followed by the student's question (lognormal, mean from the
    scenario, median ``TANVI.question_tokens_p50``); answers are lognormal (mean from the scenario,
    median ``TANVI.answer_tokens_p50``, at most ``TANVI.answer_tokens_max``).
    """
    rng = as_rng(seed)
    return tutor_requests(poisson_arrivals(rate_per_s, duration_s, seed=rng), seed=rng)
