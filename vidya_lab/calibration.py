"""Calibrate the cost model on published measurements, and compare it with every published row.

The cost model (:mod:`vidya_lab.sizing`) is a roofline times efficiencies. This module fits its six
calibration parameters — the achieved fractions of peak compute (16-bit and 8-bit math separately)
and of peak memory bandwidth, a fixed cost per engine iteration, a scale on the catalog's collective
latency, and a per-request front-end overhead added to TTFT — on the 73 measured timing rows of
``vidya_lab/data/published_calibration.csv`` (a copy of ``../shared/data/published_calibration.csv``),
by least squares on log(predicted/measured), and reports the fit error per metric (median and worst
relative error).

A caveat the numbers hide: the data cannot tell memory efficiency from per-iteration overhead well
(a small-batch decode step is W/(η·BW) + overhead, and both fit it). Fits from other starting points
reach nearly the same error with η_memory ≈ 0.8 and a smaller overhead. Read the parameters as one
consistent set, not as separate measurements.

Each source is predicted with the memory rule of its engine (both timing sources are TensorRT-LLM,
so ``"trtllm"``) and with the conditions it states:

* ``ttft_bs1`` (TensorRT-LLM v0.9 "Low Latency" table): one prefill of isl tokens, idle replica.
* ``output_throughput_per_gpu`` (v0.9, static batching at the stated ``batch_size``): the batch's
  prefill, then osl−1 decode steps at growing context; tokens ÷ time ÷ GPUs.
* online serving (v0.14), offered QPS=2 (light load): TTFT = the prefill iteration (with the
  sequences in flight decoding alongside) plus half a decode step of waiting; ITL = decode steps
  stretched by the prefills of other arrivals; throughput = λ·osl (the engine keeps up).
  In-flight sequences from Little's law, solved by fixed point.
* online serving, QPS=INF: all 500 requests at t=0 through an iteration-level replay of in-flight
  batching (``max_num_tokens`` 8192 per iteration, no chunking, prompts admitted while KV blocks last).

:func:`predict_published` returns a prediction beside every row of the CSV (GPU-spec rows against the
catalog, KV rows against :func:`vidya_lab.sizing.kv_bytes_per_token`), which the book's validation
page shows. :func:`fit` searches the parameters; ``python -m vidya_lab.calibration`` refits and writes
``vidya_lab/data/calibration.json`` with the errors. :data:`vidya_lab.sizing.PHYSICAL` (efficiencies
1) is the bound: :func:`bound_violations` lists any measurement that beats it (there must be none).
"""

from __future__ import annotations

import csv
import functools
import json
import math
import statistics
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from vidya_lab import catalog, sizing
from vidya_lab.sizing import PHYSICAL, Calibration, Replica

CSV_NAME = "published_calibration.csv"
#: The memory rule of each source's engine.
SOURCE_RULE = {
    "TensorRT-LLM online serving (v0.14)": "trtllm",
    "TensorRT-LLM perf doc (v0.9.0)": "trtllm",
}
#: Metrics the fit uses (timing measurements that depend on the efficiencies).
FIT_METRICS = ("ttft_bs1", "output_throughput_per_gpu", "mean_ttft", "mean_itl_tpot",
               "output_throughput_total")
#: Requests per run in the v0.14 online-serving table ("500 requests").
ONLINE_REQUESTS = 500
#: TensorRT-LLM's default max_num_tokens per iteration (assumption for both sources).
TRTLLM_MAX_NUM_TOKENS = 8192
#: Engine cap on in-flight sequences assumed for the online runs (trtllm-build's default
#: max_batch_size is 2048; the 500 requests are never capped by it).
TRTLLM_MAX_BATCH = 2048

_UNIT_SCALE = {"ms": 1e-3, "s": 1.0, "tokens/s": 1.0, "tokens/s/GPU": 1.0, "bytes": 1.0,
               "KB": 1024.0, "GB": 1e9, "TB/s": 1e12, "TFLOPS": 1e12, "%": 1.0}


@dataclass(frozen=True)
class Row:
    """One row of published_calibration.csv, with its value in SI units (``si_value``)."""

    index: int
    source: str
    citation: str
    model: str
    gpu: str
    n_gpus: int | None
    tp: int | None
    precision: str
    isl: int | None
    osl: int | None
    metric: str
    value: str
    unit: str
    notes: str

    @property
    def offered_qps(self) -> float | None:
        if "QPS=INF" in self.notes:
            return math.inf
        if "QPS=2" in self.notes:
            return 2.0
        return None

    @property
    def batch_size(self) -> int | None:
        if "batch_size=" in self.notes:
            return int(self.notes.split("batch_size=")[1].split()[0].strip(";,"))
        return None

    @property
    def si_value(self) -> float | None:
        try:
            x = float(self.value)
        except ValueError:
            return None
        unit = self.unit.split(" (")[0].split(" ")[0] if self.unit else ""
        if self.unit.startswith("GB/s"):
            return x * 1e9
        if self.unit.startswith("GB"):
            return x * 1e9
        return x * _UNIT_SCALE.get(unit, 1.0)


def _int(text: str) -> int | None:
    return int(text) if text.strip() else None


def load_rows(path: str | Path | None = None) -> list[Row]:
    """Rows of the packaged published_calibration.csv (or of ``path``)."""
    if path is None:
        text = resources.files("vidya_lab").joinpath("data", CSV_NAME).read_text()
    else:
        text = Path(path).read_text()
    reader = csv.DictReader(text.splitlines())
    rows = []
    for i, d in enumerate(reader):
        rows.append(Row(i, d["source"], d["citation"], d["model"], d["gpu"], _int(d["n_gpus"]),
                        _int(d["tp"]), d["precision"], _int(d["isl"]), _int(d["osl"]),
                        d["metric"], d["value"], d["unit"], d["notes"]))
    return rows


def timing_rows(rows: list[Row] | None = None) -> list[Row]:
    """The measured timing rows the fit uses."""
    rows = load_rows() if rows is None else rows
    return [r for r in rows if r.metric in FIT_METRICS and r.source in SOURCE_RULE]


# ----------------------------------------------------------------------------- predictions

def replica_for(row: Row, calibration: Calibration, **kwargs) -> Replica:
    """The replica a published timing row ran on (its engine's memory rule)."""
    return Replica(catalog.model_id_for(row.model), catalog.gpu_id_for(row.gpu), tp=row.tp or 1,
                   precision=row.precision.lower(), memory_rule=SOURCE_RULE[row.source],
                   calibration=calibration, **kwargs)


def static_batch_throughput_per_gpu(r: Replica, batch: int, isl: int, osl: int) -> float:
    """Output tokens/s per GPU of static batching: prefill the batch, then osl−1 decode steps."""
    t = r.step_time_s(batch * isl, batch * isl * (isl + 1) / 2, batch * isl, batch, 0, 0)
    t += sizing.decode_steps_time_s(r, batch, isl + 1, osl - 1)
    return batch * osl / t / r.n_gpus


def light_load(r: Replica, qps: float, isl: int, osl: int) -> dict:
    """Mean TTFT, ITL and output throughput of a lightly loaded replica (Poisson, rate ``qps``).

    In flight: L = qps·(TTFT + (osl−1)·ITL) (Little). A new prompt's prefill runs with the L
    decoders; TTFT = that iteration + half a decode step of waiting. Decode steps take T_d(L); a
    share qps·T_mix of time goes to mixed prefill iterations, which also emit one token per
    decoder: ITL = 1 / ((1 − qps·T_mix)/T_d + qps).
    """
    ctx = isl + osl / 2
    n = 0.0
    for _ in range(50):
        t_mix = r.step_time_s(isl, isl * (isl + 1) / 2, isl, 1, n, n * ctx)
        t_d = r.step_time_s(0, 0, 0, 0, max(n, 1.0), max(n, 1.0) * ctx)
        busy = qps * t_mix
        if busy >= 1:
            return {"mean_ttft": math.inf, "mean_itl_tpot": math.inf, "output_throughput_total": 0.0}
        itl = 1.0 / ((1.0 - busy) / t_d + qps)
        ttft = r.calibration.request_overhead_s + t_mix + 0.5 * t_d
        n_new = qps * (ttft + (osl - 1) * itl)
        if abs(n_new - n) < 1e-6:
            break
        n = n_new
    return {"mean_ttft": ttft, "mean_itl_tpot": itl, "output_throughput_total": qps * osl}


def closed_batch(r: Replica, n_requests: int, isl: int, osl: int,
                 max_num_tokens: int = TRTLLM_MAX_NUM_TOKENS,
                 max_batch: int = TRTLLM_MAX_BATCH) -> dict:
    """All ``n_requests`` arrive at t=0: replay in-flight batching iteration by iteration.

    Each iteration: every running sequence decodes one token; waiting prompts (whole, no chunking)
    join while the token budget ``max_num_tokens``, the batch cap and the KV blocks (isl+osl tokens
    reserved per request) allow. Returns mean TTFT, mean ITL ((e2e − TTFT)/(osl−1)) and output
    tokens/s over the whole run.
    """
    kv_limit = sizing.max_concurrent_sequences(r, isl + osl)
    per_iter = max(1, min(max_num_tokens // isl, n_requests))
    waiting = n_requests
    groups: list[list[float]] = []  # [count, tokens generated so far, ttft, start context]
    t = 0.0
    ttft_sum = itl_sum = 0.0
    while waiting or groups:
        running = sum(g[0] for g in groups)
        room = min(kv_limit, max_batch) - running
        budget = max_num_tokens - running
        admit = int(max(0, min(waiting, per_iter, room, budget // isl)))
        if admit == 0 and not groups:
            raise ValueError(f"{r.model.id} on {r.gpu.id}: no request of {isl}+{osl} tokens fits")
        decode_ctx = sum(g[0] * (isl + g[1]) for g in groups)
        t += r.step_time_s(admit * isl, admit * isl * (isl + 1) / 2, admit * isl, admit,
                           running, decode_ctx)
        for g in groups:
            g[1] += 1
        if admit:
            groups.append([admit, 1, t])
            ttft_sum += admit * t
            waiting -= admit
        done = [g for g in groups if g[1] >= osl]
        for g in done:
            if osl > 1:
                itl_sum += g[0] * (t - g[2]) / (osl - 1)
        groups = [g for g in groups if g[1] < osl]
    return {"mean_ttft": r.calibration.request_overhead_s + ttft_sum / n_requests,
            "mean_itl_tpot": itl_sum / n_requests if osl > 1 else 0.0,
            "output_throughput_total": n_requests * osl / t}


@functools.lru_cache(maxsize=512)
def _closed_batch_cached(r: Replica, n_requests: int, isl: int, osl: int) -> dict:
    return closed_batch(r, n_requests, isl, osl)  # three metrics per run share one replay


def predict_row(row: Row, calibration: Calibration | None = None) -> float | None:
    """The model's prediction for one timing row, in the row's SI unit (s or tokens/s); None if the
    row is not a timing measurement."""
    cal = sizing.fitted_calibration() if calibration is None else calibration
    if row.metric not in FIT_METRICS or row.source not in SOURCE_RULE:
        return None
    if row.metric == "ttft_bs1":
        r = replica_for(row, cal, max_batched_tokens=max(TRTLLM_MAX_NUM_TOKENS, row.isl))
        return sizing.prefill_time_s(r, row.isl)
    if row.metric == "output_throughput_per_gpu":
        r = replica_for(row, cal)
        return static_batch_throughput_per_gpu(r, row.batch_size, row.isl, row.osl)
    r = replica_for(row, cal, max_batched_tokens=TRTLLM_MAX_NUM_TOKENS,
                    max_num_seqs=TRTLLM_MAX_BATCH)
    qps = row.offered_qps
    if qps is None:
        return None
    if math.isinf(qps):
        out = _closed_batch_cached(r, ONLINE_REQUESTS, row.isl, row.osl)
    else:
        out = light_load(r, qps, row.isl, row.osl)
    return out[row.metric]


def _metric_key(row: Row) -> str:
    if row.offered_qps is None:
        return row.metric
    return f"{row.metric} (QPS={'INF' if math.isinf(row.offered_qps) else 2})"


def _higher_is_better(metric: str) -> bool:
    return "throughput" in metric


def predict_published(calibration: Calibration | None = None) -> list[dict]:
    """A prediction beside EVERY row of the packaged CSV, for the validation page.

    Each dict: the row's fields, ``measured`` (SI), ``predicted`` (SI, calibrated; None where the
    package predicts nothing), ``bound`` (the same with :data:`PHYSICAL`, timing rows only),
    ``relative_error`` ((predicted − measured)/measured) and ``kind`` ("timing", "gpu spec",
    "kv size", or "not predicted").
    """
    cal = sizing.fitted_calibration() if calibration is None else calibration
    out = []
    for row in load_rows():
        d = {"source": row.source, "model": row.model, "gpu": row.gpu, "tp": row.tp,
             "precision": row.precision, "isl": row.isl, "osl": row.osl, "metric": row.metric,
             "metric_key": _metric_key(row), "value": row.value, "unit": row.unit,
             "measured": row.si_value, "predicted": None, "bound": None, "kind": "not predicted"}
        if row.metric in FIT_METRICS and row.source in SOURCE_RULE:
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
        return g.hbm_bytes
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


# ----------------------------------------------------------------------------- errors and fit

def fit_errors(calibration: Calibration | None = None, rows: list[Row] | None = None) -> dict:
    """Relative errors per metric: {metric_key: {"n", "median_abs_rel_error", "worst_abs_rel_error",
    "median_rel_error"}} over the timing rows (QPS=2 throughput rows excluded: they are set by
    the offered load, not by the model)."""
    cal = sizing.fitted_calibration() if calibration is None else calibration
    errs: dict[str, list[float]] = {}
    for row in timing_rows(rows):
        key = _metric_key(row)
        if key == "output_throughput_total (QPS=2)":
            continue
        p = predict_row(row, cal)
        errs.setdefault(key, []).append((p - row.si_value) / row.si_value)
    return {k: {"n": len(e), "median_abs_rel_error": statistics.median(abs(x) for x in e),
                "worst_abs_rel_error": max(abs(x) for x in e),
                "median_rel_error": statistics.median(e)} for k, e in errs.items()}


def bound_violations(rows: list[Row] | None = None) -> list[dict]:
    """Timing rows whose measurement beats the physical bound (faster or higher than efficiencies 1
    allow). There must be none; if there is one, the model or the catalog is wrong."""
    bad = []
    for row in timing_rows(rows):
        if _metric_key(row) == "output_throughput_total (QPS=2)":
            continue
        b = predict_row(row, PHYSICAL)
        beats = row.si_value > b if _higher_is_better(row.metric) else row.si_value < b
        if beats:
            bad.append({"row": row.index, "metric": row.metric, "measured": row.si_value, "bound": b})
    return bad


def _loss(params: tuple[float, ...], rows: list[Row]) -> float:
    cal = Calibration(**dict(zip(PARAM_NAMES, params, strict=True)), name="trial")
    total = 0.0
    for row in rows:
        if _metric_key(row) == "output_throughput_total (QPS=2)":
            continue
        p = predict_row(row, cal)
        if not p or not math.isfinite(p):
            return math.inf
        total += math.log(p / row.si_value) ** 2
    return total


PARAM_NAMES = ("compute_efficiency_16bit", "compute_efficiency_8bit", "memory_efficiency",
               "step_overhead_s", "collective_latency_scale", "request_overhead_s")
#: Search box of each parameter.
PARAM_BOUNDS = {"compute_efficiency_16bit": (0.05, 1.0), "compute_efficiency_8bit": (0.05, 1.0),
                "memory_efficiency": (0.05, 1.0), "step_overhead_s": (1e-5, 0.05),
                "collective_latency_scale": (1.0, 50.0), "request_overhead_s": (1e-5, 0.05)}


def fit(rows: list[Row] | None = None, start=(0.6, 0.4, 0.7, 0.002, 2.0, 0.005),
        rounds: int = 6) -> Calibration:
    """Least squares on log(predicted/measured) over the timing rows, by coordinate search.

    Efficiencies stay in (0, 1]; the overhead in [0, 50 ms]. Deterministic.
    """
    rows = timing_rows(rows)
    x = list(start)
    best = _loss(tuple(x), rows)
    n = len(x)
    step = [0.5] * n  # multiplicative steps in log space
    for _ in range(rounds):
        for i in range(n):
            improved = True
            while improved:
                improved = False
                for direction in (1, -1):
                    y = list(x)
                    y[i] = x[i] * math.exp(direction * step[i])
                    lo, hi = PARAM_BOUNDS[PARAM_NAMES[i]]
                    y[i] = min(hi, max(lo, y[i]))
                    loss = _loss(tuple(y), rows)
                    if loss < best - 1e-12:
                        x, best, improved = y, loss, True
                        break
        step = [s / 2 for s in step]
    return Calibration(**dict(zip(PARAM_NAMES, x, strict=True)),
                       name="fitted on published_calibration.csv (TensorRT-LLM rows)")


def write_calibration(path: str | Path | None = None) -> dict:
    """Refit and write calibration.json (parameters, errors, bound check); return what was written."""
    cal = fit()
    errors = fit_errors(cal)
    doc = {
        "about": ("Achieved fractions of peak and per-iteration overhead of the cost model, fitted "
                  "by `python -m vidya_lab.calibration` on the timing rows of "
                  "published_calibration.csv (TensorRT-LLM v0.9 perf doc and v0.14 online "
                  "serving, memory rule trtllm). Errors are (predicted - measured) / measured."),
        "parameters": {n: getattr(cal, n) for n in PARAM_NAMES},
        "errors": errors,
        "physical_bound_violations": bound_violations(),
        "n_rows": len(timing_rows()),
    }
    target = Path(path) if path else Path(__file__).parent / "data" / sizing.CALIBRATION_FILE
    target.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def recorded_errors() -> dict:
    """The errors stored in calibration.json when it was fitted."""
    text = resources.files("vidya_lab").joinpath("data", sizing.CALIBRATION_FILE).read_text()
    return json.loads(text)["errors"]


if __name__ == "__main__":  # pragma: no cover - the refit script
    written = write_calibration()
    print(json.dumps(written, indent=2))
