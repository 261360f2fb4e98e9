"""The fleet simulation against its loop before the speed-up: the same run, bit for bit.

``tests/fleet_reference/`` keeps the loop of :func:`vidya_lab.autoscaling.simulate_fleet` as it
was (its state objects, waiting room and router included); both run the same workload, fleet and
policy on fixed seeds, and every output must be identical: timelines, outcomes, retries, longest
gaps, the per-step series, the events and the bill. Tolerance: none (``==`` on every float).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from fleet_reference import reference_simulate_fleet

from vidya_lab import autoscaling as a
from vidya_lab import sizing
from vidya_lab.scenario import TANVI

H = a.SECONDS_PER_HOUR


@cache
def model(cached: int = 0) -> a.ReplicaModel:
    return a.replica_model(sizing.Replica(TANVI.model_id, "h100-sxm", tp=4),
                           cached_prefix_tokens=cached)


def _same(fast, ref) -> None:
    x, y = fast.timelines, ref.timelines
    for name in ("request_id", "arrival_s", "admitted_s", "first_token_s", "finish_s",
                 "output_tokens", "outcome"):
        u, w = getattr(x, name), getattr(y, name)
        assert u.dtype == w.dtype and u.shape == w.shape, name
        assert np.array_equal(u, w, equal_nan=u.dtype.kind == "f"), name
    for name in ("outcome_codes", "retries", "arrival_s", "longest_gap_s"):
        u, w = getattr(fast, name), getattr(ref, name)
        assert u.dtype == w.dtype and np.array_equal(u, w, equal_nan=u.dtype.kind == "f"), name
    assert fast.series.keys() == ref.series.keys()
    for name in fast.series:
        assert np.array_equal(fast.series[name], ref.series[name]), name
    assert fast.events == ref.events
    assert (fast.gpu_hours, fast.cost_usd, fast.start_s, fast.horizon_s, fast.beyond_horizon) \
        == (ref.gpu_hours, ref.cost_usd, ref.start_s, ref.horizon_s, ref.beyond_horizon)


def _rush(seed: int):
    """The exam day's rush (05:00-07:30): tens of thousands of requests, the fleet scaling up."""
    return a.day_workload("exam", seed=seed, start_s=5.0 * H, duration_s=2.5 * H)


#: label -> (fleet keywords, policy, simulate keywords): both routers, failures random and chosen,
#: retries and timeouts, a warm pool, a prefix cache, each kind of policy, two steps.
CASES = {
    "reactive, round robin, 5 s": (dict(max_replicas=64), a.Reactive(), dict(dt_s=5.0)),
    "least loaded, kv metric, failures, retries": (
        dict(max_replicas=64, router="least_loaded", mtbf_s=1800.0, failures_at_s=(6.0 * H,),
             max_retries=1, queue_timeout_s=30.0), a.Reactive(metric="kv"), dict(dt_s=5.0)),
    "warm pool, prefix cache, 1 s": (dict(max_replicas=64, pool="warm", pool_size=3, cached=2000),
                                     a.Reactive(), dict(dt_s=1.0)),
    "few replicas, overloaded, timeouts": (dict(max_replicas=4, queue_timeout_s=20.0),
                                           a.Reactive(), dict(dt_s=2.0)),
}


@pytest.mark.parametrize("label", list(CASES))
def test_the_fleet_loop_is_bit_identical_to_the_reference(label):
    kw, policy, sim = CASES[label]
    kw = dict(kw)
    m = model(kw.pop("cached", 0))
    fleet = a.Fleet(m, **kw)
    w = _rush(seed=3)
    fast = a.simulate_fleet(w, fleet, policy, seed=5, initial_replicas=2, **sim)
    ref = reference_simulate_fleet(w, fleet, policy, seed=5, initial_replicas=2, **sim)
    assert len(fast.timelines) > 10_000
    _same(fast, ref)


def test_scheduled_and_predictive_days_are_bit_identical_to_the_reference():
    m = model()
    for name in ("scheduled", "predictive"):
        pol = a.make_policy(name, m, day="exam", lead_s=a.Fleet(m).start_s)
        fleet = a.Fleet(m, max_replicas=64)
        w = _rush(seed=1)
        _same(a.simulate_fleet(w, fleet, pol, seed=0, dt_s=5.0),
              reference_simulate_fleet(w, fleet, pol, seed=0, dt_s=5.0))
