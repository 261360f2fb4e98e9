"""The 2026 open models (DeepSeek-V3, gpt-oss-120b, Qwen3 MoE): parameter counts from their configs and
KV bytes per token derived by hand from each config.json (issue 29)."""

import pytest

from vidya_lab import catalog, experts, parallelism, sizing
from vidya_lab.catalog import Model
from vidya_lab.cli import main


def test_deepseek_v3_counts_match_the_weights_readme():
    # README_WEIGHTS.md of deepseek-ai/DeepSeek-V3: 671B total, 36.6B active (0.9B of it the head)
    m = catalog.get_model("deepseek-v3")
    assert m.is_mla and m.is_moe and m.n_moe_layers == 58
    assert m.total_params() == pytest.approx(671e9, rel=0.001)
    assert m.active_params_per_token() == pytest.approx(36.6e9, rel=0.002)


def test_gpt_oss_and_qwen3_active_params_match_the_cards():
    # gpt-oss model card: 5.13B active; Qwen3 cards: 3.3B and 22B active, counting the embedding
    gpt = catalog.get_model("gpt-oss-120b")
    assert gpt.active_params_per_token() == pytest.approx(5.13e9, rel=0.005)
    for mid, active in (("qwen3-30b-a3b", 3.3e9), ("qwen3-235b-a22b", 22e9)):
        m = catalog.get_model(mid)
        emb = m.vocab_size * m.d_model
        assert m.active_params_per_token() + emb == pytest.approx(active, rel=0.03), mid
        assert m.n_experts >= 100


def test_kv_bytes_per_token_deepseek_v3_mla():
    """MLA caches one latent (kv_lora_rank 512) and one shared rope key (qk_rope_head_dim 64) per
    layer: 61 layers · (512 + 64) · 2 bytes (bf16) = 70,272 bytes; fp8 halves it to 35,136.
    Ordinary attention with its 128 heads of 192+128 dims would be 61·128·(192+128)·2 = 4,997,120."""
    assert sizing.kv_bytes_per_token("deepseek-v3", "bf16") == 70_272
    assert sizing.kv_bytes_per_token("deepseek-v3", "fp8") == 35_136
    assert sizing.kv_bytes_per_token("deepseek-v3", "bf16", context_tokens=100_000) == 70_272


def test_kv_bytes_per_token_gpt_oss_sliding_window():
    """36 layers, 8 KV heads of 64 dims; 18 layers slide over 128 tokens (layer_types alternate).
    Every layer full: 2·36·8·64·2 = 73,728 bytes (bf16). One layer: 2·8·64·2 = 2,048 bytes.
    A sequence of L tokens holds 18·L + 18·min(L, 128) layer-tokens, so per token
    L = 128: 36·2,048 = 73,728; L = 8,192: 2,048·(18 + 18·128/8,192) = 36,864 + 576 = 37,440;
    L → ∞: 36,864, half the uncapped figure."""
    assert sizing.kv_bytes_per_token("gpt-oss-120b") == 73_728
    assert sizing.kv_bytes_per_token("gpt-oss-120b", context_tokens=128) == 73_728
    assert sizing.kv_bytes_per_token("gpt-oss-120b", context_tokens=8192) == 37_440
    assert sizing.kv_bytes_per_sequence("gpt-oss-120b", 8192) == 8192 * 37_440


def test_kv_bytes_per_token_qwen3_gqa():
    """Qwen3-30B-A3B: 2·48·4·128·2 = 98,304 bytes; Qwen3-235B-A22B: 2·94·4·128·2 = 192,512."""
    assert sizing.kv_bytes_per_token("qwen3-30b-a3b") == 98_304
    assert sizing.kv_bytes_per_token("qwen3-235b-a22b") == 192_512
    # no sliding layers: the context length changes nothing
    assert sizing.kv_bytes_per_token("qwen3-30b-a3b", context_tokens=7) == 98_304


def test_kv_per_token_falls_with_context_and_never_below_the_full_layers():
    m = catalog.get_model("gpt-oss-120b")
    values = [sizing.kv_bytes_per_token(m, context_tokens=n) for n in (1, 64, 128, 129, 1000, 10**6)]
    assert values == sorted(values, reverse=True)
    assert values[-1] > 36_864 and values[0] == 73_728


def test_mla_kv_per_gpu_is_replicated_across_tp():
    r = sizing.Replica("deepseek-v3", "h200", tp=8, precision="fp8", kv_precision="bf16")
    assert r.kv_bytes_per_token_per_gpu == 70_272  # every TP rank keeps the whole latent


@pytest.mark.parametrize("bad, match", [
    (dict(kv_lora_rank=512), "qk_nope_head_dim"),
    (dict(sliding_window=128), "both be 0"),
    (dict(n_dense_layers=3), "dense_d_ff"),
    (dict(n_sliding_layers=99, sliding_window=4), "n_layers"),
])
def test_inconsistent_shapes_are_refused(bad, match):
    import dataclasses
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(catalog.get_model("qwen3-30b-a3b"), **bad)


def test_context_tokens_is_checked():
    with pytest.raises(ValueError, match="context_tokens"):
        sizing.kv_bytes_per_token("gpt-oss-120b", context_tokens=0)


def test_expert_layout_counts_only_routed_experts_of_moe_layers():
    """DeepSeek-V3 routed experts: 58 MoE layers · 256 · 3·7168·2048 = 653.8e9 parameters; the
    rest (671.0e9 − 653.8e9 = 17.2e9: attention, 3 dense layers, the shared expert, embeddings) is
    the dense part every EP rank keeps whole."""
    out = experts.expert_layout("deepseek-v3", 32, "fp8")
    assert out["expert_params"] == 58 * 256 * 3 * 7168 * 2048
    assert out["dense_params"] == pytest.approx(17.2e9, rel=0.01)
    assert out["ep_weights_bytes_per_gpu"] == pytest.approx(17.2e9 + 653.8e9 / 32, rel=0.01)
    assert isinstance(catalog.get_model("deepseek-v3"), Model)


def test_tp_weights_per_gpu_use_the_dense_leading_layers():
    m = catalog.get_model("deepseek-v3")
    assert parallelism.weight_params_per_gpu(m, 1, 1) == m.total_params()


def test_cli_models_lists_them_and_estimate_reports_capped_kv(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for mid in ("deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-235b-a22b"):
        assert mid in out
    assert "mla 512+64" in out and "18/36 sliding 128" in out
    assert main(["estimate", "--model", "gpt-oss-120b", "--gpu", "h200", "--isl", "8000",
                 "--osl", "192", "--precision", "fp8", "--kv-precision", "bf16", "--json"]) == 0
    import json
    est = json.loads(capsys.readouterr().out)
    assert est["kv_bytes_per_token"] == 73_728 and est["kv_bytes_per_token_at_context"] == 37_440


def test_experts_touched_by_one_token_and_by_many():
    # one token hits k experts spread over n ranks: k/n per rank; very many tokens hit all E/n
    assert experts.experts_touched_per_gpu("deepseek-v3", 1, 8) == pytest.approx(8 / 8)
    assert experts.experts_touched_per_gpu("deepseek-v3", 100_000, 8) == pytest.approx(32)
    assert experts.experts_touched_per_gpu("gpt-oss-120b", 1, 1) == pytest.approx(4)


def test_ep_layouts_rank_fitting_first_and_by_throughput_per_gpu():
    ranked = experts.ep_layouts("deepseek-v3", "h200", batch=64, context_tokens=3900)
    fits = [x["fits"] for x in ranked]
    assert fits == sorted(fits, reverse=True)
    speeds = [x["tokens_per_s_per_gpu"] for x in ranked if x["fits"]]
    assert speeds == sorted(speeds, reverse=True)
    # 671 GB of fp8 weights do not fit on fewer than 8 H200s (141 GB each)
    assert all(not x["fits"] for x in ranked if x["gpus"] < 8)
    for x in ranked:  # EP keeps the dense part whole: more weights per GPU than TP at equal n
        twin = [y for y in ranked if y["gpus"] == x["gpus"] and y["kind"] != x["kind"]]
        if x["kind"] == "ep" and twin and x["gpus"] > 1:
            assert x["weights_bytes_per_gpu"] > twin[0]["weights_bytes_per_gpu"]
            # and moves 2n/k times fewer bytes (k = 8): more at n = 2, equal at 4 (where one
            # all-to-all latency beats two ring all-reduces), fewer beyond
            assert (x["comm_s"] < twin[0]["comm_s"]) == (x["gpus"] >= 4), x["gpus"]


def test_cli_layouts_ep_names_an_ep_winner_for_deepseek(capsys):
    import json
    assert main(["layouts", "--model", "deepseek-v3", "--gpu", "h200", "--ep", "--precision",
                 "fp8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["winner"]["kind"] == "ep" and out["winner"]["ep"] == 8
    assert out["why"].startswith("EP=8 wins")
    assert main(["layouts", "--model", "llama-3.1-70b", "--gpu", "h200", "--ep"]) == 2
    assert "dense" in capsys.readouterr().err
