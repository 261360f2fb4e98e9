"""Chapter 6's exercise data: the cold start, Erlang C for the rush, the price of a warm pool, and what

The constants and helpers the chapter and its exercises share (the same for every reader:
no per-student givens yet); the answers are in the answer key, ``key/ch06.py``.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import autoscaling, layouts, sizing
from vidya_lab.scenario import TANVI

H = autoscaling.SECONDS_PER_HOUR
#: Exercise 6.4's window (hours of an exam day) and the moment a replica is lost (hour).
FAILURE_WINDOW_H = (6.5, 7.5)
FAILURE_AT_H = 7.0
FAILURE_SEED = 0
FAILURE_DT_S = 10.0
#: A lean fleet (80 % utilisation, no spare) whose failed replica's requests are not retried.
FAILURE_UTILISATION = 0.8
#: Exercise 6.3: nodes in the warm pool, kept all day.
POOL_NODES = 2


@cache
def replica() -> sizing.Replica:
    """Tanvi's replica in this chapter: her model on 4 x H100 (the smallest tp that fits)."""
    gpu = TANVI.candidate_gpu_ids[0]
    return sizing.Replica(TANVI.model_id, gpu, tp=layouts.reference_tp(TANVI.model_id, gpu))


@cache
def model() -> autoscaling.ReplicaModel:
    return autoscaling.replica_model(replica())


def rush_rate_per_s() -> float:
    """The exam day's arrival rate at TANVI.rush_hour, requests/s."""
    return float(autoscaling.day_profile("exam").rate_per_s([TANVI.rush_hour * H])[0])


@cache
def failure_runs() -> tuple[dict, dict]:
    """Exercise 6.5's two runs of the exam window: without and with a replica lost at 7 am."""
    start, end = FAILURE_WINDOW_H
    kw = dict(day="exam", policy="scheduled", seed=FAILURE_SEED, dt_s=FAILURE_DT_S,
              start_s=start * H, duration_s=(end - start) * H, model=model(),
              utilisation=FAILURE_UTILISATION, max_retries=0)
    base = autoscaling.simulate_day(replica(), **kw)
    hit = autoscaling.simulate_day(replica(), failures_at_s=(FAILURE_AT_H * H,), **kw)
    return base, hit
