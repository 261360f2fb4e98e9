"""Fitting the calibration: least squares on log(predicted/measured), inside each parameter's range.

Only the parameters :data:`vidya_lab.sizing.PARAMETERS` marks ``fitted`` are searched, each inside
its plausible range [low, high]; the collective figures are measured and stay as they are. The
search is a deterministic coordinate descent in log space (multiplicative steps, halved each
round). :func:`fit_errors` reports the relative error per metric; :func:`bound_violations` lists
any measurement faster than the physical bound (there must be none).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.calibration.replay import is_timing, predict_row
from vidya_lab.calibration.rows import Row, check_row, check_rows, load_rows
from vidya_lab.sizing import PARAMETERS, PHYSICAL, Calibration

#: The parameters the fit searches, in search order.
FITTED = tuple(name for name, p in PARAMETERS.items() if p.fitted)
#: GPUs of another generation or vendor: their rows do not move the shared parameters; each gets
#: its own factor on both efficiencies (:func:`fit_gpu_scale`), fitted on its own rows only.
OWN_SCALE_GPUS = ("b200", "mi300x")
#: Range of a per-GPU factor.
GPU_SCALE_RANGE = (0.3, 1.5)
#: A metric whose value is set by the offered load, not by the model (not scored).
LOAD_SET = "output_throughput_total (QPS=2)"
BASE = Calibration(memory_ceiling="achievable", name="base")
#: Most rounds of the search (each halves the step: 30 rounds is a step of 1e-9 in log space).
MAX_ROUNDS = 30


def timing_rows(rows: list[Row] | None = None) -> list[Row]:
    """The measured timing rows the model predicts (default: every packaged row, extra included)."""
    rows = load_rows(extra=True) if rows is None else check_rows("rows", rows)
    return [r for r in rows if is_timing(r)]


def _calibration(calibration) -> Calibration:
    """The fitted calibration for ``None``; else ``calibration``, checked."""
    if calibration is None:
        return sizing.fitted_calibration()
    return v.check_instance("calibration", calibration, Calibration, "sizing.Calibration")


def gpu_of(row: Row) -> str:
    """The catalog id of the row's GPU."""
    from vidya_lab import catalog

    return catalog.gpu_id_for(check_row("row", row).gpu)


def reference_rows(rows: list[Row]) -> list[Row]:
    """The rows that fit the shared parameters (not those of :data:`OWN_SCALE_GPUS`)."""
    return [r for r in check_rows("rows", rows) if gpu_of(r) not in OWN_SCALE_GPUS]


def metric_key(row: Row) -> str:
    """The metric with its load condition, e.g. ``"mean_ttft (QPS=2)"``."""
    qps = check_row("row", row).offered_qps
    if qps is None:
        return row.metric
    return f"{row.metric} (QPS={'INF' if math.isinf(qps) else f'{qps:g}'})"


def _scored(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if metric_key(r) != LOAD_SET]


def _higher_is_better(metric: str) -> bool:
    return "throughput" in metric


def calibration_from(values: dict, template: Calibration = BASE, name: str = "trial") -> Calibration:
    """``template`` with the fitted parameters set from ``values`` (a name → value dict)."""
    v.check_instance("values", values, dict, "dict of parameter name -> value")
    params = v.check_instance("template", template, Calibration, "sizing.Calibration").parameters()
    params.update(values)
    return Calibration.from_parameters(params, name)


def loss(cal: Calibration, rows: Sequence[Row]) -> float:
    """Σ log(predicted/measured)² over the scored rows; inf if any prediction fails."""
    v.check_instance("cal", cal, Calibration, "sizing.Calibration")
    rows = check_rows("rows", rows)
    total = 0.0
    for row in _scored(rows):
        try:
            p = predict_row(row, cal)
        except ValueError:  # a replay in which nothing fits
            return math.inf
        if not p or not math.isfinite(p):
            return math.inf
        total += math.log(p / row.si_value) ** 2
    return total


def fit(rows: list[Row] | None = None, *, pinned: dict | None = None, rounds: int = 6,
        template: Calibration = BASE, name: str = "fitted") -> Calibration:
    """The calibration that minimises :func:`loss` over ``rows`` (default: the fit side of the
    packaged split), each fitted parameter inside its range; ``pinned`` fixes some of them.

    Deterministic: the search starts at the geometric middle of each range (the arithmetic middle
    for a range starting at 0) and takes multiplicative steps of e^0.5, halved each round.
    """
    from vidya_lab.calibration.rows import split

    rows = split(reference_rows(timing_rows()))[0] if rows is None else timing_rows(rows)
    pinned = dict(v.check_instance("pinned", pinned, dict, "dict of parameter name -> value")
                  if pinned is not None else {})
    unknown = sorted(set(pinned) - set(FITTED))
    if unknown:
        raise ValueError(f"pinned names unknown parameter(s) {unknown}; fitted: {list(FITTED)}")
    rounds = v.check_int("rounds", rounds, minimum=0, maximum=MAX_ROUNDS)
    v.check_instance("template", template, Calibration, "sizing.Calibration")
    v.check_str("name", name)
    free = [n for n in FITTED if n not in pinned]
    x = {n: _start(n) for n in free}
    x.update(pinned)
    best = loss(calibration_from(x, template), rows)
    step = {n: 0.5 for n in free}
    for _ in range(rounds):
        for n in free:
            improved = True
            while improved:
                improved = False
                for direction in (1, -1):
                    y = dict(x)
                    y[n] = _clip(n, _move(n, x[n], direction * step[n]))
                    trial = loss(calibration_from(y, template), rows)
                    if trial < best - 1e-12:
                        x, best, improved = y, trial, True
                        break
        step = {n: s / 2 for n, s in step.items()}
    return calibration_from(x, template, name)


def fit_gpu(gpu_id: str, shared: Calibration, rows: list[Row] | None = None) -> tuple[float, float]:
    """(factor on both efficiencies, per-sequence cost) that best fit ``gpu_id``'s own rows, with
    every other parameter held at ``shared``: a coordinate search of the two, each inside its
    range (:data:`GPU_SCALE_RANGE`; ``sequence_overhead_s``'s range)."""
    from vidya_lab import catalog

    gpu_id = catalog.get_gpu(v.check_str("gpu_id", gpu_id)).id
    v.check_instance("shared", shared, Calibration, "sizing.Calibration")
    own = [r for r in timing_rows(rows) if gpu_of(r) == gpu_id]
    if not own:
        raise ValueError(f"no timing rows for {gpu_id}: its calibration cannot be fitted")
    params = shared.parameters()

    def cal_for(f: float, seq: float) -> Calibration:
        return Calibration.from_parameters({
            **params, "gpu_scale": {**params["gpu_scale"], gpu_id: f},
            "gpu_sequence_overhead_s": {**params["gpu_sequence_overhead_s"], gpu_id: seq}}, "trial")

    seq_range = PARAMETERS["sequence_overhead_s"]
    f, seq = 1.0, shared.sequence_overhead_s
    best = loss(cal_for(f, seq), own)
    step = 0.5
    for _ in range(8):
        for which in ("f", "seq"):
            improved = True
            while improved:
                improved = False
                for d in (1, -1):
                    nf = min(GPU_SCALE_RANGE[1], max(GPU_SCALE_RANGE[0], f * math.exp(d * step))) \
                        if which == "f" else f
                    ns = (min(seq_range.high, max(seq_range.low, (seq or 1e-6) * math.exp(d * step)))
                          if which == "seq" else seq)
                    trial = loss(cal_for(nf, ns), own)
                    if trial < best - 1e-12:
                        f, seq, best, improved = nf, ns, trial, True
                        break
        step /= 2
    return f, seq


def _start(name: str) -> float:
    p = PARAMETERS[name]
    return math.sqrt(p.low * p.high) if p.low > 0 else (p.low + p.high) / 2


def _move(name: str, value: float, log_step: float) -> float:
    p = PARAMETERS[name]
    if p.low > 0 or value > 0:
        return value * math.exp(log_step)
    return p.high * 0.01 * math.exp(log_step)  # leave 0 multiplicatively


def _clip(name: str, value: float) -> float:
    p = PARAMETERS[name]
    return min(p.high, max(p.low, value))


def fit_errors(calibration: Calibration | None = None, rows: list[Row] | None = None) -> dict:
    """Relative errors per metric: {metric_key: {"n", "median_abs_rel_error",
    "worst_abs_rel_error", "median_rel_error"}} over the scored timing rows (default: all)."""
    cal = _calibration(calibration)
    errs: dict[str, list[float]] = {}
    for row in _scored(timing_rows(rows)):
        p = predict_row(row, cal)
        errs.setdefault(metric_key(row), []).append((p - row.si_value) / row.si_value)
    return {k: summarise(e) for k, e in errs.items()}


def summarise(errors: Sequence[float]) -> dict:
    """n, median |error|, worst |error| and median signed error of relative errors."""
    errors = v.check_reals("errors", errors, allow_empty=False).tolist()
    return {"n": len(errors), "median_abs_rel_error": statistics.median(abs(x) for x in errors),
            "worst_abs_rel_error": max(abs(x) for x in errors),
            "median_rel_error": statistics.median(errors)}


def throughput_error(calibration: Calibration | None = None, rows: list[Row] | None = None) -> dict:
    """The error over every throughput row together (the issue's "throughput rows")."""
    cal = _calibration(calibration)
    errs = [(predict_row(r, cal) - r.si_value) / r.si_value
            for r in _scored(timing_rows(rows)) if _higher_is_better(r.metric)]
    return summarise(errs) if errs else {"n": 0}


def bound_violations(rows: list[Row] | None = None) -> list[dict]:
    """Timing rows whose measurement beats the physical bound (faster or higher than efficiencies 1
    at peak bandwidth with no overheads allow). There must be none."""
    bad = []
    for row in _scored(timing_rows(rows)):
        b = predict_row(row, PHYSICAL)
        beats = row.si_value > b if _higher_is_better(row.metric) else row.si_value < b
        if beats:
            bad.append({"row": row.index, "file": row.file, "metric": row.metric,
                        "measured": row.si_value, "bound": b})
    return bad
