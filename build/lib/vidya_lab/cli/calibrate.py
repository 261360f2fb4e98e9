"""``vidya-lab calibrate RESULTS... --model M --gpu G --tp N [--pp N] [--precision P]
[--memory-rule vllm|trtllm] [--max-batched-tokens N] [--format F] --out my_calibration.json
[--json]``

Fit the cost model's free parameters to your own measurements (:func:`vidya_lab.calibration.own.
calibrate`): benchmark outputs of any format ``vidya-lab slo`` reads (vLLM, GenAI-Perf, LLMPerf,
streaming logs, trace CSVs) and aggregate rows (a CSV in the columns of the published
measurements). Per-request timelines give decode step times at known batch sizes and the TTFT of
requests that met an idle replica; aggregate rows give throughputs and latencies under load.

What to run so that every parameter is pinned: a light load (a few requests/s, or one at a time)
with prompts of several lengths, short and long, so most requests meet an idle replica (TTFT:
prefill compute and the front end's cost); and a few dozen requests sent at once, with answers of
different lengths, at a short and at a long prompt (as requests finish, decode steps are seen
at every batch size, at two contexts: the per-sequence cost and the memory efficiency).

Parameters the measurements cannot pin keep their published values and are listed with the
reason. Files that constrain nothing are refused (exit status 2). The file written is what
``--calibration FILE`` of estimate, layouts, simulate, autoscale and plan reads. ``--json``
prints the whole document, plus ``out`` (the path written).
"""

from __future__ import annotations

import argparse

from vidya_lab import sizing
from vidya_lab.cli import print_json

#: Parameters shown in the text table, in order.
SHOWN = ("compute_efficiency_16bit", "compute_efficiency_8bit", "memory_efficiency",
         "step_overhead_s", "layer_overhead_s", "sequence_overhead_s", "request_overhead_s")


def register(subparsers) -> None:
    from vidya_lab.calibration.own import FORMATS

    p = subparsers.add_parser(
        "calibrate", help="fit the cost model to your own benchmark results",
        description=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results files")
    p.add_argument("--model", required=True, help="model id (see `vidya-lab models`)")
    p.add_argument("--gpu", required=True, help="GPU id (see `vidya-lab gpus`)")
    p.add_argument("--tp", type=int, required=True, help="tensor-parallel degree of the runs")
    p.add_argument("--pp", type=int, default=1, help="pipeline-parallel degree (default 1)")
    p.add_argument("--precision", default="bf16", help="weights: fp16, bf16, fp8, int8, int4")
    p.add_argument("--memory-rule", default="vllm", choices=sizing.MEMORY_RULES,
                   help="the engine's KV budget rule: vllm (default) or trtllm")
    p.add_argument("--max-batched-tokens", type=int, default=None,
                   help="the engine's tokens per iteration (vLLM --max-num-batched-tokens; "
                        "default: its default on this GPU)")
    p.add_argument("--format", default=None, choices=("auto", *FORMATS),
                   help="the format of every file (default: detected per file)")
    p.add_argument("--out", required=True, metavar="FILE", help="the calibration JSON to write")
    p.add_argument("--json", action="store_true", help="print the document as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from vidya_lab.calibration.own import calibrate_to_file

    doc = calibrate_to_file(args.results, args.out, args.model, args.gpu, tp=args.tp, pp=args.pp,
                            precision=args.precision, memory_rule=args.memory_rule,
                            format=args.format, max_batched_tokens=args.max_batched_tokens)
    if args.json:
        print_json({**doc, "out": args.out})
        return 0
    _print_text(doc, args.out)
    return 0


def _print_text(doc: dict, out: str) -> None:
    d = doc["deployment"]
    print(f"calibrated {d['model']} {d['precision']} on tp={d['tp']} x pp={d['pp']} "
          f"{d['gpu']} ({d['memory_rule']}) from {len(doc['inputs'])} file(s)")
    for i in doc["inputs"]:
        got = ", ".join(f"{n} {k}" for k, n in i["observations"].items()) or "nothing"
        print(f"  {i['file']} ({i['source_format']}): {got}")
        for note in i["notes"]:
            print(f"      {note}")
    print(f"  {'parameter':<26}{'published':>12}{'fitted':>12}  pinned by data")
    pub, fitted = doc["published"]["parameters"], doc["parameters"]
    for name in SHOWN:
        mark = "yes" if name in doc["pinned_by_data"] else "no (kept)"
        print(f"  {name:<26}{pub[name]:>12.4g}{fitted[name]:>12.4g}  {mark}")
    print(f"  per-iteration constant {doc['iteration_overhead_s']['formula']} = "
          f"{doc['iteration_overhead_s']['value'] * 1e3:.3f} ms")
    for kind, e in doc["fit_error"].items():
        print(f"  error {kind:<18} n={e['n']:<4} median |err| {e['median_abs_rel_error']:.2%}, "
              f"worst {e['worst_abs_rel_error']:.2%}")
    if doc["at_range_limit"]:
        print(f"  warning: {', '.join(doc['at_range_limit'])} at the end of the plausible range: "
              f"the model reaches these measurements only there (are --model, --gpu, --tp, "
              f"--precision and --max-batched-tokens those of the runs?)")
    for name, why in doc["why_not_pinned"].items():
        print(f"  not pinned: {name}: {why}")
    print(f"  calibration: {doc['name']}")
    print(f"  written to {out}")
