"""Policies: the one utilisation, the builders, the predictive policy's live floor, the autoscaler's
tick rule, and the Erlang C counterpart."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cache

import numpy as np
import pytest

from vidya_lab import autoscaling as a
from vidya_lab import queueing, sizing
from vidya_lab.scenario import TANVI

H = a.SECONDS_PER_HOUR


@cache
def rep() -> sizing.Replica:
    return sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)


@cache
def model() -> a.ReplicaModel:
    return a.replica_model(rep())


def test_one_utilisation_everywhere():
    m = model()
    cap = m.capacity_rps()
    assert a.utilisation(3 * cap, 5, m) == pytest.approx(0.6)
    # the reactive rule's utilisation metric is that number: at 0.6 on target it keeps the fleet
    r = a.Reactive(target=0.6)
    assert r.raw_desired(5, 0, 0, 0.0, 3 * cap, m) == 5
    assert r.raw_desired(5, 0, 0, 0.0, 6 * cap, m) == 10  # twice the load, twice the fleet
    # replicas_for_rate inverts it (so scheduled and predictive tables use it too)
    n = a.replicas_for_rate(10 * cap, m, utilisation=0.6)
    assert n == math.ceil(10 / 0.6) and a.utilisation(10 * cap, n, m) <= 0.6
    # Erlang C's fleet is reported at the same utilisation
    e = a.erlang_replicas(TANVI.exam_peak_rps, m)
    assert e["utilisation"] == pytest.approx(a.utilisation(TANVI.exam_peak_rps, e["replicas"], m))
    # the fluid fleet's per-tick utilisation: nothing waits, so served = offered
    prof = a.day_profile("normal")
    run = a.simulate_fluid(prof, a.Fleet(m, max_replicas=20), a.Scheduled((4,) * 24),
                           horizon_s=2 * H)
    s = run.series
    offered = s["arrivals"][1:] / run.dt_s
    assert s["utilisation"][1:] == pytest.approx(offered / (4 * cap))


def test_policy_builders():
    m = model()
    sched = a.scheduled_for("exam", m, lead_s=480.0)
    assert len(sched.replicas_by_hour) == 24
    assert sched.replicas_by_hour[TANVI.rush_hour] > sched.replicas_by_hour[3]
    peak = a.day_profile("exam").max_rate_between(20 * H, 21 * H)
    assert sched.replicas_by_hour[20] == a.replicas_for_rate(peak, m, margin=0.1)
    assert sched.desired_at(7 * H - 480.0) == sched.replicas_by_hour[7]  # acts one cold start early
    yesterday = np.array([100.0, 200.0, 7 * H + 1.0])
    pred = a.predictive_from(yesterday, m, bin_s=600.0)
    assert len(pred.replicas_by_bin) == 144 and min(pred.replicas_by_bin) >= 1
    assert pred.live == a.Reactive(target=a.TARGET_UTILISATION)  # live load is its floor
    # a forecast from a normal day under-provisions the first exam day
    normal = a.make_policy("predictive", m, day="exam", yesterday="normal")
    exam = a.make_policy("predictive", m, day="exam")
    assert sum(normal.replicas_by_bin) < sum(exam.replicas_by_bin)
    own = a.make_policy("predictive", m, reactive=a.Reactive(target=0.5))
    assert own.live.target == 0.5


def test_predictive_takes_the_larger_of_forecast_and_live_load():
    m = model()
    cap = m.capacity_rps()
    fleet = a.Fleet(m, max_replicas=50)
    low = a.Predictive((2,) * 144, live=a.Reactive(scale_up_cooldown_s=0.0))
    tick = a.Autoscaler(fleet, low, init=2)
    # the forecast says 2; ten replicas' worth of load at the target is arriving: 10 it is
    seen = a.Signals(serving=2, rate_per_s=10 * a.TARGET_UTILISATION * cap)
    assert tick.want(0.0, 2, seen) == 10
    assert a.Autoscaler(fleet, replace(low, live=None), init=2).want(0.0, 2, seen) == 2
    # when live load is below the forecast, the forecast wins
    high = a.Predictive((10,) * 144)
    assert a.Autoscaler(fleet, high, init=10).want(
        0.0, 10, a.Signals(serving=10, rate_per_s=0.1 * cap)) == 10


def test_a_forecast_that_underestimates_is_rescued_by_live_load():
    # the first exam morning, learning from an ordinary day: the forecast alone leaves the rush
    # short; its live floor scales up like a reactive policy, a cold start late
    kw = dict(day="exam", seed=0, dt_s=15.0, start_s=4.5 * H, duration_s=3.5 * H, model=model())
    pol = a.make_policy("predictive", model(), day="exam", yesterday="normal",
                        lead_s=a.Fleet(model()).start_s)
    alone = a.simulate_day(rep(), policy=replace(pol, live=None), **kw)["summary"]
    floor = a.simulate_day(rep(), policy=pol, **kw)["summary"]
    react = a.simulate_day(rep(), policy="reactive", **kw)["summary"]
    assert alone["rush_attainment"] < TANVI.attainment_target - 0.1
    assert floor["rush_attainment"] > alone["rush_attainment"] + 0.1
    assert floor["rush_attainment"] >= react["rush_attainment"] - 0.005  # never worse than live
    assert floor["max_replicas"] > alone["max_replicas"]


def test_erlang_c_against_published_values():
    # Erlang C's published examples (test_queueing holds the Erlang B table and closed forms):
    # 120 customers/h, 3 min each, 10 servers: "from the Erlang C curve ... about 0.10";
    assert queueing.erlang_c(10, 6.0) == pytest.approx(0.10, abs=0.005)
    # two 1 Mbps lines, 150 packets/s of 10 kb: P(wait) = 9/14 (Wolfram ErlangC example);
    assert queueing.erlang_c(2, 1.5) == pytest.approx(9 / 14)
    # 30 calls/h of 5 min, 90 % answered without delay: 6 agents
    assert queueing.servers_needed(30 / 3600, 1 / 300, max_wait_probability=0.1).servers == 6


def test_erlang_replicas_is_optimistic_against_the_simulation():
    m = model()
    e = a.erlang_replicas(TANVI.exam_peak_rps, m)
    st = queueing.servers_needed(TANVI.exam_peak_rps, m.capacity_rps() / m.slo_batch,
                                 wait_s=TANVI.ttft_target_s,
                                 max_wait_exceeds_probability=1 - TANVI.attainment_target)
    assert e["slots"] == st.servers and e["replicas"] == math.ceil(st.servers / m.slo_batch)
    assert e["replicas"] >= math.ceil(TANVI.exam_peak_rps / m.capacity_rps())
    # batching is not M/M/c: a fleet sized by Erlang C runs each replica near capacity, where the
    # coarse model (and the iteration-level simulator) misses the SLO
    assert e["utilisation"] > a.TARGET_UTILISATION
    assert a.replicas_for_rate(TANVI.exam_peak_rps, m) > e["replicas"]


def test_policy_errors_name_the_parameter():
    m = model()
    with pytest.raises(ValueError, match="metric"):
        a.Reactive(metric="cpu")
    with pytest.raises(ValueError, match="replicas_by_hour"):
        a.Scheduled((1, 2, 3))
    with pytest.raises(TypeError, match="replicas_by_hour"):
        a.Scheduled(5)
    with pytest.raises(ValueError, match="policy"):
        a.make_policy("psychic", m)
    with pytest.raises(TypeError, match="live must be a Reactive"):
        a.Predictive((1,), live="reactive")
    with pytest.raises(ValueError, match="lead_s"):
        a.Scheduled((1,) * 24, lead_s=1e300)
    with pytest.raises(TypeError, match="model must be a ReplicaModel"):
        a.replicas_for_rate(1.0, "h100")
    with pytest.raises(TypeError, match="model must be a ReplicaModel"):
        a.erlang_replicas(1.0, None)
    with pytest.raises(TypeError, match="model must be a ReplicaModel"):
        a.scheduled_for("exam", object())
    with pytest.raises(ValueError, match="yesterday_arrival_s"):
        a.predictive_from([float("nan")], m)
