"""Chapter 6 exercises: right answers pass, the usual slips get their hint."""

from __future__ import annotations

import pytest

from vidya_lab.exercises import ch06
from vidya_lab.exercises.core import get_exercise, judge


def test_answers_by_hand():
    from vidya_lab import autoscaling, sizing

    r = ch06.replica()
    assert (r.tp, r.gpu.id) == (4, "h100-sxm")
    assert ch06._pool_cost() == pytest.approx(2 * 4 * r.gpu.price_per_hour_usd * 24)
    assert get_exercise("6.1").expected_value() == pytest.approx(
        sum(autoscaling.ColdStart().parts_s(r).values()))
    assert 0 < ch06._mitigated() < ch06._cold()
    base, hit = ch06.failure_runs()
    assert hit["summary"]["rejected"] > base["summary"]["rejected"] == 0
    assert ch06._lost() > 0
    assert sizing.cost_per_hour_usd(r) == 4 * r.gpu.price_per_hour_usd


def test_unit_slips_are_recognised():
    ex = get_exercise("6.5")
    assert "percentage" in judge(ex, 100 * ex.expected_value()).message
    assert "unanswered" == judge(ex, ...).status
