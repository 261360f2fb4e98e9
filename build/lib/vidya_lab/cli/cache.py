"""``vidya-lab cache [--requests N] [--shared-prefix TOKENS] [--unique TOKENS] [--block TOKENS]
[--cache-bytes BYTES] [--model M --gpu G] [--seed S] [--json]``

Replay N requests that share a prefix (the syllabus) and end in unique tokens (the question) through
a block-hashed prefix cache (:func:`vidya_lab.caching.simulate`). Prints the token- and request-level
hit rates, prefill tokens saved, the cache's memory (peak bytes per GPU) and the median TTFT on an
idle replica without and with the cache, through the cost model. Defaults come from Tanvi's scenario;
the cache budget defaults to the replica's whole KV budget per GPU, as vLLM's automatic prefix caching.
"""

from __future__ import annotations

import argparse

from vidya_lab import caching, sizing
from vidya_lab.cli import UsageError, print_json
from vidya_lab.scenario import TANVI

#: Keys of the --json output that are a contract with the issue and the book (more may follow).
CONTRACT_KEYS = ("token_hit_rate", "request_hit_rate", "prefill_tokens_saved", "cache_bytes_used",
                 "ttft_s_p50_without", "ttft_s_p50_with")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cache", help="prefix-cache hit rates and TTFT with and without the cache",
        description=__doc__.split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=1000,
                   help=f"requests to replay (default 1000, at most {caching.MAX_TRACE_REQUESTS})")
    p.add_argument("--shared-prefix", type=int, default=TANVI.syllabus_prompt_tokens,
                   help=f"tokens every prompt starts with (default {TANVI.syllabus_prompt_tokens})")
    p.add_argument("--unique", type=int, default=TANVI.question_tokens_mean,
                   help=f"unique tokens after it (default {TANVI.question_tokens_mean})")
    p.add_argument("--answer", type=int, default=TANVI.answer_tokens_mean,
                   help=f"answer tokens (default {TANVI.answer_tokens_mean})")
    p.add_argument("--subjects", type=int, default=1,
                   help="distinct subject prompts after the shared prefix (default 1: none)")
    p.add_argument("--subject-tokens", type=int, default=0,
                   help="tokens of each subject prompt (default 0)")
    p.add_argument("--rate", type=float, default=TANVI.normal_peak_rps,
                   help=f"arrival rate, requests/s (default {TANVI.normal_peak_rps})")
    p.add_argument("--block", type=int, default=None, help="tokens per KV block (default 16)")
    p.add_argument("--cache-bytes", type=float, default=None,
                   help="cache budget per GPU, bytes (default: the replica's whole KV budget)")
    p.add_argument("--policy", default="lru-leaf", choices=caching.POLICIES,
                   help="eviction policy (default lru-leaf)")
    p.add_argument("--model", default=TANVI.model_id, help=f"model id (default {TANVI.model_id})")
    p.add_argument("--gpu", default=TANVI.candidate_gpu_ids[0],
                   help=f"GPU id (default {TANVI.candidate_gpu_ids[0]})")
    p.add_argument("--tp", type=int, default=None,
                   help="tensor-parallel degree (default: the smallest of 1, 2, 4, 8 that fits)")
    p.add_argument("--precision", default="bf16", help="weights: fp16, bf16, fp8, int8, int4")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.requests is not None and args.requests > caching.MAX_TRACE_REQUESTS:
        raise UsageError(f"--requests must be <= {caching.MAX_TRACE_REQUESTS} (the documented cap: "
                         f"about 0.6 GB and a minute), got {args.requests}")
    if args.tp is None:
        r = caching.default_replica(args.model, args.gpu, args.precision)
    else:
        r = sizing.Replica(args.model, args.gpu, tp=args.tp, precision=args.precision)
        if not r.weights_fit:
            raise UsageError(f"{args.model} in {args.precision} does not fit on tp={args.tp} x "
                             f"{args.gpu}; choose a larger --tp")
    trace = caching.tutor_trace(args.requests, seed=args.seed, rate_per_s=args.rate,
                                syllabus_tokens=args.shared_prefix, subjects=args.subjects,
                                subject_tokens=args.subject_tokens, question_tokens=args.unique,
                                answer_tokens=args.answer)
    res = caching.simulate(trace, r, cache_bytes=args.cache_bytes, block_tokens=args.block,
                           policy=args.policy)
    s = res.summary
    out = {k: s[k] for k in CONTRACT_KEYS}
    out.update({k: val for k, val in s.items() if k not in CONTRACT_KEYS})
    out.update({"model": r.model.id, "gpu": r.gpu.id, "tp": r.tp, "precision": r.precision,
                "seed": args.seed, "shared_prefix_tokens": args.shared_prefix,
                "unique_tokens": args.unique,
                "best_case_token_hit_rate": (caching.best_case_token_hit_rate(
                    args.requests, args.shared_prefix + args.subject_tokens, args.unique, s["block_tokens"])
                    if args.subjects == 1 and args.unique >= 1 else None)})
    if args.json:
        print_json(out)
        return 0
    print(f"{args.requests} requests: {args.shared_prefix} shared + {args.unique} unique tokens, "
          f"{r.model.id} on {r.tp} x {r.gpu.id} ({r.precision}), block {s['block_tokens']} tokens")
    print(f"  cache budget       {s['cache_bytes_budget'] / 1e9:10.3f} GB per GPU "
          f"({s['cache_blocks_capacity']:,} blocks), peak use {s['cache_bytes_used'] / 1e9:.3f} GB")
    print(f"  token hit rate     {s['token_hit_rate']:10.1%}")
    print(f"  request hit rate   {s['request_hit_rate']:10.1%}")
    print(f"  prefill saved      {s['prefill_tokens_saved']:10,d} tokens, "
          f"{s['prefill_flops_saved']:.3g} FLOPs")
    print(f"  evictions          {s['evictions']:10,d}   blocks not stored {s['blocks_not_stored']:,d}")
    print(f"  TTFT p50 (idle)    {s['ttft_s_p50_without'] * 1e3:10.1f} ms without the cache, "
          f"{s['ttft_s_p50_with'] * 1e3:.1f} ms with it")
    return 0
