"""Three models of one replica (iteration-level engine, coarse fleet model, fluid model) on the same
requests at 50, 80 and 95 % utilisation: how far apart they may land, and why.

The bounds are the measured spread (vidya_lab/autoscaling/fidelity.py: seeds 0, 1 and 3, steps of
1 and 5 s, one hour) with a little room. Below 80 % the models agree closely: the coarse one
drops per-iteration detail (its p99 TTFT is 15-17 % low) but keeps the means and attainment. At
95 % an hour's numbers are ruled by the random excursions of the queue (the p99 TTFT moves by a
factor of two between seeds), so the defensible statement there is weaker: the means agree within
a stated margin, attainment within a few points between the two simulations, and all three models
agree that the replica misses the 99 % target by far. The fluid model's attainment curve was
measured on other requests (seed 0, 30 min, 15 s steps), hence its wider band at 95 %.
"""

from __future__ import annotations

from functools import cache

import pytest

from vidya_lab import autoscaling as a
from vidya_lab import sizing
from vidya_lab.scenario import TANVI

#: Per load: (TPOT mean rel, TTFT p50 rel, TTFT p99 rel, attainment abs) coarse vs iteration, and
#: (TPOT mean rel, TTFT mean rel, attainment abs) fluid vs iteration.
COARSE = {0.5: (0.08, 0.05, 0.25, 0.005), 0.8: (0.08, 0.08, 0.25, 0.03),
          0.95: (0.08, 0.20, 0.35, 0.05)}
FLUID = {0.5: (0.12, 0.10, 0.005), 0.8: (0.12, 0.12, 0.05), 0.95: (0.15, 0.50, 0.30)}


@cache
def rows() -> dict:
    r = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    out = a.compare_fidelities(r, (0.5, 0.8, 0.95), duration_s=3600.0, seed=3, dt_s=1.0)
    return {row["utilisation"]: row for row in out}


@pytest.mark.slow
@pytest.mark.parametrize("load", [0.5, 0.8, 0.95])
def test_coarse_model_against_the_iteration_level_simulator(load):
    # the same requests, one replica, one hour (chapter 6 prints these numbers)
    row = rows()[load]
    c, it = row["coarse"], row["iteration"]
    tpot, p50, p99, att = COARSE[load]
    assert c["tpot_mean_s"] == pytest.approx(it["tpot_mean_s"], rel=tpot)
    assert c["ttft_p50_s"] == pytest.approx(it["ttft_p50_s"], rel=p50)
    assert c["ttft_p99_s"] == pytest.approx(it["ttft_p99_s"], rel=p99)
    assert c["attainment"] == pytest.approx(it["attainment"], abs=att)
    assert row["requests"] > 1000


@pytest.mark.slow
@pytest.mark.parametrize("load", [0.5, 0.8, 0.95])
def test_fluid_model_against_the_iteration_level_simulator(load):
    row = rows()[load]
    f, it = row["fluid"], row["iteration"]
    tpot, ttft, att = FLUID[load]
    assert f["tpot_mean_s"] == pytest.approx(it["tpot_mean_s"], rel=tpot)
    assert f["ttft_mean_s"] == pytest.approx(it["ttft_mean_s"], rel=ttft)
    assert f["attainment"] == pytest.approx(it["attainment"], abs=att)
    assert f["ttft_p99_s"] is None  # a fluid has no distribution to take a percentile of


@pytest.mark.slow
def test_near_saturation_every_model_says_the_target_is_missed():
    row = rows()[0.95]
    for name in a.FIDELITIES:
        assert row[name]["attainment"] < TANVI.attainment_target - 0.2, name
    below = rows()[0.5]
    for name in a.FIDELITIES:
        assert below[name]["attainment"] >= TANVI.attainment_target - 0.002, name
    # each model's TPOT grows with the load, and stays within the target below capacity
    for name in a.FIDELITIES:
        tp = [rows()[u][name]["tpot_mean_s"] for u in (0.5, 0.8, 0.95)]
        assert tp == sorted(tp) and tp[-1] < TANVI.tpot_target_s, name


def test_compare_fidelities_refuses_nonsense():
    r = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    with pytest.raises(ValueError, match="utilisations"):
        a.compare_fidelities(r, (0.5, 3.0))
    with pytest.raises(ValueError, match="duration_s"):
        a.compare_fidelities(r, (0.5,), duration_s=1e9)
    with pytest.raises(TypeError, match="replica must be a sizing.Replica"):
        a.compare_fidelities("h100-sxm")
