"""The catalog against the published facts (published_calibration.csv, facts.md, model configs)."""

import csv
import dataclasses
from pathlib import Path

import pytest

from vidya_lab import catalog

DATA = Path(__file__).resolve().parents[1] / "vidya_lab" / "data" / "published_calibration.csv"


def _spec_rows():
    with open(DATA) as f:
        return [r for r in csv.DictReader(f) if r["source"] == "GPU spec"]


@pytest.mark.parametrize("row", _spec_rows(), ids=lambda r: f"{r['gpu']}-{r['metric']}")
def test_gpu_specs_equal_published_rows(row):
    g = catalog.get_gpu(catalog.gpu_id_for(row["gpu"]))
    metric, value = row["metric"], row["value"]
    if value == "UNCERTAIN":  # MI300X fabric: the catalog cites measured RCCL figures instead
        assert "RCCL" in g.interconnect_source
        return
    x = float(value)
    expected = {
        # the datasheet's decimal figure; the device reports more (test_memory_as_reported)
        "hbm_capacity": ("hbm_marketing_bytes", 1e9), "mem_capacity": ("hbm_marketing_bytes", 1e9),
        "hbm_bandwidth": ("hbm_bytes_per_s", 1e12), "mem_bandwidth": ("hbm_bytes_per_s", 1e12),
        "bf16_dense": ("bf16_flops_per_s", 1e12), "fp8_dense": ("fp8_flops_per_s", 1e12),
        # the CSV gives bidirectional totals; the catalog stores one direction
        "nvlink_bandwidth": ("interconnect_bytes_per_s", 0.5e9),
        "interconnect": ("interconnect_bytes_per_s", 0.5e9),
    }[metric]
    assert getattr(g, expected[0]) == pytest.approx(x * expected[1], rel=1e-9)


# nvidia-smi memory.total in MiB, as modal-labs/modal-client PR #2797 lists them (facts.md)
REPORTED_MIB = {"h100-sxm": 81_559, "a100-80gb": 81_920, "l40s": 46_068}


@pytest.mark.parametrize("gpu_id", sorted(REPORTED_MIB))
def test_memory_as_reported_by_the_device(gpu_id):
    g = catalog.get_gpu(gpu_id)
    assert g.hbm_bytes == REPORTED_MIB[gpu_id] * 2**20
    assert "nvidia-smi" in g.memory_source


def test_every_gpu_reports_more_than_a_decimal_datasheet_would_suggest_or_states_why():
    for g in catalog.GPUS.values():
        assert g.hbm_bytes > 0.9 * g.hbm_marketing_bytes, g.id
        assert g.hbm_achievable_bytes_per_s < g.hbm_bytes_per_s, g.id
        assert "smi" in g.memory_source, g.id
    h100 = catalog.get_gpu("h100-sxm")
    assert h100.hbm_bytes == pytest.approx(85.52e9, rel=1e-3)  # not 80e9


def test_a100_has_no_fp8_and_runs_fp8_weights_at_bf16_rate():
    a100 = catalog.get_gpu("a100-80gb")
    assert a100.fp8_flops_per_s is None
    assert a100.flops_per_s("fp8") == a100.bf16_flops_per_s == 312e12
    assert a100.int8_ops_per_s == 624e12  # facts.md: INT8 624 dense
    h100 = catalog.get_gpu("h100-sxm")
    assert h100.flops_per_s("fp8") == 1978.9e12
    assert h100.flops_per_s("int4") == h100.bf16_flops_per_s  # weight-only int4: 16-bit math


def test_critical_intensity_h100_matches_scaling_book():
    # scaling-book gpus.md Quiz 1: H100 fp16 990e12/3.35e12 ≈ 295; fp8 ≈ 590
    h100 = catalog.get_gpu("h100-sxm")
    assert h100.critical_intensity("bf16") == pytest.approx(295, rel=0.005)
    assert h100.critical_intensity("fp8") == pytest.approx(590, rel=0.005)


# Exact parameter counts of the released checkpoints (safetensors metadata on Hugging Face).
EXACT = {
    "llama-2-7b": 6_738_415_616,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "mixtral-8x7b": 46_702_792_704,
}


@pytest.mark.parametrize("model_id", sorted(EXACT))
def test_total_params_exact(model_id):
    assert catalog.get_model(model_id).total_params() == EXACT[model_id]


@pytest.mark.parametrize("model_id", sorted(catalog.MODELS))
def test_total_params_near_model_card(model_id):
    m = catalog.get_model(model_id)
    assert m.total_params() == pytest.approx(m.published_params, rel=0.005)


def test_mixtral_active_params_model_card():
    m = catalog.get_model("mixtral-8x7b")
    # model card: 12.9B active (counting the embedding, which is a look-up)
    assert m.active_params_per_token() + m.vocab_size * m.d_model == pytest.approx(12.9e9, rel=0.005)
    assert m.is_moe and m.n_experts == 8 and m.experts_per_token == 2
    dense = catalog.get_model("llama-3.1-8b")
    assert not dense.is_moe


def test_llama3_70b_shape_matches_scaling_book():
    m = catalog.get_model("llama-3.1-70b")
    assert (m.n_layers, m.d_model, m.d_ff, m.n_heads, m.n_kv_heads, m.head_dim, m.vocab_size) == (
        80, 8192, 28672, 64, 8, 128, 128256)
    assert catalog.get_model("llama-3.3-70b").total_params() == m.total_params()


def test_required_ids_present():
    for mid in ("llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b",
                "llama-3.1-405b", "llama-3.3-70b", "opt-13b", "mixtral-8x7b"):
        assert catalog.get_model(mid).id == mid
    for gid in ("a100-80gb", "h100-sxm", "h200", "l40s", "b200", "mi300x"):
        assert catalog.get_gpu(gid).id == gid


def test_precisions_bytes():
    assert {p: catalog.bytes_per_element(p) for p in ("fp16", "bf16", "fp8", "int8", "int4")} == {
        "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5}


@pytest.mark.parametrize("getter, bad, known", [
    (catalog.get_model, "llama-4", "llama-3.1-70b"),
    (catalog.get_gpu, "h300", "h100-sxm"),
    (catalog.get_precision, "fp2", "int4"),
])
def test_unknown_id_lists_known_ids(getter, bad, known):
    with pytest.raises(KeyError, match=known):
        getter(bad)


def test_lookup_rejects_non_strings():
    with pytest.raises(TypeError, match="id string"):
        catalog.get_model(70)


def test_ids_are_case_insensitive():
    assert catalog.get_gpu("H100-SXM") is catalog.get_gpu("h100-sxm")


def test_entries_are_frozen_and_sourced():
    g = catalog.get_gpu("h200")
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.hbm_bytes = 1  # type: ignore[misc]
    for g in catalog.GPUS.values():
        assert g.spec_source and g.interconnect_source and "assumption" in g.price_source
        assert g.price_per_hour_usd > 0
    for m in catalog.MODELS.values():
        assert "config.json" in m.source


def test_csv_names_map_to_catalog_ids():
    with open(DATA) as f:
        rows = list(csv.DictReader(f))
    timing = [r for r in rows if r["source"].startswith("TensorRT-LLM")]
    for r in timing:
        assert catalog.get_model(catalog.model_id_for(r["model"]))
        assert catalog.get_gpu(catalog.gpu_id_for(r["gpu"]))
    with pytest.raises(KeyError, match="Llama-3.1-8B"):
        catalog.model_id_for("Llama-9")


def test_tables_have_every_entry():
    assert [r["id"] for r in catalog.model_table()] == list(catalog.MODELS)
    assert [r["id"] for r in catalog.gpu_table()] == list(catalog.GPUS)
