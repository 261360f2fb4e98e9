"""The physical bound (issue 30): no published or calibration row beats it; it is a best case."""

import math

import pytest

from vidya_lab import catalog, sizing
from vidya_lab.calibration.rows import load_rows
from vidya_lab.sizing.bound import physical_bound, roofline_output_tokens_per_s

#: Row metrics that measure output tokens/s (or requests/s, times the row's osl).
THROUGHPUT = ("output_throughput_total", "throughput_total_or_output", "output_throughput_per_gpu",
              "requests_per_second")


def _bounded_rows():
    """(row, measured output tokens/s, bound) for every throughput row the catalog can describe."""
    out = []
    for r in load_rows(extra=True):
        if r.metric not in THROUGHPUT or r.si_value is None:
            continue
        try:
            model, gpu = catalog.model_id_for(r.model), catalog.gpu_id_for(r.gpu)
        except KeyError:
            continue
        g = catalog.get_gpu(gpu)
        try:
            precision = catalog.get_precision(r.precision.lower()).id
        except KeyError:  # precision not stated: the smallest the GPU computes in (best case)
            precision = "fp4" if g.fp4_flops_per_s else "fp8"
        gpus = r.n_gpus or r.tp or 1
        measured = r.si_value
        if r.metric == "output_throughput_per_gpu":
            measured *= gpus
        if r.metric == "requests_per_second":
            if r.osl is None:
                continue
            measured *= r.osl
        # a row that may count input tokens too is bounded on input + output tokens
        scale = (1 + r.isl / r.osl) if r.metric == "throughput_total_or_output" and r.isl else 1.0
        bound = roofline_output_tokens_per_s(model, gpu, gpus=gpus, precision=precision,
                                             kv_precision=r.kv_precision, isl=r.isl or 1,
                                             osl=r.osl or 1)
        out.append((r, measured, bound * scale))
    return out


def test_no_published_or_calibration_row_beats_the_physical_bound():
    rows = _bounded_rows()
    assert len(rows) >= 100  # both files' throughput rows (107 when written)
    assert {r.file for r, _, _ in rows} == {"published_calibration.csv",
                                            "published_timings_extra.csv"}
    beats = [(r.index, r.file, r.model, r.gpu, measured, bound) for r, measured, bound in rows
             if measured > bound]
    assert beats == []


def test_the_trtllm_row_that_beat_the_old_roofline_is_under_the_bound():
    # issue 30: 70B fp8 on one H100, published 840 tokens/s, the old "roofline" 322
    b = roofline_output_tokens_per_s("llama-3.1-70b", "h100-sxm", precision="fp8", isl=128,
                                     osl=128)
    assert b > 840


def test_dense_bound_by_hand():
    # a dense memory-bound step reads every HBM byte: tokens/s = B · BW / HBM
    m, g = catalog.get_model("llama-3.1-8b"), catalog.get_gpu("h100-sxm")
    isl, osl = 100, 1000  # decode-heavy: memory-bound
    b = physical_bound(m, g, isl=isl, osl=osl)
    kv = sizing.kv_bytes_per_token(m, "bf16")
    w = sizing.weights_bytes(m, "bf16")
    batch = (g.hbm_bytes - w) / (kv * (isl + osl / 2))
    assert b["batch"] == pytest.approx(batch)
    assert b["limit"] == "memory"
    t = (m.active_params_per_token() * 2 + (g.hbm_bytes - w)) / g.hbm_bytes_per_s
    assert b["output_tokens_per_s"] == pytest.approx(batch / t)


def test_bound_is_above_the_calibrated_estimate_and_the_efficiency_one_cost_model():
    for model, gpu, tp, prec in (("llama-3.1-8b", "h100-sxm", 1, "bf16"),
                                 ("llama-3.1-70b", "h100-sxm", 4, "fp8"),
                                 ("llama-3.1-70b", "h200", 8, "bf16")):
        e = sizing.estimate(model, gpu, gpus=tp, tp=tp, precision=prec, isl=2048, osl=256)
        assert e["max_output_tokens_per_s"] < e["roofline_output_tokens_per_s"]
        r = sizing.Replica(model, gpu, tp=tp, precision=prec, memory_rule="trtllm",
                           memory_fraction=1.0, calibration=sizing.PHYSICAL)
        physical_model = sizing.saturated_throughput(r, 2048, 256)["output_tokens_per_s"]
        assert physical_model <= e["roofline_output_tokens_per_s"]


def test_bound_monotone_in_lengths_and_zero_when_weights_do_not_fit():
    a = roofline_output_tokens_per_s("llama-3.1-70b", "h100-sxm", gpus=2, isl=100, osl=100)
    assert a > roofline_output_tokens_per_s("llama-3.1-70b", "h100-sxm", gpus=2, isl=200, osl=100)
    assert roofline_output_tokens_per_s("llama-3.1-70b", "h100-sxm", gpus=1) == 0.0
    assert math.isfinite(a)


@pytest.mark.parametrize("kw, match", [({"gpus": 0}, "gpus"), ({"isl": 0}, "isl"),
                                       ({"osl": -1}, "osl")])
def test_bound_rejects_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        physical_bound("llama-3.1-8b", "h100-sxm", **kw)
