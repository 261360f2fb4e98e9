"""Chapter 3 exercises: right answers pass, the common wrong ones get their hint."""

from __future__ import annotations

from vidya_lab.exercises import ch03, get_exercise, judge
from vidya_lab.exercises.key import ch03 as key3


def test_answers_computed_by_hand():
    # 3.1: Llama-3.3-70B bf16 = 70,553,706,496 params x 2 bytes / 4 GPUs (+ replicated norms), and
    # 32 prompts x 3,550 tokens x 327,680 bytes / 4
    weights = 70_553_706_496 * 2 / 4
    kv = 32 * 3550 * 327_680 / 4
    assert judge(get_exercise("3.1"), (weights + kv) / 1e9).right
    # 3.2: 160 rings of 512 x 8192 x 2 bytes over PCIe Gen4 (32 GB/s), 10 µs each
    ring = 2 * 3 / 4 * 512 * 8192 * 2 / 32e9 + 10e-6
    assert judge(get_exercise("3.2"), 160 * ring).right
    assert "1000" in judge(get_exercise("3.2"), 160 * ring * 1e3).message  # ms instead of s


def test_the_cheapest_layout_answer_is_the_search():
    best = next(x for x in key3._search() if x.meets_slo)
    assert best.tpot_s <= ch03.EX3_TPOT_S and best.cost_per_hour == key3._cheapest_cost()
    # the 50 ms target costs more than Tanvi's 100 ms one
    assert key3._cheapest_cost() > key3._cheapest_cost(tpot_target_s=0.1)


def test_pp_beats_tp_across_nodes_without_infiniband():
    eth, ib = ch03._pp_over_tp(), ch03._pp_over_tp("infiniband-ndr")
    assert eth > 2 * ib and ib > 1
