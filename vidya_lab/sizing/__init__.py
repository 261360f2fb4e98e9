"""Chapter 2: memory first, then time — a replica's memory budget and THE cost model of one iteration.

Every later chapter calls this package; nothing else re-derives a step time. Read it in this order:

1. :mod:`~vidya_lab.sizing.memory` — weights, KV bytes per token, activations, the KV budget
   (the arithmetic a student does on paper first).
2. :mod:`~vidya_lab.sizing.engine` — an engine's memory rule (vLLM vs TensorRT-LLM) and batch limits.
3. :mod:`~vidya_lab.sizing.replica` — :class:`Replica`, one copy of the model on tp × pp GPUs.
4. :mod:`~vidya_lab.sizing.efficiency` — :class:`Calibration`: the fractions of the ceilings an
   engine reaches and its fixed costs, each with a plausible range (:data:`PARAMETERS`).
5. :mod:`~vidya_lab.sizing.cost` — THE cost model, :func:`iteration_time_s` (a roofline per stage,
   plus all-reduces, pipeline hand-offs and overheads).
6. :mod:`~vidya_lab.sizing.latency` — TTFT on an idle replica, TPOT at a batch, the critical batch.
7. :mod:`~vidya_lab.sizing.throughput` — a saturated replica's cycle, its capacity and the replicas
   a peak load needs.
8. :mod:`~vidya_lab.sizing.estimate` — :func:`estimate`, the ``vidya-lab estimate`` contract.

References: Williams et al., *Roofline* (CACM 2009); Kwon et al., *PagedAttention* (arXiv:2309.06180);
Pope et al., *Efficiently Scaling Transformer Inference* (arXiv:2211.05102); the scaling-book
``inference.md`` (facts.md); Agrawal et al., *Sarathi-Serve* (arXiv:2403.02310) for chunked prefill.
"""

from vidya_lab.catalog import (  # re-exported: callers look models up through sizing
    get_gpu,
    get_model,
)
from vidya_lab.sizing.bound import physical_bound, roofline_output_tokens_per_s
from vidya_lab.sizing.cost import StepCost, iteration_breakdown, iteration_time_s, prefill_work
from vidya_lab.sizing.efficiency import (
    CALIBRATION_FILE,
    PARAMETERS,
    PHYSICAL,
    Calibration,
    Parameter,
    fitted_calibration,
    is_extrapolated,
    load_calibration_file,
    timed_gpus,
)
from vidya_lab.sizing.engine import (
    DEFAULT_MEMORY_FRACTION,
    MEMORY_RULES,
    RUNTIME_RESERVE_BYTES,
    EngineDefaults,
    engine_defaults,
)
from vidya_lab.sizing.estimate import ESTIMATE_KEYS, estimate
from vidya_lab.sizing.latency import (
    critical_batch_size,
    decode_step_time_s,
    decode_steps_time_s,
    prefill_time_s,
    throughput_latency_curve,
    ttft_s,
)
from vidya_lab.sizing.memory import (
    ACTIVATION_BYTES,
    default_kv_precision,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    weights_bytes,
)
from vidya_lab.sizing.replica import (
    Replica,
    _as_replica,
    kv_rounding_waste_fraction,
    max_concurrent_sequences,
    memory_breakdown,
    replica,
)
from vidya_lab.sizing.throughput import (
    capacity_rps,
    cost_per_hour_usd,
    cost_per_million_output_tokens,
    cycle,
    gpus_for_peak_load,
    saturated_throughput,
    slo_batch,
    steady_tpot_s,
)

__all__ = [
    "ACTIVATION_BYTES", "CALIBRATION_FILE", "DEFAULT_MEMORY_FRACTION", "ESTIMATE_KEYS",
    "MEMORY_RULES", "PARAMETERS", "PHYSICAL", "RUNTIME_RESERVE_BYTES", "Calibration",
    "EngineDefaults", "Parameter", "Replica", "StepCost", "_as_replica", "capacity_rps",
    "cost_per_hour_usd", "cost_per_million_output_tokens", "critical_batch_size", "cycle",
    "decode_step_time_s", "decode_steps_time_s", "default_kv_precision", "engine_defaults",
    "estimate", "fitted_calibration", "get_gpu", "get_model", "gpus_for_peak_load", "is_extrapolated",
    "iteration_breakdown",
    "iteration_time_s", "kv_bytes_per_token", "kv_bytes_per_sequence",
    "kv_rounding_waste_fraction", "load_calibration_file",
    "max_concurrent_sequences", "memory_breakdown", "physical_bound", "prefill_time_s", "prefill_work", "replica",
    "roofline_output_tokens_per_s", "saturated_throughput", "slo_batch", "steady_tpot_s", "throughput_latency_curve",
    "timed_gpus", "ttft_s", "weights_bytes",
]
