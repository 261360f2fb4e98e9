"""Chapter 4 exercises: answers derived by hand, the common wrong ones get their hint, for every
student's numbers."""

from __future__ import annotations

import itertools
import math

import pytest

from vidya_lab import caching, sizing
from vidya_lab.exercises import ch04, chapter_exercises, get_exercise, judge, solve
from vidya_lab.exercises.givens import Between, Pick
from vidya_lab.exercises.key import ch04 as key4

R = caching.default_replica()
KV_PER_GPU = 2 * 80 * 2 * 128 * 2  # K and V, 80 layers, 8 KV heads / TP 4, head dim 128, bf16
BUDGET = R.kv_budget_bytes


def test_answers_by_hand():
    # 4.1: 9 of 10 requests reuse 187 whole blocks of 16 tokens out of 3,150
    assert judge(get_exercise("4.1"), 9 * 187 * 16 / (10 * 3150)).right
    assert judge(get_exercise("4.1"), 21 * 187 * 16 / (22 * 3150), {"burst_requests": 22}).right
    # 4.2: 3,550-token prompt; 3,400 shared tokens -> 212 whole blocks = 3,392 cached, 158 computed
    saved = sizing.prefill_time_s(R, 3550) - sizing.iteration_time_s(R, prefill=[(158, 3392)])
    assert judge(get_exercise("4.2"), saved).right
    # 4.3: (1 - 0.6**6) / 0.4
    assert judge(get_exercise("4.3"), 2.38336).right
    assert judge(get_exercise("4.3"), (1 - 0.8**5) / 0.2, {"alpha": 0.8, "gamma": 4}).right
    # 4.5: 187 blocks x 16 tokens x 2 x 80 layers x 2 KV heads per GPU x 128 x 2 bytes
    assert judge(get_exercise("4.5"), 187 * 16 * KV_PER_GPU).right
    # 4.6: 60 req/s over 6 replicas of the cached capacity
    cap = sizing.capacity_rps(R, 3550, 350, 0.1, cached_tokens=3392)
    assert judge(get_exercise("4.6"), 60 / (6 * cap)).right
    # 4.7: 4,000 tokens x 81,920 bytes per GPU over 51 GB/s
    assert KV_PER_GPU == R.kv_bytes_per_token_per_gpu == 81_920
    assert judge(get_exercise("4.7"), 4000 * 81_920 / 51e9).right
    # 4.8: E / (γ + 1) at α = 0.6, γ = 5
    assert judge(get_exercise("4.8"), 2.38336 / 6).right
    # 4.9: a miss computes 2,000 + 150 tokens after the 3,392 cached ones, a hit only the 150
    miss = sizing.iteration_time_s(R, prefill=[(2150, 3392)])
    hit = sizing.iteration_time_s(R, prefill=[(150, 5392)])
    assert judge(get_exercise("4.9"), (miss - hit) * 1e3).right
    # 4.10: 187 + 6 x 25 = 337 blocks a school; 10 % of the budget per GPU
    assert judge(get_exercise("4.10"), math.floor(0.1 * BUDGET / (337 * 16 * 81_920))).right


def test_bigger_cache_lowers_throughput_in_4_4():
    small, big = key4._tput_small_cache(), key4._tput()
    none = sizing.saturated_throughput(R, ch04.PROMPT, ch04.TANVI.answer_tokens_mean)["output_tokens_per_s"]
    assert small > big > none


def test_unit_slips_are_caught():
    assert "1000" in judge(get_exercise("4.2"), solve(get_exercise("4.2")) * 1000).message
    assert "percentage" in judge(get_exercise("4.1"), solve(get_exercise("4.1")) * 100).message
    assert "GiB" in judge(get_exercise("4.7"), solve(get_exercise("4.7")) * 1e9 / 2**30).message


def test_three_levels_and_a_design():
    levels = [e.level for e in chapter_exercises(4)]
    assert {"compute", "explain", "design"} <= set(levels) and len(levels) >= 6


def _values(given) -> list:
    if isinstance(given, Pick):
        return list(given.options)
    assert isinstance(given, Between)
    grid = [given.low, given.default, given.high, (given.low + given.high) / 2]
    return [type(given.default)(round(x / given.step) * given.step) for x in grid]


@pytest.mark.parametrize("ex", [e for e in chapter_exercises(4) if e.givens], ids=lambda e: e.id)
def test_every_students_numbers_keep_each_hint_apart(ex):
    names = sorted(ex.givens)
    for combo in itertools.product(*(_values(ex.givens[n]) for n in names)):
        g = dict(zip(names, combo, strict=True))
        assert judge(ex, solve(ex, g), g).right, g
        for m in ex.mistakes:
            verdict = judge(ex, m.value(ex.resolve_givens(g)), g)
            assert verdict.message == m.hint, (ex.id, g, m.hint)


def test_the_cached_prefix_is_the_planners():
    assert ch04.CACHED == 3392 == (3000 + 400) // 16 * 16
