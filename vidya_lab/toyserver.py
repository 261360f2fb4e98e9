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

from vidya_lab._validate import check_int, check_real
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
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a vidya_lab.workload.Workload, got "
                        f"{type(workload).__name__}")
    if not isinstance(server, ToyServer):
        raise TypeError(f"server must be a ToyServer, got {type(server).__name__}")
    n = len(workload)
    arrival = workload.arrival_s
    prompt = workload.prompt_tokens
    out = workload.output_tokens
    if n and out.min() < 1:
        i = int(np.argmin(out))
        raise ValueError(f"every request needs output_tokens >= 1; request {i} has {int(out[i])}")

    admitted = np.full(n, np.nan)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    outcome = np.full(n, FINISHED, dtype=np.int8)
    first_step = np.full(n, -1, dtype=np.int64)
    step_ends: list[float] = []

    queue: deque[int] = deque()
    finishing: list[tuple[int, int]] = []   # heap of (last step index, request)
    active = 0
    now = 0.0
    nxt = 0
    max_queue = server.max_queue
    timeout = server.queue_timeout_s
    while nxt < n or queue or active:
        if not active and not queue:
            now = max(now, float(arrival[nxt]))
        while nxt < n and arrival[nxt] <= now:
            if max_queue is not None and len(queue) >= max_queue:
                outcome[nxt] = REJECTED
                finish[nxt] = arrival[nxt]
            else:
                queue.append(nxt)
            nxt += 1
        if timeout is not None:
            while queue and now - arrival[queue[0]] > timeout:
                i = queue.popleft()
                outcome[i] = TIMED_OUT
                finish[i] = arrival[i] + timeout
        prefill = 0
        step_index = len(step_ends)
        while queue and active < server.max_batch:
            i = queue.popleft()
            admitted[i] = now
            prefill += int(prompt[i])
            first_step[i] = step_index
            heapq.heappush(finishing, (step_index + int(out[i]) - 1, i))
            active += 1
        if not active:
            continue
        now += server.step_s(active, prefill)
        step_ends.append(now)
        while finishing and finishing[0][0] == step_index:
            _, i = heapq.heappop(finishing)
            finish[i] = now
            active -= 1

    ends = np.asarray(step_ends)
    done = outcome == FINISHED
    first[done] = ends[first_step[done]]
    token_times = None
    if record_token_times:
        token_times = [ends[first_step[i]:first_step[i] + out[i]] if done[i] else ()
                       for i in range(n)]
    tokens = np.where(done, out, 0)
    return Timelines.from_arrays(arrival_s=arrival, admitted_s=admitted, first_token_s=first,
                                 finish_s=finish, output_tokens=tokens, outcome=outcome,
                                 klass=workload.klass, token_times_s=token_times)


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
