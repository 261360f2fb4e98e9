"""Chapter 6's answer key: the cold start, Erlang C for the rush, the price of a warm pool, and what

losing a replica at 7 am costs.

Every expected answer is computed by :mod:`vidya_lab.autoscaling` from Tanvi's scenario; the fleet
runs are seeded and cached so the inline check and the grader agree.
"""

from __future__ import annotations

from vidya_lab import autoscaling, sizing
from vidya_lab.exercises.ch06 import (
    POOL_NODES,
    failure_runs,
    model,
    replica,
    rush_rate_per_s,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI


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


def _erlang() -> int:
    return autoscaling.erlang_replicas(rush_rate_per_s(), model())["replicas"]


def _pool_cost() -> float:
    return POOL_NODES * sizing.cost_per_hour_usd(replica()) * 24.0


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
        answer=lambda g: _cold(),
        unit="s",
        mistakes=(
            Mistake(lambda g: _cold() / 60.0, "that is minutes; the question asks for seconds"),
            Mistake(lambda g: _cold_per_gpu_weights(),
                    "each GPU holds a quarter of the weights, but the node downloads all of them "
                    "over one link: weights_load_s uses the whole model's bytes"),
            Mistake(lambda g: _cold_without("first_request_s", "readiness_s"),
                    "a replica is not serving when the engine has started: add the slow first "
                    "request and the readiness probe"),
            Mistake(lambda g: _cold_without("provision_s"),
                    "a scale-up first needs a GPU node: add provision_s"),
        ),
        hint="sum ColdStart().parts_s(replica): provisioning, image bytes ÷ registry bandwidth, "
             "weights bytes ÷ storage bandwidth, engine start, first request, readiness",
    ),
    Exercise(
        id="6.2",
        prompt="the cold start with weights on local NVMe and the slim image, in seconds",
        answer=lambda g: _mitigated(),
        unit="s",
        mistakes=(
            Mistake(lambda g: autoscaling.mitigated(autoscaling.ColdStart(), "local_nvme").total_s(
                replica()), "that is NVMe alone: apply the slim image too"),
            Mistake(lambda g: autoscaling.mitigated(autoscaling.ColdStart(), "slim_image").total_s(
                replica()), "that is the slim image alone: read the weights from NVMe too"),
            Mistake(lambda g: _cold(), "that is the unmitigated cold start"),
        ),
        hint="autoscaling.mitigated(ColdStart(), 'local_nvme', 'slim_image').total_s(replica)",
    ),
    Exercise(
        id="6.3",
        prompt="replicas Erlang C asks for at the exam day's 7 am rate (slot view)",
        answer=lambda g: _erlang(),
        kind="integer",
        unit="replicas",
        mistakes=(
            Mistake(lambda g: -(-rush_rate_per_s() // model().capacity_rps()),
                    "rate ÷ capacity is 100 % utilisation with no queue at all: Erlang C adds the "
                    "servers that keep P(wait > 2 s) under 1 %"),
            Mistake(lambda g: autoscaling.erlang_replicas(TANVI.exam_peak_rps, model())["replicas"],
                    "that is the evening peak; the question asks for the 7 am rush rate"),
            Mistake(lambda g: autoscaling.replicas_for_rate(rush_rate_per_s(), model()),
                    "that is the simulation-backed count at 60 % utilisation; the question asks "
                    "what Erlang C says"),
        ),
        hint="rate = day_profile('exam').rate_per_s(7 h); erlang_replicas(rate, model)['replicas']",
    ),
    Exercise(
        id="6.4",
        prompt=f"USD per day of a warm pool of {POOL_NODES} nodes kept all day",
        answer=lambda g: _pool_cost(),
        unit="USD",
        mistakes=(
            Mistake(lambda g: POOL_NODES * replica().gpu.price_per_hour_usd * 24.0,
                    "a node of this replica has 4 GPUs: price it with "
                    "sizing.cost_per_hour_usd(replica), not one GPU's price"),
            Mistake(lambda g: sizing.cost_per_hour_usd(replica()) * 24.0,
                    f"the pool has {POOL_NODES} nodes"),
            Mistake(lambda g: POOL_NODES * sizing.cost_per_hour_usd(replica()),
                    "that is one hour; the pool waits all day"),
        ),
        hint="nodes × sizing.cost_per_hour_usd(replica) × 24 h: an idle pool is billed like a busy "
             "fleet",
    ),
    Exercise(
        id="6.5",
        prompt="attainment lost (a fraction) when a replica of a lean fleet fails at 7 am",
        answer=lambda g: _lost(),
        unit="",
        rel_tol=0.02,
        mistakes=(
            Mistake(lambda g: -_lost(), "the sign: attainment without the failure minus with it"),
            Mistake(lambda g: _lost_finished_only(),
                    "you measured attainment over finished requests only; the requests dropped "
                    "with the failed replica count as missed"),
        ),
        hint="failure_runs() gives both days: summary['attainment'] without minus with the failure",
    ),
]
