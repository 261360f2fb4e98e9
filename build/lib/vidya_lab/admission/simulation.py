"""Run the replica: check the inputs and the size of the work, then run the engine's loop.

:func:`simulate` is the one entry point. Before any work it checks the replica, the workload and
the config, and refuses a run that would exceed this machine's budget (about a minute and a GB or
two) with the limit in the message: at most :data:`MAX_REQUESTS` requests, :data:`MAX_OUTPUT_TOKENS`
output tokens in all (their emit times are recorded), and :data:`MAX_STEPS` engine steps (a run
needs at least as many decode rounds as its longest answer has tokens, and at least
``Σ output tokens / max_batch``; a run that turns out longer stops at the limit with the same
message).

Queueing-theory mode: ``service_time_s`` (one time per request) replaces the cost model. With policy
``"fcfs"``, ``max_batch=1`` and one output token per request, a step serves exactly one request
for its given time and the replica is a single-server FIFO queue: M/M/1 with exponential times,
M/D/1 with a fixed time (the tests check both against :mod:`vidya_lab.queueing`). Same simulator,
no fork.
"""

from __future__ import annotations

import time

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.admission.config import WATERMARK_FRACTION, SchedulerConfig
from vidya_lab.admission.engine import Engine
from vidya_lab.admission.memory import KVPool
from vidya_lab.admission.results import SimResult, collect
from vidya_lab.workload import Workload

#: Most requests one run simulates (about 50 s of wall time at the scenario's lengths).
MAX_REQUESTS = 1_000_000
#: Most output tokens of all requests together (their emit times take ~30 bytes each at the end).
MAX_OUTPUT_TOKENS = 50_000_000
#: Most engine steps one run takes (about 30 s and 1.5 GB of iteration log on a laptop core).
MAX_STEPS = 5_000_000


def max_request_tokens(replica: sizing.Replica, config: SchedulerConfig | None = None) -> int:
    """The most prompt + output tokens one request may have and ever be admitted on ``replica``
    (longer ones are rejected ``"too_long"``): the KV pool less the admission watermark, tokens.
    0 when the layout leaves no KV memory at all."""
    v.check_instance("replica", replica, sizing.Replica, "vidya_lab.sizing.Replica")
    cfg = SchedulerConfig() if config is None else v.check_instance("config", config,
                                                                    SchedulerConfig)
    if replica.kv_blocks < 1:
        return 0
    return KVPool(replica, cfg.kv_policy, WATERMARK_FRACTION).max_request_tokens()


def simulate(replica: sizing.Replica, workload: Workload, config: SchedulerConfig | None = None,
             *, duration_s: float | None = None, drain: bool = True,
             service_time_s=None) -> SimResult:
    """Simulate one replica serving a workload, one engine iteration at a time.

    Parameters
    ----------
    replica : the :class:`vidya_lab.sizing.Replica` (cost model, KV pool, engine caps).
    workload : a :class:`vidya_lab.workload.Workload` (every request needs ≥ 1 prompt and ≥ 1
        output token); see :func:`~vidya_lab.admission.poisson_workload` and
        :func:`~vidya_lab.admission.upload_workload`.
    config : the :class:`~vidya_lab.admission.SchedulerConfig` (default: chunked prefill with the
        engine's token budget for the GPU, one partial prefill, vLLM-style KV preemption).
    duration_s : only requests arriving before this time (seconds) are simulated; ``None``: all.
    drain : ``True`` (default) runs until every admitted request has finished or been rejected;
        ``False`` starts no step at or after ``duration_s`` (the step under way completes), and
        whatever is still waiting or running is reported in flight.
    service_time_s : queueing-theory mode (module docstring): one service time per workload row,
        seconds (> 0), replacing the cost model; needs policy ``"fcfs"`` and one output token per
        request.

    Returns
    -------
    SimResult. Conservation ``arrived = finished + rejected + in_flight`` holds exactly.
    """
    v.check_instance("replica", replica, sizing.Replica, "vidya_lab.sizing.Replica")
    w = _check_workload(workload)
    cfg = SchedulerConfig() if config is None else v.check_instance("config", config,
                                                                    SchedulerConfig)
    drain = v.check_bool("drain", drain)
    if replica.kv_blocks < 1:
        raise ValueError(f"{replica.model.id} on {replica.n_gpus} x {replica.gpu.id} leaves no KV "
                         f"memory (kv_blocks = 0); choose more GPUs per replica or a smaller model")
    if duration_s is None:
        horizon = w.duration_s + 1.0 if len(w) else 0.0
        if not drain:
            raise ValueError("drain=False needs duration_s (when to stop)")
    else:
        horizon = v.check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
        w = w[w.arrival_s < horizon]
    service = None if service_time_s is None else _service_times(service_time_s, workload, w, cfg)
    _check_size(w, cfg, replica)
    start = time.perf_counter()
    eng = Engine(replica, w, cfg, horizon, drain, service, MAX_STEPS)
    eng.run()
    return collect(eng, w, cfg, time.perf_counter() - start)


def _check_workload(w) -> Workload:
    v.check_instance("workload", w, Workload, "vidya_lab.workload.Workload")
    if len(w) and int(w.prompt_tokens.min()) < 1:
        i = int(np.argmin(w.prompt_tokens))
        raise ValueError(f"every request needs prompt_tokens >= 1; request {i} has "
                         f"{int(w.prompt_tokens[i])}")
    if len(w) and int(w.output_tokens.min()) < 1:
        i = int(np.argmin(w.output_tokens))
        raise ValueError(f"every request needs output_tokens >= 1; request {i} has "
                         f"{int(w.output_tokens[i])}")
    return w


def _service_times(service_time_s, full: Workload, w: Workload, cfg: SchedulerConfig) -> list:
    """The queueing mode's service times (one per workload row, > 0 s) for the simulated rows."""
    st = v.check_reals("service_time_s", service_time_s, max_length=len(full))
    if st.shape != (len(full),):
        raise ValueError(f"service_time_s must have one time per workload request ({len(full)}), "
                         f"got shape {st.shape}")
    if np.any(st <= 0):
        raise ValueError("service_time_s must be finite and > 0 seconds")
    if cfg.policy != "fcfs":
        raise ValueError(f"service_time_s needs policy 'fcfs', got {cfg.policy!r}")
    if len(w) and int(w.output_tokens.max()) != 1:
        raise ValueError("service_time_s needs output_tokens == 1 for every request (each "
                         "request is one step)")
    return st[:len(w)].tolist()


def _check_size(w: Workload, cfg: SchedulerConfig, replica: sizing.Replica) -> None:
    """Refuse, before any work, a run beyond :data:`MAX_REQUESTS`, :data:`MAX_OUTPUT_TOKENS` or
    (at least) :data:`MAX_STEPS` steps."""
    hint = "simulate a shorter window or a lower rate"
    v.check_work("the workload", len(w), MAX_REQUESTS, unit="requests", hint=hint)
    tokens = float(w.output_tokens.sum()) if len(w) else 0.0
    v.check_work("the workload", tokens, MAX_OUTPUT_TOKENS, unit="output tokens", hint=hint)
    if len(w):   # each decode round emits one token per sequence, at most a batch of them
        batch = cfg.max_batch if cfg.max_batch is not None else replica.max_num_seqs
        steps = max(tokens / batch, float(w.output_tokens.max()))
        v.check_work("the workload", steps, MAX_STEPS, hint=hint,
                     unit=f"engine steps at least (its longest answer, or its output tokens / a "
                          f"batch of {batch})")
