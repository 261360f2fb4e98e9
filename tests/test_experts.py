"""Chapter 3's practice topic: MoE expert parallelism, a long upload's KV, LoRA adapters (by hand)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidya_lab import experts, sizing
from vidya_lab import parallelism as par
from vidya_lab.catalog import get_model
from vidya_lab.scenario import TANVI

MIXTRAL_EXPERT_PARAMS = 32 * 8 * 3 * 4096 * 14336  # layers x experts x gated MLP (3 d d_ff)
KV_70B = 2 * 80 * 8 * 128 * 2  # bytes per token, bf16


def test_expert_layout_by_hand():
    m = get_model("mixtral-8x7b")
    assert MIXTRAL_EXPERT_PARAMS == 45_097_156_608
    dense = m.total_params() - MIXTRAL_EXPERT_PARAMS
    for n in (1, 2, 4, 8):
        lay = experts.expert_layout(m, n)
        assert lay["experts_per_gpu"] == 8 // n
        assert lay["expert_params"] == MIXTRAL_EXPERT_PARAMS and lay["dense_params"] == dense
        assert lay["ep_weights_bytes_per_gpu"] == pytest.approx(2 * (dense + MIXTRAL_EXPERT_PARAMS / n))
        assert lay["tp_weights_bytes_per_gpu"] == pytest.approx(2 * par.weight_params_per_gpu(m, n))
        assert lay["replicated_bytes_per_gpu"] == pytest.approx(2 * dense * (1 - 1 / n))
    # EP keeps the dense part whole on every GPU: more bytes per GPU than TP's even split
    assert experts.expert_layout(m, 8)["ep_weights_bytes_per_gpu"] > \
        experts.expert_layout(m, 8)["tp_weights_bytes_per_gpu"]


def test_moe_exchange_by_hand():
    x = experts.moe_exchange("mixtral-8x7b", 4096, 8)
    # EP: dispatch + combine of each GPU's 512 tokens to k = 2 experts, 7/8 of them elsewhere
    assert x["ep_bytes_per_gpu"] == pytest.approx(2 * 512 * 2 * 4096 * 2 * 7 / 8)
    # TP: two ring all-reduces of 4096 x 4096 x 2 bytes, 2 x 7/8 of it through each GPU
    assert x["tp_bytes_per_gpu"] == pytest.approx(2 * 2 * 7 / 8 * 4096 * 4096 * 2)
    assert x["ratio_bytes"] == pytest.approx(8.0)
    one_way = 512 * 2 * 4096 * 2 * 7 / 8
    assert x["ep_time_s"] == pytest.approx(2 * (3.7e-6 + one_way / (153 / 160 * 450e9)))
    assert x["tp_time_s"] == pytest.approx(
        2 * (3.5e-6 + 14 * 0.17e-6 + 2 * 7 / 8 * 4096 * 4096 * 2 / 370e9))


@given(tokens=st.integers(1, 200_000), n=st.sampled_from([2, 4, 8]),
       link=st.sampled_from(["nvlink4", "infiniband-ndr", "pcie4"]))
def test_tp_moves_2n_over_k_times_the_bytes(tokens, n, link):
    x = experts.moe_exchange("mixtral-8x7b", tokens, n, link)
    assert x["ratio_bytes"] == pytest.approx(2 * n / 2)
    assert x["ep_bytes_per_gpu"] < x["tp_bytes_per_gpu"]
    if link == "nvlink4":  # inside a server EP is never slower (across servers a send's fixed
        assert x["ep_time_s"] <= x["tp_time_s"]  # cost can exceed a small ring's)


def test_all_to_all_time():
    assert experts.all_to_all_time_s(0, "nvlink4") == 0.0
    assert experts.all_to_all_time_s(1e6, "infiniband-ndr") == pytest.approx(10e-6 + 1e6 / (43 / 50 * 50e9))
    with pytest.raises(ValueError, match="nbytes_per_gpu"):
        experts.all_to_all_time_s(-1, "nvlink4")
    with pytest.raises(KeyError, match="unknown link"):
        experts.all_to_all_time_s(1.0, "carrier-pigeon")


def test_a_long_upload_against_the_kv_budget():
    r4 = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    up = experts.long_context_kv(r4, 40_000, typical_tokens=3_900)
    assert up["kv_bytes"] == 40_000 * KV_70B == 13_107_200_000
    assert up["kv_bytes_per_gpu"] == 40_000 * KV_70B / 4
    assert up["share_of_budget"] == pytest.approx(up["kv_bytes_per_gpu"] / r4.kv_budget_bytes)
    assert up["fits"] and up["typical_displaced"] == pytest.approx(40_000 / 3_900)
    r2 = sizing.Replica(TANVI.model_id, "h100-sxm", tp=2)
    assert not experts.long_context_kv(r2, 40_000)["fits"]  # 6.6 GB a GPU, 3.2 GB of cache
    assert "typical_displaced" not in experts.long_context_kv(r2, 100)


def test_lora_adapter_params_by_hand():
    # Llama-3.3-70B, rank 16 on q, k, v, o, gate, up, down: r (d_in + d_out) each, 80 layers
    per_layer = 16 * ((8192 + 8192) + 2 * (8192 + 1024) + (8192 + 8192) + 3 * (8192 + 28672))
    assert experts.lora_adapter_params(TANVI.model_id, 16) == 80 * per_layer == 207_093_760
    assert experts.lora_adapter_params(TANVI.model_id, 8, ("q", "v")) == 80 * 8 * (16384 + 9216)
    # an MoE adapts every expert's MLP
    mix = experts.lora_adapter_params("mixtral-8x7b", 4, ("up",))
    assert mix == 32 * 8 * 4 * (4096 + 14336)


def test_adapters_against_the_kv_budget():
    r4 = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    ad = experts.adapter_budget(r4, 6, 16, typical_tokens=3_900)
    per_gpu = 6 * 207_093_760 * 2 / 4
    assert ad["adapter_bytes"] == 207_093_760 * 2
    assert ad["adapters_bytes_per_gpu"] == pytest.approx(per_gpu)
    assert ad["kv_tokens_displaced"] == pytest.approx(per_gpu / (KV_70B / 4))
    assert ad["typical_displaced"] == pytest.approx(ad["kv_tokens_displaced"] / 3_900)
    assert experts.adapter_budget(r4, 0, 16)["share_of_budget"] == 0.0


@pytest.mark.parametrize("call, exc, match", [
    (lambda: experts.expert_layout(TANVI.model_id, 2), ValueError, "dense"),
    (lambda: experts.expert_layout("mixtral-8x7b", 3), ValueError, "n must divide"),
    (lambda: experts.moe_exchange("mixtral-8x7b", 0, 8), ValueError, "tokens"),
    (lambda: experts.moe_exchange("mixtral-8x7b", 10, 8, activation_bytes=0), ValueError,
     "activation_bytes"),
    (lambda: experts.long_context_kv("not a replica", 10), TypeError, "sizing.Replica"),
    (lambda: experts.lora_adapter_params(TANVI.model_id, 0), ValueError, "rank"),
    (lambda: experts.lora_adapter_params(TANVI.model_id, 8, "q"), TypeError, "targets"),
    (lambda: experts.lora_adapter_params(TANVI.model_id, 8, ()), ValueError, "targets"),
    (lambda: experts.lora_adapter_params(TANVI.model_id, 8, ("x",)), ValueError, r"targets\[0\]"),
    (lambda: experts.adapter_budget(sizing.Replica(TANVI.model_id, "h100-sxm", tp=4), -1, 8),
     ValueError, "adapters"),
])
def test_bad_input_is_refused_by_name(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
