"""Chapter 6 exercises: right answers pass, the usual slips get their hint."""

from __future__ import annotations

import pytest

from vidya_lab.exercises import ch06, get_exercise, judge, solve
from vidya_lab.exercises.key import ch06 as key6


def test_answers_by_hand():
    from vidya_lab import autoscaling, sizing

    r = ch06.replica()
    assert (r.tp, r.gpu.id) == (4, "h100-sxm")
    assert key6._pool_cost() == pytest.approx(2 * 4 * r.gpu.price_per_hour_usd * 24)
    assert solve(get_exercise("6.1")) == pytest.approx(
        sum(autoscaling.ColdStart().parts_s(r).values()))
    assert 0 < key6._mitigated() < key6._cold()
    base, hit = ch06.failure_runs()
    assert hit["summary"]["rejected"] > base["summary"]["rejected"] == 0
    assert key6._lost() > 0
    assert sizing.cost_per_hour_usd(r) == 4 * r.gpu.price_per_hour_usd


def test_unit_slips_are_recognised():
    ex = get_exercise("6.5")
    assert "percentage" in judge(ex, 100 * solve(ex)).message
    assert "unanswered" == judge(ex, ...).status
