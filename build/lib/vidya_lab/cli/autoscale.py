"""``vidya-lab autoscale [--model M] [--gpu G] [--tp N] [--precision P] [--day normal|exam]
[--policy reactive|scheduled|predictive] [--cold-start-s S | --cold-start-s derived]
[--min N] [--max N] [--headroom K] [--router R] [--mtbf-s S] [--cached-prefix-tokens N]
[--dt-s S] [--seed S] [--json]``

One simulated day of Tanvi's fleet (:func:`vidya_lab.autoscaling.simulate_day`): arrivals from the
day's curve, a router, replicas that cold-start, serve, drain and fail, and the autoscaling policy.
Defaults come from the scenario: Tanvi's model, the first candidate GPU, the smallest tensor-parallel
degree that fits, an exam day, and the cold start derived from its parts (``derived``).

The JSON holds ``arrived``, ``finished``, ``rejected``, ``in_flight``, ``attainment`` (0..1 of all
arrivals), ``ttft_s`` and ``tpot_s`` (percentile objects, seconds), ``gpu_hours``, ``cost`` (USD),
``max_replicas``, ``cold_start_s``, ``per_hour_attainment`` (24 values, ``null`` for an hour without
arrivals) and extras (``rush_attainment``, ``replicas_by_hour``, ``cold_start_parts_s``,
``cached_prefix_tokens`` …). ``--max`` is at most ``autoscaling.MAX_REPLICAS`` (4096); the run's
memory and time grow with the replicas it actually starts, not with ``--max``.
"""

from __future__ import annotations

import argparse

import vidya_lab.cli._calibration as calibration_option
from vidya_lab import autoscaling, layouts, sizing
from vidya_lab.cli import UsageError, print_json
from vidya_lab.scenario import TANVI


def _cold_start(text: str):
    if text == "derived":
        return None
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--cold-start-s must be a number of seconds >= 0 or 'derived', "
                         f"got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise UsageError(f"--cold-start-s must be a number of seconds >= 0 or 'derived', "
                         f"got {text!r}")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "autoscale", help="a simulated day of the fleet: policy, cold start, attainment and bill",
        description=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=TANVI.model_id, help=f"model id (default {TANVI.model_id})")
    p.add_argument("--gpu", default=TANVI.candidate_gpu_ids[0],
                   help=f"GPU id (default {TANVI.candidate_gpu_ids[0]})")
    p.add_argument("--tp", type=int, default=None,
                   help="tensor-parallel degree (default: the book's, chapter 3's cheapest single-node layout)")
    p.add_argument("--precision", default="bf16", help="weights: fp16, bf16, fp8, int8, int4")
    p.add_argument("--day", default="exam", choices=autoscaling.DAYS, help="default exam")
    p.add_argument("--policy", default="reactive", choices=autoscaling.POLICIES,
                   help="default reactive")
    p.add_argument("--cold-start-s", default="derived",
                   help="seconds from 'scale up' to serving, or 'derived' (default) from its parts")
    p.add_argument("--min", dest="min_replicas", type=int, default=1, help="fewest replicas (1)")
    p.add_argument("--max", dest="max_replicas", type=int, default=64,
                   help=f"most replicas (64; at most {autoscaling.MAX_REPLICAS})")
    p.add_argument("--headroom", type=int, default=0, help="N+k spare replicas (default 0)")
    p.add_argument("--router", default="round_robin", choices=autoscaling.ROUTERS,
                   help="default round_robin")
    p.add_argument("--mtbf-s", type=float, default=None,
                   help="mean time between failures of one replica, seconds (default: none)")
    p.add_argument("--cached-prefix-tokens", type=int, default=0,
                   help="prompt tokens a warm replica finds in its prefix cache (default 0: none "
                        f"counted; Tanvi's syllabus + subject is "
                        f"{TANVI.syllabus_prompt_tokens + TANVI.subject_prompt_tokens})")
    p.add_argument("--dt-s", type=float, default=5.0, help="simulation step, seconds (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the day's traffic (default 0)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    calibration_option.add_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    cold = _cold_start(args.cold_start_s)
    tp = args.tp if args.tp is not None else layouts.reference_tp(args.model, args.gpu,
                                                                  args.precision)
    rep = sizing.Replica(args.model, args.gpu, tp=tp, precision=args.precision,
                         calibration=calibration_option.load(args))
    if args.min_replicas > args.max_replicas:
        raise UsageError(f"--min ({args.min_replicas}) must not exceed --max ({args.max_replicas})")
    day = autoscaling.simulate_day(rep, day=args.day, policy=args.policy, cold_start=cold,
                                   seed=args.seed, dt_s=args.dt_s, min_replicas=args.min_replicas,
                                   max_replicas=args.max_replicas, headroom=args.headroom,
                                   router=args.router, mtbf_s=args.mtbf_s,
                                   cached_prefix_tokens=args.cached_prefix_tokens)
    out = dict(day["summary"])
    out["cold_start_parts_s"] = (autoscaling.ColdStart().parts_s(rep) if cold is None else None)
    out.update({"model": rep.model.id, "gpu": rep.gpu.id, "tp": rep.tp, "precision": rep.precision,
                "day": args.day, "policy": args.policy, "seed": args.seed,
                "cached_prefix_tokens": args.cached_prefix_tokens,
                "capacity_rps_per_replica": day["model"].capacity_rps(),
                "calibration": rep.calibration.name})
    if args.json:
        print_json(out)
        return 0
    print(f"{args.day} day, {args.policy} policy: {rep.model.id} on {rep.gpu.id} tp={rep.tp} "
          f"({rep.precision}), cold start {out['cold_start_s'] / 60:.1f} min")
    print(f"  requests     {out['arrived']:,} arrived, {out['finished']:,} finished, "
          f"{out['rejected']:,} rejected, {out['in_flight']:,} in flight")
    print(f"  attainment   {out['attainment']:.2%} of the day, "
          f"{out['rush_attainment']:.2%} in the morning rush")
    print(f"  p99 TTFT     {out['ttft_s']['p99']:.2f} s; p99 TPOT {out['tpot_s']['p99'] * 1e3:.0f} ms")
    print(f"  fleet        at most {out['max_replicas']} replicas; {out['gpu_hours']:,.0f} GPU-hours, "
          f"${out['cost']:,.0f}")
    worst = [(h, a) for h, a in enumerate(out["per_hour_attainment"]) if a is not None]
    h, a = min(worst, key=lambda x: x[1])
    print(f"  worst hour   {h:02d}:00 with {a:.2%} attainment")
    print(calibration_option.line(rep.calibration))
    return 0
