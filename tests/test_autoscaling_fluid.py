"""The fluid fleet (the chapter 6 widget's fidelity) against the simulated day, by hand, and its
limits."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from vidya_lab import autoscaling as a
from vidya_lab import sizing
from vidya_lab.scenario import TANVI
from vidya_lab.workload import DiurnalProfile

H = a.SECONDS_PER_HOUR


@cache
def rep() -> sizing.Replica:
    return sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)


@cache
def model() -> a.ReplicaModel:
    return a.replica_model(rep())


# ----------------------------------------------------------------------------- the fluid fleet

@cache
def whole_day(day: str, policy: str, fidelity: str, cold_start=None) -> dict:
    return a.simulate_day(rep(), day=day, policy=policy, seed=6, dt_s=15.0, model=model(),
                          fidelity=fidelity, cold_start=cold_start)


@pytest.mark.slow
@pytest.mark.parametrize("day", a.DAYS)
@pytest.mark.parametrize("policy", a.POLICIES)
def test_fluid_fleet_lands_near_the_simulated_day(day, policy):
    """The widget's fluid fleet against simulate_fleet on whole days (seed 6, 15 s step, the
    derived ~11 min cold start). Measured: replicas by hour within 0.4 (normal) and 1.0 (exam)
    replicas; GPU-hours -6.5 % (normal) and -2.6 % (exam) for reactive (the simulation's noisy 60 s
    rate scales up more often), -1.6 % and -0.6 % for predictive (its live floor is that reactive
    rule), 0.0 % for scheduled; attainment within 0.2 points and rush attainment within 0.5 points
    (re-measured on the issue-14 cost model: the reactive exam rush differs by 0.9 points, the
    fluid model's rush a little worse than the simulation's). The bounds below leave a little room
    above those."""
    fluid = whole_day(day, policy, "fluid")
    sim = whole_day(day, policy, "fleet")
    f, s = fluid["summary"], sim["summary"]
    diff = np.abs(np.array(fluid["replicas_by_hour"]) - np.array(sim["replicas_by_hour"]))
    assert diff.max() <= 1.25
    bound = {"reactive": 0.08, "predictive": 0.03, "scheduled": 0.01}[policy]
    assert f["gpu_hours"] == pytest.approx(s["gpu_hours"], rel=bound)
    rush_bound = 0.011 if policy == "reactive" else 0.0075
    assert f["rush_attainment"] == pytest.approx(s["rush_attainment"], abs=rush_bound)
    assert f["attainment"] == pytest.approx(s["attainment"], abs=0.005)
    assert abs(f["max_replicas"] - s["max_replicas"]) <= 2
    assert f["arrived"] == pytest.approx(s["arrived"], rel=0.01)  # the curve's integral vs Poisson


@pytest.mark.slow
def test_fluid_fleet_sees_a_late_rush():
    # a 20-minute cold start: the reactive fleet is late for the exam rush in both models; the
    # fluid one is a little more pessimistic (measured 0.899 vs 0.922)
    fluid = whole_day("exam", "reactive", "fluid", 1200.0)["summary"]
    sim = whole_day("exam", "reactive", "fleet", 1200.0)["summary"]
    assert fluid["rush_attainment"] < TANVI.attainment_target - 0.05
    assert fluid["rush_attainment"] == pytest.approx(sim["rush_attainment"], abs=0.03)
    assert fluid["rush_attainment"] < whole_day("exam", "reactive", "fluid")["summary"][
        "rush_attainment"]


def test_fluid_fleet_by_hand():
    # a flat load of 10 x capacity, 10 replicas scheduled: nothing waits, the served load is 1 per
    # replica, attainment is the curve's value at 1.0, and the bill is 10 replicas all day
    m = model()
    cap = m.capacity_rps()
    prof = DiurnalProfile(hours=(0.0, 12.0), relative=(1.0, 1.0), peak_rate_per_s=10 * cap)
    fleet = a.Fleet(m, min_replicas=1, max_replicas=20)
    run = a.simulate_fluid(prof, fleet, a.Scheduled((10,) * 24), horizon_s=2 * H)
    s = run.series
    curve = a.fluid_curve(m)
    assert np.all(s["serving"] == 10) and s["waiting"].max() == 0.0
    assert s["arrivals"].sum() == pytest.approx(10 * cap * 2 * H, rel=1e-9)
    assert s["utilisation"][1:] == pytest.approx(1.0)
    at_one = curve["attainment"][list(curve["utilisation"]).index(1.0)]
    assert run.summary()["attainment"] == pytest.approx(at_one, rel=1e-3)
    assert run.gpu_hours == pytest.approx(10 * 2 * m.replica.n_gpus)
    # overloaded at 3 x what 2 replicas keep up with: the queue grows until the timeout turns
    # requests away, and attainment falls to 0 once the wait passes the TTFT target
    heavy = a.simulate_fluid(replace_rate(prof, 3 * 2 * curve["max_rate_per_s"]), fleet,
                             a.Scheduled((2,) * 24), horizon_s=H)
    hs = heavy.series
    assert hs["rejected"].sum() > 0 and hs["attainment"][-1] == 0.0
    assert hs["waiting"].max() <= 2 * curve["max_rate_per_s"] * fleet.queue_timeout_s + 1e-6
    served = (hs["arrivals"].sum() - hs["rejected"].sum() - hs["waiting"][-1])
    assert served == pytest.approx(2 * curve["max_rate_per_s"] * H, rel=1e-6)  # conservation


def replace_rate(prof, rate):
    from dataclasses import replace

    return replace(prof, peak_rate_per_s=rate)


def test_fluid_fleet_refuses_failures_and_the_curve_is_monotone():
    m = model()
    with pytest.raises(ValueError, match="mtbf_s"):
        a.simulate_fluid("normal", a.Fleet(m, mtbf_s=3600.0), a.Reactive())
    with pytest.raises(ValueError, match="fidelity"):
        a.simulate_day(rep(), day="normal", model=m, fidelity="exact")
    c = a.fluid_curve(m)
    assert c["attainment"][0] == 1.0 and c["attainment"][-1] < 0.1
    assert c["max_rate_per_s"] > m.capacity_rps()
    at_target = float(np.interp(a.TARGET_UTILISATION, c["utilisation"], c["attainment"]))
    assert at_target >= TANVI.attainment_target  # the same fact as the simulation's test above
