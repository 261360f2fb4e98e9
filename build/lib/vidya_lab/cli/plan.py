"""``vidya-lab plan``: Tanvi's answer to finance (the capstone)."""

from __future__ import annotations

import argparse

import vidya_lab.cli._calibration as calibration_option
from vidya_lab.cli import UsageError, print_json


def register(sub) -> None:
    from vidya_lab.plan import DAYS, POLICIES
    from vidya_lab.scenario import ISOLATION_POLICIES

    p = sub.add_parser(
        "plan",
        help="plan the GPU fleet for a scenario (default: Tanvi's exam season)",
        description="Search every candidate GPU type, precision and layout for the cheapest plan "
                    "that meets every constraint (TTFT, TPOT and ITL targets on a day busier than "
                    "the forecast, the prefix cache a salt per school leaves, losing a node at the "
                    "peak), and report the GPUs to rent, what to reserve for the year, the cost of "
                    "an exam month, a normal month and the year, the alternatives and the risks. "
                    "With no options it plans the book's scenario.",
    )
    p.add_argument("--model", help="model id (default: the scenario's)")
    p.add_argument("--gpus", help="comma-separated GPU ids to consider (default: the scenario's)")
    p.add_argument("--precisions", default="bf16,fp8", help="weight precisions to consider")
    p.add_argument("--day", choices=DAYS, default="exam", help="the day to plan for")
    p.add_argument("--peak-rps", type=float, help="normal-day peak request rate, requests/s")
    p.add_argument("--exam-multiplier", type=float, help="exam-season traffic multiplier")
    p.add_argument("--ttft", type=float, help="TTFT target, seconds")
    p.add_argument("--tpot", type=float, help="TPOT target, seconds")
    p.add_argument("--itl", type=float,
                   help="ITL target: the longest gap between two tokens, seconds")
    p.add_argument("--isolation", choices=ISOLATION_POLICIES,
                   help="how the prefix cache is shared (default: the scenario's, per-school)")
    p.add_argument("--schools", type=int, help="schools in the district (per-school isolation)")
    p.add_argument("--exam-weeks", type=int, help="exam weeks in the year the purchase covers")
    p.add_argument("--attainment", type=float, help="attainment target, 0..1")
    p.add_argument("--policy", choices=POLICIES, default="scheduled", help="autoscaling policy")
    p.add_argument("--cold-start-s", type=float, help="cold start, seconds (default: derived)")
    p.add_argument("--prefix-share", type=float, help="shared-prefix fraction of the prompt, 0..1")
    p.add_argument("--no-prefix-cache", action="store_true",
                   help="plan as if nothing were cached (the prefix cache not counted)")
    p.add_argument("--traffic-margin", type=float, default=0.2,
                   help="forecast error the plan must survive at the target (default 0.2: +20%%)")
    p.add_argument("--spot-share", type=float, default=0.0,
                   help="share of the on-demand burst bought as spot, 0..1 (default 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-risks", action="store_true", help="skip the risk simulations")
    p.add_argument("--figure", metavar="PATH", help="write the one-page figure (.png or .svg)")
    p.add_argument("--json", action="store_true", help="print JSON")
    calibration_option.add_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vidya_lab import plan as planner
    from vidya_lab import report

    changes = {k: val for k, val in {
        "model_id": args.model,
        "normal_peak_rps": args.peak_rps,
        "exam_multiplier": args.exam_multiplier,
        "ttft_target_s": args.ttft,
        "tpot_target_s": args.tpot,
        "itl_target_s": args.itl,
        "isolation": args.isolation,
        "schools": args.schools,
        "exam_weeks_per_year": args.exam_weeks,
        "attainment_target": args.attainment,
    }.items() if val is not None}
    scenario = planner.what_if(**changes)
    gpu_ids = [g.strip() for g in args.gpus.split(",") if g.strip()] if args.gpus else None
    precisions = tuple(x.strip() for x in args.precisions.split(",") if x.strip())
    if not precisions:
        raise UsageError("--precisions must name at least one precision, e.g. bf16,fp8")
    if args.figure:  # checked before the work, not after it
        report.check_figure_path("--figure", args.figure)
    cal = calibration_option.load(args)
    result = planner.plan(scenario, gpu_ids=gpu_ids, precisions=precisions, day=args.day,
                          policy=args.policy, cold_start_s=args.cold_start_s,
                          prefix_share=args.prefix_share, seed=args.seed,
                          risks=not args.no_risks, count_prefix_cache=not args.no_prefix_cache,
                          traffic_margin=args.traffic_margin, spot_share=args.spot_share,
                          calibration=cal)
    result["calibration"] = cal.name
    if args.figure:
        report.plan_figure(result, args.figure)
    if args.json:
        print_json(result)
    else:
        print(report.plan_table(result))
        print(calibration_option.line(cal))
        if args.figure:
            print(f"\nfigure written to {args.figure}")
    return 0
