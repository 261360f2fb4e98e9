"""A fleet simulation's requests (:class:`Requests`) and the state of its replicas together
(:class:`FleetState`): what :func:`~vidya_lab.autoscaling.simulate.simulate_fleet` reads and writes.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import slo
from vidya_lab.autoscaling.autoscaler import Signals
from vidya_lab.autoscaling.cold_start import pool_refill_s
from vidya_lab.autoscaling.fleet import OFF, SERVING
from vidya_lab.autoscaling.replicas import Batches, Lifecycle, Pool, PrefillServers
from vidya_lab.autoscaling.waiting import Router, WaitingRoom
from vidya_lab.workload import Workload


class Requests:
    """Every request of the window: its lengths, and the timeline the simulation writes for it.

    ``ready_s`` is when a request may next be admitted: its arrival, or the failure it is retried
    from. ``ready_key`` orders ready times as exact integers, so queues can be merged instead of
    sorted: arrival ``i`` is ``i·(S+1) + S`` and a retry at step ``k`` is ``j·(S+1) + k``, where ``j``
    is the first arrival at or after it and ``S`` the most steps of the run.
    """

    def __init__(self, workload: Workload, steps: int) -> None:
        a = workload.arrival_s
        n = a.size
        self.arrival_s = a
        self.prompt_tokens = workload.prompt_tokens.astype(float)
        self.output_tokens = np.maximum(workload.output_tokens, 1).astype(float)
        self.admitted_s = np.full(n, np.nan)
        self.first_token_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self.outcome = np.full(n, -1, dtype=np.int8)
        self.retries = np.zeros(n, dtype=np.int16)
        self.longest_gap_s = np.full(n, np.nan)
        self.stalled_at = np.full(n, np.nan)
        self.ready_s = a.copy()
        self._steps = steps
        self.ready_key = np.arange(n, dtype=np.int64) * (steps + 1) + steps
        self.key_span = (n + 1) * (steps + 1)

    def finish(self, reqs: np.ndarray, t_s: np.ndarray, gap_s: np.ndarray) -> None:
        """Finished at ``t_s`` with ``gap_s`` its longest gap between tokens (none for one token)."""
        self.finish_s[reqs] = t_s
        self.outcome[reqs] = slo.FINISHED
        self.longest_gap_s[reqs] = np.where(self.output_tokens[reqs] > 1, gap_s, np.nan)

    def reject(self, reqs: np.ndarray, t_s) -> None:
        self.outcome[reqs] = slo.REJECTED
        self.finish_s[reqs] = t_s

    def admit(self, reqs: np.ndarray, at_s: np.ndarray, first_token_s: np.ndarray) -> np.ndarray:
        """A retried request keeps its first admission and first token (the student already saw
        them); its TPOT then includes the retry, and so does its longest gap: returned, per
        request, the wait since its replica failed (0 for a first admission), seconds."""
        stalled = self.stalled_at[reqs]
        gap = np.where(np.isnan(stalled), 0.0, first_token_s - stalled)
        self.stalled_at[reqs] = np.nan
        self.admitted_s[reqs] = np.where(np.isnan(self.admitted_s[reqs]), at_s,
                                         self.admitted_s[reqs])
        self.first_token_s[reqs] = np.where(np.isnan(self.first_token_s[reqs]), first_token_s,
                                            self.first_token_s[reqs])
        return gap

    def retry_or_reject(self, reqs: np.ndarray, k: int, t0: float, max_retries: int) -> np.ndarray:
        """Requests in flight on a replica that failed at step ``k`` (time ``t0``): those with
        retries left are returned to be retried from ``t0``, the others are turned away."""
        again = self.retries[reqs] < max_retries
        lost = reqs[~again]
        self.reject(lost, np.maximum(t0, self.arrival_s[lost]))
        back = reqs[again]
        self.retries[back] += 1
        self.stalled_at[back] = np.where(np.isnan(self.first_token_s[back]), np.nan, t0)
        self.ready_s[back] = t0
        j = int(np.searchsorted(self.arrival_s, t0, side="left"))
        self.ready_key[back] = j * (self._steps + 1) + k
        return back

    def timelines(self) -> slo.Timelines:
        """The finished and rejected requests' timelines (in-flight ones are left out)."""
        oc = self.outcome
        done = oc >= 0
        fin = oc[done] == slo.FINISHED
        return slo.Timelines.from_arrays(
            arrival_s=self.arrival_s[done],
            first_token_s=np.where(fin, self.first_token_s[done], np.nan),
            finish_s=self.finish_s[done],
            output_tokens=np.where(fin, self.output_tokens[done], 0).astype(np.int64),
            admitted_s=np.where(fin, self.admitted_s[done], np.nan),
            outcome=oc[done], request_id=np.flatnonzero(done))


class FleetState:
    """Every replica's state (:mod:`~vidya_lab.autoscaling.replicas`), the waiting room, the router
    and the pool, with rows added as the fleet grows. ``init`` replicas serve from t = 0."""

    def __init__(self, fleet, reqs: Requests, dt: float, init: int) -> None:
        self.fleet, self.req, self.dt = fleet, reqs, dt
        self.rows = max(init, 1) + 8
        self.life = Lifecycle(self.rows)
        self.batches = Batches(self.rows, fleet.model.slots)
        self.prefill = PrefillServers(self.rows, int(np.ceil(600.0 / dt)) + 4)
        self.waiting = WaitingRoom(self.rows, reqs.key_span)
        self.router = Router(fleet.router)
        size = fleet.pool_size if fleet.pool != "none" else 0
        self.pool = Pool(size, pool_refill_s(fleet.cold_start, fleet.model.replica, fleet.pool)
                         if size else 0.0)
        self.start_s, self.pool_start_s = fleet.start_s, fleet.pool_start_s
        self.life.state[:init] = SERVING
        self.life.ready_at[:init] = 0.0

    def take_off_rows(self, n: int) -> np.ndarray:
        """The ``n`` lowest rows that are off, adding rows if the fleet has fewer."""
        off = np.flatnonzero(self.life.state == OFF)
        if off.size < n:
            rows = max(2 * self.rows, self.rows + n - off.size)
            for part in (self.life, self.batches, self.prefill, self.waiting):
                part.grow(rows)
            self.rows = rows
            off = np.flatnonzero(self.life.state == OFF)
        return off[:n]

    def signals(self, serving: np.ndarray, t0: float, autoscaler) -> Signals:
        """What the policy's reactive rule can see now (only the number serving if it has none)."""
        rule = autoscaler.live_policy
        if rule is None:
            return Signals(int(serving.size))
        b, req = self.batches, self.req
        act = int(b.size[serving].sum())
        kv = 0.0
        if rule.metric == "kv" and act:
            held = b.request[serving]
            occ = held >= 0
            ids = held[occ]
            kv = float(np.sum(req.prompt_tokens[ids] + (req.output_tokens[ids] - 1.0)
                              - np.maximum(b.tokens_left[serving][occ], 0.0)))
        a = req.arrival_s
        w0 = int(a.searchsorted(t0 - rule.rate_window_s, side="left"))
        rate = (int(a.searchsorted(t0, side="left")) - w0) / min(rule.rate_window_s,
                                                                 max(t0, self.dt))
        return Signals(int(serving.size), act, len(self.waiting), kv, rate)
