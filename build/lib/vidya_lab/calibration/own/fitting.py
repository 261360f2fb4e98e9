"""The deployment's calibration: which parameters are searched, how they map onto a
:class:`~vidya_lab.sizing.Calibration`, and the fit with its identifiability.

Searched coordinates (each inside its :data:`~vidya_lab.sizing.PARAMETERS` range):

* the compute efficiency of the math the precision runs in (``compute_efficiency_16bit`` for
  bf16/fp16 weights, ``compute_efficiency_8bit`` for fp8/int8); the other one is not exercised
  by these runs and keeps its published value;
* ``memory_efficiency``, ``sequence_overhead_s``, ``request_overhead_s``;
* ``iteration_overhead_s`` = ``step_overhead_s`` + pp · ceil(L/pp) · ``layer_overhead_s``: on one
  layout the two fixed costs enter every iteration only as this sum, so no measurement of one
  deployment can tell them apart. The sum is fitted; ``layer_overhead_s`` keeps its published
  value unless the sum cannot then be reached inside ``step_overhead_s``'s range (then it moves
  just enough), and ``step_overhead_s`` takes the rest (:func:`split_iteration_overhead`).

``collective_latency_scale`` is never fitted (measured link latencies, as in the published fit).
"""

from __future__ import annotations

import math

import numpy as np

from vidya_lab import parallelism as par
from vidya_lab import sizing
from vidya_lab.calibration.own import solve
from vidya_lab.catalog import get_precision
from vidya_lab.sizing import PARAMETERS, Calibration

ITERATION = "iteration_overhead_s"
#: What would pin each coordinate, said when the data do not.
HINTS = {
    "compute_efficiency_16bit": "TTFTs at idle of long (compute-bound) prompts pin it",
    "compute_efficiency_8bit": "TTFTs at idle of long (compute-bound) prompts pin it",
    "memory_efficiency": "decode steps at two or more context lengths pin it",
    ITERATION: "decode steps or TTFTs at idle pin it",
    "sequence_overhead_s": "decode steps at several batch sizes pin it",
    "request_overhead_s": "TTFTs at idle beside decode steps pin it",
}


def compute_parameter(precision: str) -> str:
    """The compute efficiency a precision's matrix multiplies run at."""
    return ("compute_efficiency_16bit" if get_precision(precision).compute == "bf16"
            else "compute_efficiency_8bit")


def layers_factor(r: sizing.Replica) -> int:
    """pp · ceil(L/pp): how many times ``layer_overhead_s`` enters one iteration."""
    return r.pp * par.layers_per_stage(r.model, r.pp)


def published_for(r: sizing.Replica) -> dict:
    """The published parameters as they apply to ``r``'s GPU: its per-GPU factor folded into the
    efficiencies (clipped into their ranges) and its own per-sequence cost, if it has them; the
    per-GPU entries of that GPU are dropped (a deployment's own fit replaces them)."""
    pub = sizing.fitted_calibration()
    params = pub.parameters()
    gpu = r.gpu.id
    scale = pub.scale_for(gpu)
    for name in ("compute_efficiency_16bit", "compute_efficiency_8bit", "memory_efficiency"):
        p = PARAMETERS[name]
        params[name] = min(p.high, max(p.low, params[name] * scale))
    params["sequence_overhead_s"] = pub.sequence_overhead_for(gpu)
    params["gpu_scale"] = {g: x for g, x in params["gpu_scale"].items() if g != gpu}
    params["gpu_sequence_overhead_s"] = {g: x for g, x in params["gpu_sequence_overhead_s"].items()
                                         if g != gpu}
    return params


def coordinates(r: sizing.Replica) -> tuple[solve.Coord, ...]:
    """The searched coordinates for replica ``r`` (module docstring)."""
    k = layers_factor(r)
    step, layer = PARAMETERS["step_overhead_s"], PARAMETERS["layer_overhead_s"]
    names = (compute_parameter(r.precision), "memory_efficiency", "sequence_overhead_s",
             "request_overhead_s")
    coords = [solve.Coord(n, PARAMETERS[n].low, PARAMETERS[n].high) for n in names]
    coords.insert(2, solve.Coord(ITERATION, step.low + k * layer.low, step.high + k * layer.high))
    return tuple(coords)


def split_iteration_overhead(total: float, layer_published: float, k: int) -> tuple[float, float]:
    """(step_overhead_s, layer_overhead_s) summing to ``total`` = step + k·layer: the layer cost at
    its published value when the step cost can take the rest inside its range, else the nearest
    layer cost that lets it."""
    step, layer = PARAMETERS["step_overhead_s"], PARAMETERS["layer_overhead_s"]
    lo = max(layer.low, (total - step.high) / k)
    hi = min(layer.high, (total - step.low) / k)
    per_layer = min(hi, max(lo, layer_published))
    return min(step.high, max(step.low, total - k * per_layer)), per_layer


def calibration_of(values: dict, published: dict, k: int, name: str = "trial") -> Calibration:
    """The :class:`Calibration` of coordinate ``values`` over the ``published`` parameters."""
    params = dict(published)
    for key, x in values.items():
        if key == ITERATION:
            params["step_overhead_s"], params["layer_overhead_s"] = split_iteration_overhead(
                x, published["layer_overhead_s"], k)
        else:
            params[key] = x
    return Calibration.from_parameters(params, name)


def published_values(r: sizing.Replica, published: dict) -> dict:
    """Each coordinate's published value (the iteration sum from the published step and layer)."""
    k = layers_factor(r)
    total = published["step_overhead_s"] + k * published["layer_overhead_s"]
    return {c.name: total if c.name == ITERATION else published[c.name] for c in coordinates(r)}


def make_problem(observations, r: sizing.Replica, published: dict) -> solve.Problem:
    """The least-squares problem of ``observations`` on ``r`` (:mod:`.solve`)."""
    w = solve.weights([o.kind for o in observations])
    measured = np.array([o.measured for o in observations])
    k = layers_factor(r)

    def residuals(values: dict) -> np.ndarray:
        trial = r.with_calibration(calibration_of(values, published, k))
        try:
            pred = np.array([o.predict(trial) for o in observations], dtype=float)
        except (ValueError, ZeroDivisionError, OverflowError):
            return np.full(measured.size, np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            return w * np.log(pred / measured)

    return solve.Problem(coordinates(r), residuals)


def fit_deployment(observations, r: sizing.Replica) -> dict:
    """Fit, profile, keep the unpinned at their published values, refit the pinned.

    Returns ``values`` (coordinate → fitted value), ``pinned`` (coordinate → bool), ``profile``
    (:func:`solve.profile`), ``threshold`` (the rise of √J that pins), ``rms_best`` (√J with every coordinate free), ``rms`` (√J of the
    result), ``published`` (parameters), ``published_values`` (coordinates) and ``evaluations``.
    """
    published = published_for(r)
    p = make_problem(observations, r, published)
    pub_vals = published_values(r, published)
    u_pub = np.array([c.to_unit(pub_vals[c.name]) for c in p.coords])
    every = np.ones(len(p.coords), dtype=bool)
    u_best, cost_best = solve.best_fit(p, [u_pub, np.full(len(p.coords), 0.5)], every)
    if not math.isfinite(cost_best):
        raise ValueError("the cost model cannot predict these measurements on this deployment "
                         "at any calibration in range (does the deployment match the runs?)")
    prof = solve.profile(p, u_best, cost_best, every)
    limit = solve.threshold(math.sqrt(cost_best))
    pinned = np.array([prof[c.name]["max_rise"] >= limit
                       or bool(prof[c.name]["unpredictable_at"]) for c in p.coords])
    start = np.where(pinned, u_best, u_pub)
    u, cost = solve.solve(p, start, pinned)
    return {"values": p.values(u), "pinned": dict(zip((c.name for c in p.coords),
                                                      map(bool, pinned), strict=True)),
            "profile": prof, "rms_best": math.sqrt(cost_best), "rms": math.sqrt(cost),
            "threshold": limit, "published": published, "published_values": pub_vals,
            "coords": p.coords,
            "evaluations": p.evaluations}
