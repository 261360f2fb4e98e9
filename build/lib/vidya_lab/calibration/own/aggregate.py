"""Aggregate measurements: a small CSV in the columns of ``published_calibration.csv``.

A reader who has only summary numbers (a throughput at saturation, a mean TTFT at a light load)
writes them one per row, in the columns of the published file (:data:`~vidya_lab.calibration.rows.
COLUMNS`), and they are predicted exactly as the published rows are
(:mod:`vidya_lab.calibration.replay`), on the reader's own replica:

===============================  ===========================================================
metric (unit)                    predicted by
===============================  ===========================================================
``ttft_bs1`` (ms, s)             one prefill of ``isl`` tokens on an idle replica (engine only)
``output_throughput_per_gpu``    static batching at ``batch_size=N`` (in ``notes``)
``output_throughput_total``      no ``QPS`` in ``notes``: the saturated replica's cycle ×
(tokens/s)                       replicas (``n_gpus`` ÷ GPUs per replica); ``QPS=INF``: all
                                 ``requests=N`` (default 500) sent at once, replayed
``mean_ttft``, ``mean_itl_tpot``  ``QPS=x`` in ``notes``: a light Poisson load of x requests/s;
(ms, s)                          ``QPS=INF``: the all-at-once replay
===============================  ===========================================================

Each row names its model, GPU, tp and precision; they must be the deployment being calibrated
(one calibration describes one deployment). Rows of other metrics (specifications, memory) are
skipped and said so.
"""

from __future__ import annotations

import math
from dataclasses import replace

from vidya_lab import catalog, sizing
from vidya_lab.calibration.fit import LOAD_SET, metric_key
from vidya_lab.calibration.own.observe import Observation
from vidya_lab.calibration.replay import (
    FIT_METRICS,
    _closed_batch_cached,
    _requests_in,
    is_offline,
    light_load,
    static_batch_throughput_per_gpu,
)
from vidya_lab.calibration.rows import COLUMNS, Row, load_rows


def is_rows_csv(text: str) -> bool:
    """Does this text start with the header of a measurement CSV (the published columns)?"""
    header = text.lstrip("\ufeff").split("\n", 1)[0]
    names = {h.strip().strip('"') for h in header.split(",")}
    return {"metric", "value", "unit", "isl", "osl"} <= names


def kind_of(row: Row) -> str:
    """The observation kind of a row (errors are reported per kind)."""
    if row.metric == "ttft_bs1":
        return "prefill_bs1"
    if "throughput" in row.metric:
        return "throughput"
    return "ttft_under_load" if row.metric == "mean_ttft" else "tpot_under_load"


def _check_deployment(row: Row, r: sizing.Replica, where: str) -> None:
    try:
        model, gpu = catalog.model_id_for(row.model), catalog.gpu_id_for(row.gpu)
        precision = catalog.get_precision(row.precision.lower()).id
    except KeyError as exc:
        raise ValueError(f"{where}: {exc.args[0] if exc.args else exc}") from None
    got = (model, gpu, row.tp or 1, precision)
    want = (r.model.id, r.gpu.id, r.tp, r.precision)
    if got != want:
        raise ValueError(f"{where} is {model} {precision} on tp={row.tp or 1} x {gpu}, but this "
                         f"calibration is for {r.model.id} {r.precision} on tp={r.tp} x "
                         f"{r.gpu.id}: one calibration describes one deployment")


def _predictor(row: Row):
    isl, osl, metric = row.isl, row.osl, row.metric
    if metric == "ttft_bs1":
        return lambda r: sizing.prefill_time_s(
            replace(r, max_batched_tokens=max(r.max_batched_tokens, isl)), isl)
    if metric == "output_throughput_per_gpu":
        return lambda r: static_batch_throughput_per_gpu(r, row.batch_size, isl, osl)
    if is_offline(row):
        return lambda r: (max(1, (row.n_gpus or r.n_gpus) // r.n_gpus)
                          * sizing.saturated_throughput(r, isl, osl)["output_tokens_per_s"])
    if math.isinf(row.offered_qps):
        return lambda r: _closed_batch_cached(r, _requests_in(row), isl, osl)[metric]
    return lambda r: light_load(r, row.offered_qps, isl, osl)[metric]


def _skip_reason(row: Row) -> str | None:
    if row.metric not in FIT_METRICS or row.metric == "throughput_total_or_output":
        return f"metric {row.metric!r} is not a timing the cost model predicts"
    if row.si_value is None or not row.si_value > 0:
        return f"value {row.value!r} is not a positive number"
    if row.isl is None or row.osl is None:
        return "isl and osl are needed"
    if metric_key(row) == LOAD_SET:
        return "a throughput at QPS=2 is set by the offered load, not by the model"
    if row.metric == "output_throughput_per_gpu" and not row.batch_size:
        return "a static-batching throughput needs batch_size=N in notes"
    if row.metric in ("mean_ttft", "mean_itl_tpot") and row.offered_qps is None:
        return "a mean TTFT or TPOT needs the offered load (QPS=x or QPS=INF) in notes"
    return None


def row_observations(path, r: sizing.Replica) -> tuple[list[Observation], list[str]]:
    """Observations of a measurement CSV's timing rows on replica ``r``, and notes on the rows
    skipped; ``ValueError`` naming the file and row when a row is another deployment."""
    rows = load_rows(path)
    if not rows:
        raise ValueError(f"{path}: no rows (expected the columns {', '.join(COLUMNS)})")
    out, notes = [], []
    for row in rows:
        where = f"{path} row {row.index + 2}"
        reason = _skip_reason(row)
        if reason:
            notes.append(f"row {row.index + 2} skipped: {reason}")
            continue
        _check_deployment(row, r, where)
        cond = {"metric": metric_key(row), "isl": row.isl, "osl": row.osl, "row": row.index + 2}
        out.append(Observation(kind_of(row), float(row.si_value), _predictor(row), 1, str(path),
                               cond))
    return out, notes
