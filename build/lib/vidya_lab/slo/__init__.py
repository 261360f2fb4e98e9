"""Latency metrics that users feel, from request timelines; percentiles; SLO attainment; goodput.

Every simulator in vidya-lab (the toy server of chapter 1, the replica simulator of chapter 5, the fleet
of chapter 6) and every recorded trace is reduced to the same thing: a **request timeline**, and every
metric below is defined from its timestamps, the way Vidur's ``docs/metrics.md`` does
(Agrawal et al., 2024).

The timeline of request ``r`` (all times in seconds on one clock)
---------------------------------------------------------------

============  ===============================================================================
``a_r``       ``arrival_s``: the request reaches the server (the client pressed *send*).
``s_r``       ``admitted_s`` (optional): the scheduler admits it into a running batch.
``f_r``       ``first_token_s``: the first output token is emitted (its prefill is done).
``t_r,i``     ``token_times_s`` (optional): the emit time of output token ``i`` (``i = 1..n_r``);
              tokens emitted by one step (speculative decoding, multi-step) share a time.
``c_r``       ``finish_s``: the last output token is emitted (or the request gave up).
``n_r``       ``output_tokens``: how many tokens were emitted.
outcome       ``finished``, ``rejected`` (turned away, never served) or ``timed_out`` (gave up).
============  ===============================================================================

Metrics, each from those timestamps
------------------------------------

* queue wait ``= s_r − a_r`` (:func:`queue_wait_s`);
* TTFT, time to first token ``= f_r − a_r`` (:func:`ttft_s`). It **includes queueing**: a reader waits
  for the queue, the prefill and the network alike. (Vidur logs both: ``prefill_time_e2e`` is
  ``f_r − a_r`` and ``prefill_time_execution_plus_preemption`` is ``f_r − s_r``; a "TTFT" measured
  inside the engine from admission is the second one and hides the queue.)
* end-to-end latency ``= c_r − a_r`` (:func:`e2e_s`);
* TPOT, time per output token ``= (c_r − f_r) / (n_r − 1)`` (:func:`tpot_s`): the mean gap between
  tokens after the first. Undefined for ``n_r = 1`` (no gap): reported as NaN and counted, never a
  crash. vLLM's ``benchmark_serving`` uses this definition and drops ``n_r = 1`` requests; NVIDIA's
  GenAI-Perf/AIPerf calls the same quantity "inter-token latency"; Ray's LLMPerf sums every gap
  from the send to the last token (TTFT included) and divides by ``n_r``, about ``(c_r − a_r) / n_r``. Check the
  definition before comparing numbers across tools.
* ITL, inter-token latency in vLLM's sense: the gaps between consecutive *emissions*
  ``t_r,i+1 − t_r,i`` over distinct emit times (:func:`itl_s`). When a step emits several tokens at
  once (speculative decoding accepts k tokens, or multi-step scheduling flushes a chunk), one ITL gap
  covers several tokens: ITL gaps are then larger and burstier than TPOT, which spreads the
  same wall time over every token. With one token per step the mean ITL of a request equals its TPOT.
* tokens per second per user ``= (n_r − 1) / (c_r − f_r) = 1 / TPOT`` (:func:`tokens_per_s_per_user`):
  the speed at which text streams once it has started.
* throughput ``= Σ n_r / (max c_r − min a_r)`` output tokens/s and ``N_finished / (max c_r − min a_r)``
  requests/s (:func:`throughput`).

Distributions, not means
------------------------
:func:`percentile` uses numpy's ``linear`` method (Hyndman and Fan's type 7, also R's default);
:func:`percentile_summary` returns the p50/p90/p95/p99/mean object every vidya-lab command prints.
How sure a percentile is depends on the sample: :func:`bootstrap_percentile_ci` (Efron, 1979) for
independent values, :func:`batch_means_ci` for a correlated series such as the latencies of one
queue in time order. The fleet p99 is the p99 of *all* requests pooled (:func:`pooled_percentile`),
not the mean of per-replica p99s (:func:`mean_of_percentiles`, the pitfall).

Targets
-------
An :class:`SLO` holds per-request targets (TTFT, TPOT, end-to-end, and ``itl_s``: the longest gap
between two tokens a request may see, which a mean TPOT hides); :func:`attainment` is the fraction of
*all* requests that meet every one (rejected and timed-out requests miss). Goodput has two senses, named apart:
:func:`goodput_requests_per_s` (vLLM's, a rate of SLO-meeting requests) and
:func:`max_rate_meeting_slo` (DistServe's, the highest rate that keeps attainment above a target).
:func:`latency_budget` and :func:`tpot_for_reading_speed` say where targets come from.

Read the code (in this order)
-----------------------------
=====================  =====================================================  ========================
file                   the idea                                               the function to read
=====================  =====================================================  ========================
``timelines.py``       one record per request, and the columnar form           :class:`Timelines`
``consistency.py``     what makes a timeline consistent                        ``row_problem``
``metrics.py``         TTFT, TPOT, ITL, end-to-end: a formula each             :func:`tpot_s`
``percentiles.py``     percentiles (overflow-safe), pooled vs averaged         :func:`percentile_summary`
``intervals.py``       how sure is a p99: bootstrap vs batch means             :func:`batch_means_ci`
``attainment.py``      SLO, attainment and both goodputs                       :func:`attainment`
``budgets.py``         a TTFT budget, a TPOT from reading speed                :func:`latency_budget`
``summary.py``         the one summary every report prints                    :func:`summarize`
``trace_csv.py``       traces on disk, errors that name the row                :func:`read_trace_csv`
=====================  =====================================================  ========================
"""

from vidya_lab.slo.budgets import (
    READING_WORDS_PER_MIN,
    TOKENS_PER_WORD,
    LatencyBudget,
    latency_budget,
    tpot_for_reading_speed,
)

# Everything else needs numpy. Where numpy cannot be imported (the book's in-browser notebooks
# before the Pyodide CDN answers) ``budgets`` still loads -- the scenario and the exercise checks
# read it -- and the other names say what they need when asked for.
try:
    import numpy as _numpy  # noqa: F401
except ImportError:
    _NEEDS_NUMPY = True
else:
    _NEEDS_NUMPY = False
    from vidya_lab.slo.attainment import (
        SLO,
        GoodputSearch,
        attainment,
        goodput_requests_per_s,
        max_rate_meeting_slo,
        meets_slo,
    )
    from vidya_lab.slo.consistency import (
        FINISHED,
        MAX_OUTPUT_TOKENS_PER_REQUEST,
        OUTCOMES,
        REJECTED,
        TIMED_OUT,
    )
    from vidya_lab.slo.intervals import (
        BatchMeansCI,
        batch_means_ci,
        bootstrap_percentile_ci,
        chi_square_quantile,
        student_t_quantile,
    )
    from vidya_lab.slo.metrics import (
        e2e_s,
        itl_s,
        longest_gap_s,
        queue_wait_s,
        throughput,
        tokens_per_s_per_user,
        tpot_s,
        ttft_s,
    )
    from vidya_lab.slo.percentiles import (
        PERCENTILES,
        mean_of_percentiles,
        percentile,
        percentile_summary,
        pooled_percentile,
    )
    from vidya_lab.slo.summary import summarize
    from vidya_lab.slo.timelines import RequestTimeline, Timelines, as_timelines
    from vidya_lab.slo.trace_csv import TRACE_COLUMNS, read_trace_csv, write_trace_csv

__all__ = [
    "OUTCOMES",
    "FINISHED",
    "REJECTED",
    "TIMED_OUT",
    "MAX_OUTPUT_TOKENS_PER_REQUEST",
    "RequestTimeline",
    "Timelines",
    "as_timelines",
    "queue_wait_s",
    "ttft_s",
    "e2e_s",
    "tpot_s",
    "itl_s",
    "longest_gap_s",
    "tokens_per_s_per_user",
    "throughput",
    "PERCENTILES",
    "percentile",
    "percentile_summary",
    "bootstrap_percentile_ci",
    "batch_means_ci",
    "BatchMeansCI",
    "chi_square_quantile",
    "student_t_quantile",
    "pooled_percentile",
    "mean_of_percentiles",
    "SLO",
    "meets_slo",
    "attainment",
    "goodput_requests_per_s",
    "max_rate_meeting_slo",
    "GoodputSearch",
    "latency_budget",
    "LatencyBudget",
    "tpot_for_reading_speed",
    "READING_WORDS_PER_MIN",
    "TOKENS_PER_WORD",
    "summarize",
    "read_trace_csv",
    "write_trace_csv",
    "TRACE_COLUMNS",
]


def __getattr__(name: str):
    if _NEEDS_NUMPY and name in __all__:
        raise ModuleNotFoundError(f"vidya_lab.slo.{name} needs numpy, which this Python cannot "
                                  "import (in the in-browser book it comes from the Pyodide CDN)",
                                  name="numpy")
    raise AttributeError(f"module 'vidya_lab.slo' has no attribute {name!r}")
