"""Open- and closed-loop load on the toy replica: the two ways a benchmark can send requests.

* **Open loop** — requests arrive on their own clock (Poisson at a rate, or a recorded trace),
  whatever the server is doing: ``vllm bench serve --request-rate R``, GenAI-Perf's
  ``--request-rate``, guidellm's ``poisson``/``constant`` profiles. A burst that finds the batch full
  waits in the queue, as real students' requests do. :func:`open_loop`.
  A **trace replay** is an open loop whose clock is a recording's: :func:`replay`.
* **Closed loop** — ``users`` virtual users each send a request, wait for the whole answer (and an
  optional think time) and only then send the next: LLMPerf's ``--num-concurrent-requests``,
  GenAI-Perf's ``--concurrency``, guidellm's ``concurrent`` profile, vLLM's ``--max-concurrency``
  with ``--request-rate inf``. The load waits for the server, so at most ``users`` requests are
  ever in the system: a slow server is offered less, and queues cannot build beyond the users.
  :func:`closed_loop`.

Both run on :class:`vidya_lab.toyserver.ToyServer` with Tanvi's request lengths. The closed loop
follows the toy's rules exactly (its module docstring): a request sent during a step waits for
the next step boundary; admission is FIFO while the batch has room. Replaying a closed loop's send
times as an open-loop workload through :func:`vidya_lab.toyserver.simulate` reproduces its
timelines exactly (tests/test_bench.py checks it): a closed-loop benchmark is an open-loop one whose
arrivals the server itself shaped.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from vidya_lab import slo
from vidya_lab._validate import check_instance, check_instances, check_int, check_real, check_work
from vidya_lab.toyserver import MAX_REQUESTS, ToyServer, simulate, tutor_workload
from vidya_lab.workload import Workload, as_rng, tutor_requests

__all__ = ["LoadRun", "MAX_STEPS", "MAX_USERS", "closed_loop", "compare_open_closed", "max_waiting", "open_loop",
           "replay"]

#: Most virtual users one closed loop may hold.
MAX_USERS = 10_000
#: Most decode steps the closed loops of one call may take (each is a step of the Python loop; at
#: the toy's shortest step, about 0.02 s, the limit is some 11 hours of sending).
MAX_STEPS = 2_000_000
_BLOCK = 4096  # request lengths are drawn in blocks of this many, in send order


@dataclass(frozen=True)
class LoadRun:
    """One benchmark run on the toy replica.

    Attributes
    ----------
    timelines : every request's timeline (:class:`vidya_lab.slo.Timelines`), in send order.
    workload : the requests as sent (``arrival_s`` = send time; prompt and answer lengths).
    duration_s : the window in which requests were sent, seconds.
    users : the closed loop's virtual users (``None`` for an open loop).
    think_time_s : a closed-loop user's pause between an answer and its next request, seconds.
    """

    timelines: slo.Timelines
    workload: Workload
    duration_s: float
    users: int | None = None
    think_time_s: float = 0.0

    @property
    def rate_per_s(self) -> float:
        """Requests sent per second over the window (the offered load), requests/s."""
        return len(self.workload) / self.duration_s


def open_loop(rate_per_s: float, duration_s: float, *, seed: int | np.random.Generator,
              server: ToyServer | None = None) -> LoadRun:
    """Poisson arrivals at ``rate_per_s`` for ``duration_s`` seconds on the toy replica."""
    server = ToyServer() if server is None else check_instance("server", server, ToyServer)
    w = tutor_workload(rate_per_s, duration_s, seed=seed)
    return LoadRun(simulate(w, server), w, float(duration_s))


def replay(arrival_s, *, seed: int | np.random.Generator, server: ToyServer | None = None,
           duration_s: float | None = None) -> LoadRun:
    """Trace replay: requests sent at recorded times ``arrival_s`` (seconds, in any order: a log
    merged from several clients need not be sorted; the requests are replayed, and the run lists
    them, in time order), with Tanvi's lengths drawn from ``seed``; an open loop whose arrival
    process is the recording's, bursts and all. ``duration_s`` (default: the last arrival) is the
    window the rate is taken over."""
    server = ToyServer() if server is None else check_instance("server", server, ToyServer)
    w = tutor_requests(arrival_s, seed=seed)
    if len(w) == 0:
        raise ValueError("arrival_s must hold at least one arrival to replay")
    horizon = float(w.arrival_s[-1]) if duration_s is None else check_real(
        "duration_s", duration_s, minimum=float(w.arrival_s[-1]), min_inclusive=False)
    if horizon <= 0:
        raise ValueError("a replay needs arrivals spread over more than 0 s; pass duration_s")
    return LoadRun(simulate(w, server), w, horizon)


def closed_loop(users: int, duration_s: float, *, seed: int | np.random.Generator,
                server: ToyServer | None = None, think_time_s: float = 0.0) -> LoadRun:
    """``users`` virtual users on the toy replica: each sends, waits for the answer, thinks, sends.

    Every user sends its first request at 0 s; a user whose answer finishes at ``c`` sends the next
    at ``c + think_time_s`` if that is before ``duration_s`` (no request is sent after it; the ones
    in flight finish). Request lengths are Tanvi's (:func:`vidya_lab.workload.tutor_requests`),
    drawn in send order from ``seed``. The server must queue every request (no ``max_queue`` or
    ``queue_timeout_s``: a closed-loop user never gives up). No request is lost: every one sent
    finishes.

    Returns
    -------
    :class:`LoadRun` with ``users`` and ``think_time_s`` set.
    """
    n_users = check_int("users", users, minimum=1, maximum=MAX_USERS)
    horizon = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    think = check_real("think_time_s", think_time_s, minimum=0.0)
    server = ToyServer() if server is None else check_instance("server", server, ToyServer)
    if server.max_queue is not None or server.queue_timeout_s is not None:
        raise ValueError("closed_loop needs a server that queues every request (max_queue=None "
                         "and queue_timeout_s=None): a closed-loop user waits for its answer")
    _check_steps(f"closed_loop(duration_s={horizon:g})", 1, horizon, server,
                 hint="shorten duration_s")
    run = _ClosedRun(n_users, horizon, think, server, as_rng(seed))
    run.loop()
    return run.result()


class _ClosedRun:
    """State of one closed loop: future sends, the FIFO queue, the batch, each request's record."""

    def __init__(self, users: int, horizon: float, think: float, server: ToyServer,
                 rng: np.random.Generator) -> None:
        self.users, self.horizon, self.think, self.server, self.rng = users, horizon, think, \
            server, rng
        self.sends: list[tuple[float, int]] = [(0.0, u) for u in range(users)]  # (time, user)
        self.queue: deque[int] = deque()
        self.finishing: list[tuple[int, int]] = []  # heap of (last step index, request)
        self.step_ends: list[float] = []
        self.arrival: list[float] = []
        self.user: list[int] = []
        self.admitted: list[float] = []
        self.first_step: list[int] = []
        self.finish: list[float] = []
        self.lengths: list[Workload] = []

    def _lengths(self, i: int) -> tuple[int, int]:
        block, k = divmod(i, _BLOCK)
        while len(self.lengths) <= block:
            check_work("the closed loop", (len(self.lengths) + 1) * _BLOCK, MAX_REQUESTS,
                       unit="requests", hint="use fewer users or a shorter duration_s")
            self.lengths.append(tutor_requests(np.zeros(_BLOCK), seed=self.rng))
        w = self.lengths[block]
        return int(w.prompt_tokens[k]), int(w.output_tokens[k])

    def loop(self) -> None:
        """Step until every request sent has finished (the toy's loop, with sends from finishes)."""
        sends, queue, server = self.sends, self.queue, self.server
        now, active = 0.0, 0
        while sends or queue or active:
            if not active and not queue:
                now = max(now, sends[0][0])
            while sends and sends[0][0] <= now:
                t, u = heapq.heappop(sends)
                self.arrival.append(t)
                self.user.append(u)
                self.admitted.append(np.nan)
                self.first_step.append(-1)
                self.finish.append(np.nan)
                queue.append(len(self.arrival) - 1)
            prefill = 0
            while queue and active < server.max_batch:
                i = queue.popleft()
                prompt, out = self._lengths(i)
                self.admitted[i], self.first_step[i] = now, len(self.step_ends)
                heapq.heappush(self.finishing, (len(self.step_ends) + out - 1, i))
                prefill += prompt
                active += 1
            if not active:
                continue
            now += server.step_s(active, prefill)
            self.step_ends.append(now)
            active -= self._finish_step(now)

    def _finish_step(self, now: float) -> int:
        """Requests whose last token this step emitted leave; their users send again."""
        step, done = len(self.step_ends) - 1, 0
        while self.finishing and self.finishing[0][0] == step:
            _, i = heapq.heappop(self.finishing)
            self.finish[i] = now
            done += 1
            if now + self.think < self.horizon:
                heapq.heappush(self.sends, (now + self.think, self.user[i]))
        return done

    def result(self) -> LoadRun:
        n = len(self.arrival)
        lengths = np.asarray([self._lengths(i) for i in range(n)], dtype=np.int64).reshape(n, 2)
        klass = np.concatenate([w.klass for w in self.lengths])[:n] if self.lengths else None
        w = Workload.from_arrays(self.arrival, lengths[:, 0], lengths[:, 1], klass=klass)
        ends = np.asarray(self.step_ends)
        t = slo.Timelines.from_arrays(
            arrival_s=self.arrival, admitted_s=self.admitted, first_token_s=ends[self.first_step],
            finish_s=self.finish, output_tokens=lengths[:, 1], klass=w.klass)
        return LoadRun(t, w, self.horizon, users=self.users, think_time_s=self.think)


def compare_open_closed(users: tuple[int, ...], duration_s: float, *, seed: int,
                        server: ToyServer | None = None) -> list[dict]:
    """Closed loops of each ``users``, and an open loop at each one's rate: the same mean load.

    Returns one dict per user count: ``users``, ``rate_per_s`` (the closed loop's offered load,
    requests/s), ``closed_p99_ttft_s``, ``open_p99_ttft_s`` (p99 TTFT of each run, seconds),
    ``closed_max_waiting`` (most requests ever waiting in the closed loop's queue) and the two
    :class:`LoadRun` objects (``closed``, ``open``).
    """
    counts = check_instances("users", users, int, "user count (int)", max_length=1000)
    horizon = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    _check_steps(f"{len(counts)} closed loops (users) of duration_s = {horizon:g}", len(counts),
                 horizon, ToyServer() if server is None else check_instance("server", server,
                                                                             ToyServer))
    rows = []
    for k in counts:
        closed = closed_loop(k, duration_s, seed=seed, server=server)
        opened = open_loop(closed.rate_per_s, duration_s, seed=seed, server=server)
        rows.append({"users": int(k), "rate_per_s": closed.rate_per_s,
                     "closed_p99_ttft_s": slo.percentile(slo.ttft_s(closed.timelines), 99),
                     "open_p99_ttft_s": slo.percentile(slo.ttft_s(opened.timelines), 99),
                     "closed_max_waiting": max_waiting(closed.timelines),
                     "closed": closed, "open": opened})
    return rows


def _check_steps(what: str, runs: int, horizon_s: float, server: ToyServer,
                 hint: str = "shorten duration_s or use fewer user counts") -> None:
    """Refuse closed loops whose steps (each at least the toy's one-request step) exceed
    :data:`MAX_STEPS`, before the first one."""
    check_work(what, runs * horizon_s / server.step_s(1, 0), MAX_STEPS, unit="decode steps",
               hint=hint)


def max_waiting(timelines: slo.Timelines) -> int:
    """The most requests waiting (arrived, not yet admitted) at any moment of a run."""
    t = slo.as_timelines(timelines)
    served = ~np.isnan(t.admitted_s)  # a request turned away never waited
    events = np.concatenate([t.arrival_s[served], t.admitted_s[served]])
    steps = np.concatenate([np.ones(int(served.sum())), -np.ones(int(served.sum()))])
    order = np.lexsort((steps, events))  # at equal times an admission counts before an arrival
    return int(max(0, np.max(np.cumsum(steps[order])))) if events.size else 0
