"""Quantisation: fewer bytes per weight and per KV element, more room and faster steps.

:func:`quantisation_table` runs one layout at several (weight, KV) precisions through
:mod:`vidya_lab.sizing`: memory, concurrency, TTFT, TPOT and saturated throughput per row. Quality is
not here: fewer bits can change answers, and only an evaluation on your own tasks says by how much.
"""

from __future__ import annotations

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.caching.deployment import default_replica
from vidya_lab.scenario import TANVI

#: The (weight precision, KV precision) pairs the chapter compares.
QUANT_OPTIONS = (("bf16", "bf16"), ("fp8", "fp8"), ("bf16", "fp8"), ("int4", "bf16"))


def quantisation_table(model: str = TANVI.model_id, gpu: str = TANVI.candidate_gpu_ids[0],
                       tp: int | None = None,
                       isl: int = TANVI.prompt_tokens_mean, osl: int = TANVI.answer_tokens_mean,
                       batch: int = 32, options=QUANT_OPTIONS) -> list[dict]:
    """Memory, concurrency and speed of one layout at several (weight, KV) precisions.

    Each row (all from :mod:`vidya_lab.sizing`): ``precision``, ``kv_precision``,
    ``weights_bytes_per_gpu``, ``kv_bytes_per_token`` (whole model), ``kv_budget_bytes`` (per GPU),
    ``max_concurrent_sequences`` (isl + osl tokens each), ``ttft_s`` (isl tokens, idle), ``tpot_s``
    (``batch`` sequences, or as many as fit), ``output_tokens_per_s`` (saturated). Quality is not here:
    fewer bits can change answers, and only an evaluation on your own tasks says by how much.
    ``tp`` defaults to the bf16 layout of :func:`default_replica`, so every row is the same GPUs.
    """
    if tp is None:
        tp = default_replica(model, gpu, "bf16").tp
    batch = v.check_int("batch", batch, minimum=1)
    isl = v.check_int("isl", isl, minimum=1)
    osl = v.check_int("osl", osl, minimum=1)
    if isinstance(options, (str, bytes)) or not hasattr(options, "__iter__"):
        raise TypeError(f"options must be a sequence of (precision, kv_precision) pairs, got "
                        f"{type(options).__name__}")
    rows = []
    for i, pair in enumerate(options):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"options[{i}] must be a (precision, kv_precision) pair, got {pair!r}")
        prec, kvp = pair
        r = sizing.Replica(model, gpu, tp=tp, precision=prec, kv_precision=kvp)
        fit = r.weights_fit and sizing.max_concurrent_sequences(r, isl + osl) >= 1
        b = min(batch, sizing.max_concurrent_sequences(r, isl + osl)) if fit else 0
        rows.append({
            "precision": r.precision, "kv_precision": r.kv_precision,
            "weights_bytes_per_gpu": r.weights_bytes_per_gpu,
            "kv_bytes_per_token": sizing.kv_bytes_per_token(r.model, r.kv_precision),
            "kv_budget_bytes": r.kv_budget_bytes,
            "max_concurrent_sequences": sizing.max_concurrent_sequences(r, isl + osl),
            "ttft_s": sizing.prefill_time_s(r, isl) if fit else None,
            "tpot_s": sizing.decode_step_time_s(r, b, isl + osl // 2) if fit else None,
            "output_tokens_per_s": sizing.saturated_throughput(r, isl, osl)["output_tokens_per_s"],
        })
    return rows
