"""Issue 16 for the fleet: every documented limit is a stated bound, refused up front with the limit
in the message; a cost that does not grow with a bound the fleet never reaches; strict types."""

from __future__ import annotations

import time
import tracemalloc
from functools import cache

import numpy as np
import pytest

from vidya_lab import autoscaling as a
from vidya_lab import sizing
from vidya_lab.cli import main
from vidya_lab.scenario import TANVI
from vidya_lab.workload import DiurnalProfile, Workload

H = a.SECONDS_PER_HOUR


@cache
def rep() -> sizing.Replica:
    return sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)


@cache
def model() -> a.ReplicaModel:
    return a.replica_model(rep())


def flat_workload(rate_per_s: float, duration_s: float, seed: int = 0):
    prof = DiurnalProfile(hours=(0.0, 12.0), relative=(1.0, 1.0), peak_rate_per_s=rate_per_s)
    return a.day_workload(prof, seed=seed, duration_s=duration_s)


def refused_fast(fn, match: str, exc=ValueError):
    t = time.perf_counter()
    with pytest.raises(exc, match=match):
        fn()
    assert time.perf_counter() - t < 5.0  # refused up front, not after the work


def test_max_replicas_is_a_stated_bound():
    refused_fast(lambda: a.Fleet(model(), max_replicas=2**31), r"max_replicas.*<= 4096")
    refused_fast(lambda: a.Fleet(model(), max_replicas=10**400), "max_replicas")
    assert a.Fleet(model(), max_replicas=a.MAX_REPLICAS).max_replicas == a.MAX_REPLICAS


def peak_bytes(max_replicas: int) -> int:
    w = flat_workload(3 * model().capacity_rps(), 900, 1)
    tracemalloc.start()
    a.simulate_fleet(w, a.Fleet(model(), max_replicas=max_replicas), a.Reactive(), dt_s=5.0,
                     initial_replicas=2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_cost_does_not_grow_with_max_replicas_the_fleet_never_reaches():
    # the fleet reaches a handful of replicas: its state is sized by them, not by the bound
    # (before, arrays of 2 x max_replicas rows: 5.8 GB and 30 min for --max 1000000)
    small, large = peak_bytes(8), peak_bytes(a.MAX_REPLICAS)
    assert large < 1.2 * small + 1e6


def test_autoscale_cli_refuses_a_million_replicas_in_one_line(capsys):
    t = time.perf_counter()
    rc = main(["autoscale", "--max", "1000000", "--day", "normal", "--dt-s", "30"])
    err = capsys.readouterr().err
    assert rc == 2 and "max_replicas" in err and "4096" in err
    assert len(err.strip().splitlines()) == 1 and time.perf_counter() - t < 10.0


def test_queue_timeout_that_lets_a_day_pile_up_is_refused():
    # 3e7 s of patience: every arrival of the day could wait at once (5.8 GiB before)
    refused_fast(lambda: a.simulate_day(rep(), day="exam", model=model(), queue_timeout_s=3e7),
                 r"queue_timeout_s.*limit is 4e\+09")


def test_queue_timeout_no_longer_sizes_memory():
    # a patience of a whole hour on a short window runs, and nothing is lost
    w = flat_workload(4 * model().capacity_rps(), 600, 2)
    run = a.simulate_fleet(w, a.Fleet(model(), max_replicas=1, queue_timeout_s=3600.0),
                           a.Scheduled((1,) * 24), dt_s=5.0, initial_replicas=1,
                           drain_limit_s=600.0)
    c = run.counts()
    assert c["arrived"] == len(w) == c["finished"] + c["rejected"] + c["in_flight"]
    assert c["in_flight"] > 0  # an overloaded replica with hour-long patience leaves some waiting


def test_horizon_beyond_the_step_limit_is_refused():
    w = flat_workload(1.0, 60)
    refused_fast(lambda: a.simulate_fleet(w, a.Fleet(model()), a.Reactive(), horizon_s=1e9,
                                          dt_s=5.0), r"time steps; the limit is 5e\+05")
    refused_fast(lambda: a.simulate_fleet(w, a.Fleet(model()), a.Reactive(), dt_s=0.01,
                                          horizon_s=86400.0), "dt_s")


def test_cold_starts_of_a_million_seconds_run_and_longer_are_refused():
    # the planner passes such a start through simulate_day: it runs in the time of a normal day
    # (no replica that starts ever serves), and nothing is lost
    t = time.perf_counter()
    d = a.simulate_day(rep(), day="exam", policy="scheduled", cold_start=1e6, dt_s=15.0,
                       model=model(), start_s=5 * H, duration_s=2 * H)
    assert time.perf_counter() - t < 30.0
    s = d["summary"]
    assert s["arrived"] == s["finished"] + s["rejected"] + s["in_flight"] and s["rejected"] > 0
    assert d["cold_start_s"] == 1e6 and d["policy"].lead_s == 1e6
    refused_fast(lambda: a.simulate_day(rep(), cold_start=1e9, model=model()),
                 r"cold_start must be <= 2592000")
    refused_fast(lambda: a.Fleet(model(), cold_start=a.ColdStart(provision_s=1e9)), "provision_s")


def test_rush_attainment_checks_its_hours():
    d = a.simulate_day(rep(), day="normal", policy="scheduled", cold_start=0.0, dt_s=30.0,
                       model=model(), start_s=5 * H, duration_s=H)
    run = d["run"]
    with pytest.raises(TypeError, match="hours"):
        a.rush_attainment(run, hours=())  # IndexError before
    with pytest.raises(ValueError, match="hours"):
        a.rush_attainment(run, hours=(9.0, 7.0))
    with pytest.raises(ValueError, match=r"hours\[1\]"):
        a.rush_attainment(run, hours=(5.0, 25.0))
    assert a.rush_attainment(run, hours=(5.0, 6.0)) == d["summary"]["attainment"]
    fluid = a.simulate_day(rep(), day="normal", policy="scheduled", model=model(),
                           fidelity="fluid", start_s=5 * H, duration_s=H)["run"]
    with pytest.raises(TypeError, match="hours"):
        fluid.rush_attainment(hours=())


def test_wrong_object_types_are_named_not_attribute_errors():
    m = model()
    w = flat_workload(1.0, 60)
    cases = [
        (lambda: a.summary("run"), "run must be a FleetRun"),
        (lambda: a.hourly(None), "run must be a FleetRun"),
        (lambda: a.rush_attainment(3), "run must be a FleetRun"),
        (lambda: a.simulate_fleet(w, a.Fleet(m), a.Reactive(), horizon_s=60.0).meets("slo"),
         "target must be a slo.SLO"),
        (lambda: a.simulate_fleet([1.0], a.Fleet(m), a.Reactive()), "workload must be"),
        (lambda: a.simulate_fleet(w, m, a.Reactive()), "fleet must be a Fleet"),
        (lambda: a.simulate_fluid("normal", "fleet", a.Reactive()), "fleet must be a Fleet"),
        (lambda: a.simulate_day(rep(), model="m"), "model must be a ReplicaModel"),
        (lambda: a.simulate_day("h100"), "replica must be a sizing.Replica"),
        (lambda: a.simulate_day(rep(), model=m, target=(2.0, 0.1)), "target must be"),
        (lambda: a.simulate_day(rep(), model=m, workload=[1.0, 2.0]), "workload must be"),
        (lambda: a.fluid_curve("model"), "model must be a ReplicaModel"),
        (lambda: a.Fleet(m, cold_start=60.0), "cold_start must be a ColdStart"),
        (lambda: a.day_workload("exam", seed=0, scenario="tanvi"), "scenario must be"),
        (lambda: a.make_policy("reactive", m, reactive="hpa"), "reactive must be a Reactive"),
        (lambda: a.utilisation(1.0, 2, "m"), "model must be a ReplicaModel"),
    ]
    for fn, match in cases:
        with pytest.raises(TypeError, match=match):
            fn()


def test_fluid_limits():
    f = a.Fleet(model())
    refused_fast(lambda: a.simulate_fluid("normal", f, a.Reactive(), horizon_s=1e9), "horizon_s")
    tiny = a.Fleet(model(), interval_s=1e-3)
    refused_fast(lambda: a.simulate_fluid("normal", tiny, a.Reactive()), "ticks")


def test_requests_beyond_the_horizon_are_counted_not_lost():
    w = flat_workload(2.0, 600, 3)
    run = a.simulate_fleet(w, a.Fleet(model()), a.Scheduled((2,) * 24), horizon_s=300.0,
                           initial_replicas=2)
    c = run.counts()
    assert c["arrived"] + c["beyond_horizon"] == len(w)
    assert c["beyond_horizon"] == int(np.count_nonzero(w.arrival_s >= 300.0)) > 0
    assert c["arrived"] == c["finished"] + c["rejected"] + c["in_flight"]
    empty = Workload.from_arrays(np.array([]), np.array([], dtype=int), np.array([], dtype=int))
    assert a.simulate_fleet(empty, a.Fleet(model()), a.Reactive()).counts()["beyond_horizon"] == 0
