"""Chapter 3 exercises: right answers derived by hand pass, the common wrong ones get their hint, and
the chapter's fleet is the one the capstone reconciles."""

from __future__ import annotations

import pytest

from vidya_lab import catalog, layouts, sizing
from vidya_lab.exercises import ch03, get_exercise, judge
from vidya_lab.plan import reconcile
from vidya_lab.scenario import TANVI

LLAMA_70B_PARAMS = 70_553_706_496  # Llama-3.3-70B: 80 layers, d 8192, 64/8 heads, d_ff 28672, vocab 128256
KV_BYTES = 2 * 80 * 8 * 128 * 2  # bytes per token in bf16: K and V, 80 layers, 8 KV heads of 128


def test_memory_per_gpu_by_hand_for_the_book_and_for_a_student():
    weights = LLAMA_70B_PARAMS * 2 / 4  # + the norms every GPU keeps whole: well inside 1 %
    for sequences in (32, 71):
        kv = sequences * 3550 * KV_BYTES / 4
        assert judge(get_exercise("3.1"), (weights + kv) / 1e9, {"sequences": sequences}).right
    assert not judge(get_exercise("3.1"), (weights + 32 * 3550 * KV_BYTES / 4) / 1e9,
                     {"sequences": 71}).right  # the book's answer is not a student's


def test_pcie_allreduce_by_hand():
    # L40S box: base 3.5 µs, 2.6 µs a ring step, 20 GB/s bus bandwidth (catalog/links.py)
    for tp, tokens in ((4, 512), (8, 4096)):
        ring = 3.5e-6 + 2 * (tp - 1) * 2.6e-6 + 2 * (tp - 1) / tp * tokens * 8192 * 2 / 20e9
        g = {"box_tp": tp, "chunk_tokens": tokens}
        assert judge(get_exercise("3.2"), 160 * ring, g).right
        assert "1000" in judge(get_exercise("3.2"), 160 * ring * 1e3, g).message  # ms, not s
        assert "twice" in judge(get_exercise("3.2"), 80 * ring, g).message  # one all-reduce a layer


def test_free_allreduces_buy_tp8_almost_nothing_at_batch_1():
    ex = get_exercise("3.3")
    ctx = TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean // 2
    one = sizing.decode_step_time_s(sizing.Replica(TANVI.model_id, "h100-sxm", tp=1), 1, ctx)
    eight = sizing.decode_step_time_s(sizing.Replica(TANVI.model_id, "h100-sxm", tp=8), 1, ctx)
    # 160 all-reduces of one token's 16,384 bytes on NVLink 4: 3.5 + 14 x 0.17 µs + 1.75 x B / 370 GB/s
    comm = 160 * (3.5e-6 + 14 * 0.17e-6 + 1.75 * 16_384 / 370e9)
    assert comm == pytest.approx(0.000953, rel=1e-3)
    free = one / (eight - comm)
    assert judge(ex, free).right
    assert one / eight < free < 1.1 * one / eight < 8  # the talk is not what holds TP back
    assert not judge(ex, one / eight).right and not judge(ex, 8.0).right


def test_a_lone_request_idles_a_pipeline_like_one_minus_one_over_p():
    ex = get_exercise("3.4")
    assert judge(ex, 7 / 8).right  # the token is on one of 8 stages at a time
    assert not judge(ex, 1 / 8).right and not judge(ex, 0.0).right
    assert "GPipe" in judge(ex, 7 / 15).message  # (p-1)/(m+p-1) with m = p


def test_the_50ms_design_is_the_simplest_of_a_tie():
    found = layouts.search_layouts(TANVI.model_id, "h100-sxm",
                                   **ch03.tanvi_targets(tpot_target_s=ch03.EX5_TPOT_S))
    first = found[0]
    cheapest = min((x for x in found if x.meets_slo), key=lambda x: x.cost_per_hour)
    assert first.meets_slo and first.pp == 1 and first.tpot_s <= ch03.EX5_TPOT_S
    assert cheapest.cost_per_hour < first.cost_per_hour <= 1.05 * cheapest.cost_per_hour
    ex = get_exercise("3.5")
    assert judge(ex, first.cost_per_hour).right
    assert "tie" in judge(ex, cheapest.cost_per_hour).message
    assert first.cost_per_hour > ch03.tanvi_fleet().cost_per_hour  # 50 ms costs more than 100 ms


def test_the_pcie_box_design_prefers_small_tp_groups():
    box = layouts.search_layouts(TANVI.model_id, ch03.EX6_GPU, precision=ch03.EX6_PRECISION,
                                 max_gpus_per_replica=ch03.EX6_MAX_GPUS, **ch03.tanvi_targets())
    tp8 = next(x for x in box if (x.tp, x.pp) == (8, 1))
    assert box[0].meets_slo and box[0].tp <= 4 and box[0].gpus_per_replica <= ch03.EX6_MAX_GPUS
    assert tp8.cost_per_hour > 1.5 * box[0].cost_per_hour
    ex = get_exercise("3.6")
    assert judge(ex, box[0].cost_per_hour).right
    assert "PCIe" in judge(ex, tp8.cost_per_hour).message


def test_upload_kv_by_hand():
    ex = get_exercise("3.7")
    for tokens in (40_000, 73_000):
        assert judge(ex, tokens * KV_BYTES / 4 / 1e9, {"upload_tokens": tokens}).right
    assert "whole replica" in judge(ex, 40_000 * KV_BYTES / 1e9).message
    assert judge(ex, 3.2768).right  # 40,000 x 327,680 B / 4 GPUs


def test_moe_traffic_ratio_is_2n_over_k():
    ex = get_exercise("3.8")
    assert judge(ex, 2 * 8 / 2).right
    assert "upside down" in judge(ex, 1 / 8).message
    assert not judge(ex, 16.0).right


def test_pp_beats_tp_across_nodes_more_without_infiniband():
    eth, ib = ch03.pp_over_tp_throughput("ethernet-100g"), ch03.pp_over_tp_throughput("infiniband-ndr")
    assert eth > 2 * ib and ib > 1


def test_the_chapters_fleet_is_the_reconciled_one():
    """Issue 14: the fleet size chapter 3 states is the one plan.reconcile reports for it."""
    row = next(r for r in reconcile.fleet_sizes() if r["where"] == "chapter 3")
    best = ch03.tanvi_fleet()
    assert (row["gpus"], row["replicas"], row["layout"]) == (best.gpus, best.replicas,
                                                             f"TP{best.tp}xPP{best.pp}")
    # TP inside one node, no pipeline: the corrected model's lesson (issue 14)
    assert best.pp == 1 and best.tp <= catalog.GPUS_PER_NODE
