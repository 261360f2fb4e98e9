"""A second region: the surviving region's requests, and what its spare replicas buy."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from vidya_lab import autoscaling as a
from vidya_lab import sizing
from vidya_lab.autoscaling import regions
from vidya_lab.scenario import TANVI

H = a.SECONDS_PER_HOUR


@cache
def rep() -> sizing.Replica:
    return sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)


@cache
def model() -> a.ReplicaModel:
    return a.replica_model(rep())


def test_the_surviving_region_gets_its_share_then_everyone():
    whole = a.day_workload("exam", seed=3, start_s=6 * H, duration_s=2 * H)
    mine = regions.failover_workload("exam", share=0.5, lost_at_s=7 * H, seed=3)
    before = (whole.arrival_s < 7 * H).sum()
    assert (mine.arrival_s >= 7 * H).sum() == (whole.arrival_s >= 7 * H).sum()
    got = (mine.arrival_s < 7 * H).sum()
    assert abs(got - before / 2) < 4 * np.sqrt(before / 4)  # binomial, share 1/2
    again = regions.failover_workload("exam", share=0.5, lost_at_s=7 * H, seed=3)
    assert (again.arrival_s == mine.arrival_s).all()
    prof = regions.region_profile("exam", 0.25)
    assert prof.rate_per_s([7 * H])[0] == pytest.approx(0.25 * a.day_profile("exam").rate_per_s(
        [7 * H])[0])


def test_spare_replicas_cover_the_loss_and_are_billed_all_day_in_both_regions():
    lean = regions.failover(rep(), spare=0, model=model(), duration_s=1.5 * H)
    spare = regions.failover(rep(), spare=4, model=model(), duration_s=1.5 * H)
    assert lean["attainment_after_loss"] < TANVI.attainment_target
    assert spare["attainment_after_loss"] > lean["attainment_after_loss"]
    assert spare["spare_usd_per_day"] == pytest.approx(2 * 4 * 4 * rep().gpu.price_per_hour_usd
                                                       * 24)
    assert lean["spare_usd_per_day"] == 0.0
    assert lean["replicas_after"] > lean["replicas_before"]  # the live floor scaled it up
    c = lean["day"]["summary"]
    assert c["arrived"] == c["finished"] + c["rejected"] + c["in_flight"]


def test_bad_windows_are_refused():
    with pytest.raises(ValueError, match="lost_at_s"):
        regions.failover(rep(), lost_at_s=9 * H, model=model())
    with pytest.raises(ValueError, match="share"):
        regions.failover_workload(share=0.0)
    with pytest.raises(TypeError, match="spare"):
        regions.failover(rep(), spare=1.5, model=model())
