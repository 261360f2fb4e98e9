"""Chapter 6's answer key: the cold start, where a reactive fleet is late, a failure's cost, the
GPUs prefix-aware routing saves, what to reserve, a second region's spares, and a policy under a
failure.

Every expected answer is computed by :mod:`vidya_lab.autoscaling` and :mod:`vidya_lab.procurement`
from Tanvi's scenario and the reader's givens; the runs are the seeded, cached ones of
``exercises/ch06.py``, so the inline check and the grader agree.
"""

from __future__ import annotations

import math

import numpy as np

from vidya_lab import autoscaling, procurement
from vidya_lab.exercises.ch06 import (
    FAILOVER_SPARES,
    GIVENS,
    TABLE_POLICIES,
    TABLE_SPARES,
    cold_start,
    exam_day,
    failover_grid,
    failure_runs,
    failure_table,
    replica,
    reserve_for,
    routing,
    routing_rows,
)
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI

COLD = {"provision_s": GIVENS["provision_s"]}


def _parts(g) -> dict:
    return cold_start(g["provision_s"]).parts_s(replica())


def _cold(g) -> float:
    return float(sum(_parts(g).values()))


def _without(g, *names: str) -> float:
    return float(sum(v for k, v in _parts(g).items() if k not in names))


def _per_gpu_weights(g) -> float:
    return _cold(g) - _parts(g)["weights_load_s"] * (1 - 1 / replica().n_gpus)


def _mitigated(g, *which: str) -> float:
    return autoscaling.mitigated(cold_start(g["provision_s"]), *which).total_s(replica())


ALL_FIXES = ("local_nvme", "slim_image", "compile_cache")


def _lost() -> float:
    base, hit = failure_runs()
    return base["summary"]["attainment"] - hit["summary"]["attainment"]


def _lost_finished_only() -> float:
    out = []
    for d in failure_runs():
        run = d["run"]
        ok = run.meets(autoscaling.tutor_slo())
        out.append(float(np.mean(ok[run.outcome_codes == 0])))
    return out[0] - out[1]


def _row(g, router: str) -> dict:
    return next(r for r in routing_rows(g["peak_rps"]) if r["router"] == router)


def _gpus_if(g, *, share: bool = True, target: bool = True, router: str = "prefix_aware") -> int:
    row = _row(g, router)
    u = autoscaling.TARGET_UTILISATION if target else 1.0
    s = row["busiest_share"] if share else 1.0
    return int(math.ceil(g["peak_rps"] * s / (row["capacity_rps"] * u) - 1e-12)) * \
        replica().n_gpus


def _curve() -> list[float]:
    return exam_day()["scheduled"]["replicas_by_hour"]


def _spare(g, cold: str = "slow end") -> int:
    grid = failover_grid()
    for k in FAILOVER_SPARES:
        if grid[(cold, k)]["attainment_after_loss"] >= g["failover_target"]:
            return k
    return -1  # none of the spares tried is enough


#: Exercise 6.9's choices: every setting of the table, "policy N+k".
SETTINGS = tuple(f"{p} N+{k}" for p in TABLE_POLICIES for k in TABLE_SPARES)


def _setting_ok(label: str) -> tuple[bool, float]:
    p, k = label.rsplit(" N+", 1)
    d = failure_table()[(p, int(k))]
    return d["summary"]["rush_attainment"] >= TANVI.attainment_target, d["cost_usd"]


def _cheapest_setting() -> str:
    ok = [(cost, s) for s in SETTINGS for good, cost in [_setting_ok(s)] if good]
    return min(ok)[1]


#: The hints of exercise 6.9's wrong settings (tests/test_exercises_ch06.py checks that each
#: says what the runs show: the reactive fleet without a spare misses, the others cost more).
_MISSES = "with no spare replica the reactive fleet is a cold start late at the foot of the ramp, "\
          "and the failure lands on it: its rush attainment stays under 99 %"
_COSTLIER = "it meets the target, but costs more than another setting that does: compare the bills"
WRONG_SETTINGS = {"reactive N+0": _MISSES, "predictive N+0": _COSTLIER,
                  "predictive N+1": _COSTLIER, "scheduled N+0": _COSTLIER,
                  "scheduled N+1": _COSTLIER}


EXERCISES = [
    Exercise(
        id="6.1", level="compute", givens=COLD, unit="s",
        prompt="the cold start of Tanvi's replica with your provisioning time, in seconds",
        answer=_cold,
        mistakes=(
            Mistake(lambda g: _cold(g) / 60.0, "that is minutes; the question asks for seconds"),
            Mistake(_per_gpu_weights,
                    "each GPU holds a quarter of the weights, but the node downloads all of them "
                    "over one link: use the whole model's bytes"),
            Mistake(lambda g: _without(g, "first_request_s", "readiness_s"),
                    "a replica is not serving when the engine has started: add the slow first "
                    "request and the readiness probe"),
            Mistake(lambda g: _without(g, "provision_s"),
                    "a scale-up first needs a GPU node: add the provisioning time"),
            Mistake(lambda g: TANVI.observed_scale_up_s,
                    "that is the story's observation; add the parts with your provisioning time"),
        ),
        hint="add the parts in order: provisioning, image bytes ÷ registry bandwidth, weight bytes "
             "÷ storage bandwidth, compile, engine start, first request, prefix warm-up, readiness",
    ),
    Exercise(
        id="6.2", level="compute", givens=COLD, unit="s",
        prompt="the cold start with weights on local NVMe, the slim image and a compile cache (s)",
        answer=lambda g: _mitigated(g, *ALL_FIXES),
        mistakes=(
            Mistake(lambda g: _mitigated(g, "local_nvme"), "that is NVMe alone: apply the slim "
                                                           "image and the compile cache too"),
            Mistake(lambda g: _mitigated(g, "local_nvme", "slim_image"),
                    "the compile cache is missing: a cached compile takes seconds, not a minute"),
            Mistake(lambda g: _mitigated(g, *ALL_FIXES) - g["provision_s"],
                    "none of these fixes removes the GPU node's provisioning: only a pool of "
                    "ready nodes does"),
            Mistake(_cold, "that is the unmitigated cold start"),
        ),
        hint="each fix changes one part: weights ÷ NVMe bandwidth, the slim image's bytes, the "
             "cached compile; the rest stays",
    ),
    Exercise(
        id="6.3", level="explain", kind="choice",
        prompt="where in the exam morning does the reactive fleet miss its targets",
        choices=("foot of the ramp", "peak of the rush", "after the rush", "all morning alike"),
        answer=lambda g: "foot of the ramp",
        mistakes=(
            Mistake(lambda g: "peak of the rush",
                    "near 7:00 the load grows only about 10 % within one cold start, well inside "
                    "the slack a 60 % target leaves; compare rate(t + cold start) ÷ rate(t) with "
                    "1 ÷ 0.6 along the morning"),
            Mistake(lambda g: "after the rush",
                    "after 7:00 the load falls: a fleet that lags a falling load has more "
                    "replicas than it needs"),
            Mistake(lambda g: "all morning alike",
                    "the lag is one cold start all morning, but what it costs depends on how much "
                    "the load grows within it"),
        ),
        hint="a reactive fleet meets the load of one cold start ago: it saturates where the load "
             "grows more than 1 ÷ (target utilisation) times within one cold start",
    ),
    Exercise(
        id="6.4", level="explain", unit="", rel_tol=0.02,
        prompt="attainment lost (a fraction) when a replica of a lean fleet fails at 7 am",
        answer=lambda g: _lost(),
        mistakes=(
            Mistake(lambda g: -_lost(), "the sign: attainment without the failure minus with it"),
            Mistake(lambda g: _lost_finished_only(),
                    "you measured attainment over finished requests only; the requests dropped "
                    "with the failed replica count as missed"),
        ),
        hint="both runs' summary attainment, without minus with the failure",
    ),
    Exercise(
        id="6.5", level="compute", kind="integer", unit="GPUs",
        givens={"peak_rps": GIVENS["peak_rps"]},
        prompt="GPUs your exam peak needs with prefix-aware routing (busiest replica at the target)",
        answer=lambda g: _row(g, "prefix_aware")["gpus"],
        mistakes=(
            Mistake(lambda g: _row(g, "prefix_aware")["replicas"],
                    "that is replicas; each has 4 GPUs"),
            Mistake(lambda g: _row(g, "session_affinity")["gpus"],
                    "that is session affinity: the same hits, but conversations hashed to "
                    "replicas load the busiest one more; the question asks for prefix-aware"),
            Mistake(lambda g: _gpus_if(g, target=False),
                    "at 100 % of capacity half the requests miss the TPOT target: divide by the "
                    "capacity at the target utilisation"),
            Mistake(lambda g: _row(g, "round_robin")["gpus"],
                    "that is round robin's capacity; the question asks for prefix-aware routing"),
        ),
        hint="replicas = ceil(peak × busiest share ÷ (capacity × target utilisation)); GPUs = 4 × "
             "replicas",
    ),
    Exercise(
        id="6.6", level="explain", unit="",
        prompt="share of follow-ups round robin sends to the replica that served their last turn",
        answer=lambda g: 1.0 / routing()["replicas"],
        mistakes=(
            Mistake(lambda g: 0.0, "round robin does not avoid the previous replica: the next "
                                   "turn lands wherever the counter stands, that one included"),
            Mistake(lambda g: 1.0 - 1.0 / routing()["replicas"],
                    "that is the share that lands elsewhere"),
            Mistake(lambda g: float(routing()["replicas"]),
                    "a share is between 0 and 1: one replica out of how many?"),
        ),
        hint="the counter has moved on by every request of every other student since the last "
             "turn: which replica it stands at is as good as random among the N",
    ),
    Exercise(
        id="6.7", level="compute", kind="integer", unit="replicas",
        givens={"reserved_ratio": GIVENS["reserved_ratio"]},
        prompt="replicas to reserve for the scheduled exam day at your reserved ÷ on-demand price",
        answer=lambda g: reserve_for(g["reserved_ratio"]),
        mistakes=(
            Mistake(lambda g: int(math.floor(min(_curve()))),
                    "that is the night's minimum: reserve every replica busy at least 24 × ratio "
                    "hours a day, not only those busy all 24"),
            Mistake(lambda g: procurement.reserved_replicas(_curve(),
                                                            1.0 - g["reserved_ratio"]),
                    "the threshold is 24 × ratio hours: a reserved hour costs the ratio, so a "
                    "replica busy longer than that is cheaper reserved"),
            Mistake(lambda g: int(math.ceil(max(_curve()))),
                    "that reserves the evening peak: most of those replicas idle most of the day"),
        ),
        hint="for k = 1, 2, …: hours the k-th replica is in service = Σ min(1, max(0, replicas(h) "
             "− (k − 1))); reserve it if that is ≥ 24 × ratio",
    ),
    Exercise(
        id="6.8", level="design", kind="integer", unit="replicas",
        givens={"failover_target": GIVENS["failover_target"]},
        prompt="fewest spare replicas per region that hold your target after losing the other "
               "region in exam week",
        answer=lambda g: _spare(g),
        mistakes=(
            Mistake(lambda g: _spare(g, "sourced"),
                    "in exam week GPU nodes are scarce: use the slow end of provisioning, not the "
                    "sourced cold start"),
            Mistake(lambda g: 2 * _spare(g),
                    "that counts both regions' spares; the question asks per region"),
        ),
        hint="read the slow-end rows: the first spare count whose attainment in the hour after "
             "the loss reaches your target",
    ),
    Exercise(
        id="6.9", level="design", kind="choice", choices=SETTINGS,
        prompt="cheapest policy and N+k that keep 99 % of the rush within the targets with a "
               "replica lost at 7 am",
        answer=lambda g: _cheapest_setting(),
        mistakes=tuple(Mistake(lambda g, s=s: s, h) for s, h in WRONG_SETTINGS.items()),
        hint="of the settings whose rush attainment reaches 99 %, the one with the smallest bill",
    ),
]
