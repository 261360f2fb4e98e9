"""``vidya-lab slo TRACE [--format F] [--ttft S] [--tpot S] [--e2e S] [--json]``: latency metrics of
a trace or of a benchmark's output.

Reads a request trace: vidya-lab's CSV (a header holding at least
``request_id,arrival_s,first_token_s,finish_s,output_tokens``; optional ``outcome``, ``admitted_s``,
``klass``), or the per-request output of a benchmark tool: vLLM's ``vllm bench serve --save-result
--save-detailed`` JSON, GenAI-Perf's ``profile_export.json``, LLMPerf's
``..._individual_responses.json``, or a streaming log (JSON lines, see
``vidya_lab.traces.stream_log``). The format is detected from the file unless ``--format`` names
it. Prints TTFT, TPOT and end-to-end percentiles (seconds), ITL where the file has per-chunk
times, the conversions applied to the tool's metrics and, when targets are given, the SLO
attainment over all requests (a rejected or failed request counts as missed).
"""

from __future__ import annotations

import argparse

from vidya_lab import slo, traces
from vidya_lab.cli import UsageError, print_json


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


def _index(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return value


def _mib(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of MiB >= 1, got {text!r}") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of MiB >= 1, got {text!r}")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "slo", help="latency percentiles and SLO attainment of a request trace or a benchmark's "
                    "output (CSV, vLLM, GenAI-Perf, LLMPerf, streaming log)",
        description=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE",
                   help="the trace: a trace CSV or a benchmark's per-request output")
    p.add_argument("--format", choices=("auto", *traces.FORMATS), default="auto",
                   help="the file's format (default: detected from its shape)")
    p.add_argument("--experiment", type=_index, metavar="N",
                   help="GenAI-Perf: which experiment of a multi-experiment export (0-based)")
    p.add_argument("--max-mib", type=_mib, metavar="MIB",
                   help=f"refuse a larger file before parsing it (default "
                        f"{traces.MAX_TRACE_BYTES // 2**20} MiB)")
    p.add_argument("--ttft", type=_seconds, metavar="SECONDS", help="TTFT target, seconds")
    p.add_argument("--tpot", type=_seconds, metavar="SECONDS", help="TPOT target, seconds")
    p.add_argument("--e2e", type=_seconds, metavar="SECONDS", help="end-to-end target, seconds")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        trace = traces.read_trace(args.trace, args.format, experiment=args.experiment,
                                  max_bytes=None if args.max_mib is None else args.max_mib * 2**20)
    except FileNotFoundError:
        raise UsageError(f"{args.trace}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{args.trace}: cannot read ({exc.strerror or exc})") from None
    target = slo.SLO(ttft_s=args.ttft, tpot_s=args.tpot, e2e_s=args.e2e)
    summary = trace.summary(target)
    if args.json:
        print_json(summary)
        return 0
    print(f"{args.trace} ({summary['source_format']}): {summary['count']} requests, "
          f"{summary['finished']} finished, {summary['rejected']} rejected, "
          f"{summary['timed_out']} timed out")
    print(f"{'metric':<10}{'p50':>10}{'p90':>10}{'p95':>10}{'p99':>10}{'mean':>10}   (seconds)")
    for key, label in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL"),
                       ("e2e_s", "end-to-end")):
        row = summary[key]
        if row is None:
            print(f"{label:<10}{'not in this file':>30}")
            continue
        cells = "".join(f"{'n/a' if row[k] is None else format(row[k], '.4g'):>10}"
                        for k in ("p50", "p90", "p95", "p99", "mean"))
        print(f"{label:<10}{cells}")
    if summary["tpot_undefined"]:
        print(f"TPOT is undefined for {summary['tpot_undefined']} one-token answer(s), left out above")
    if "attainment" in summary:
        parts = [f"{name} <= {value:g} s" for name, value in
                 (("TTFT", args.ttft), ("TPOT", args.tpot), ("end-to-end", args.e2e))
                 if value is not None]
        print(f"SLO attainment ({', '.join(parts)}): {summary['attainment']:.2%} of all requests")
    for key, label in (("conversions", "conversion"), ("assumptions", "assumption")):
        for line in summary[key]:
            print(f"{label}: {line}")
    return 0
