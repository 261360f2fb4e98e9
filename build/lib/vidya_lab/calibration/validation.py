"""Every row of the published data beside the package's prediction: what the validation page shows.

Timing rows against the cost model (calibrated, and the physical bound), GPU-spec rows against the
catalog (the datasheet figures: memory as the datasheet states it, peak bandwidth and FLOP/s), KV
rows against :func:`vidya_lab.sizing.kv_bytes_per_token`.
"""

from __future__ import annotations

from vidya_lab import catalog, sizing
from vidya_lab.calibration.fit import metric_key
from vidya_lab.calibration.replay import is_timing, predict_row
from vidya_lab.calibration.rows import Row, load_rows
from vidya_lab.calibration.rows import split as _split
from vidya_lab.sizing import PHYSICAL, Calibration


def predict_published(calibration: Calibration | None = None) -> list[dict]:
    """A prediction beside EVERY row of the packaged CSV, for the validation page.

    Each dict: the row's fields, ``measured`` (SI), ``predicted`` (SI, calibrated; None where the
    package predicts nothing), ``bound`` (the same with :data:`PHYSICAL`, timing rows only),
    ``relative_error`` ((predicted − measured)/measured), ``kind`` ("timing", "gpu spec",
    "kv size", "memory" or "not predicted") and ``held_out`` (a timing row the fit did not see).
    """
    cal = sizing.fitted_calibration() if calibration is None else calibration
    rows = load_rows(extra=True)
    held = {id(r) for r in _split([r for r in rows if is_timing(r)])[1]}
    out = []
    for row in rows:
        d = {"source": row.source, "file": row.file, "model": row.model, "gpu": row.gpu,
             "tp": row.tp, "precision": row.precision, "isl": row.isl, "osl": row.osl,
             "metric": row.metric, "metric_key": metric_key(row), "value": row.value,
             "unit": row.unit, "measured": row.si_value, "predicted": None, "bound": None,
             "kind": "not predicted", "held_out": id(row) in held}
        if is_timing(row):
            d["kind"] = "timing"
            d["predicted"] = predict_row(row, cal)
            d["bound"] = predict_row(row, PHYSICAL)
        elif row.source == "GPU spec":
            d["kind"], d["predicted"] = "gpu spec", _catalog_spec(row)
        elif row.metric.startswith("kv_bytes"):
            d["kind"], d["predicted"] = "kv size", _kv_prediction(row)
        elif row.metric == "weights_fraction_of_gpu_mem":
            d["kind"] = "memory"
            d["predicted"] = 100 * sizing.weights_bytes("llama-2-13b", "fp16") / 40e9
        if d["predicted"] is not None and d["measured"]:
            d["relative_error"] = (d["predicted"] - d["measured"]) / d["measured"]
        else:
            d["relative_error"] = None
        out.append(d)
    return out


def _catalog_spec(row: Row) -> float | None:
    try:
        g = catalog.get_gpu(catalog.gpu_id_for(row.gpu))
    except KeyError:
        return None
    key = row.metric
    if key in ("hbm_capacity", "mem_capacity"):
        return g.hbm_marketing_bytes  # the datasheet's figure, as the row states it
    if key in ("hbm_bandwidth", "mem_bandwidth"):
        return g.hbm_bytes_per_s
    if key == "bf16_dense":
        return g.bf16_flops_per_s
    if key == "fp8_dense":
        return g.fp8_flops_per_s
    if key in ("nvlink_bandwidth", "interconnect") and row.si_value is not None:
        return 2 * g.interconnect_bytes_per_s  # the CSV states bidirectional totals
    return None


def _kv_prediction(row: Row) -> float | None:
    try:
        model = catalog.model_id_for(row.model)
    except KeyError:
        return None
    kv_prec = "int8" if row.precision.startswith("INT8") else row.precision.lower()
    per_token = sizing.kv_bytes_per_token(model, kv_prec)
    if row.metric == "kv_bytes_per_token":
        return per_token
    # LLaMA-13B (the vLLM blog) is LLaMA-1: Llama-2-13B's shape but a 2048-token context
    tokens = row.isl or (2048 if row.model == "LLaMA-13B" else catalog.get_model(model).max_context_tokens)
    return per_token * tokens
