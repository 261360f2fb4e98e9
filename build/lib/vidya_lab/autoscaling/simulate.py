"""The fleet over a window, request by request: :func:`simulate_fleet`.

Replicas are ``off → starting → serving → draining → off``; a serving replica can also *fail*
(exponential lifetimes of mean ``mtbf_s``, or at chosen times). Time advances in steps of ``dt_s``;
each step, in the order the chapter tells it:

1. replicas whose cold start is over begin to serve; drained ones are released; the pool refills;
2. failures: a failed replica's in-flight requests are retried on another replica (up to
   ``max_retries`` times, keeping their first arrival time, so the retry shows in their latency)
   and its queue goes back to the router;
3. on its tick, the autoscaler (:class:`~vidya_lab.autoscaling.autoscaler.Autoscaler`) starts,
   cancels or drains replicas (from the pool first, if there is one);
4. every batch decodes through the step: each iteration, prefill or decode, gives each sequence one
   token, and decode iterations fill the time the step's prefills leave (the replica model,
   :mod:`vidya_lab.autoscaling.replica`); each sequence's longest gap grows to the step's longest
   iteration (:meth:`~vidya_lab.autoscaling.ReplicaModel.stall_s`);
5. the step's arrivals join the waiting room; the router sends them to serving replicas; each
   replica takes the heads of its queue into free slots, and its prefill server runs their prompts
   (:mod:`vidya_lab.autoscaling.waiting`, :mod:`vidya_lab.autoscaling.replicas`);
6. requests that waited longer than ``queue_timeout_s`` are turned away (``rejected``);
7. the step is recorded, and every replica that is not off is billed (a cloud bills a node from
   boot), and so is every node of a warm pool.

Nothing is lost silently: ``arrived = finished + rejected + in_flight``
(:meth:`~vidya_lab.autoscaling.fleet.FleetRun.counts`).
"""

from __future__ import annotations

import math

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.autoscaling import fleet as fl
from vidya_lab.autoscaling.autoscaler import Autoscaler, check_policy, starting_fleet
from vidya_lab.autoscaling.fleet import DRAINING, OFF, SERVING, STARTING, Fleet, FleetRun
from vidya_lab.autoscaling.run_state import FleetState, Requests
from vidya_lab.workload import Workload


def _window(workload: Workload, dt: float, horizon_s) -> tuple[Workload, float, int]:
    """The requests arriving in ``[0, horizon)``, the horizon, and how many arrive after it."""
    a = workload.arrival_s
    if horizon_s is None:
        horizon = (math.floor(a[-1] / dt) + 1) * dt if a.size else dt
    else:
        horizon = v.check_real("horizon_s", horizon_s, minimum=0.0, min_inclusive=False)
    keep = a < horizon
    if np.all(keep):
        return workload, horizon, 0
    return workload[keep], horizon, int(a.size - np.count_nonzero(keep))


def _check_work(workload: Workload, fleet: Fleet, dt: float, end_s: float) -> int:
    """Refuse, before any work, a run beyond the stated limits (:mod:`~vidya_lab.autoscaling.fleet`);
    returns the most steps the run can take."""
    steps = math.ceil(end_s / dt) + 1
    v.check_work("a fleet simulation of (horizon_s + drain_limit_s) / dt_s", steps, fl.MAX_STEPS,
                 unit="time steps", hint="shorten the window or use a coarser dt_s")
    n = len(workload)
    v.check_work("the workload", n, fl.MAX_REQUESTS, unit="requests", hint="simulate a shorter window")
    a = workload.arrival_s
    if n:  # the most requests that can wait at once: arrivals within any queue_timeout_s window
        backlog = int(np.max(np.searchsorted(a, a + fleet.queue_timeout_s, side="right")
                             - np.arange(n)))
        v.check_work("queue_timeout_s (steps x the requests that can wait at once)",
                     float(steps) * backlog, fl.MAX_WAITING_WORK, unit="request-steps",
                     hint="a shorter queue_timeout_s, a shorter window or a coarser dt_s")
    rows = 2 * fleet.max_replicas + 2
    ring = math.ceil(600.0 / dt) + 4
    state_bytes = rows * (fleet.model.slots * 32.0 + ring * 16.0)
    v.check_work("a fleet of max_replicas at this dt_s", state_bytes, 2e9, unit="bytes of state",
                 hint="fewer max_replicas or a coarser dt_s")
    return steps


def simulate_fleet(workload: Workload, fleet: Fleet, policy, *, seed: int = 0, dt_s: float = 1.0,
                   horizon_s: float | None = None, initial_replicas: int | None = None,
                   drain_limit_s: float = 3600.0) -> FleetRun:
    """Simulate the fleet serving ``workload`` under ``policy`` (see the module docstring).

    Parameters
    ----------
    workload : the requests (arrival times in seconds from midnight).
    fleet : how the fleet is run (:class:`~vidya_lab.autoscaling.fleet.Fleet`).
    policy : :class:`~vidya_lab.autoscaling.policies.Reactive`, ``Scheduled`` or ``Predictive``.
    seed : seeds the random failures (the workload carries its own randomness).
    dt_s : the time step, seconds (the resolution of batch speeds, not of admissions).
    horizon_s : arrivals are taken in ``[0, horizon_s)``; default: the end of the last arrival's
        day-step. The run continues after it (no new arrivals) until every request is done or
        ``drain_limit_s`` more seconds have passed; the rest is reported in flight. Requests of
        the workload after the horizon are counted as ``beyond_horizon``.
    initial_replicas : replicas serving at t = 0 (default: the policy's count at 0, or
        ``min_replicas`` for a reactive policy), clipped to the fleet's bounds.

    Limits (refused up front, :mod:`~vidya_lab.autoscaling.fleet`): ``(horizon_s + drain_limit_s)
    / dt_s`` ≤ ``MAX_STEPS``; requests ≤ ``MAX_REQUESTS``; steps × the most requests that can
    wait at once ≤ ``MAX_WAITING_WORK``.
    """
    v.check_instance("workload", workload, Workload, "vidya_lab.workload.Workload")
    v.check_instance("fleet", fleet, Fleet, "Fleet")
    check_policy(policy)
    dt = v.check_real("dt_s", dt_s, minimum=0.01, maximum=60.0)
    drain_limit = v.check_real("drain_limit_s", drain_limit_s, minimum=0.0, maximum=86400.0)
    seed = v.check_int("seed", seed, minimum=0)
    workload, horizon, beyond = _window(workload, dt, horizon_s)
    steps = _check_work(workload, fleet, dt, horizon + drain_limit)
    init = starting_fleet(fleet, policy, initial_replicas)
    sim = _Simulation(Requests(workload, steps), fleet, policy, dt, seed, init)
    end_limit = horizon + drain_limit
    k = 0
    while True:
        t0, t1 = k * dt, (k + 1) * dt
        if t0 >= horizon and (t0 >= end_limit or sim.idle()):
            break
        sim.start_and_release(t0)
        sim.fail(k, t0)
        if t0 >= sim.next_tick:
            sim.scale(t0)
        sim.decode(k, t1)
        sim.arrive(t1)
        sim.route_and_admit(k, t0)
        sim.turn_away(t1)
        sim.record(t0)
        k += 1
    return sim.result(horizon, beyond)


class _Simulation:
    """One run's state and its steps (the module docstring's 1-7)."""

    def __init__(self, reqs: Requests, fleet: Fleet, policy, dt: float, seed: int,
                 init: int) -> None:
        self.req, self.fleet, self.policy, self.dt = reqs, fleet, policy, dt
        self.model = fleet.model
        self.s = FleetState(fleet, reqs, dt, init)
        self.rng = np.random.default_rng(seed)
        self.fail_p = 0.0 if fleet.mtbf_s is None else -math.expm1(-dt / fleet.mtbf_s)
        self.fail_times = list(fleet.failures_at_s)
        self.autoscaler = Autoscaler(fleet, policy, init)
        self.next_tick = 0.0
        self.events: list = []
        self.ai = 0  # the next arrival
        self.rec: list[tuple] = []  # per step: t0, serving, starting, draining, pool, billed, ...
        self.billed_replica_steps = 0.0

    def idle(self) -> bool:
        return len(self.s.waiting) == 0 and not self.s.batches.size.any()

    # ---------------------------------------------------------------- 1. start, release, refill
    def start_and_release(self, t0: float) -> None:
        s = self.s
        ready = s.life.now_ready(t0)
        if ready.size:
            s.batches.freed_at[ready] = s.life.ready_at[ready][:, None]
            s.prefill.free_at[ready] = s.life.ready_at[ready]
            for r in ready:
                self.events.append((float(s.life.ready_at[r]), "ready", int(r), ""))
        for r in s.life.drained(s.batches.size):
            self.events.append((t0, "released", int(r), ""))
            s.pool.give_back()
        s.pool.refill(t0)

    # ---------------------------------------------------------------- 2. failures
    def fail(self, k: int, t0: float) -> None:
        s = self.s
        failed: list[int] = []
        if self.fail_p > 0.0:
            alive = np.flatnonzero((s.life.state == SERVING) | (s.life.state == DRAINING))
            if alive.size:
                failed.extend(int(x) for x in alive[self.rng.random(alive.size) < self.fail_p])
        while self.fail_times and self.fail_times[0] <= t0:
            self.fail_times.pop(0)
            alive = np.setdiff1d(s.life.rows(SERVING), failed)
            if alive.size:
                failed.append(int(alive[np.argmax(s.batches.size[alive])]))
        for r in failed:
            reqs = s.batches.evict(r)
            self.events.append((t0, "failure", r, f"{reqs.size} in flight"))
            if reqs.size:
                s.waiting.add(self.req.retry_or_reject(reqs, k, t0, self.fleet.max_retries))
            s.life.state[r] = OFF
            s.prefill.clear(r)
            s.waiting.give_back([r])

    # ---------------------------------------------------------------- 3. the autoscaler
    def scale(self, t0: float) -> None:
        s = self.s
        self.next_tick = t0 + self.fleet.interval_s
        serving = s.life.rows(SERVING)
        current = int(serving.size) + s.life.count(STARTING)
        want = self.autoscaler.want(t0, current, s.signals(serving, t0, self.autoscaler))
        if want > current:
            for r in s.take_off_rows(want - current):
                from_pool = s.pool.take(t0)
                s.life.ready_at[r] = t0 + (s.pool_start_s if from_pool else s.start_s)
                self.events.append((t0, "scale_up", int(r), "from pool" if from_pool else "cold"))
                s.life.state[r] = STARTING
                s.batches.freed_at[r] = 0.0
        elif want < current:
            excess = current - want
            starting = s.life.rows(STARTING)
            cancel = starting[np.argsort(-s.life.ready_at[starting], kind="stable")][:excess]
            s.life.state[cancel] = OFF
            self.events.extend((t0, "cancel", int(r), "") for r in cancel)
            excess -= cancel.size
            if excess > 0:
                serving = s.life.rows(SERVING)
                drain = serving[np.argsort(s.batches.size[serving], kind="stable")][:excess]
                s.life.state[drain] = DRAINING
                self.events.extend((t0, "drain", int(r), "") for r in drain)
                s.waiting.give_back(drain)

    # ---------------------------------------------------------------- 4. decoding
    def decode(self, k: int, t1: float) -> None:
        s, dt = self.s, self.dt
        busy = s.batches.size.nonzero()[0]
        if busy.size:
            hi = int(busy[-1]) + 1
            n_hi = s.batches.size[:hi]
            td = self.model.decode_s[n_hi]
            kb = k % s.prefill.ring
            pbusy = np.minimum(s.prefill.busy_s[:hi, kb], dt)
            its = s.prefill.iterations[:hi, kb] + np.where(
                n_hi > 0, (dt - pbusy) / np.where(td > 0, td, 1.0), 0.0)
            tau = np.where(its > 0, dt / np.maximum(its, 1e-12), np.inf)[:, None]
            s.batches.stall(hi, self.model.stall_s(n_hi, s.prefill.biggest[:hi, kb]))
            done = s.batches.decode(hi, tau, t1)
            if done is not None:
                self.req.finish(*done)
        s.prefill.next_step(k, dt)

    # ---------------------------------------------------------------- 5. arrivals and admission
    def arrive(self, t1: float) -> None:
        a, ai = self.req.arrival_s, self.ai
        if ai < a.size and a[ai] < t1:
            aj = int(a.searchsorted(t1, side="left"))
            self.s.waiting.add(np.arange(ai, aj, dtype=np.int64))
            self.ai = aj

    def route_and_admit(self, k: int, t0: float) -> None:
        s, req, model = self.s, self.req, self.model
        if not len(s.waiting):
            return
        s.waiting.route(s.router, s.life.rows(SERVING), s.batches.size, req.ready_s, req.ready_key)
        heads = s.waiting.heads(model.slots - s.batches.size)
        if heads is None:
            return
        reqs, rows, ranks, urows, upos = heads
        slot, freed = s.batches.free_slots(urows, upos, ranks)
        at = np.maximum(np.maximum(req.ready_s[reqs], freed), t0)
        size = s.batches.size[rows]
        dur, chunks = model.prefill(size + ranks, req.prompt_tokens[reqs])  # decodes riding along
        ready = at + model.overhead_s + 0.5 * model.decode_s[size]
        _, end = s.prefill.run(rows, upos, ranks, ready, dur, chunks, k, self.dt,
                               req.prompt_tokens[reqs])
        gap = req.admit(reqs, at, end)
        s.batches.place(rows, slot, reqs, req.output_tokens[reqs] - 1.0, end, s.rows, gap)

    # ---------------------------------------------------------------- 6. patience
    def turn_away(self, t1: float) -> None:
        gone = self.s.waiting.turn_away(t1, self.fleet.queue_timeout_s, self.req.arrival_s)
        if gone.size:
            self.req.reject(gone, self.req.arrival_s[gone] + self.fleet.queue_timeout_s)

    # ---------------------------------------------------------------- 7. the record and the bill
    def record(self, t0: float) -> None:
        s = self.s
        n = np.bincount(s.life.state, minlength=4)  # off, starting, serving, draining
        pool = s.pool.billed
        billed = int(n[SERVING] + n[STARTING] + n[DRAINING]) + pool
        self.billed_replica_steps += billed
        self.rec.append((t0, int(n[SERVING]), int(n[STARTING]), int(n[DRAINING]), pool, billed,
                         int(s.batches.size.sum()), len(s.waiting)))

    def result(self, horizon: float, beyond: int) -> FleetRun:
        cols = list(zip(*self.rec, strict=True)) if self.rec else [()] * 8
        series = {"t_s": np.asarray(cols[0], dtype=float)}
        series.update({name: np.asarray(col, dtype=np.int64) for name, col in zip(
            ("serving", "starting", "draining", "pool", "billed", "in_batch", "waiting"), cols[1:],
            strict=True)})
        replica_hours = self.billed_replica_steps * self.dt / 3600.0
        rep = self.model.replica
        self.events.sort(key=lambda e: e[0])
        r = self.req
        return FleetRun(r.timelines(), r.outcome, r.retries, r.arrival_s, series, self.events,
                        replica_hours * rep.n_gpus, replica_hours * sizing.cost_per_hour_usd(rep),
                        self.s.start_s, self.dt, horizon, self.fleet, self.policy, beyond,
                        r.longest_gap_s)

