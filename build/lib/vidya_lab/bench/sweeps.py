"""A goodput sweep: attainment at each offered load, and the highest load that keeps the promise.

A benchmark team runs the same open-loop benchmark at a ladder of rates (guidellm's ``sweep``
profile, a script around ``vllm bench serve --request-rate R``) and reads, at each, the attainment
of the SLO; the **goodput** in DistServe's sense is the highest rate whose attainment stays at the
target (:func:`vidya_lab.slo.max_rate_meeting_slo` finds it by bisection). Here the deployment is
the toy replica, two hours of traffic at every rate (one seed, so the sweep is reproducible).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from vidya_lab import slo
from vidya_lab._validate import check_instance, check_int, check_real, check_reals
from vidya_lab.toyserver import ToyServer, simulate, tutor_workload

__all__ = ["SWEEP_DURATION_S", "SWEEP_SEED", "sweep", "toy_trace"]

#: Length (seconds) and seed of each run of the book's sweep: two hours of traffic per rate, so
#: the attainment at each rate is steadier than one ten-minute benchmark's.
SWEEP_DURATION_S, SWEEP_SEED = 7200.0, 2024


@lru_cache(maxsize=128)
def toy_trace(rate_per_s: float, duration_s: float = SWEEP_DURATION_S,
              seed: int = SWEEP_SEED) -> slo.Timelines:
    """The toy replica's timelines under Tanvi's traffic at ``rate_per_s`` (cached)."""
    check_real("rate_per_s", rate_per_s, minimum=0.0, min_inclusive=False)
    check_int("seed", seed, minimum=0)
    return simulate(tutor_workload(rate_per_s, duration_s, seed=seed), ToyServer())


def sweep(run: Callable[[float], object], target: slo.SLO, rates) -> list[dict]:
    """One row per offered rate (requests/s): ``rate_per_s``, ``attainment`` (0..1, all
    requests), ``p99_ttft_s`` and ``p99_tpot_s`` (seconds, finished requests); ``run(rate)``
    returns the timelines of one benchmark run at that rate."""
    if not callable(run):
        raise TypeError("run must be a function rate_per_s -> timelines")
    check_instance("target", target, slo.SLO)
    out = []
    for rate in check_reals("rates", rates, minimum=0.0, max_length=1000):
        t = slo.as_timelines(run(float(rate)))
        out.append({"rate_per_s": float(rate), "attainment": slo.attainment(t, target),
                    "p99_ttft_s": slo.percentile(slo.ttft_s(t), 99),
                    "p99_tpot_s": slo.percentile(slo.tpot_s(t), 99)})
    return out
