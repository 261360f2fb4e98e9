"""Chapter 6 exercises: each answer derived by hand from the chapter's data, and the usual slips
get their hint."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vidya_lab import autoscaling, procurement, sizing
from vidya_lab.exercises import ch06, chapter_exercises, get_exercise, judge, solve
from vidya_lab.exercises.key import ch06 as key6
from vidya_lab.scenario import TANVI

GB = 1e9


def warm_up_s(r) -> float:
    return autoscaling.ColdStart().warm_up_s(r)


@pytest.mark.parametrize("provision_s", [180.0, 60.0, 900.0])
def test_cold_start_by_hand(provision_s):
    r = ch06.replica()
    assert (r.tp, r.gpu.id, r.n_gpus) == (4, "h100-sxm", 4)
    weights = sizing.weights_bytes(TANVI.model_id, "bf16")
    naive = sizing.weights_bytes("llama-2-70b", "bf16") / 265.0  # Anyscale: 4 min 25 s
    by_hand = (provision_s + 12.64 * GB / 130e6 + weights / naive + 60.0 + 48.0 + (3.72 - 0.92)
               + warm_up_s(r) + 10.0)
    g = {"provision_s": provision_s}
    assert solve(get_exercise("6.1"), g) == pytest.approx(by_hand)
    fixed = (provision_s + 7.07 * GB / 130e6 + weights / (5 * GB) + 6.0 + 48.0 + (3.72 - 0.92)
             + warm_up_s(r) + 10.0)
    assert solve(get_exercise("6.2"), g) == pytest.approx(fixed)


def test_the_reactive_fleet_misses_at_the_foot_of_the_ramp():
    cold = autoscaling.ColdStart().total_s(ch06.replica())
    grow = ch06.growth_over_cold_start(cold)
    u = autoscaling.TARGET_UTILISATION
    assert grow["max_ratio"] > 1 / u > float(grow["ratio"][grow["t_h"] == 6.75][0])
    run = ch06.cold_start_runs()["sourced"]["run"]
    ok = run.meets(autoscaling.tutor_slo())
    quarter = run.arrival_s // 900 * 900 / 3600
    worst = min(np.unique(quarter), key=lambda q: ok[quarter == q].mean())
    assert grow["max_at_h"] <= worst < grow["max_at_h"] + 0.75  # within the cold start after it
    assert ok[quarter >= TANVI.rush_hour - 0.5].mean() == 1.0  # no miss near the top
    assert solve(get_exercise("6.3")) == "foot of the ramp"


def test_a_failure_costs_its_dropped_requests():
    base, hit = ch06.failure_runs()
    assert base["summary"]["rejected"] == 0 < hit["summary"]["rejected"]
    # about one batch dropped with the replica, counted as missed, out of the window's arrivals
    dropped = hit["summary"]["rejected"] / hit["summary"]["arrived"]
    assert solve(get_exercise("6.4")) == pytest.approx(dropped, rel=0.05)
    assert hit["summary"]["rejected"] < 2 * ch06.model().slots


@pytest.mark.parametrize("peak", [60.0, 90.0])
def test_gpus_with_prefix_aware_routing_by_hand(peak):
    row = next(x for x in ch06.routing_rows(peak) if x["router"] == "prefix_aware")
    by_hand = math.ceil(peak * row["busiest_share"] / (row["capacity_rps"] * 0.6)) * 4
    assert solve(get_exercise("6.5"), {"peak_rps": peak}) == by_hand
    rr = next(x for x in ch06.routing_rows(peak) if x["router"] == "round_robin")
    assert rr["gpus"] > row["gpus"]  # history found is capacity


def test_round_robin_finds_the_previous_replica_one_time_in_n():
    study = ch06.routing()
    n = study["replicas"]
    assert n == autoscaling.replicas_for_rate(ch06.rush_rate_per_s(), ch06.model())
    assert solve(get_exercise("6.6")) == pytest.approx(1 / n)
    where, conv = study["runs"]["round_robin"].replica, study["trace"].conversation
    last, same = {}, []
    for i, c in enumerate(conv.tolist()):
        if c in last:
            same.append(where[i] == last[c])
        last[c] = where[i]
    assert abs(np.mean(same) - 1 / n) < 0.02


@pytest.mark.parametrize("ratio", [0.85, 0.6])
def test_what_to_reserve_by_hand(ratio):
    curve = ch06.exam_day()["scheduled"]["replicas_by_hour"]
    hours = [sum(min(1.0, max(0.0, h - (k - 1))) for h in curve)
             for k in range(1, math.ceil(max(curve)) + 1)]
    by_hand = sum(1 for x in hours if x >= 24 * ratio)
    assert solve(get_exercise("6.7"), {"reserved_ratio": ratio}) == by_hand
    if ratio == 0.85:  # the rule buy() applies at the catalog's H100 ratio
        plan = procurement.buy(curve, gpus_per_replica=4, gpu="h100-sxm")
        assert plan.reserved_replicas == by_hand


def test_second_region_spares_read_off_the_slow_runs():
    grid = ch06.failover_grid()
    for cold in ("sourced", "slow end"):
        att = [grid[(cold, k)]["attainment_after_loss"] for k in ch06.FAILOVER_SPARES]
        assert att == sorted(att)  # more spares, never worse
    for target in (0.9, 0.99, 0.9999):
        k = solve(get_exercise("6.8"), {"failover_target": target})
        assert grid[("slow end", k)]["attainment_after_loss"] >= target
        assert k == 0 or grid[("slow end", k - 1)]["attainment_after_loss"] < target
    assert grid[("slow end", 1)]["spare_usd_per_day"] == pytest.approx(2 * 4 * 3.0 * 24)


def test_the_cheapest_setting_and_each_wrong_one_says_why():
    table = ch06.failure_table()
    target = TANVI.attainment_target
    good = {k: d["cost_usd"] for k, d in table.items()
            if d["summary"]["rush_attainment"] >= target}
    best = min(good, key=good.get)
    assert solve(get_exercise("6.9")) == f"{best[0]} N+{best[1]}" == "reactive N+1"
    for label, hint in key6.WRONG_SETTINGS.items():
        p, k = label.rsplit(" N+", 1)
        d = table[(p, int(k))]
        if hint == key6._MISSES:
            assert d["summary"]["rush_attainment"] < target
        else:
            assert d["summary"]["rush_attainment"] >= target and d["cost_usd"] > good[best]


def test_three_levels_and_unit_slips():
    levels = [e.level for e in chapter_exercises(6)]
    assert len(levels) >= 6 and {"compute", "explain", "design"} <= set(levels)
    ex = get_exercise("6.4")
    assert "percentage" in judge(ex, 100 * solve(ex)).message
    assert judge(ex, ...).status == "unanswered"


@pytest.mark.slow
def test_the_chapters_fleet_is_the_one_the_reconciliation_reports():
    from vidya_lab.plan import reconcile

    row = next(x for x in reconcile.fleet_sizes() if x["where"] == "chapter 6")
    size = ch06.fleet_size()
    assert (size["replicas"], size["gpus"]) == (row["replicas"], row["gpus"])
    # one utilisation: the two capacities it may divide by agree within 6 %
    assert size["utilisation"] == pytest.approx(row["utilisation_at_peak"], rel=0.06)
