"""Refit, measure the fit on rows it did not see, probe its sensitivity, and write calibration.json.

``python -m vidya_lab.calibration`` runs :func:`write_calibration` onto the package's own file.

Sensitivity (:func:`sensitivity`): each fitted parameter is pinned at both ends of its plausible
range and the others refitted; so is the (measured, unfitted) collective latency scale. For each
case the record keeps the loss, the median throughput error, and what chapter 3's layout lesson
becomes: the cheapest layout for Llama-3.1-70B on H100 at 5 requests/s, and whether the
tensor-parallel layout inside one node still ranks ahead of every pipeline layout of the same size.
"""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from pathlib import Path

from vidya_lab import _validate as v
from vidya_lab import catalog, sizing
from vidya_lab.calibration.fit import (
    FITTED,
    OWN_SCALE_GPUS,
    bound_violations,
    fit,
    fit_errors,
    fit_gpu,
    gpu_of,
    loss,
    reference_rows,
    throughput_error,
    timing_rows,
)
from vidya_lab.calibration.rows import check_rows, split
from vidya_lab.sizing import PARAMETERS, Calibration

NAME = ("fitted on published timing rows (TensorRT-LLM v0.9, v0.14 and v1.0 on A100/H100/H200/L40S; "
        "B200 and MI300X scaled on their own rows)")
#: Chapter 3's question the sensitivity study re-asks under each pinned parameter.
LAYOUT_QUESTION = {"model": "llama-3.1-70b", "gpu": "h100-sxm", "peak_rps": 5.0, "isl": 2048,
                   "osl": 256, "ttft_target_s": 2.0, "tpot_target_s": 0.1}


def _describe(row) -> str:
    cond = (f"batch {row.batch_size}" if row.batch_size else
            f"QPS={row.offered_qps:g}" if row.offered_qps is not None else "")
    return (f"{row.source}: {row.model} {row.precision} on {row.tp or 1} x {row.gpu}, "
            f"{row.isl}/{row.osl} {cond}".strip())


def layout_lesson(calibration: Calibration) -> dict:
    """Chapter 3's ranking under ``calibration``: the first layout, and whether TP-in-a-node beats
    every pipeline layout with the same number of GPUs per replica."""
    from vidya_lab import layouts

    q = LAYOUT_QUESTION
    ranked = layouts.search_layouts(q["model"], q["gpu"], peak_rps=q["peak_rps"], isl=q["isl"],
                                    osl=q["osl"], ttft_target_s=q["ttft_target_s"],
                                    tpot_target_s=q["tpot_target_s"], calibration=calibration)
    order = [x.label for x in ranked]
    tp_first = True
    for x in ranked:
        if x.pp == 1 and x.tp <= catalog.GPUS_PER_NODE:
            rivals = [y for y in ranked if y.pp > 1 and y.gpus_per_replica == x.gpus_per_replica]
            tp_first &= all(order.index(x.label) < order.index(y.label) for y in rivals)
    return {"first": order[0] if order else None, "tp_in_node_ranks_first": tp_first,
            "order": order[:8]}


def sensitivity(fit_rows=None) -> list[dict]:
    """Refit with each parameter pinned at each end of its range (module docstring)."""
    rows = split(reference_rows(timing_rows()))[0] if fit_rows is None else \
        check_rows("fit_rows", fit_rows)
    out = []
    for name in (*FITTED, "collective_latency_scale"):
        p = PARAMETERS[name]
        for end, value in (("low", p.low), ("high", p.high)):
            if name in FITTED:
                cal = fit(rows, pinned={name: value}, rounds=4, name=f"{name}={value:g}")
            else:
                template = Calibration(memory_ceiling="achievable", collective_latency_scale=value,
                                       name="template")
                cal = fit(rows, rounds=4, template=template, name=f"{name}={value:g}")
            out.append({"parameter": name, "end": end, "value": value,
                        "loss": loss(cal, rows),
                        "median_throughput_error": throughput_error(cal)["median_abs_rel_error"],
                        "refitted": {n: cal.parameters()[n] for n in FITTED},
                        "layout_lesson": layout_lesson(cal)})
    return out


def build_document(*, with_sensitivity: bool = True) -> dict:
    """Everything calibration.json holds, computed afresh."""
    v.check_bool("with_sensitivity", with_sensitivity)
    rows = timing_rows()
    fit_rows, held = split(reference_rows(rows))
    shared = fit(fit_rows, name=NAME)
    scales, seqs = {}, {}
    for gpu_id in OWN_SCALE_GPUS:
        if any(gpu_of(r) == gpu_id for r in rows):
            scales[gpu_id], seqs[gpu_id] = fit_gpu(gpu_id, shared, rows)
    cal = Calibration.from_parameters({**shared.parameters(), "gpu_scale": scales,
                                       "gpu_sequence_overhead_s": seqs}, NAME)
    per_gpu = Counter(gpu_of(r) for r in rows)
    own = {g: fit_errors(cal, [r for r in rows if gpu_of(r) == g]) for g in scales}
    doc = {
        "name": NAME,
        "about": ("Achieved fractions of the hardware's ceilings and fixed costs of the cost model, "
                  "fitted by `python -m vidya_lab.calibration` (least squares on "
                  "log(predicted/measured), each parameter inside its plausible range) on the fit "
                  "side of the timing rows of the reference GPUs (A100, H100, H200, L40S); one "
                  "configuration in four is held out. B200 and MI300X each get a factor on both "
                  "efficiencies and their own per-sequence cost, fitted on their own rows only "
                  "(gpu_scale, gpu_sequence_overhead_s). Errors are "
                  "(predicted - measured) / measured."),
        "parameters": cal.parameters(),
        "ranges": {n: {"low": p.low, "high": p.high, "unit": p.unit, "fitted": p.fitted,
                       "meaning": p.meaning, "source": p.source} for n, p in PARAMETERS.items()},
        "errors": fit_errors(cal, fit_rows),
        "validation_errors": fit_errors(cal, held),
        "gpu_scale_errors": own,
        "all_errors": fit_errors(cal, rows),
        "throughput_error": {"fit": throughput_error(cal, fit_rows),
                             "held_out": throughput_error(cal, held),
                             "all": throughput_error(cal, rows)},
        "held_out": sorted({_describe(r) for r in held}),
        "physical_bound_violations": bound_violations(rows),
        "n_rows": len(rows), "n_fit_rows": len(fit_rows), "n_held_out_rows": len(held),
        "timing_rows_per_gpu": dict(sorted(per_gpu.items())),
        "layout_lesson": layout_lesson(cal),
    }
    if with_sensitivity:
        doc["sensitivity"] = sensitivity(fit_rows)
    return doc


def write_calibration(path, *, with_sensitivity: bool = True) -> dict:
    """Refit and write the calibration document to ``path`` (required: no silent default),
    atomically; return what was written."""
    target = v.check_output_file("path", path)
    v.check_bool("with_sensitivity", with_sensitivity)
    doc = build_document(with_sensitivity=with_sensitivity)
    v.atomic_write_text(target, json.dumps(doc, indent=2) + "\n")
    return doc


def package_file() -> Path:
    """The package's own calibration.json (what ``python -m vidya_lab.calibration`` rewrites)."""
    return Path(__file__).resolve().parents[1] / "data" / sizing.CALIBRATION_FILE


def stored_document() -> dict:
    """calibration.json as stored in the package."""
    text = resources.files("vidya_lab").joinpath("data", sizing.CALIBRATION_FILE).read_text()
    return json.loads(text)


def recorded_errors() -> dict:
    """The fit-side errors stored in calibration.json when it was fitted."""
    return stored_document()["errors"]
