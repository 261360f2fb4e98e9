"""Chapter 2 exercises: right answers pass, the common wrong ones get their hint."""

from __future__ import annotations

import math

from vidya_lab import catalog, sizing
from vidya_lab.exercises import ch02, get_exercise, judge


def test_answers_by_hand():
    # 2.1: 2 x 80 layers x 8 KV heads x 128 x 2 bytes
    assert judge(get_exercise("2.1"), 2 * 80 * 8 * 128 * 2).right
    assert judge(get_exercise("2.1"), 327_680).right
    # 2.2: the budget the chapter prints, per-GPU KV of a quarter of the heads, 16-token blocks
    r = ch02.tanvi_replica()
    blocks = math.floor(r.kv_budget_bytes / (16 * 327_680 / 4))
    assert judge(get_exercise("2.2"), blocks // math.ceil(3900 / 16)).right
    # 2.3: 70.55e9 params x 2 bytes / 4 GPUs / 3.35e12 B/s ≈ 10.5 ms
    assert judge(get_exercise("2.3"), 70.55e9 * 2 / 4 / 3.35e12).right
    assert judge(get_exercise("2.3"), 0.0105).right
    # 2.4: 1978.9e12 x 1 / (2 x 3.35e12) ≈ 295
    assert judge(get_exercise("2.4"), 295).right
    # 2.5 and 2.6 from the printed per-replica throughput
    tput = ch02.peak_plan()["tokens_per_s_per_replica"]
    gpus = 4 * math.ceil(60 * 350 / (tput * 0.8))
    assert judge(get_exercise("2.5"), gpus).right
    assert judge(get_exercise("2.6"), gpus * 3.00 / (3600 * 60 * 350) * 1e6).right


def test_unit_slips_are_caught():
    assert "1000" in judge(get_exercise("2.3"), ch02.tanvi_replica().weights_bytes_per_gpu
                           / 3.35e12 * 1000).message
    assert "GiB" in judge(get_exercise("2.1"), 327_680 * 1e9 / 2**30).message


def test_the_chapter_deployment_is_what_the_prose_says():
    r = ch02.tanvi_replica()
    assert (r.model.id, r.gpu.id, r.tp, r.precision, r.memory_rule) == (
        "llama-3.3-70b", "h100-sxm", 4, "bf16", "vllm")
    assert ch02.sequence_tokens() == 3000 + 400 + 150 + 350
    assert not sizing.Replica("llama-3.3-70b", "h100-sxm").weights_fit  # why TP is needed
    plan = ch02.peak_plan()
    assert plan["tpot_s"] <= 0.1
    assert plan["cost_per_hour_usd"] == plan["gpus"] * catalog.get_gpu("h100-sxm").price_per_hour_usd
