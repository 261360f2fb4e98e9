"""``estimate``: memory, latency and throughput of one deployment in one dict (the CLI's contract)."""

from __future__ import annotations

from vidya_lab import _validate as v
from vidya_lab.sizing.bound import roofline_output_tokens_per_s
from vidya_lab.sizing.latency import MAX_TOKENS, decode_step_time_s, ttft_s
from vidya_lab.sizing.memory import kv_bytes_per_token, weights_bytes
from vidya_lab.sizing.replica import MAX_NUM_SEQS, Replica, max_concurrent_sequences
from vidya_lab.sizing.throughput import saturated_throughput

#: The keys of ``vidya-lab estimate --json`` (issue 3's contract), in order; more follow them.
ESTIMATE_KEYS = ("weights_bytes", "weights_bytes_per_gpu", "kv_bytes_per_token", "fits", "reason",
                 "max_concurrent_sequences", "ttft_s", "tpot_s", "max_output_tokens_per_s",
                 "roofline_output_tokens_per_s")
#: Most GPUs one estimate may describe.
MAX_GPUS = 100_000


def _no_fit_reason(r: Replica, ctx: int, batch: int, fit: int) -> str | None:
    m = r.model
    if not r.weights_fit:
        return (f"weights {r.weights_bytes_per_gpu / 1e9:.1f} GB + runtime and activation reserve "
                f"{r.activation_reserve_bytes / 1e9:.1f} GB per GPU exceed the "
                f"{r.usable_bytes / 1e9:.1f} GB usable of a {r.gpu.id} that reports "
                f"{r.gpu.hbm_bytes / 1e9:.1f} GB ({r.memory_rule} rule, fraction "
                f"{r.memory_fraction:g}); use more GPUs (tp/pp) or a smaller precision")
    if ctx > m.max_context_tokens:
        return f"isl + osl = {ctx} tokens exceeds {m.id}'s context of {m.max_context_tokens}"
    if fit < 1:
        return (f"no room for even one {ctx}-token sequence in the KV cache "
                f"({r.kv_budget_bytes / 1e9:.2f} GB per GPU left for KV)")
    if batch > fit:
        return f"batch {batch} exceeds the {fit} sequences of {ctx} tokens that fit in KV memory"
    return None


def estimate(model, gpu, *, gpus: int = 1, tp: int = 1, pp: int = 1, precision: str = "bf16",
             kv_precision: str | None = None, isl: int = 2048, osl: int = 256, batch: int = 1,
             memory_rule: str = "vllm", calibration=None) -> dict:
    """Memory, latency and throughput of serving ``model`` on ``gpus`` × ``gpu``: one dict, SI units.

    Keys: ``weights_bytes`` (whole model), ``weights_bytes_per_gpu``, ``kv_bytes_per_token`` (whole
    model, all layers), ``fits`` (bool), ``reason`` (why not, else None),
    ``kv_bytes_per_token_at_context`` (the same averaged over one isl+osl sequence: below
    ``kv_bytes_per_token`` only for a model with sliding-window layers),
    ``max_concurrent_sequences`` (per replica, each holding isl+osl tokens; KV memory limit),
    ``ttft_s`` (one isl-token request on an idle replica), ``tpot_s`` (decode step at ``batch``
    concurrent sequences of mean context isl + osl/2), ``max_output_tokens_per_s`` (calibrated,
    saturated continuous batching, all ``gpus`` together: replicas = gpus ÷ (tp × pp)),
    ``roofline_output_tokens_per_s`` (the physical bound of each replica's GPUs, all replicas
    together: every byte not holding weights holds KV, peak bandwidth and FLOPs, no overheads —
    :func:`~vidya_lab.sizing.bound.physical_bound`; no engine can beat it); then
    ``hbm_bytes`` (the memory the device reports), ``kv_budget_bytes_per_gpu``,
    ``max_num_seqs``, ``max_batched_tokens`` (the engine limits used), ``calibration`` (its name) and
    ``extrapolated`` (True when the GPU type has no published timing row behind the calibration).
    When ``fits`` is false the latency and throughput keys are None.

    Raises ``KeyError`` for an unknown id and ``ValueError`` for an impossible layout (tp not dividing
    the heads, gpus not a multiple of tp × pp).
    """
    gpus = v.check_int("gpus", gpus, minimum=1, maximum=MAX_GPUS)
    tp = v.check_int("tp", tp, minimum=1, maximum=1024)
    pp = v.check_int("pp", pp, minimum=1, maximum=1024)
    isl = v.check_int("isl", isl, minimum=1, maximum=MAX_TOKENS)
    osl = v.check_int("osl", osl, minimum=1, maximum=MAX_TOKENS)
    batch = v.check_int("batch", batch, minimum=1, maximum=MAX_NUM_SEQS)
    if gpus % (tp * pp):
        raise ValueError(f"gpus must be a multiple of tp x pp = {tp * pp}, got {gpus}")
    r = Replica(model, gpu, tp=tp, pp=pp, precision=precision, kv_precision=kv_precision,
                memory_rule=memory_rule, calibration=calibration)
    replicas = gpus // (tp * pp)
    ctx = isl + osl
    fit = max_concurrent_sequences(r, min(ctx, r.model.max_context_tokens))
    out = {
        "weights_bytes": weights_bytes(r.model, r.precision),
        "weights_bytes_per_gpu": r.weights_bytes_per_gpu,
        "kv_bytes_per_token": kv_bytes_per_token(r.model, r.kv_precision),
        "fits": True, "reason": None,
        "max_concurrent_sequences": fit if ctx <= r.model.max_context_tokens else 0,
        "ttft_s": None, "tpot_s": None,
        "max_output_tokens_per_s": None, "roofline_output_tokens_per_s": None,
        "hbm_bytes": r.gpu.hbm_bytes, "kv_budget_bytes_per_gpu": r.kv_budget_bytes,
        "max_num_seqs": r.max_num_seqs, "max_batched_tokens": r.max_batched_tokens,
        "calibration": r.calibration.name, "extrapolated": r.extrapolated,
        "kv_bytes_per_token_at_context": kv_bytes_per_token(r.model, r.kv_precision,
                                                            context_tokens=ctx),
    }
    reason = _no_fit_reason(r, ctx, batch, out["max_concurrent_sequences"])
    if reason is not None:
        out["fits"], out["reason"] = False, reason
        return out
    out["ttft_s"] = ttft_s(r, isl)
    out["tpot_s"] = decode_step_time_s(r, batch, isl + osl // 2)
    out["max_output_tokens_per_s"] = replicas * saturated_throughput(r, isl, osl)["output_tokens_per_s"]
    out["roofline_output_tokens_per_s"] = replicas * roofline_output_tokens_per_s(
        r.model, r.gpu, gpus=r.n_gpus, precision=r.precision, kv_precision=r.kv_precision,
        isl=isl, osl=osl)
    return out
