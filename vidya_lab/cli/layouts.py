"""``vidya-lab layouts --model M --gpu G --peak-rps R --isl N --osl N --ttft S --tpot S [--json]``

The (TP, PP, replicas) layouts of a model on one GPU type that fit in memory, each sized for the peak
load, ranked: those meeting both latency targets first, then by cost per hour
(:func:`vidya_lab.layouts.search_layouts`). Every option defaults to Tanvi's scenario. ``--json``
prints a list of objects whose first keys are ``tp``, ``pp``, ``replicas``, ``gpus``, ``fits``,
``ttft_s``, ``tpot_s``, ``max_output_tokens_per_s``, ``cost_per_hour`` (USD), ``meets_slo``;
seconds and tokens/s throughout. No fitting layout prints an empty list (exit status 0); an unknown
id or a bad number is an error (exit status 2).
"""

from __future__ import annotations

import argparse

import vidya_lab.cli._calibration as calibration_option
from vidya_lab import layouts, sizing
from vidya_lab.catalog import LINKS
from vidya_lab.cli import print_json
from vidya_lab.cli._precision import check_supported
from vidya_lab.scenario import TANVI


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "layouts", help="rank the TP x PP x replicas layouts of a model on a GPU type by cost",
        description=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=TANVI.model_id,
                   help=f"model id (default {TANVI.model_id}; see `vidya-lab models`)")
    p.add_argument("--gpu", default=TANVI.candidate_gpu_ids[0],
                   help=f"GPU id (default {TANVI.candidate_gpu_ids[0]}; see `vidya-lab gpus`)")
    p.add_argument("--peak-rps", type=float, default=TANVI.exam_peak_rps,
                   help=f"peak requests/s to absorb (default {TANVI.exam_peak_rps:g}, exam season)")
    p.add_argument("--isl", type=int, default=TANVI.prompt_tokens_mean,
                   help=f"mean prompt tokens (default {TANVI.prompt_tokens_mean})")
    p.add_argument("--osl", type=int, default=TANVI.answer_tokens_mean,
                   help=f"mean output tokens (default {TANVI.answer_tokens_mean})")
    p.add_argument("--ttft", type=float, default=TANVI.ttft_target_s,
                   help=f"TTFT target, seconds (default {TANVI.ttft_target_s:g})")
    p.add_argument("--tpot", type=float, default=TANVI.tpot_target_s,
                   help=f"TPOT target, seconds (default {TANVI.tpot_target_s:g})")
    p.add_argument("--precision", default="bf16", help="weights: fp16, bf16, fp8, int8, int4")
    p.add_argument("--kv-precision", default=None, help="KV cache precision (default: as weights)")
    p.add_argument("--memory-rule", default="vllm", choices=sizing.MEMORY_RULES,
                   help="how the KV budget is set: vllm (default) or trtllm")
    p.add_argument("--utilisation", type=float, default=layouts.DEFAULT_UTILISATION,
                   help="fraction of each replica's throughput to plan on "
                        f"(default {layouts.DEFAULT_UTILISATION:g})")
    p.add_argument("--max-gpus-per-replica", type=int,
                   default=layouts.DEFAULT_MAX_GPUS_PER_REPLICA,
                   help=f"largest tp x pp tried (default {layouts.DEFAULT_MAX_GPUS_PER_REPLICA})")
    p.add_argument("--interconnect", default=None,
                   help="link inside a node, overriding the GPU's own: " + ", ".join(LINKS))
    p.add_argument("--inter-node", default=None,
                   help="link between nodes (default infiniband-ndr): " + ", ".join(LINKS))
    p.add_argument("--ep", action="store_true",
                   help="MoE models: rank expert-parallel against tensor-parallel layouts of one "
                        "replica (a bandwidth roofline, vidya_lab.experts.ep_layouts) and explain "
                        "the winner")
    p.add_argument("--batch", type=int, default=64,
                   help="with --ep: sequences decoding together in one replica (default 64)")
    p.add_argument("--top", type=int, default=None, help="show only the first N layouts")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    calibration_option.add_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    check_supported("--precision", args.precision, args.gpu)
    if args.ep:
        return _run_ep(args)
    cal = calibration_option.load(args)
    ranked = layouts.search_layouts(
        args.model, args.gpu, peak_rps=args.peak_rps, isl=args.isl, osl=args.osl,
        ttft_target_s=args.ttft, tpot_target_s=args.tpot, precision=args.precision,
        kv_precision=args.kv_precision, memory_rule=args.memory_rule,
        utilisation=args.utilisation, max_gpus_per_replica=args.max_gpus_per_replica,
        interconnect=args.interconnect, inter_node=args.inter_node,
        calibration=cal)
    if args.top is not None:
        if args.top < 1:
            raise ValueError(f"top must be an integer >= 1, got {args.top}")
        ranked = ranked[:args.top]
    if args.json:
        print_json([{**x.as_dict(), "calibration": cal.name} for x in ranked])
        return 0
    print(f"{args.model} ({args.precision}) on {args.gpu}: {args.peak_rps:g} requests/s, "
          f"isl={args.isl}, osl={args.osl}, targets TTFT {args.ttft:g} s, TPOT {args.tpot:g} s")
    print(calibration_option.line(cal))
    if not ranked:
        print("  no layout fits within "
              f"{args.max_gpus_per_replica} GPUs per replica; try more GPUs or a smaller precision")
        return 0
    print(f"  {'layout':<16}{'GPUs':>6}{'$/hour':>10}{'TTFT ms':>10}{'TPOT ms':>10}"
          f"{'tokens/s':>11}{'batch':>7}  SLO")
    for x in ranked:
        print(f"  {x.label:<16}{x.gpus:>6}{x.cost_per_hour:>10,.0f}{x.ttft_s * 1e3:>10.0f}"
              f"{x.tpot_s * 1e3:>10.1f}{x.max_output_tokens_per_s:>11,.0f}"
              f"{x.batch_per_replica:>7}  {'met' if x.meets_slo else 'missed: ' + x.reason}")
    return 0


def _run_ep(args) -> int:
    from vidya_lab import experts
    kv = args.kv_precision or "bf16"
    ranked = experts.ep_layouts(args.model, args.gpu, batch=args.batch,
                                context_tokens=args.isl + args.osl, precision=args.precision,
                                kv_precision=kv)
    why = experts.explain_ep_winner(ranked)
    if args.top is not None:
        if args.top < 1:
            raise ValueError(f"top must be an integer >= 1, got {args.top}")
        ranked = ranked[:args.top]
    if args.json:
        print_json({"layouts": ranked, "winner": next((x for x in ranked if x["fits"]), None),
                    "why": why})
        return 0
    print(f"{args.model} ({args.precision}, KV {kv}) on {args.gpu}: decode of {args.batch} sequences "
          f"of {args.isl + args.osl} tokens per replica (bandwidth roofline, uniform routing)")
    print(f"  {'layout':<8}{'GPUs':>5}{'weights GB':>11}{'KV GB':>7}{'step ms':>9}{'comm ms':>9}"
          f"{'tok/s/GPU':>11}  fits")
    for x in ranked:
        label = f"{x['kind']}={x['gpus']}"
        print(f"  {label:<8}{x['gpus']:>5}{x['weights_bytes_per_gpu'] / 1e9:>11.1f}"
              f"{x['kv_bytes_per_gpu'] / 1e9:>7.1f}{x['step_s'] * 1e3:>9.2f}{x['comm_s'] * 1e3:>9.2f}"
              f"{x['tokens_per_s_per_gpu']:>11,.0f}  {'yes' if x['fits'] else 'no'}")
    print(why)
    return 0
