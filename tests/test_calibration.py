"""Calibration: the packaged data, the physical bound, the fit and its recorded error."""

import filecmp
import json
import math
from pathlib import Path

import pytest

from vidya_lab import calibration as cal
from vidya_lab import sizing
from vidya_lab.sizing import PHYSICAL, Calibration, Replica

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "published_calibration.csv"
PACKAGED = ROOT / "vidya_lab" / "data" / "published_calibration.csv"

# Fit error recorded when calibration.json was fitted (rounded up): a change to the model or the data
# that makes any of these worse must fail here and be looked at, not slip through.
RECORDED = {  # metric: (median |rel err|, worst |rel err|)
    "ttft_bs1": (0.12, 0.34),
    "output_throughput_per_gpu": (0.18, 0.42),
    "mean_ttft (QPS=2)": (0.10, 0.25),
    "mean_itl_tpot (QPS=2)": (0.16, 0.33),
    "mean_ttft (QPS=INF)": (0.05, 0.08),
    "mean_itl_tpot (QPS=INF)": (0.18, 0.34),
    "output_throughput_total (QPS=INF)": (0.13, 0.67),
}


@pytest.mark.skipif(not SHARED.exists(), reason="../shared is not part of a Binder checkout")
def test_packaged_csv_is_the_shared_file():
    assert filecmp.cmp(SHARED, PACKAGED, shallow=False)


def test_every_row_loads():
    rows = cal.load_rows()
    assert len(rows) == 111
    assert len(cal.timing_rows(rows)) == 73
    r = next(r for r in rows if r.metric == "output_throughput_per_gpu")
    assert r.batch_size == 1024 and r.si_value == 3989.0
    ttft = next(r for r in rows if r.metric == "mean_ttft")
    assert ttft.offered_qps == 2.0 and ttft.si_value == pytest.approx(0.023)


def test_no_measurement_beats_the_physical_bound():
    assert cal.bound_violations() == []


def test_fit_error_has_not_grown():
    errors = cal.fit_errors()
    assert set(errors) == set(RECORDED)
    for metric, (median, worst) in RECORDED.items():
        assert errors[metric]["median_abs_rel_error"] <= median, metric
        assert errors[metric]["worst_abs_rel_error"] <= worst, metric


def test_stored_errors_match_the_stored_parameters():
    stored = cal.recorded_errors()
    now = cal.fit_errors()
    for metric, e in stored.items():
        assert now[metric]["median_abs_rel_error"] == pytest.approx(e["median_abs_rel_error"])
        assert now[metric]["worst_abs_rel_error"] == pytest.approx(e["worst_abs_rel_error"])


def test_refit_reproduces_the_stored_parameters(tmp_path):
    doc = cal.write_calibration(tmp_path / "c.json")
    stored = json.loads((ROOT / "vidya_lab" / "data" / "calibration.json").read_text())
    for name, value in stored["parameters"].items():
        assert doc["parameters"][name] == pytest.approx(value, rel=1e-9), name
    assert doc["physical_bound_violations"] == []


def test_fitted_parameters_are_physical():
    c = sizing.fitted_calibration()
    for name in ("compute_efficiency_16bit", "compute_efficiency_8bit", "memory_efficiency"):
        assert 0.05 < getattr(c, name) <= 1.0
    assert 0 <= c.step_overhead_s < 0.05 and 0 <= c.request_overhead_s < 0.05
    assert 1 <= c.collective_latency_scale <= 50


def test_fit_beats_the_physical_bound_as_a_predictor():
    # the roofline alone is 2-3x optimistic; the fit must do far better in log error
    rows = cal.timing_rows()
    fitted = cal._loss(tuple(getattr(sizing.fitted_calibration(), n) for n in cal.PARAM_NAMES), rows)
    bound = cal._loss((1.0, 1.0, 1.0, 0.0, 1.0, 0.0), rows)
    assert fitted < 0.3 * bound


def test_predict_published_covers_every_row():
    out = cal.predict_published()
    assert len(out) == 111
    kinds = {d["kind"] for d in out}
    assert {"timing", "gpu spec", "kv size", "memory", "not predicted"} <= kinds
    for d in out:
        if d["kind"] == "gpu spec" and d["predicted"] is not None:
            assert d["relative_error"] == pytest.approx(0, abs=1e-9), d
        if d["kind"] in ("kv size", "memory"):
            assert abs(d["relative_error"]) < 0.05, d  # "1.6 GB" is 1.56 GiB: within 5%
        if d["kind"] == "timing":
            assert d["predicted"] > 0 and d["bound"] > 0


def test_closed_batch_of_one_request_is_prefill_then_decode():
    r = Replica("llama-3.1-8b", "h100-sxm", memory_rule="trtllm", calibration=PHYSICAL)
    out = cal.closed_batch(r, 1, 100, 3)
    prefill = r.step_time_s(100, 100 * 101 / 2, 100, 1, 0, 0)
    d1 = r.step_time_s(0, 0, 0, 0, 1, 101)
    d2 = r.step_time_s(0, 0, 0, 0, 1, 102)
    assert out["mean_ttft"] == pytest.approx(prefill)
    assert out["mean_itl_tpot"] == pytest.approx((d1 + d2) / 2)
    assert out["output_throughput_total"] == pytest.approx(3 / (prefill + d1 + d2))


def test_light_load_tends_to_idle_prefill_as_load_vanishes():
    r = Replica("llama-3.1-8b", "h100-sxm", memory_rule="trtllm")
    out = cal.light_load(r, 1e-6, 467, 256)
    prefill = sizing.ttft_s(r, 467)
    assert prefill == r.calibration.request_overhead_s + sizing.prefill_time_s(r, 467)
    d = sizing.decode_step_time_s(r, 1, 467 + 128)
    assert out["mean_ttft"] == pytest.approx(prefill + 0.5 * d, rel=1e-4)
    assert out["mean_itl_tpot"] == pytest.approx(d, rel=1e-4)
    heavy = cal.light_load(r, 1e4, 467, 256)
    assert math.isinf(heavy["mean_ttft"])


def test_static_batch_hand_value():
    r = Replica("llama-2-7b", "a100-80gb", precision="fp16", calibration=Calibration())
    t = r.step_time_s(2 * 10, 2 * 55, 20, 2, 0, 0) + r.step_time_s(0, 0, 0, 0, 2, 22)
    assert cal.static_batch_throughput_per_gpu(r, 2, 10, 2) == pytest.approx(4 / t)
