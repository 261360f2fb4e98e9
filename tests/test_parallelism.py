"""Layout arithmetic: hand-derived values and invariants."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import catalog
from vidya_lab import parallelism as par

L70 = catalog.get_model("llama-3.1-70b")


@pytest.mark.parametrize("tp, pp, match", [
    (3, 1, "divide .*64 attention heads"),
    (128, 1, "divide .*64 attention heads"),
    (1, 81, "pp must be <= .*80 layers"),
    (0, 1, ">= 1"),
])
def test_impossible_layouts_are_clear_errors(tp, pp, match):
    with pytest.raises(ValueError, match=match):
        par.check_layout(L70, tp, pp)


def test_kv_rule_for_tp_between_kv_and_query_heads():
    # Mixtral: 32 query heads, 8 KV heads: tp 16 replicates each KV head twice; tp 32 four times
    mix = catalog.get_model("mixtral-8x7b")
    par.check_layout(mix, 16)
    assert par.kv_heads_per_gpu(mix, 16) == 1
    assert par.kv_replication(mix, 16) == 2
    assert par.kv_replication(mix, 32) == 4
    assert par.kv_heads_per_gpu(mix, 4) == 2 and par.kv_replication(mix, 4) == 1


def test_layers_per_stage_rounds_up():
    assert par.layers_per_stage(catalog.get_model("llama-3.1-405b"), 4) == 32  # 126 / 4 -> 32
    assert par.layers_per_stage(L70, 1) == 80


def test_single_gpu_holds_every_parameter():
    for m in catalog.MODELS.values():
        assert par.weight_params_per_gpu(m, 1, 1) == pytest.approx(m.total_params(), rel=1e-12)


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_tp_split_sums_to_total_plus_replicated_norms(tp):
    # all matrices split 1/tp (kv heads 8 >= tp): tp GPUs together hold the model plus
    # (tp-1) extra copies of the norm vectors
    per = par.weight_params_per_gpu(L70, tp, 1)
    norms = L70.n_layers * L70.norm_params_per_layer() + L70.final_norm_params()
    assert tp * per == pytest.approx(L70.total_params() + (tp - 1) * norms, rel=1e-12)


def test_kv_projection_replication_costs_memory():
    # tp 16 > 8 kv heads: each GPU keeps one whole KV head (2x replication of k/v weights)
    per16 = par.weight_params_per_gpu(L70, 16, 1)
    kv = L70.kv_projection_params_per_layer() * L70.n_layers
    no_replication = (L70.total_params() - kv) / 16 + kv / 16
    assert per16 > no_replication
    norms = L70.n_layers * L70.norm_params_per_layer() + L70.final_norm_params()
    # 16 GPUs hold 2 copies of every k/v matrix (one extra model's worth) and 15 extra norm copies
    assert 16 * per16 - L70.total_params() == pytest.approx(kv + 15 * norms, rel=1e-12)


def test_pipeline_stage_holds_its_share():
    per = par.weight_params_per_gpu(L70, 1, 2)
    assert per == pytest.approx(40 * L70.layer_params() + L70.vocab_size * L70.d_model
                                + L70.final_norm_params(), rel=1e-12)


def test_ring_allreduce_hand_value():
    # 8 GPUs, 1 GB, 100 GB/s bus bandwidth: 2*7/8*1e9/1e11 = 17.5 ms, plus the latency term:
    # base 3 µs + 2(n-1) = 14 ring steps of 0.5 µs
    assert par.ring_allreduce_time_s(1e9, 8, 1e11, 0.5e-6, 3e-6) == pytest.approx(
        0.0175 + 3e-6 + 14 * 0.5e-6)
    assert par.ring_allreduce_time_s(1e9, 1, 1e11, 0.5e-6, 3e-6) == 0.0
    # the latency term grows with the GPU count, as 2(n-1) hops
    small = [par.ring_allreduce_time_s(16, n, 1e11, 1e-6) for n in (2, 4, 8)]
    assert small == pytest.approx([2e-6 + 2 * 16 / 2 / 1e11 * 1, 6e-6 + 16 * 1.5 / 1e11,
                                   14e-6 + 16 * 1.75 / 1e11])


@pytest.mark.parametrize("args, match", [
    ((-1e9, 4, 450e9, 1e-6), "nbytes must be >= 0"),
    ((1e6, 4, -1.0, 1e-6), "bus_bytes_per_s must be > 0"),
    ((1e6, 4, 450e9, -1.0), "hop_latency_s must be >= 0"),
    ((float("nan"), 4, 450e9, 1e-6), "nbytes must be finite"),
    ((1e6, 0, 450e9, 1e-6), "n must be an integer >= 1"),
])
def test_ring_allreduce_refuses_nonsense(args, match):
    with pytest.raises(ValueError, match=match):
        par.ring_allreduce_time_s(*args)


def test_p2p_and_layer_counts_refuse_nonsense():
    with pytest.raises(ValueError, match="nbytes must be >= 0"):
        par.p2p_time_s(-1e9, 450e9, 1e-5)
    with pytest.raises(ValueError, match="latency_s"):
        par.p2p_time_s(1e9, 450e9, float("nan"))
    with pytest.raises(ValueError, match="tp must be an integer >= 1"):
        par.layer_params_per_gpu(L70, -1)
    with pytest.raises(ValueError, match="tp must be an integer >= 1"):
        par.kv_heads_per_gpu(L70, 0)
    with pytest.raises(TypeError, match="active must be True or False"):
        par.layer_params_per_gpu(L70, 2, active="yes")


@settings(max_examples=40, deadline=None)
@given(nbytes=st.floats(0, 1e10), n=st.integers(2, 64), more=st.floats(0, 1e9))
def test_ring_allreduce_monotone_and_above_latency(nbytes, n, more):
    t = par.ring_allreduce_time_s(nbytes, n, 450e9, 0.2e-6, 3e-6)
    assert t >= 3e-6 + 2 * (n - 1) * 0.2e-6
    assert par.ring_allreduce_time_s(nbytes + more, n, 450e9, 0.2e-6, 3e-6) >= t
    # a ring of n never moves more than 2x the buffer per GPU
    assert t <= 2 * nbytes / 450e9 + 3e-6 + 2 * (n - 1) * 0.2e-6 + 1e-15


def test_tp_and_pp_comm_times():
    h100 = catalog.get_gpu("h100-sxm")
    nvl = catalog.get_link("nvlink4")
    # hand-derived from the link's measured figures: ring bus bandwidth 370 GB/s, small-message
    # time 3.5 µs + 2(n-1) x 0.17 µs (engine custom all-reduce), sends 3.7 µs + bytes / 450 GB/s
    assert (nvl.allreduce_bus_bytes_per_s, nvl.allreduce_base_s, nvl.allreduce_hop_s) == (
        370e9, 3.5e-6, 0.17e-6)
    one = 2 * 3 / 4 * 100 * 8192 * 2 / 370e9 + 3.5e-6 + 6 * 0.17e-6
    assert par.tp_comm_time_s(L70, h100, 4, 1, 100) == pytest.approx(160 * one)
    assert nvl.allreduce_time_s(100 * 8192 * 2, 4) == pytest.approx(one)
    assert par.tp_comm_time_s(L70, h100, 1, 1, 100) == 0.0
    assert par.pp_comm_time_s(L70, h100, 3, 100) == pytest.approx(
        2 * (100 * 8192 * 2 / 450e9 + 3.7e-6))


def test_pipeline_bubble():
    assert par.pipeline_bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert par.pipeline_bubble_fraction(1, 1) == 0.0
    with pytest.raises(ValueError, match="microbatches"):
        par.pipeline_bubble_fraction(4, 0)


# ----------------------------------------------------------------------------- links and nodes

H100 = catalog.get_gpu("h100-sxm")
L40S = catalog.get_gpu("l40s")


@pytest.mark.parametrize("tp, pp, nodes, tp_scope, inter, intra", [
    (1, 1, 1, "intra-node", 0, 0),
    (8, 1, 1, "intra-node", 0, 0),
    (1, 8, 1, "intra-node", 0, 7),   # 8 stages of one GPU fill one node
    (8, 2, 2, "intra-node", 1, 0),   # vLLM's 405B bf16 layout: one hand-off crosses nodes
    (4, 4, 2, "intra-node", 1, 2),   # two stages per node: 1 of 3 hand-offs crosses
    (16, 1, 2, "inter-node", 0, 0),  # a TP ring wider than a node runs over InfiniBand
    (16, 2, 4, "inter-node", 1, 0),
])
def test_layout_links_place_tp_inside_nodes(tp, pp, nodes, tp_scope, inter, intra):
    links = par.layout_links(H100, tp, pp)
    assert links.nodes == nodes
    assert links.tp_link.scope == tp_scope
    assert (links.inter_node_sends, links.intra_node_sends) == (inter, intra)
    assert links.intra.bytes_per_s == H100.interconnect_bytes_per_s  # the GPU's own NVLink
    assert links.inter.id == catalog.DEFAULT_INTER_NODE_LINK


def test_catalog_links_agree_with_gpus():
    assert catalog.get_link("nvlink4").bytes_per_s == H100.interconnect_bytes_per_s
    assert catalog.get_link("pcie4").bytes_per_s == L40S.interconnect_bytes_per_s == 32e9
    # facts.md: 400 GB/s of InfiniBand egress per 8-GPU H100 node -> 50 GB/s behind each GPU
    assert catalog.get_link("infiniband-ndr").bytes_per_s == 400e9 / 8
    assert catalog.gpu_link("l40s").name == "PCIe Gen4 x16 (L40S)"
    for link in catalog.LINKS.values():  # a ring never beats the line rate
        assert link.allreduce_bus_bytes_per_s <= link.bytes_per_s, link.id
        assert link.source


def test_measured_collectives_are_reproduced():
    """The link figures reproduce the measurements they were read from (device_measurements.csv)."""
    nvl, xgmi = catalog.get_link("nvlink4"), catalog.get_link("xgmi-mi300x")
    # engine custom all-reduce on H100, small messages: 3.7-3.9 µs at 2 GPUs, 5.7-5.9 µs at 8
    assert 3.7e-6 <= nvl.allreduce_latency_s(2) <= 3.9e-6
    assert 5.7e-6 <= nvl.allreduce_latency_s(8) <= 5.9e-6
    # RCCL on 8 x MI300X: an 8 MB all-reduce took 91.1 µs (crickett-hpe/hpc-ai-envs PR #30)
    assert xgmi.allreduce_time_s(8_388_608, 8) == pytest.approx(91.1e-6, rel=0.02)
    # InfiniBand NDR: 46-49 µs for a small all-reduce over 2 x 8 GPUs
    assert 46e-6 <= catalog.get_link("infiniband-ndr").allreduce_latency_s(16) <= 49.4e-6
    with pytest.raises(KeyError, match="unknown link"):
        catalog.get_link("carrier-pigeon")


def test_communication_is_zero_at_tp1_pp1():
    for g in catalog.GPUS.values():
        c = par.comm_coefficients(L70, g, 1, 1)
        assert set(c.values()) == {0.0}
        assert par.tp_comm_time_s(L70, g, 1, 1, 1000) == 0.0
        assert par.pp_comm_time_s(L70, g, 1, 1000) == 0.0


def test_allreduce_over_pcie_versus_nvlink_hand_values():
    # one decode token of Llama-3.1-70B at TP=4: 160 all-reduces of 8192 x 2 bytes
    tokens, nbytes = 1, 8192 * 2
    nvl = 160 * (2 * 3 / 4 * nbytes / 370e9 + 3.5e-6 + 6 * 0.17e-6)
    pcie = 160 * (2 * 3 / 4 * nbytes / 20e9 + 3.5e-6 + 6 * 2.6e-6)
    assert par.tp_comm_time_s(L70, H100, 4, 1, tokens) == pytest.approx(nvl)
    assert par.tp_comm_time_s(L70, L40S, 4, 1, tokens) == pytest.approx(pcie)
    # the same H100s forced onto PCIe pay PCIe's bandwidth and latency
    assert par.tp_comm_time_s(L70, H100, 4, 1, tokens, interconnect="pcie4") == pytest.approx(pcie)
    # at 4096 tokens (a prefill chunk) bandwidth dominates: PCIe is ~18x NVLink's 370/20
    big_ratio = (par.tp_comm_time_s(L70, L40S, 4, 1, 4096)
                 / par.tp_comm_time_s(L70, H100, 4, 1, 4096))
    assert 17 < big_ratio < 370 / 20


def test_tp_across_nodes_and_pp_hand_off_over_infiniband():
    ib = catalog.get_link("infiniband-ndr")
    t = 100 * 8192 * 2  # bytes of 100 tokens' activations
    # TP16: 160 rings, each limited by the InfiniBand hop: 47 GB/s, 3.5 µs + 30 x 1.48 µs
    assert par.tp_comm_time_s(L70, H100, 16, 1, 100) == pytest.approx(
        160 * (2 * 15 / 16 * t / 47e9 + 3.5e-6 + 30 * 1.48e-6))
    # TP8 x PP2: the one hand-off between the two nodes goes over InfiniBand (50 GB/s, 10 µs)
    assert par.pp_comm_time_s(L70, H100, 2, 100, tp=8) == pytest.approx(t / 50e9 + 10e-6)
    # TP4 x PP4 over 2 nodes: 2 NVLink hand-offs and 1 over InfiniBand
    assert par.pp_comm_time_s(L70, H100, 4, 100, tp=4) == pytest.approx(
        2 * (t / 450e9 + 3.7e-6) + t / ib.bytes_per_s + ib.p2p_latency_s)
    # without InfiniBand (one 100 Gb/s Ethernet NIC) the cross-node TP ring is far slower
    eth = par.tp_comm_time_s(L70, H100, 16, 1, 100, inter_node="ethernet-100g")
    assert eth > 3 * par.tp_comm_time_s(L70, H100, 16, 1, 100)


@settings(max_examples=40, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8, 16, 32, 64]), pp=st.integers(1, 40),
       tokens=st.integers(1, 10_000))
def test_comm_coefficients_are_the_comm_times(tp, pp, tokens):
    c = par.comm_coefficients(L70, H100, tp, pp)
    assert c["tp_s_per_token"] * tokens + c["tp_fixed_s"] == pytest.approx(
        par.tp_comm_time_s(L70, H100, tp, pp, tokens))
    assert c["pp_s_per_token"] * tokens + c["pp_fixed_s"] == pytest.approx(
        par.pp_comm_time_s(L70, H100, pp, tokens, tp=tp))
    links = par.layout_links(H100, tp, pp)
    assert links.inter_node_sends + links.intra_node_sends == pp - 1
    assert links.nodes >= 1 and links.inter_node_sends <= links.nodes - 1


def test_cost_model_takes_the_chosen_links():
    from vidya_lab import sizing

    nvl = sizing.Replica("llama-3.1-70b", "h100-sxm", tp=4)
    pcie = sizing.Replica("llama-3.1-70b", "h100-sxm", tp=4, interconnect="pcie4")
    a = sizing.iteration_breakdown(nvl, decode_contexts=[2048])
    b = sizing.iteration_breakdown(pcie, decode_contexts=[2048])
    assert a["weight_read_s"] == b["weight_read_s"] and b["tp_comm_s"] > 2 * a["tp_comm_s"]
    scale = nvl.calibration.collective_latency_scale
    c = par.comm_coefficients(L70, H100, 4, 1, interconnect="pcie4")
    assert b["tp_comm_s"] == pytest.approx(c["tp_s_per_token"] + c["tp_fixed_s"] * scale)
    # PP2 x TP8 spans two nodes: its one hand-off is slower over Ethernet than over InfiniBand
    ib = sizing.Replica("llama-3.1-405b", "h100-sxm", tp=8, pp=2, precision="fp8")
    eth = sizing.Replica("llama-3.1-405b", "h100-sxm", tp=8, pp=2, precision="fp8",
                         inter_node="ethernet-100g")
    assert (sizing.iteration_breakdown(eth, decode_contexts=[1000] * 64)["pp_comm_s"]
            > sizing.iteration_breakdown(ib, decode_contexts=[1000] * 64)["pp_comm_s"])
    with pytest.raises(KeyError, match="unknown link"):
        sizing.Replica("llama-3.1-8b", "h100-sxm", interconnect="nvlink9")


def test_steady_tpot_is_the_sizing_step():
    from vidya_lab import sizing

    r = sizing.Replica("llama-3.1-70b", "h100-sxm", tp=2, pp=2, precision="fp8")
    sized = sizing.gpus_for_peak_load(r, 10.0, 2000, 200, tpot_slo_s=0.08)
    assert sizing.steady_tpot_s(r, sized["batch_per_replica"], 2000, 200) == pytest.approx(
        sized["tpot_s"])
    assert sizing.steady_tpot_s(r, sized["batch_per_replica"], 2000, 200) <= 0.08
    with pytest.raises(ValueError, match="batch"):
        sizing.steady_tpot_s(r, 0, 2000, 200)
