"""``calibrate``: from results files to a calibration document (what ``--calibration FILE`` reads).

The document (JSON) holds ``name`` (from the deployment, the files' names and a SHA-256 of their
bytes: the same inputs give the same name, on any day), ``parameters`` (every parameter of
:class:`~vidya_lab.sizing.Calibration`), ``ranges``, ``deployment``, ``pinned_by_data`` and
``kept_published`` (parameter names) with ``why_not_pinned``, ``identifiability`` (each searched
coordinate's profile), ``fit_error`` (per kind of observation: n, median and worst relative error),
``rms_log_error``, ``at_range_limit`` (pinned parameters the fit pushed to an end of their
range: the model reaches the measurements only there, a sign that the deployment given is not
the one measured or that the engine does something the model does not), ``observations`` (each with its prediction), ``inputs`` (per file: format,
SHA-256, what it gave, its reader's conversions and assumptions) and ``published`` (the
calibration it started from).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.calibration.fit import summarise
from vidya_lab.calibration.own import fitting, results, solve
from vidya_lab.catalog import get_precision
from vidya_lab.sizing import PARAMETERS, Calibration

ABOUT = ("A deployment's own calibration of the vidya-lab cost model, fitted by `vidya-lab "
         "calibrate` on the reader's measurements: bounded least squares on log(predicted/measured)"
         ", each kind of observation weighted equally, each parameter inside its plausible range. "
         "Parameters the measurements do not pin keep their published values. Errors are "
         "(predicted - measured) / measured.")


def deployment_replica(model, gpu, *, tp: int = 1, pp: int = 1, precision: str = "bf16",
                       memory_rule: str = "vllm", max_batched_tokens: int | None = None
                       ) -> sizing.Replica:
    """The replica the runs were measured on (published calibration until fitted)."""
    return sizing.Replica(model, gpu, tp=tp, pp=pp, precision=precision, memory_rule=memory_rule,
                          max_batched_tokens=max_batched_tokens)


def name_for(r: sizing.Replica, inputs: list[dict]) -> str:
    """A deterministic name: the deployment, the files' names and a hash of their contents."""
    digest = hashlib.sha256("".join(i["sha256"] for i in inputs).encode()).hexdigest()[:12]
    files = ", ".join(os.path.basename(i["file"]) for i in inputs)
    return (f"own: {r.model.id} {r.precision} on {r.n_gpus} x {r.gpu.id} (tp={r.tp}, pp={r.pp}, "
            f"{r.memory_rule}), fitted on {files} [inputs sha256 {digest}]")


def _classify(r: sizing.Replica, fit: dict, cal: Calibration) -> tuple[list, list, dict]:
    """(pinned_by_data, kept_published, why_not_pinned) over every parameter."""
    pinned, why = [], {}
    computed = fitting.compute_parameter(r.precision)
    for name, ok in fit["pinned"].items():
        prof = fit["profile"][name]
        target = "step_overhead_s" if name == fitting.ITERATION else name
        if ok:
            pinned.append(target)
            continue
        lo, hi = PARAMETERS[target].low, PARAMETERS[target].high
        why[target] = (f"the kind-averaged RMS log error rises by at most {prof['max_rise']:.4f} "
                       f"(threshold {fit['threshold']:.4f}) across its range [{lo:g}, {hi:g}]: "
                       f"the measurements do not constrain it; {fitting.HINTS[name]}")
    other = ("compute_efficiency_8bit" if computed == "compute_efficiency_16bit"
             else "compute_efficiency_16bit")
    why[other] = (f"not exercised: {r.precision} weights multiply in "
                  f"{get_precision(r.precision).compute}, which {computed} describes")
    k = fitting.layers_factor(r)
    moved = cal.layer_overhead_s != fit["published"]["layer_overhead_s"]
    why["layer_overhead_s"] = (
        f"on one layout it adds to step_overhead_s as one constant per iteration, "
        f"step_overhead_s + {k} x layer_overhead_s (pp x ceil(L/pp)); the data pin only that sum"
        + (", and the published value had to move to reach it" if moved else ""))
    why["collective_latency_scale"] = "never fitted: measured link latencies (PARAMETERS)"
    kept = [n for n in PARAMETERS if n not in pinned]
    return pinned, kept, why


def _at_limit(name: str, value: float) -> bool:
    p = PARAMETERS[name]
    return min(abs(value - p.low), abs(value - p.high)) <= 1e-9 * (p.high - p.low)


def _observation_rows(observations, cal: Calibration, r: sizing.Replica) -> tuple[list, dict]:
    trial = r.with_calibration(cal)
    rows, errors = [], defaultdict(list)
    for o in observations:
        pred = o.predict(trial)
        err = (pred - o.measured) / o.measured
        errors[o.kind].append(err)
        rows.append({"kind": o.kind, "source": o.source, "condition": o.condition,
                     "count": o.count, "measured": o.measured, "predicted": pred,
                     "rel_error": err})
    return rows, {k: summarise(e) for k, e in sorted(errors.items())}


def calibrate(paths, model, gpu, *, tp: int = 1, pp: int = 1, precision: str = "bf16",
              memory_rule: str = "vllm", format: str | None = None,
              max_batched_tokens: int | None = None) -> dict:
    """Fit the cost model to results files of one deployment; return the calibration document.

    Parameters
    ----------
    paths : results files (benchmark traces, measurement CSVs; :mod:`.results`).
    model, gpu, tp, pp, precision, memory_rule : the deployment the runs were measured on.
    format : one format for every file (:data:`.results.FORMATS`); None detects each.
    max_batched_tokens : the engine's token budget per iteration (vLLM's
        ``max_num_batched_tokens``); None → the engine's default on this GPU.

    Raises ``ValueError`` (one line) when the files hold nothing the model can predict, or when
    what they hold pins no parameter.
    """
    r = deployment_replica(model, gpu, tp=tp, pp=pp, precision=precision,
                           memory_rule=memory_rule, max_batched_tokens=max_batched_tokens)
    observations, inputs = results.read_results(paths, r, format)
    if not observations:
        raise ValueError(results.nothing_usable(inputs))
    fit = fitting.fit_deployment(observations, r)
    if not any(fit["pinned"].values()):
        rises = ", ".join(f"{n} {p['max_rise']:.4f}" for n, p in fit["profile"].items())
        raise ValueError(f"the results constrain nothing: across each parameter's range the "
                         f"kind-averaged RMS log error moves by less than "
                         f"{fit['threshold']:.4f} ({rises}); add TTFTs at idle and decode "
                         f"steps at several batch sizes")
    name = name_for(r, inputs)
    cal = fitting.calibration_of(fit["values"], fit["published"], fitting.layers_factor(r), name)
    pinned, kept, why = _classify(r, fit, cal)
    rows, errors = _observation_rows(observations, cal, r)
    pub = sizing.fitted_calibration()
    edge = [n for n in pinned if _at_limit(n, getattr(cal, n))]
    return {
        "name": name, "about": ABOUT, "parameters": cal.parameters(),
        "ranges": {n: {"low": p.low, "high": p.high, "unit": p.unit, "fitted": p.fitted}
                   for n, p in PARAMETERS.items()},
        "deployment": {"model": r.model.id, "gpu": r.gpu.id, "tp": r.tp, "pp": r.pp,
                       "precision": r.precision, "memory_rule": r.memory_rule,
                       "max_batched_tokens": r.max_batched_tokens},
        "pinned_by_data": pinned, "kept_published": kept, "why_not_pinned": why,
        "at_range_limit": edge,
        "iteration_overhead_s": {"value": fit["values"][fitting.ITERATION],
                                 "formula": f"step_overhead_s + {fitting.layers_factor(r)} x "
                                            f"layer_overhead_s"},
        "identifiability": {
            "threshold_rms_rise": fit["threshold"],
            "rule": (f"pinned when forcing the parameter anywhere in its range (the others "
                     f"refitted) raises the kind-averaged RMS log error by at least "
                     f"max({solve.RISE_THRESHOLD}, {solve.RISE_FRACTION} x the best fit's)"),
            "coordinates": fit["profile"]},
        "rms_log_error": fit["rms"], "rms_log_error_all_free": fit["rms_best"],
        "fit_error": errors, "observations": rows, "inputs": inputs,
        "published": {"name": pub.name, "parameters": fit["published"]},
    }


def write_calibration_file(doc: dict, path) -> None:
    """Write a calibration document atomically (the path is checked before any work by
    :func:`calibrate_to_file`)."""
    v.atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def calibrate_to_file(paths, out, model, gpu, **kwargs) -> dict:
    """:func:`calibrate`, then write the document to ``out`` (checked first); returns it."""
    target = v.check_output_file("out", out)
    doc = calibrate(paths, model, gpu, **kwargs)
    write_calibration_file(doc, target)
    return doc
