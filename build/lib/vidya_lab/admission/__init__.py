"""The replica simulator: one serving replica, one engine iteration at a time.

Chapter 5 asks why one teacher's 50-page upload froze every student's answer, and what a scheduler
can do about it. This package answers with a discrete-event model of ONE replica at **iteration
level**, the way vLLM's and Sarathi-Serve's schedulers work: each engine step is one event; its
duration is THE cost model, :meth:`vidya_lab.sizing.Replica.step_time_s` fed with
:func:`vidya_lab.sizing.prefill_work` aggregates (nothing here re-derives a step time).

What one iteration does (:mod:`~vidya_lab.admission.engine`)
-------------------------------------------------------------
At each iteration boundary the engine takes in the requests that arrived and applies admission
control to each (:mod:`~vidya_lab.admission.intake`); sheds waiting requests past their deadline;
if decodes will run, makes sure the KV pool holds this round's new tokens, preempting if it must
(:mod:`~vidya_lab.admission.memory`); lets the **policy** pick the prompt work
(:mod:`~vidya_lab.admission.policies`); and runs the step for the cost model's time. At the end of
the step every decoding sequence emits one token (all at the step's end time), and a sequence whose
prefill completed emits its first token. A request with ``n`` output tokens finishes at the step
that emits its ``n``-th token.

Policies (:data:`POLICIES`, :mod:`~vidya_lab.admission.policies`)
-----------------------------------------------------------------
``"fcfs"`` (vLLM V0's whole-prompt scheduler: a long upload is one step of seconds, **the freeze**),
``"chunked"`` (Sarathi-Serve's stall-free batching as vLLM runs it: decodes first, prompt chunks
in the rest of a token budget; the budget defaults to vLLM V1's ``max_num_batched_tokens`` for the
GPU, 8192 on an H100, and ``max_num_partial_prefills > 1`` lets several prompts share it so a short
one overtakes a long one), ``"priority"`` (chunked, prompts ordered by class with optional aging).

KV memory (:data:`KV_POLICIES`, :mod:`~vidya_lab.admission.memory`)
-------------------------------------------------------------------
``"preempt"`` (vLLM's paged allocation: admit on the prompt's blocks with a 1 % watermark, take a
block per ``B`` decoded tokens, preempt the newest request and **recompute** it when the pool runs
out; streamed tokens stay streamed, nothing is lost) or ``"reserve"`` (TensorRT-LLM's "guaranteed no
evict": reserve prompt and output up front, never preempt).

Admission control (:mod:`~vidya_lab.admission.intake`)
------------------------------------------------------
A request is always counted: finished, rejected (``"too_long"``, ``"queue_full"``,
``"tokens_in_flight"``, ``"deadline"``: :data:`REJECT_REASONS`), or in flight at the end;
``arrived = finished + rejected + in_flight`` exactly (:meth:`SimResult.counts`).

Queueing-theory mode: ``service_time_s`` replaces the cost model, and with ``"fcfs"``, one slot and
one token per request the replica is an M/M/1 or M/D/1 queue (:mod:`~vidya_lab.admission.simulation`).

Output (:mod:`~vidya_lab.admission.results`): :class:`SimResult`, the timelines as a columnar
:class:`vidya_lab.slo.Timelines` with per-token emit times (ITL is exact), reject reasons, the ids
still in flight, and the iteration log. Same seed, same result: the simulator draws no random
numbers of its own.

Limits: the simulator does not model prefix caching (every prompt is prefilled in full; chapter 4
covers the cache, and the sizing of :mod:`~vidya_lab.admission.disaggregation` counts it), nor
speculative decoding (one token per sequence per step). With pipeline parallelism (``pp > 1``) a step runs through all stages in turn, as the cost model's step time says; the
micro-batches an engine keeps in flight to fill the pipeline are not modelled, so throughput is
understated for ``pp > 1`` (:func:`vidya_lab.sizing.saturated_throughput` assumes ``pp``
micro-batches in flight). Speed: bookkeeping is aggregate (the decode set is a count, a context sum
and a block-phase histogram; finishing times are bucketed by round), so a step costs the same whether
2 or 200 sequences decode; a run of decode-only steps goes in one go up to the next event that
changes the batch, with step times cached by batch shape (bit-identical to one step at a time); see
``benchmarks/bench_simulator.py``.

Read the code (in this order)
-----------------------------
=====================  ======================================================  ===================================
file                   the idea                                                the function to read
=====================  ======================================================  ===================================
``config.py``          what a run can be told, with the engine's defaults      :func:`engine_default_chunk_tokens`
``workloads.py``       students and one teacher's upload                       :func:`upload_workload`
``requests.py``        a request's life: wait, prefill, decode, done           ``RequestBook.back_to_waiting``
``intake.py``          admission control and the queues                        ``Intake.take_arrivals``
``memory.py``          the KV pool and the decoding set's blocks               ``DecodeSet.blocks_needed``
``policies.py``        which prompts a step carries: the freeze and its cures  ``partial_prefills``
``engine.py``          the loop: one iteration, one event                      ``Engine.run``
``simulation.py``      checks, limits, queueing mode; the entry point          :func:`simulate`
``results.py``         timelines and the iteration log                         ``collect``
``theory.py``          the simulator against M/M/1 and M/D/1                   :func:`queueing_check`
``reading.py``         what the students felt during the upload                :func:`upload_report`
``disaggregation.py``  prefill and decode pools apart: when it pays            :func:`when_it_pays`
=====================  ======================================================  ===================================

``disaggregation.py`` is the chapter's last idea: the same cost model sizes a prefill pool for the
TTFT target, a decode pool for the TPOT target and the KV transfer between them, against colocated
replicas. ``theory.py`` is the check that comes first in the chapter: the simulator, reduced to one
slot, against the queueing formulas.
"""

from vidya_lab.admission.config import (
    DEFAULT_CLASS_PRIORITY,
    KV_POLICIES,
    POLICIES,
    REJECT_REASONS,
    STUDENT,
    UPLOAD,
    VLLM_LONG_PREFILL_FRACTION,
    WATERMARK_FRACTION,
    SchedulerConfig,
    engine_default_chunk_tokens,
)
from vidya_lab.admission.disaggregation import (
    colocated_pool,
    decode_pool,
    disaggregated,
    kv_transfer_s,
    prefill_pool,
    sequences_that_fit,
    stall_free_budget,
    tpot_sweep,
    when_it_pays,
)
from vidya_lab.admission.engine import StepLimitExceeded
from vidya_lab.admission.policies import chunked_prefill_time_s
from vidya_lab.admission.reading import (
    itl_timeline,
    upload_report,
    window_summary,
    worst_gap_by_time,
)
from vidya_lab.admission.results import IterationLog, SimResult
from vidya_lab.admission.simulation import (
    MAX_OUTPUT_TOKENS,
    MAX_REQUESTS,
    MAX_STEPS,
    max_request_tokens,
    simulate,
)
from vidya_lab.admission.theory import queueing_check
from vidya_lab.admission.workloads import poisson_workload, saturation_rate_per_s, upload_workload
from vidya_lab.scenario import TANVI as TANVI  # the scenario the defaults come from

__all__ = [
    "POLICIES",
    "KV_POLICIES",
    "REJECT_REASONS",
    "STUDENT",
    "UPLOAD",
    "DEFAULT_CLASS_PRIORITY",
    "WATERMARK_FRACTION",
    "VLLM_LONG_PREFILL_FRACTION",
    "SchedulerConfig",
    "engine_default_chunk_tokens",
    "IterationLog",
    "SimResult",
    "simulate",
    "max_request_tokens",
    "MAX_REQUESTS",
    "MAX_OUTPUT_TOKENS",
    "MAX_STEPS",
    "StepLimitExceeded",
    "poisson_workload",
    "upload_workload",
    "saturation_rate_per_s",
    "itl_timeline",
    "worst_gap_by_time",
    "window_summary",
    "upload_report",
    "chunked_prefill_time_s",
    "kv_transfer_s",
    "sequences_that_fit",
    "decode_pool",
    "prefill_pool",
    "colocated_pool",
    "stall_free_budget",
    "disaggregated",
    "when_it_pays",
    "tpot_sweep",
    "queueing_check",
]
