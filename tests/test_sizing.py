"""Memory budget and the cost model: published numbers, hand-derived values, limits, invariants."""

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import catalog, sizing
from vidya_lab.sizing import PHYSICAL, Calibration, Replica

# ----------------------------------------------------------------------------- memory


def test_kv_bytes_per_token_published():
    assert sizing.kv_bytes_per_token("llama-3.1-70b", "bf16") == 327_680  # issue 4
    assert sizing.kv_bytes_per_token("opt-13b", "fp16") == 819_200  # PagedAttention §3: "800 KB"
    assert sizing.kv_bytes_per_token("llama-3.1-70b", "int8") == 163_840  # scaling-book: 160 KiB
    # scaling-book: Llama-2-13B, 8192 tokens, bf16 -> 6.7 GB
    assert sizing.kv_bytes_per_token("llama-2-13b") * 8192 / 1e9 == pytest.approx(6.7, abs=0.05)
    # PagedAttention: a 2048-token OPT-13B request needs 1.6 GB (GiB, in fact)
    assert sizing.kv_bytes_per_token("opt-13b", "fp16") * 2048 / 2**30 == pytest.approx(1.6, abs=0.05)


def test_kv_uses_kv_heads_not_query_heads():
    m = catalog.get_model("llama-3.1-70b")
    wrong = 2 * m.n_layers * m.n_heads * m.head_dim * 2  # the BentoML-calculator bug
    assert sizing.kv_bytes_per_token(m) * 8 == wrong


def test_weights_bytes():
    assert sizing.weights_bytes("llama-3.1-70b", "bf16") == 2 * 70_553_706_496
    assert sizing.weights_bytes("llama-3.1-70b", "int4") == 0.5 * 70_553_706_496
    # MoE: memory follows the total (all experts)
    assert sizing.weights_bytes("mixtral-8x7b", "bf16") == 2 * 46_702_792_704


def test_vllm_budget_hand_derived():
    r = Replica("llama-3.1-8b", "h100-sxm", calibration=PHYSICAL)
    total = 81_559 * 2**20  # what nvidia-smi reports for an "80 GB" H100, bytes (85.5e9)
    weights = 8_030_261_248 * 2
    # vLLM's API-server budget on a >= 70 GiB GPU that is not an A100: 8192 tokens per iteration
    assert (r.max_batched_tokens, r.max_num_seqs) == (8192, 1024)
    reserve = 2.0e9 + 8192 * (4 * 4096 + 3 * 14336) * 2
    assert r.weights_bytes_per_gpu == weights
    assert r.activation_reserve_bytes == pytest.approx(reserve)
    assert r.kv_budget_bytes == pytest.approx(0.9 * total - weights - reserve)
    assert r.kv_blocks == math.floor((0.9 * total - weights - reserve) / (16 * 131_072))
    assert r.kv_capacity_tokens == 16 * r.kv_blocks


def test_trtllm_budget_hand_derived():
    r = Replica("llama-3.1-8b", "h100-sxm", memory_rule="trtllm", calibration=PHYSICAL)
    assert r.memory_fraction == 0.95
    left = 81_559 * 2**20 - r.weights_bytes_per_gpu - r.activation_reserve_bytes
    assert r.kv_budget_bytes == pytest.approx(0.95 * left)


def test_memory_rules_differ_several_fold_when_tight():
    # ARCHITECTURE.md: 70B in fp8 on one "80 GB" H100. The device reports 85.5e9 bytes, so both
    # engines fit the 70.6e9 bytes of weights (TensorRT-LLM's published fp8 TP1 rows run it), but
    # vLLM's 10 % off the whole device leaves a fraction of what TensorRT-LLM's 5 % off the rest does.
    v = Replica("llama-3.1-70b", "h100-sxm", precision="fp8", memory_rule="vllm")
    t = Replica("llama-3.1-70b", "h100-sxm", precision="fp8", memory_rule="trtllm")
    assert v.weights_fit and t.weights_fit
    assert t.kv_budget_bytes > 3 * v.kv_budget_bytes > 0
    assert v.kv_budget_bytes == pytest.approx(
        0.9 * 81_559 * 2**20 - 70_553_706_496 - v.activation_reserve_bytes)


def test_tp_splits_kv_and_replicates_past_kv_heads():
    r4 = Replica("llama-3.1-70b", "h100-sxm", tp=4)
    assert r4.kv_bytes_per_token_per_gpu == 327_680 / 4
    r16 = Replica("llama-3.1-70b", "h100-sxm", tp=16)
    assert r16.kv_bytes_per_token_per_gpu == 327_680 / 8  # one KV head per GPU, not half of one


def test_max_concurrent_sequences_and_rounding():
    r = Replica("llama-3.1-8b", "h100-sxm")
    assert sizing.max_concurrent_sequences(r, 1000) == r.kv_blocks // 63  # ceil(1000/16) = 63
    assert sizing.max_concurrent_sequences(r, 1008) == r.kv_blocks // 63
    assert sizing.max_concurrent_sequences(r, 1009) == r.kv_blocks // 64
    assert sizing.kv_rounding_waste_fraction(r, 1000) == pytest.approx(8 / 1008)
    assert sizing.kv_rounding_waste_fraction(r, 1008) == 0.0


def test_memory_breakdown_adds_up():
    r = Replica("llama-3.1-70b", "h100-sxm", tp=4)
    b = sizing.memory_breakdown(r, 3000, batch=10)
    total = b["weights_bytes"] + b["activation_reserve_bytes"] + b["kv_budget_bytes"] \
        + b["unallocated_bytes"]
    assert total == pytest.approx(r.gpu.hbm_bytes)
    assert b["kv_used_bytes"] == 10 * 3008 * r.kv_bytes_per_token_per_gpu
    assert b["sequences"] == 10 <= b["max_sequences"]


# ----------------------------------------------------------------------------- the replica


def test_replica_is_frozen_hashable_and_built_from_ids():
    a = Replica("llama-3.1-70b", "h100-sxm", tp=4)
    b = Replica(catalog.get_model("llama-3.1-70b"), catalog.get_gpu("h100-sxm"), tp=4)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.tp = 8  # type: ignore[misc]
    assert a.kv_precision == "bf16" and a.n_gpus == 4
    assert Replica("llama-3.1-70b", "h100-sxm", precision="fp8").kv_precision == "fp8"
    assert Replica("llama-3.1-70b", "h100-sxm", precision="int4").kv_precision == "bf16"


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"model": "llama-9"}, KeyError, "llama-3.1-70b"),
    ({"gpu": "tpu"}, KeyError, "h100-sxm"),
    ({"tp": 3}, ValueError, "tp must divide"),
    ({"precision": "fp2"}, KeyError, "int4"),
    ({"max_num_seqs": 10**6}, ValueError, "max_num_seqs"),
    ({"max_batched_tokens": 1}, ValueError, "max_batched_tokens"),
    ({"memory_rule": "sglang"}, ValueError, "memory_rule must be one of"),
    ({"memory_fraction": 1.5}, ValueError, "memory_fraction"),
    ({"block_tokens": 0}, ValueError, "block_tokens"),
    ({"calibration": 0.5}, TypeError, "Calibration"),
])
def test_replica_validation(kwargs, exc, match):
    args = {"model": "llama-3.1-70b", "gpu": "h100-sxm"} | kwargs
    with pytest.raises(exc, match=match):
        Replica(args.pop("model"), args.pop("gpu"), **args)


def test_calibration_validation():
    with pytest.raises(ValueError, match="memory_efficiency"):
        Calibration(memory_efficiency=0.0)
    with pytest.raises(ValueError, match="step_overhead_s"):
        Calibration(step_overhead_s=-1.0)
    with pytest.raises(ValueError, match="collective_latency_scale"):
        Calibration(collective_latency_scale=0.0)
    with pytest.raises(ValueError, match="memory_ceiling"):
        Calibration(memory_ceiling="datasheet")
    with pytest.raises(ValueError, match="unknown calibration parameter"):
        Calibration.from_parameters({"memory_efficiency": 0.9, "speedup": 2.0}, "x")
    with pytest.raises(ValueError, match="request_overhead_s"):
        Calibration(request_overhead_s=-0.1)


def test_default_calibration_is_the_fitted_one():
    r = Replica("llama-3.1-8b", "h100-sxm")
    assert r.calibration == sizing.fitted_calibration()
    assert r.calibration.memory_efficiency < 1


# ----------------------------------------------------------------------------- the cost model


def test_decode_batch1_is_the_bandwidth_floor():
    r = Replica("llama-3.1-8b", "h100-sxm", calibration=PHYSICAL)
    t = sizing.decode_step_time_s(r, 1, 100)
    embedding = 128_256 * 4096 * 2  # a look-up: stored, but not read whole each step
    floor = (r.weights_bytes_per_gpu - embedding + 131_072 * 101) / 3.35e12
    assert t == pytest.approx(floor, rel=1e-12)
    assert sizing.iteration_breakdown(r, decode_contexts=[100])["bound"] == "memory"


def test_large_batch_short_context_is_compute_bound():
    r = Replica("llama-3.1-8b", "h100-sxm", calibration=PHYSICAL)
    bd = sizing.iteration_breakdown(r, decode_contexts=[16] * 1024)
    assert bd["bound"] == "compute"
    assert bd["total_s"] == pytest.approx(bd["compute_s"])


def test_prefill_is_compute_bound_and_hand_derived():
    r = Replica("llama-3.1-8b", "h100-sxm", calibration=PHYSICAL)
    m = r.model
    n = 2048
    flops = (2 * (m.active_params_per_token() - m.final_norm_params()) * n  # head included
             - 2 * m.vocab_size * m.d_model * (n - 1)  # logits for the last token only
             + 4 * m.n_heads * m.head_dim * m.n_layers * n * (n + 1) / 2)
    assert sizing.prefill_time_s(r, n) == pytest.approx(flops / 989.4e12, rel=1e-9)


def test_a_cached_prefix_is_attended_to_not_computed():
    r = Replica("llama-3.1-8b", "h100-sxm", calibration=PHYSICAL)
    m = r.model
    n, k = 2048, 1500
    c = n - k  # the uncached tail, prefilled with the cached prefix as context
    flops = (2 * (m.active_params_per_token() - m.final_norm_params()) * c
             - 2 * m.vocab_size * m.d_model * (c - 1)
             + 4 * m.n_heads * m.head_dim * m.n_layers * (c * k + c * (c + 1) / 2))
    assert sizing.prefill_time_s(r, n, cached_tokens=k) == pytest.approx(flops / 989.4e12,
                                                                        rel=1e-9)
    assert sizing.ttft_s(r, n, k) < sizing.ttft_s(r, n)
    with pytest.raises(ValueError, match="cached_tokens"):
        sizing.ttft_s(r, n, n)  # at least one token is always computed (it yields the first output)


def test_friendly_and_fast_paths_agree():
    r = Replica("llama-3.1-70b", "h100-sxm", tp=4)
    chunks = [(512, 1000), (300, 0)]
    ctxs = [700, 1200, 5]
    pt, pairs, kv, seqs = sizing.prefill_work(chunks)
    assert (pt, pairs, kv, seqs) == (812, 512 * 1000 + 512 * 513 / 2 + 300 * 301 / 2, 1812, 2)
    fast = r.step_time_s(pt, pairs, kv, seqs, 3, sum(ctxs))
    assert sizing.iteration_time_s(r, chunks, ctxs) == fast
    assert sizing.iteration_breakdown(r, chunks, ctxs)["total_s"] == fast
    assert sizing.iteration_time_s(r) == 0.0


def test_breakdown_parts_compose_the_total():
    r = Replica("llama-3.1-70b", "h100-sxm", tp=4, pp=2)
    bd = sizing.iteration_breakdown(r, [(256, 0)], [1000] * 32)
    stage = max(bd["compute_s"], bd["memory_s"]) + bd["tp_comm_s"] + bd["layer_overhead_s"]
    assert bd["stage_s"] == pytest.approx(stage)
    assert bd["total_s"] == pytest.approx(bd["overhead_s"] + 2 * stage + bd["pp_comm_s"])
    assert bd["tp_comm_s"] > 0 and bd["pp_comm_s"] > 0
    assert bd["microbatches"] == 2  # 33 sequences: two micro-batches follow each other
    # host cost: per iteration, plus per sequence of the micro-batch
    c = r.calibration
    assert bd["overhead_s"] == pytest.approx(c.step_overhead_s + c.sequence_overhead_s * 33 / 2)


def test_bad_iteration_input_is_a_clear_error():
    r = Replica("llama-3.1-8b", "h100-sxm")
    with pytest.raises(TypeError, match=r"prefill\[0\]"):
        sizing.iteration_time_s(r, [5], [])
    with pytest.raises(ValueError, match=r"decode_contexts\[1\]"):
        sizing.iteration_time_s(r, [], [10, 0])
    with pytest.raises(TypeError, match="Replica"):
        sizing.iteration_time_s("llama-3.1-8b", [], [10])


_agg = st.floats(0, 1e5)


@settings(max_examples=60, deadline=None)
@given(base=st.tuples(_agg, _agg, _agg, st.floats(0, 50), st.floats(0, 500), _agg),
       which=st.integers(0, 5), more=st.floats(0, 1e5),
       model=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b"]), tp=st.sampled_from([1, 2, 8]))
def test_step_time_monotone_in_every_input(base, which, more, model, tp):
    r = Replica(model, "h100-sxm", tp=tp)
    bumped = list(base)
    bumped[which] += more
    assert r.step_time_s(*bumped) >= r.step_time_s(*base) - 1e-15


def test_physical_bound_is_faster_than_calibrated():
    r = Replica("llama-3.1-70b", "h100-sxm", tp=4)
    b = r.with_calibration(PHYSICAL)
    assert sizing.decode_step_time_s(b, 8, 2000) < sizing.decode_step_time_s(r, 8, 2000)
    assert sizing.prefill_time_s(b, 3000) < sizing.prefill_time_s(r, 3000)


def test_moe_reads_fewer_experts_at_batch_one():
    r = Replica("mixtral-8x7b", "h100-sxm", tp=2, calibration=PHYSICAL)
    bd1 = sizing.iteration_breakdown(r, decode_contexts=[10])
    bd64 = sizing.iteration_breakdown(r, decode_contexts=[10] * 64)
    full = (r.weights_bytes_per_gpu - 32_000 * 4096 * 2 / 2) / 3.35e12  # less the embedding
    assert bd1["weight_read_s"] < 0.45 * full  # 2 of 8 experts plus attention and embeddings
    assert bd64["weight_read_s"] == pytest.approx(full, rel=1e-3)  # all experts touched
    # compute follows the active parameters (2 of 8 experts)
    m = r.model
    assert r._cost.flops_per_token == pytest.approx(
        2 * m.n_layers * (m.layer_params(active=True) - m.norm_params_per_layer()) / 2
        + 2 * m.n_layers * m.norm_params_per_layer(), rel=1e-9)


def test_critical_batch_size():
    r = Replica("llama-3.1-70b", "h100-sxm", tp=4, calibration=PHYSICAL)
    b = sizing.critical_batch_size(r)
    # classic (F/BW)·(bytes/param)/2 = 295 for bf16; the output head and the embedding shift it
    assert 280 < b < 320
    c = r._cost
    compute = (c.flops_per_token + c.flops_per_logit_row) * b / c.flops_per_s
    memory = (c.dense_weight_bytes + c.kv_bytes_per_token * b) / c.bytes_per_s
    assert compute == pytest.approx(memory, rel=1e-9)
    assert sizing.critical_batch_size(r, 100_000) == math.inf  # attention keeps decode memory-bound
    assert sizing.critical_batch_size(r, 100) > b


def test_throughput_latency_curve_trades_latency_for_throughput():
    r = Replica("llama-3.1-8b", "h100-sxm")
    curve = sizing.throughput_latency_curve(r, [1, 8, 64, 256], 1000)
    tpots = [p["tpot_s"] for p in curve]
    tputs = [p["tokens_per_s"] for p in curve]
    assert tpots == sorted(tpots) and tputs == sorted(tputs)


def test_saturated_throughput_limits():
    r = Replica("llama-3.1-8b", "h100-sxm")
    s = sizing.saturated_throughput(r, 2048, 256)
    assert s["batch"] == min(256, sizing.max_concurrent_sequences(r, 2304))
    assert s["output_tokens_per_s"] == pytest.approx(s["batch"] / s["step_s"])
    bound = sizing.saturated_throughput(r.with_calibration(PHYSICAL), 2048, 256)
    assert bound["output_tokens_per_s"] > s["output_tokens_per_s"]
    tight = Replica("llama-3.1-70b", "h100-sxm", tp=2)
    t = sizing.saturated_throughput(tight, 8000, 1000)
    assert t["limited_by"] == "memory" and t["batch"] < 256


def test_gpus_for_peak_load_is_the_smallest_count():
    r = Replica("llama-3.1-70b", "h100-sxm", tp=4)
    plan = sizing.gpus_for_peak_load(r, 20.0, 3000, 300, tpot_slo_s=0.05, utilisation=0.8)
    cap = plan["capacity_rps_per_replica"]
    assert cap == pytest.approx(plan["tokens_per_s_per_replica"] / 300)
    assert cap == pytest.approx(sizing.capacity_rps(r, 3000, 300, 0.05))
    assert plan["replicas"] * cap * 0.8 >= 20.0
    assert (plan["replicas"] - 1) * cap * 0.8 < 20.0
    assert plan["tpot_s"] <= 0.05 and plan["gpus"] == 4 * plan["replicas"]
    assert plan["cost_per_hour_usd"] == plan["gpus"] * 3.00
    assert plan["in_flight_sequences"] == pytest.approx(20.0 * (plan["ttft_s"] + 300 * plan["tpot_s"]))
    with pytest.raises(ValueError, match="tpot_slo_s = .* below the batch-1 step time"):
        sizing.gpus_for_peak_load(r, 20.0, 3000, 300, tpot_slo_s=1e-4)


def test_cost_per_million_tokens():
    r = Replica("llama-3.1-8b", "h100-sxm")
    tput = sizing.saturated_throughput(r, 1000, 200)["output_tokens_per_s"]
    assert sizing.cost_per_million_output_tokens(r, 1000, 200) == pytest.approx(
        3.00 / 3600 / tput * 1e6)


# ----------------------------------------------------------------------------- estimate (contract)


def test_estimate_contract_keys_and_values():
    e = sizing.estimate("llama-3.1-8b", "h100-sxm", isl=2048, osl=256, batch=8)
    assert tuple(e)[:len(sizing.ESTIMATE_KEYS)] == sizing.ESTIMATE_KEYS  # the contract first
    assert e["hbm_bytes"] == 81_559 * 2**20 and e["extrapolated"] is False
    assert e["fits"] is True and e["reason"] is None
    assert e["weights_bytes"] == e["weights_bytes_per_gpu"] == 2 * 8_030_261_248
    assert e["kv_bytes_per_token"] == 131_072
    assert e["max_output_tokens_per_s"] < e["roofline_output_tokens_per_s"]
    r = Replica("llama-3.1-8b", "h100-sxm")
    assert e["ttft_s"] == sizing.ttft_s(r, 2048)
    assert e["ttft_s"] == r.calibration.request_overhead_s + sizing.prefill_time_s(r, 2048)
    assert e["tpot_s"] == sizing.decode_step_time_s(r, 8, 2048 + 128)


def test_estimate_scales_with_replicas():
    one = sizing.estimate("llama-3.1-70b", "h100-sxm", gpus=4, tp=4)
    two = sizing.estimate("llama-3.1-70b", "h100-sxm", gpus=8, tp=4)
    assert two["max_output_tokens_per_s"] == pytest.approx(2 * one["max_output_tokens_per_s"])
    assert two["weights_bytes_per_gpu"] == one["weights_bytes_per_gpu"]


def test_estimate_not_fitting_says_why():
    e = sizing.estimate("llama-3.1-70b", "h100-sxm")
    assert e["fits"] is False and "exceed" in e["reason"] and e["ttft_s"] is None
    e = sizing.estimate("llama-3.1-8b", "h100-sxm", batch=60_000)
    assert e["fits"] is False and "batch 60000" in e["reason"]
    e = sizing.estimate("opt-13b", "h100-sxm", isl=3000, osl=256)
    assert e["fits"] is False and "context" in e["reason"]


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"gpus": 6, "tp": 4}, ValueError, "multiple of tp x pp"),
    ({"tp": 3, "gpus": 3}, ValueError, "tp must divide"),
    ({"model": "gpt-5"}, KeyError, "known"),
    ({"isl": 0}, ValueError, "isl"),
])
def test_estimate_errors(kwargs, exc, match):
    args = {"model": "llama-3.1-70b", "gpu": "h100-sxm"} | kwargs
    with pytest.raises(exc, match=match):
        sizing.estimate(args.pop("model"), args.pop("gpu"), **args)


# Hand-derived from each model's config.json: 2 x layers x KV heads x head_dim x 2 bytes (bf16).
KV_BF16 = {
    "llama-2-7b": 2 * 32 * 32 * 128 * 2,  # 524,288: no GQA in Llama-2-7B
    "llama-2-13b": 2 * 40 * 40 * 128 * 2,  # 819,200
    "llama-2-70b": 2 * 80 * 8 * 128 * 2,  # 327,680
    "llama-3.1-8b": 2 * 32 * 8 * 128 * 2,  # 131,072
    "llama-3.1-70b": 327_680,
    "llama-3.1-405b": 2 * 126 * 8 * 128 * 2,  # 516,096
    "llama-3.3-70b": 327_680,
    "opt-13b": 819_200,
    "mixtral-8x7b": 2 * 32 * 8 * 128 * 2,  # 131,072
    # MLA: layers x (kv_lora_rank + qk_rope_head_dim) x 2 bytes, no K/V factor (test_models_2026)
    "deepseek-v3": 61 * (512 + 64) * 2,  # 70,272
    # every layer counted whole (the uncapped figure; the window cap is in test_models_2026)
    "gpt-oss-120b": 2 * 36 * 8 * 64 * 2,  # 73,728
    "qwen3-30b-a3b": 2 * 48 * 4 * 128 * 2,  # 98,304
    "qwen3-235b-a22b": 2 * 94 * 4 * 128 * 2,  # 192,512
}


def test_every_catalog_model_has_its_kv_size():
    assert set(KV_BF16) == set(catalog.MODELS)
    for model_id, expected in KV_BF16.items():
        assert sizing.kv_bytes_per_token(model_id, "bf16") == expected, model_id
        assert sizing.kv_bytes_per_token(model_id, "fp8") == expected / 2, model_id
        assert sizing.kv_bytes_per_token(model_id, "int4") == expected / 4, model_id


@pytest.mark.parametrize("model_id", sorted(catalog.MODELS))
def test_weights_per_gpu_shrink_with_tp_and_sum_to_at_least_the_model(model_id):
    m = catalog.get_model(model_id)
    total = sizing.weights_bytes(m, "bf16")
    previous = math.inf
    for tp in (1, 2, 4, 8):
        r = Replica(m, "h100-sxm", tp=tp)
        assert r.weights_bytes_per_gpu < previous
        assert tp * r.weights_bytes_per_gpu >= total
        previous = r.weights_bytes_per_gpu


@settings(max_examples=40, deadline=None)
@given(ctx=st.integers(1, 60_000), more=st.integers(0, 60_000),
       f1=st.floats(0.5, 0.95), df=st.floats(0, 0.05))
def test_capacity_monotone_in_context_and_memory_fraction(ctx, more, f1, df):
    r = Replica("llama-3.1-8b", "h100-sxm", memory_fraction=f1)
    assert sizing.max_concurrent_sequences(r, ctx + more) <= sizing.max_concurrent_sequences(r, ctx)
    bigger = Replica("llama-3.1-8b", "h100-sxm", memory_fraction=f1 + df)
    assert bigger.kv_blocks >= r.kv_blocks


def test_decode_steps_time_is_the_sum_of_steps():
    for model, tp, pp in (("llama-3.1-70b", 4, 2), ("mixtral-8x7b", 2, 1)):
        r = Replica(model, "h100-sxm", tp=tp, pp=pp)
        want = sum(sizing.decode_step_time_s(r, 24, 500 + j) for j in range(37))
        assert sizing.decode_steps_time_s(r, 24, 500, 37) == pytest.approx(want, rel=1e-12)
        assert sizing.decode_steps_time_s(r, 24, 500, 0) == 0.0


def test_the_memoised_replica_figures_are_the_computed_ones_and_cannot_be_corrupted():
    """saturated_throughput and slo_batch remember their answers per (frozen) replica: an equal
    replica built again gets the same numbers as a fresh computation, and a caller that edits the
    returned dict does not change what the next caller gets."""
    from vidya_lab.sizing import throughput

    r = sizing.Replica("llama-3.1-70b", "h100-sxm", tp=4)
    first = sizing.saturated_throughput(r, 3000, 300)
    first["batch"] = -1  # a careless caller
    again = sizing.saturated_throughput(sizing.Replica("llama-3.1-70b", "h100-sxm", tp=4), 3000, 300)
    batch = sizing.slo_batch(r, 3000, 300, 0.05)
    throughput._saturated.cache_clear()
    throughput._largest_batch.cache_clear()
    assert again == sizing.saturated_throughput(r, 3000, 300) and again["batch"] > 0
    assert batch == sizing.slo_batch(r, 3000, 300, 0.05)
