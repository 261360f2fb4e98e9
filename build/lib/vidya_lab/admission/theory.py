"""Checking the simulator against queueing theory: one slot, one token, given service times.

With at most one request in the batch, one output token per request and a service time per request
instead of the cost model (the simulator's ``service_time_s`` mode), a replica is the textbook
single-server queue, and the mean wait in the queue is known exactly (:mod:`vidya_lab.queueing`):
M/M/1 (exponential service) ``W_q = ρ/(μ − λ)``, M/D/1 (fixed service) half that. Consecutive
waits are correlated, so the simulated mean's error is estimated by batch means
(:func:`vidya_lab.slo.batch_means_ci`), not by the spread of the waits.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import queueing, sizing, slo
from vidya_lab.admission.config import SchedulerConfig
from vidya_lab.admission.simulation import simulate
from vidya_lab.workload import Workload, poisson_arrivals

SERVICES: tuple[str, ...] = ("exponential", "deterministic")
#: Most requests one check may simulate.
MAX_CHECK_REQUESTS = 200_000


def queueing_check(replica: sizing.Replica, utilisation: float, service: str, *,
                   requests: int = 20_000, seed: int = 3, batches: int = 20,
                   confidence: float = 0.95) -> dict:
    """Simulate a single-server queue with mean service 1 s at ``utilisation`` and compare its
    mean wait with theory.

    ``service``: ``"exponential"`` (M/M/1) or ``"deterministic"`` (M/D/1). Poisson arrivals at
    rate ``λ = utilisation`` for ``requests / λ`` seconds (about ``requests`` arrivals), seeded.
    Returns ``queue`` ("M/M/1" or "M/D/1"), ``utilisation``, ``requests`` (simulated),
    ``mean_wait_s``, ``standard_error_s``, ``low_s``, ``high_s`` (the batch-means interval at
    ``confidence``), ``theory_s`` and ``z`` (|simulated − theory| / standard error).
    """
    sizing._as_replica(replica)
    rho = v.check_real("utilisation", utilisation, minimum=0.0, maximum=0.95, min_inclusive=False)
    kind = v.check_choice("service", service, SERVICES)
    n_target = v.check_int("requests", requests, minimum=200, maximum=MAX_CHECK_REQUESTS)
    rng = np.random.default_rng(v.check_int("seed", seed, minimum=0, maximum=2**32 - 1))
    arrivals = poisson_arrivals(rho, n_target / rho, seed=rng)
    n = arrivals.size
    queue = Workload.from_arrays(arrivals, np.full(n, 8), np.ones(n, dtype=int))
    times = rng.exponential(1.0, n) if kind == "exponential" else np.ones(n)
    run = simulate(replica, queue, SchedulerConfig(policy="fcfs", max_batch=1),
                   service_time_s=times)
    t = run.timelines
    order = np.argsort(t.arrival_s, kind="stable")
    waits = (t.admitted_s - t.arrival_s)[order]
    ci = slo.batch_means_ci(waits, None, batches=batches, confidence=confidence)
    theory = (queueing.mm1_mean_wait_s(rho, 1.0) if kind == "exponential"
              else queueing.md1_mean_wait_s(rho, 1.0))
    return {"queue": "M/M/1" if kind == "exponential" else "M/D/1", "utilisation": rho,
            "requests": n, "mean_wait_s": ci.estimate, "standard_error_s": ci.standard_error,
            "low_s": ci.low, "high_s": ci.high, "theory_s": theory,
            "z": abs(ci.estimate - theory) / ci.standard_error}
