"""``vidya-lab slo TRACE.csv [--ttft S] [--tpot S] [--e2e S] [--json]``: latency metrics of a trace.

Reads a request trace (CSV with a header holding at least
``request_id,arrival_s,first_token_s,finish_s,output_tokens``; optional ``outcome``, ``admitted_s``,
``klass``), prints TTFT, TPOT and end-to-end percentiles (seconds) and, when targets are given, the
SLO attainment over all requests (a rejected request counts as missed).
"""

from __future__ import annotations

import argparse

from vidya_lab import slo
from vidya_lab.cli import UsageError, print_json


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "slo", help="latency percentiles and SLO attainment of a request trace (CSV)",
        description=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE.csv", help="the trace: one row per request, times in s")
    p.add_argument("--ttft", type=_seconds, metavar="SECONDS", help="TTFT target, seconds")
    p.add_argument("--tpot", type=_seconds, metavar="SECONDS", help="TPOT target, seconds")
    p.add_argument("--e2e", type=_seconds, metavar="SECONDS", help="end-to-end target, seconds")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        timelines = slo.read_trace_csv(args.trace)
    except FileNotFoundError:
        raise UsageError(f"{args.trace}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{args.trace}: cannot read ({exc.strerror or exc})") from None
    target = slo.SLO(ttft_s=args.ttft, tpot_s=args.tpot, e2e_s=args.e2e)
    summary = slo.summarize(timelines, target)
    if args.json:
        print_json(summary)
        return 0
    print(f"{args.trace}: {summary['count']} requests, {summary['finished']} finished, "
          f"{summary['rejected']} rejected, {summary['timed_out']} timed out")
    print(f"{'metric':<10}{'p50':>10}{'p90':>10}{'p95':>10}{'p99':>10}{'mean':>10}   (seconds)")
    for key, label in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("e2e_s", "end-to-end")):
        row = summary[key]
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
    return 0
