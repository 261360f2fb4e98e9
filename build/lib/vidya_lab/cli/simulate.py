"""``vidya-lab simulate --model M --gpu G [--tp N] --rate RPS --isl N --osl N --duration SECONDS
[--policy fcfs|chunked|priority] [--chunk TOKENS] [--partial-prefills N] [--upload-tokens N
--upload-at SECONDS] [--max-queue N] [--seed S] [--json]``

Simulate one replica, one engine iteration at a time (:func:`vidya_lab.admission.simulate`):
Poisson arrivals at RPS for SECONDS, every prompt ISL tokens and every answer OSL tokens, optionally
one upload of N tokens at a given time. The replica starts no step after SECONDS (``--drain``: it
finishes everything first); what is still queued or running is reported as in flight.

A layout on which no request of ISL + OSL tokens can ever be admitted (its KV pool is smaller, or
there is no KV memory at all) is a failed run: one line on stderr saying so, exit status 1, and no
result printed.

JSON keys: ``arrived``, ``finished``, ``rejected``, ``in_flight`` (arrived = finished + rejected +
in_flight); ``ttft_s``, ``tpot_s``, ``e2e_s`` (p50/p90/p95/p99/mean, seconds, finished requests);
``itl_s`` (``p50``, ``p99``, ``max`` over every gap between consecutive tokens of every finished
request, seconds); ``wall_s`` (how long the simulation took, seconds); and extras
(``rejected_by_reason``, ``preemptions``, ``iterations``, ``busy_fraction``, ``simulated_s``,
``rate_per_s``, ``policy``).
"""

from __future__ import annotations

import argparse

import vidya_lab.cli._calibration as calibration_option
from vidya_lab import admission, sizing
from vidya_lab.cli import RunFailed, UsageError, print_json


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate", help="simulate one replica step by step: freeze, chunked prefill, priorities",
        description=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="model id (see `vidya-lab models`)")
    p.add_argument("--gpu", required=True, help="GPU id (see `vidya-lab gpus`)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (default 1)")
    p.add_argument("--pp", type=int, default=1, help="pipeline-parallel degree (default 1)")
    p.add_argument("--precision", default="bf16", help="weights: fp16, bf16, fp8, int8, int4")
    p.add_argument("--rate", type=float, required=True, help="arrivals, requests per second")
    p.add_argument("--isl", type=int, required=True, help="prompt tokens of every request")
    p.add_argument("--osl", type=int, required=True, help="output tokens of every request")
    p.add_argument("--duration", type=float, required=True, help="arrival window, seconds")
    p.add_argument("--policy", default="chunked", choices=admission.POLICIES,
                   help="scheduler (default chunked)")
    p.add_argument("--chunk", type=int, default=None,
                   help="token budget per step for chunked/priority (default: vLLM's for the GPU, "
                        "8192 with >= 70 GiB unless an A100, else 2048)")
    p.add_argument("--partial-prefills", type=int, default=1,
                   help="chunked: most prompts prefilled per step, sharing the budget (vLLM's "
                        "max_num_partial_prefills, default 1)")
    p.add_argument("--long-partial-prefills", type=int, default=1,
                   help="chunked: most of those longer than the long-prompt threshold (default 1)")
    p.add_argument("--long-prefill-threshold", type=int, default=None,
                   help="tokens above which a prompt is long (default: 4%% of the context length)")
    p.add_argument("--kv-policy", default="preempt", choices=admission.KV_POLICIES,
                   help="when KV memory runs out: preempt the newest (default) or reserve up front")
    p.add_argument("--upload-tokens", type=int, default=None,
                   help="one upload of this many prompt tokens (needs --upload-at)")
    p.add_argument("--upload-at", type=float, default=None, help="when the upload arrives, s")
    p.add_argument("--max-queue", type=int, default=None, help="reject arrivals beyond this queue")
    p.add_argument("--max-tokens-in-flight", type=int, default=None,
                   help="reject arrivals that would exceed this many accepted tokens")
    p.add_argument("--deadline", type=float, default=None,
                   help="shed requests still queued this many seconds after arriving")
    p.add_argument("--aging", type=float, default=None,
                   help="priority: a waiting request rises one class per this many seconds")
    p.add_argument("--drain", action="store_true", help="finish every request before stopping")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    calibration_option.add_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if (args.upload_tokens is None) != (args.upload_at is None):
        raise UsageError("--upload-tokens and --upload-at go together: give both or neither")
    r = sizing.Replica(args.model, args.gpu, tp=args.tp, pp=args.pp, precision=args.precision,
                       calibration=calibration_option.load(args))
    cfg = admission.SchedulerConfig(policy=args.policy, chunk_tokens=args.chunk,
                                    max_num_partial_prefills=args.partial_prefills,
                                    max_long_partial_prefills=args.long_partial_prefills,
                                    long_prefill_token_threshold=args.long_prefill_threshold,
                                    kv_policy=args.kv_policy, max_queue=args.max_queue,
                                    max_tokens_in_flight=args.max_tokens_in_flight,
                                    queue_deadline_s=args.deadline, aging_s=args.aging)
    if args.upload_tokens is None:
        w = admission.poisson_workload(args.rate, args.duration, seed=args.seed,
                                       prompt_tokens=args.isl, output_tokens=args.osl)
    else:
        w = admission.upload_workload(args.rate, args.duration, seed=args.seed,
                                      upload_at_s=args.upload_at, upload_tokens=args.upload_tokens,
                                      upload_output_tokens=args.osl, prompt_tokens=args.isl,
                                      output_tokens=args.osl)
    _check_requests_fit(r, cfg, args)              # after the workload has checked isl and osl
    res = admission.simulate(r, w, cfg, duration_s=args.duration, drain=args.drain)
    if res.arrived and res.counts()["rejected_too_long"] == res.arrived:
        raise RunFailed(f"no request fits on this layout: all {res.arrived} were rejected as too "
                        f"long for its KV pool")
    out = res.summary()
    out["rate_per_s"] = args.rate
    out["policy"] = args.policy
    out["calibration"] = r.calibration.name
    if args.json:
        print_json(out)
        return 0
    print(f"{args.model} on {r.n_gpus} x {args.gpu} (tp={args.tp}, pp={args.pp}), {args.policy}, "
          f"{args.rate:g} req/s for {args.duration:g} s, isl={args.isl}, osl={args.osl}")
    print(f"  arrived {out['arrived']}  finished {out['finished']}  rejected {out['rejected']}  "
          f"in flight {out['in_flight']}  preemptions {out['preemptions']}")

    def ms(x):
        return "   n/a" if x is None else f"{x * 1e3:8.1f}"

    print("  metric      p50 ms   p99 ms")
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        print(f"  {key[:-2]:8s} {ms(out[key]['p50'])} {ms(out[key]['p99'])}")
    itl = out["itl_s"]
    print(f"  itl      {ms(itl['p50'])} {ms(itl['p99'])}   max {ms(itl['max'])} ms")
    print(f"  engine busy {out['busy_fraction']:.0%} of {out['simulated_s']:.1f} s simulated, "
          f"{out['iterations']} steps in {out['wall_s']:.2f} s wall")
    print(calibration_option.line(r.calibration))
    return 0


def _check_requests_fit(r: sizing.Replica, cfg: admission.SchedulerConfig, args) -> None:
    """A layout where no request of ``isl + osl`` tokens can ever be admitted is a failed run."""
    where = f"{args.model} on {r.n_gpus} x {args.gpu} (tp={args.tp}, pp={args.pp}, {args.precision})"
    most = admission.max_request_tokens(r, cfg)
    if most == 0:
        raise RunFailed(f"no request fits: {where} leaves no KV cache memory after the weights "
                        f"(choose more GPUs per replica or a lower precision)")
    if args.isl + args.osl > most:
        raise RunFailed(f"no request fits: a request of {args.isl} + {args.osl} tokens needs more "
                        f"KV cache than {where} has ({most:,} tokens at most); choose more GPUs "
                        f"per replica, a lower precision or shorter requests")
