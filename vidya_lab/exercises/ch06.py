"""Chapter 6 exercises: the cold start, Erlang C for the rush, the price of a warm pool, and what
losing a replica at 7 am costs.

Every expected answer is computed by :mod:`vidya_lab.autoscaling` from Tanvi's scenario; the fleet
runs are seeded and cached so the inline check and the grader agree.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import autoscaling, layouts, sizing
from vidya_lab.exercises.core import Exercise, Mistake
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


# ----------------------------------------------------------------------------- 6.1 and 6.2

def _cold() -> float:
    return autoscaling.ColdStart().total_s(replica())


def _cold_without(*names: str) -> float:
    parts = autoscaling.ColdStart().parts_s(replica())
    return sum(v for k, v in parts.items() if k not in names)


def _cold_per_gpu_weights() -> float:
    parts = autoscaling.ColdStart().parts_s(replica())
    return _cold() - parts["weights_load_s"] * (1 - 1 / replica().n_gpus)


def _mitigated() -> float:
    return autoscaling.mitigated(autoscaling.ColdStart(), "local_nvme", "slim_image").total_s(
        replica())


# ----------------------------------------------------------------------------- 6.3

def _erlang() -> int:
    return autoscaling.erlang_replicas(rush_rate_per_s(), model())["replicas"]


# ----------------------------------------------------------------------------- 6.4

def _pool_cost() -> float:
    return POOL_NODES * sizing.cost_per_hour_usd(replica()) * 24.0


# ----------------------------------------------------------------------------- 6.5

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


def _lost() -> float:
    base, hit = failure_runs()
    return base["summary"]["attainment"] - hit["summary"]["attainment"]


def _lost_finished_only() -> float:
    import numpy as np

    out = []
    for d in failure_runs():
        run = d["run"]
        ok = run.meets(autoscaling.tutor_slo())
        fin = run.outcome_codes == 0
        out.append(float(np.mean(ok[fin])))
    return out[0] - out[1]


EXERCISES = [
    Exercise(
        id="6.1",
        prompt="the derived cold start of Tanvi's replica, in seconds",
        expected=_cold,
        unit="s",
        mistakes=(
            Mistake(lambda: _cold() / 60.0, "that is minutes; the question asks for seconds"),
            Mistake(_cold_per_gpu_weights,
                    "each GPU holds a quarter of the weights, but the node downloads all of them "
                    "over one link: weights_load_s uses the whole model's bytes"),
            Mistake(lambda: _cold_without("first_request_s", "readiness_s"),
                    "a replica is not serving when the engine has started: add the slow first "
                    "request and the readiness probe"),
            Mistake(lambda: _cold_without("provision_s"),
                    "a scale-up first needs a GPU node: add provision_s"),
        ),
        hint="sum ColdStart().parts_s(replica): provisioning, image bytes ÷ registry bandwidth, "
             "weights bytes ÷ storage bandwidth, engine start, first request, readiness",
    ),
    Exercise(
        id="6.2",
        prompt="the cold start with weights on local NVMe and the slim image, in seconds",
        expected=_mitigated,
        unit="s",
        mistakes=(
            Mistake(lambda: autoscaling.mitigated(autoscaling.ColdStart(), "local_nvme").total_s(
                replica()), "that is NVMe alone: apply the slim image too"),
            Mistake(lambda: autoscaling.mitigated(autoscaling.ColdStart(), "slim_image").total_s(
                replica()), "that is the slim image alone: read the weights from NVMe too"),
            Mistake(_cold, "that is the unmitigated cold start"),
        ),
        hint="autoscaling.mitigated(ColdStart(), 'local_nvme', 'slim_image').total_s(replica)",
    ),
    Exercise(
        id="6.3",
        prompt="replicas Erlang C asks for at the exam day's 7 am rate (slot view)",
        expected=_erlang,
        kind="integer",
        unit="replicas",
        mistakes=(
            Mistake(lambda: -(-rush_rate_per_s() // model().capacity_rps()),
                    "rate ÷ capacity is 100 % utilisation with no queue at all: Erlang C adds the "
                    "servers that keep P(wait > 2 s) under 1 %"),
            Mistake(lambda: autoscaling.erlang_replicas(TANVI.exam_peak_rps, model())["replicas"],
                    "that is the evening peak; the question asks for the 7 am rush rate"),
            Mistake(lambda: autoscaling.replicas_for_rate(rush_rate_per_s(), model()),
                    "that is the simulation-backed count at 60 % utilisation; the question asks "
                    "what Erlang C says"),
        ),
        hint="rate = day_profile('exam').rate_per_s(7 h); erlang_replicas(rate, model)['replicas']",
    ),
    Exercise(
        id="6.4",
        prompt=f"USD per day of a warm pool of {POOL_NODES} nodes kept all day",
        expected=_pool_cost,
        unit="USD",
        mistakes=(
            Mistake(lambda: POOL_NODES * replica().gpu.price_per_hour_usd * 24.0,
                    "a node of this replica has 4 GPUs: price it with "
                    "sizing.cost_per_hour_usd(replica), not one GPU's price"),
            Mistake(lambda: sizing.cost_per_hour_usd(replica()) * 24.0,
                    f"the pool has {POOL_NODES} nodes"),
            Mistake(lambda: POOL_NODES * sizing.cost_per_hour_usd(replica()),
                    "that is one hour; the pool waits all day"),
        ),
        hint="nodes × sizing.cost_per_hour_usd(replica) × 24 h: an idle pool is billed like a busy "
             "fleet",
    ),
    Exercise(
        id="6.5",
        prompt="attainment lost (a fraction) when a replica of a lean fleet fails at 7 am",
        expected=_lost,
        unit="",
        rel_tol=0.02,
        mistakes=(
            Mistake(lambda: -_lost(), "the sign: attainment without the failure minus with it"),
            Mistake(_lost_finished_only,
                    "you measured attainment over finished requests only; the requests dropped "
                    "with the failed replica count as missed"),
        ),
        hint="failure_runs() gives both days: summary['attainment'] without minus with the failure",
    ),
]
