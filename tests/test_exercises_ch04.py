"""Chapter 4 exercises: right answers pass, the common wrong ones get their hint."""

from __future__ import annotations

from vidya_lab import caching, sizing
from vidya_lab.exercises import ch04, get_exercise, judge
from vidya_lab.exercises.key import ch04 as key4


def test_answers_by_hand():
    # 4.1: 9 of 10 requests reuse 187 whole blocks of 16 tokens out of 3,150
    assert judge(get_exercise("4.1"), 9 * 187 * 16 / (10 * 3150)).right
    # 4.2: 3,550-token prompt; 3,400 shared tokens -> 212 whole blocks = 3,392 cached, 158 computed
    r = caching.default_replica()
    saved = sizing.prefill_time_s(r, 3550) - sizing.iteration_time_s(r, prefill=[(158, 3392)])
    assert judge(get_exercise("4.2"), saved).right
    # 4.3: (1 - 0.6**6) / 0.4
    assert judge(get_exercise("4.3"), (1 - 0.6**6) / 0.4).right
    assert judge(get_exercise("4.3"), 2.38336).right
    # 4.5: 187 blocks x 16 tokens x 2 x 80 layers x 2 KV heads per GPU x 128 x 2 bytes
    assert judge(get_exercise("4.5"), 187 * 16 * 2 * 80 * 2 * 128 * 2).right


def test_bigger_cache_lowers_throughput_in_4_4():
    small, big = key4._tput_small_cache(), key4._tput()
    none = sizing.saturated_throughput(ch04.replica(), ch04.PROMPT, ch04.TANVI.answer_tokens_mean)["output_tokens_per_s"]
    assert small > big > none


def test_unit_slips_are_caught():
    assert "1000" in judge(get_exercise("4.2"), key4._ttft_saved() * 1000).message
    assert "percentage" in judge(get_exercise("4.1"), key4._burst_hit_rate() * 100).message
