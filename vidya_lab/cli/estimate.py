"""``vidya-lab estimate --model M --gpu G [--gpus N] [--tp N] [--pp N] [--precision P]
[--kv-precision P] [--isl N] [--osl N] [--batch N] [--memory-rule R] [--json]``

Memory, latency and throughput of serving a model: the dict of vidya_lab.sizing.estimate, in SI
units (bytes, seconds, tokens/s). A layout that does not fit prints "fits": false and the reason
(exit status 0); an unknown id or an impossible layout is an error (exit status 2).
"""

from __future__ import annotations

import argparse

import vidya_lab.cli._calibration as calibration_option
from vidya_lab import sizing
from vidya_lab.cli import RunFailed, print_json
from vidya_lab.cli._precision import check_supported


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate", help="memory, TTFT, TPOT and throughput of a model on some GPUs",
        description=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="model id (see `vidya-lab models`)")
    p.add_argument("--gpu", required=True, help="GPU id (see `vidya-lab gpus`)")
    p.add_argument("--gpus", type=int, default=1, help="GPUs in total (default 1)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (default 1)")
    p.add_argument("--pp", type=int, default=1, help="pipeline-parallel degree (default 1)")
    p.add_argument("--precision", default="bf16", help="weights: fp16, bf16, fp8, int8, int4")
    p.add_argument("--kv-precision", default=None, help="KV cache precision (default: as weights)")
    p.add_argument("--isl", type=int, default=2048, help="input (prompt) tokens (default 2048)")
    p.add_argument("--osl", type=int, default=256, help="output tokens (default 256)")
    p.add_argument("--batch", type=int, default=1, help="concurrent sequences for TPOT (default 1)")
    p.add_argument("--memory-rule", default="vllm", choices=sizing.MEMORY_RULES,
                   help="how the KV budget is set: vllm (default) or trtllm")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    calibration_option.add_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    check_supported("--precision", args.precision, args.gpu)
    est = sizing.estimate(args.model, args.gpu, gpus=args.gpus, tp=args.tp, pp=args.pp,
                          precision=args.precision, kv_precision=args.kv_precision, isl=args.isl,
                          osl=args.osl, batch=args.batch, memory_rule=args.memory_rule,
                          calibration=calibration_option.load(args))
    if args.json:
        print_json(est)
    else:
        _print_table(args, est)
    if not est["fits"]:  # the estimate is printed, and the verdict is the exit status
        raise RunFailed(f"{args.model} does not fit on {args.gpus} x {args.gpu}: {est['reason']}")
    return 0


def _print_table(args, est: dict) -> None:
    print(f"{args.model} on {args.gpus} x {args.gpu} (tp={args.tp}, pp={args.pp}, {args.precision}), "
          f"isl={args.isl}, osl={args.osl}, batch={args.batch}")
    print(f"  device memory      {est['hbm_bytes'] / 1e9:10.2f} GB per GPU, as the device reports it")
    print(f"  weights            {est['weights_bytes'] / 1e9:10.2f} GB in all, "
          f"{est['weights_bytes_per_gpu'] / 1e9:.2f} GB per GPU")
    print(f"  KV cache           {est['kv_bytes_per_token']:10,.0f} bytes per token, "
          f"{est['kv_budget_bytes_per_gpu'] / 1e9:.2f} GB per GPU for it")
    if est["kv_bytes_per_token_at_context"] < est["kv_bytes_per_token"]:
        print(f"  KV, windows capped {est['kv_bytes_per_token_at_context']:10,.0f} bytes per token "
              f"over one {args.isl + args.osl}-token sequence (sliding-window layers)")
    print(f"  fits               {'yes' if est['fits'] else 'no: ' + est['reason']}")
    print(f"  concurrent seqs    {est['max_concurrent_sequences']:10d} per replica (KV memory; "
          f"engine cap {est['max_num_seqs']})")
    if est["fits"]:
        print(f"  TTFT (idle)        {est['ttft_s'] * 1e3:10.1f} ms")
        print(f"  TPOT               {est['tpot_s'] * 1e3:10.2f} ms at batch {args.batch}")
        print(f"  max output         {est['max_output_tokens_per_s']:10,.0f} tokens/s "
              f"(roofline bound {est['roofline_output_tokens_per_s']:,.0f})")
    note = " — EXTRAPOLATED: no published timing row for this GPU" if est["extrapolated"] else ""
    print(f"  calibration        {est['calibration']}{note}")
