"""Calibrate the cost model on published measurements, and compare it with every published row.

Read it in this order:

1. :mod:`~vidya_lab.calibration.rows` — the measurement files, in SI units; the train/held-out split.
2. :mod:`~vidya_lab.calibration.replay` — each published benchmark replayed through the cost model
   (static batches, light load, all-at-once runs), one prediction per measured row.
3. :mod:`~vidya_lab.calibration.fit` — least squares on log(predicted/measured), each parameter
   inside its plausible range (:data:`vidya_lab.sizing.PARAMETERS`); errors; the physical bound.
4. :mod:`~vidya_lab.calibration.record` — the fit, its error on held-out rows, its sensitivity to
   every parameter, written to ``vidya_lab/data/calibration.json``.
5. :mod:`~vidya_lab.calibration.validation` — every row beside its prediction (the validation page).

``python -m vidya_lab.calibration`` refits and rewrites the package's calibration.json.
"""

from vidya_lab.calibration.fit import (
    FITTED,
    GPU_SCALE_RANGE,
    OWN_SCALE_GPUS,
    bound_violations,
    calibration_from,
    fit,
    fit_errors,
    fit_gpu,
    gpu_of,
    loss,
    metric_key,
    reference_rows,
    summarise,
    throughput_error,
    timing_rows,
)
from vidya_lab.calibration.record import (
    build_document,
    layout_lesson,
    package_file,
    recorded_errors,
    sensitivity,
    stored_document,
    write_calibration,
)
from vidya_lab.calibration.replay import (
    FIT_METRICS,
    SOURCE_RULE,
    closed_batch,
    is_timing,
    light_load,
    predict_row,
    replica_for,
    rule_for,
    static_batch_throughput_per_gpu,
)
from vidya_lab.calibration.rows import Row, load_rows, split
from vidya_lab.calibration.validation import predict_published

__all__ = ["FITTED", "FIT_METRICS", "GPU_SCALE_RANGE", "OWN_SCALE_GPUS", "fit_gpu", "gpu_of",
           "reference_rows", "Row", "SOURCE_RULE", "bound_violations", "build_document",
           "calibration_from", "closed_batch", "fit", "fit_errors", "is_timing", "layout_lesson",
           "light_load", "load_rows", "loss", "metric_key", "package_file", "predict_published",
           "predict_row", "recorded_errors", "replica_for", "rule_for", "sensitivity", "split",
           "static_batch_throughput_per_gpu", "stored_document", "summarise", "throughput_error",
           "timing_rows", "write_calibration"]
