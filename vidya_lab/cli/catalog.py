"""``vidya-lab models [--json]`` and ``vidya-lab gpus [--json]``: what the catalog knows.

A table by default; ``--json`` prints every field with its source (SI units: bytes, bytes/s, FLOP/s,
USD per GPU-hour).
"""

from __future__ import annotations

from vidya_lab import catalog
from vidya_lab.cli import print_json


def register(subparsers) -> None:
    p = subparsers.add_parser("models", help="list the catalog's models (shapes, parameter counts)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run_models)
    p = subparsers.add_parser("gpus", help="list the catalog's GPUs (memory, bandwidth, FLOP/s, price)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run_gpus)


def run_models(args) -> int:
    rows = catalog.model_table()
    if args.json:
        print_json(rows)
        return 0
    print(f"{'id':<16}{'layers':>7}{'d_model':>8}{'heads':>6}{'kv':>4}{'d_ff':>7}{'vocab':>8}"
          f"{'context':>8}{'experts':>8}{'params (B)':>11}{'active (B)':>11}  attention")
    for r in rows:
        experts = f"{r['experts_per_token']}/{r['n_experts']}" if r["n_experts"] > 1 else "-"
        print(f"{r['id']:<16}{r['n_layers']:>7}{r['d_model']:>8}{r['n_heads']:>6}{r['n_kv_heads']:>4}"
              f"{r['d_ff']:>7}{r['vocab_size']:>8}{r['max_context_tokens']:>8}{experts:>8}"
              f"{r['total_params'] / 1e9:>11.2f}{r['active_params_per_token'] / 1e9:>11.2f}"
              f"  {_attention(r)}")
    print("params (B): 1e9 parameters stored; active: multiplied per token (output head included, "
          "input embedding not). attention: gqa, mla (latent rank + rope dims cached per layer) "
          "or gqa with N/L layers sliding over W tokens. Sources: `vidya-lab models --json`.")
    return 0


def _attention(r: dict) -> str:
    if r["attention"] == "mla":
        return f"mla {r['kv_lora_rank']}+{r['qk_rope_head_dim']}"
    if r["n_sliding_layers"]:
        return f"gqa, {r['n_sliding_layers']}/{r['n_layers']} sliding {r['sliding_window']}"
    return "gqa"


def run_gpus(args) -> int:
    rows = catalog.gpu_table()
    if args.json:
        print_json(rows)
        return 0
    print(f"{'id':<11}{'HBM GB':>7}{'TB/s':>6}{'bf16 TF':>8}{'fp8 TF':>8}{'int8 TO':>8}"
          f"  {'interconnect':<16}{'GB/s/dir':>9}{'$/h':>6}")
    for r in rows:
        fp8 = "-" if r["fp8_flops_per_s"] is None else f"{r['fp8_flops_per_s'] / 1e12:.0f}"
        print(f"{r['id']:<11}{r['hbm_bytes'] / 1e9:>7.0f}{r['hbm_bytes_per_s'] / 1e12:>6.2f}"
              f"{r['bf16_flops_per_s'] / 1e12:>8.0f}{fp8:>8}{r['int8_ops_per_s'] / 1e12:>8.0f}"
              f"  {r['interconnect_kind']:<16}{r['interconnect_bytes_per_s'] / 1e9:>9.0f}"
              f"{r['price_per_hour_usd']:>6.2f}")
    print("Dense peaks (no sparsity); GB = 1e9 bytes; $/h is an assumed rental price per GPU-hour. "
          "Sources: `vidya-lab gpus --json`.")
    return 0
