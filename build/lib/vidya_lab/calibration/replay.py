"""Replaying a published benchmark through the cost model: one prediction per measured row.

Each source is predicted with the memory rule and batch limits of its engine, and with the
conditions it states:

* ``ttft_bs1`` (TensorRT-LLM v0.9 "Low Latency" table): one prefill of isl tokens, idle replica.
* ``output_throughput_per_gpu`` (v0.9, static batching at the stated ``batch_size``): the batch's
  prefill, then osl−1 decode steps at growing context; tokens ÷ time ÷ GPUs.
* online serving (v0.14) at a light offered load (QPS=2): TTFT = the prefill iteration (with the
  sequences in flight decoding alongside) plus half a decode step of waiting; ITL = decode steps
  stretched by the prefills of other arrivals; in-flight sequences from Little's law (fixed point).
* online serving at QPS=INF, and any "all requests at once" run: an iteration-level replay of
  in-flight batching (prompts whole, admitted while the token budget, the batch cap and KV blocks
  last).
* offline throughput runs of thousands of requests (TensorRT-LLM's ``trtllm-bench throughput``,
  vLLM's ``benchmark_throughput``): the steady cycle of a saturated replica
  (:func:`vidya_lab.sizing.cycle`), output tokens/s of the whole system (replicas = GPUs ÷ tp).
  A source that does not say whether its tokens/s counts input tokens too is used only where the
  two readings differ by at most :data:`AMBIGUITY_LIMIT` (isl/osl small), and the row says so.
* MLPerf rows are not replayed: the dataset's input lengths are not recorded beside them.
"""

from __future__ import annotations

import functools
import math

from vidya_lab import _validate as v
from vidya_lab import catalog, sizing
from vidya_lab.calibration.rows import Row, check_row
from vidya_lab.sizing import Calibration, Replica
from vidya_lab.sizing.engine import TRTLLM_MAX_BATCH, TRTLLM_MAX_NUM_TOKENS
from vidya_lab.sizing.replica import MAX_NUM_SEQS

#: The memory rule of each source's engine, by the start of the source's name (a row whose source
#: matches none is not predicted).
SOURCE_RULE = {
    "TensorRT-LLM online serving (v0.14)": "trtllm",
    "TensorRT-LLM perf doc (v0.9.0)": "trtllm",
    "TensorRT-LLM perf overview (v1.0": "trtllm",
    "AMD ROCm performance results (vLLM": "vllm",
}
#: Metrics the fit uses (timing measurements that depend on the efficiencies).
FIT_METRICS = ("ttft_bs1", "output_throughput_per_gpu", "mean_ttft", "mean_itl_tpot",
               "output_throughput_total", "throughput_total_or_output")
#: Largest relative difference between "output tokens/s" and "input + output tokens/s"
#: (= isl/osl) at which a row that does not say which it counts is still used.
AMBIGUITY_LIMIT = 0.07
#: Requests per run in the v0.14 online-serving table ("500 requests").
ONLINE_REQUESTS = 500
#: Largest run a replay accepts (requests): bounds its time.
MAX_REPLAY_REQUESTS = 200_000


def rule_for(row: Row) -> str | None:
    """The memory rule of the row's engine (:data:`SOURCE_RULE`); None when the source is not one
    the model replays."""
    check_row("row", row)
    for start, rule in SOURCE_RULE.items():
        if row.source.startswith(start):
            return rule
    return None


def is_ambiguous(row: Row) -> bool:
    """A throughput row that does not say whether it counts input tokens."""
    return row.metric == "throughput_total_or_output"


def is_timing(row: Row) -> bool:
    """A measured timing row the model predicts: a replayed source and metric, catalog ids, an
    engine layout, and (for an ambiguous throughput) isl/osl within :data:`AMBIGUITY_LIMIT`."""
    check_row("row", row)
    if row.metric not in FIT_METRICS or rule_for(row) is None or row.si_value is None:
        return False
    try:
        catalog.model_id_for(row.model)
        catalog.gpu_id_for(row.gpu)
        catalog.get_precision(row.precision.lower())
    except KeyError:
        return False
    if row.isl is None or row.osl is None:
        return False
    return not is_ambiguous(row) or row.isl / row.osl <= AMBIGUITY_LIMIT


def is_offline(row: Row) -> bool:
    """An offline max-throughput run (many requests at an unlimited rate, no QPS stated)."""
    return row.metric in ("output_throughput_total", "throughput_total_or_output") \
        and row.offered_qps is None


def _stated_max_seqs(row: Row) -> int | None:
    import re

    m = re.search(r"max num seqs (\d+)", row.notes)
    return int(m.group(1)) if m else None


def replica_for(row: Row, calibration: Calibration, **kwargs) -> Replica:
    """The replica a published timing row ran on (its engine's memory rule and limits)."""
    v.check_instance("calibration", calibration, Calibration, "sizing.Calibration")
    rule = rule_for(row)
    kw = {"max_batched_tokens": TRTLLM_MAX_NUM_TOKENS, "max_num_seqs": TRTLLM_MAX_BATCH} \
        if rule == "trtllm" else {}
    if _stated_max_seqs(row):
        kw["max_num_seqs"] = min(_stated_max_seqs(row), MAX_NUM_SEQS)
    kw.update(kwargs)
    return Replica(catalog.model_id_for(row.model), catalog.gpu_id_for(row.gpu), tp=row.tp or 1,
                   precision=row.precision.lower(), kv_precision=row.kv_precision,
                   memory_rule=rule, calibration=calibration, **kw)


def _check_lengths(isl, osl):
    return (v.check_int("isl", isl, minimum=1, maximum=1_000_000),
            v.check_int("osl", osl, minimum=1, maximum=1_000_000))


def static_batch_throughput_per_gpu(r: Replica, batch: int, isl: int, osl: int) -> float:
    """Output tokens/s per GPU of static batching: prefill the batch, then osl−1 decode steps."""
    sizing._as_replica(r)
    batch = v.check_int("batch", batch, minimum=1, maximum=MAX_NUM_SEQS)
    isl, osl = _check_lengths(isl, osl)
    t = r.step_time_s(batch * isl, batch * isl * (isl + 1) / 2, batch * isl, batch, 0, 0)
    t += sizing.decode_steps_time_s(r, batch, isl + 1, osl - 1)
    return batch * osl / t / r.n_gpus


def light_load(r: Replica, qps: float, isl: int, osl: int) -> dict:
    """Mean TTFT, ITL and output throughput of a lightly loaded replica (Poisson, rate ``qps``).

    In flight: L = qps·(TTFT + (osl−1)·ITL) (Little). A new prompt's prefill runs with the L
    decoders; TTFT = that iteration + half a decode step of waiting. Decode steps take T_d(L); a
    share qps·T_mix of time goes to mixed prefill iterations, which also emit one token per
    decoder: ITL = 1 / ((1 − qps·T_mix)/T_d + qps). An overloaded replica (qps·T_mix ≥ 1) gives
    infinite latencies and zero throughput.
    """
    sizing._as_replica(r)
    qps = v.check_real("qps", qps, minimum=0.0, min_inclusive=False, maximum=1e6)
    isl, osl = _check_lengths(isl, osl)
    ctx = isl + osl / 2
    n = 0.0
    ttft = itl = math.inf
    for _ in range(50):
        t_mix = r.step_time_s(isl, isl * (isl + 1) / 2, isl, 1, n, n * ctx)
        t_d = r.step_time_s(0, 0, 0, 0, max(n, 1.0), max(n, 1.0) * ctx)
        busy = qps * t_mix
        if busy >= 1:
            return {"mean_ttft": math.inf, "mean_itl_tpot": math.inf, "output_throughput_total": 0.0}
        itl = 1.0 / ((1.0 - busy) / t_d + qps)
        ttft = r.calibration.request_overhead_s + t_mix + 0.5 * t_d
        n_new = qps * (ttft + (osl - 1) * itl)
        if abs(n_new - n) < 1e-6:
            break
        n = n_new
    return {"mean_ttft": ttft, "mean_itl_tpot": itl, "output_throughput_total": qps * osl}


def closed_batch(r: Replica, n_requests: int, isl: int, osl: int) -> dict:
    """All ``n_requests`` arrive at t=0: replay in-flight batching iteration by iteration.

    Each iteration: every running sequence decodes one token; waiting prompts (whole, no chunking)
    join while the token budget ``r.max_batched_tokens``, the batch cap ``r.max_num_seqs`` and the
    KV blocks (isl+osl tokens reserved per request) allow. Returns mean TTFT, mean ITL
    ((e2e − TTFT)/(osl−1)) and output tokens/s over the whole run.
    """
    sizing._as_replica(r)
    n_requests = v.check_int("n_requests", n_requests, minimum=1, maximum=MAX_REPLAY_REQUESTS)
    isl, osl = _check_lengths(isl, osl)
    budget_cap = r.max_batched_tokens
    kv_limit = sizing.max_concurrent_sequences(r, min(isl + osl, r.model.max_context_tokens))
    per_iter = max(1, min(budget_cap // isl, n_requests))
    waiting = n_requests
    groups: list[list[float]] = []  # [count, tokens generated so far, ttft]
    t = ttft_sum = itl_sum = 0.0
    while waiting or groups:
        running = sum(g[0] for g in groups)
        room = min(kv_limit, r.max_num_seqs) - running
        budget = budget_cap - running
        admit = int(max(0, min(waiting, per_iter, room, budget // isl)))
        if admit == 0 and not groups:
            raise ValueError(f"{r.model.id} on {r.gpu.id}: no request of {isl}+{osl} tokens fits")
        decode_ctx = sum(g[0] * (isl + g[1]) for g in groups)
        t += r.step_time_s(admit * isl, admit * isl * (isl + 1) / 2, admit * isl, admit,
                           running, decode_ctx)
        for g in groups:
            g[1] += 1
        if admit:
            groups.append([admit, 1, t])
            ttft_sum += admit * t
            waiting -= admit
        for g in groups:
            if g[1] >= osl and osl > 1:
                itl_sum += g[0] * (t - g[2]) / (osl - 1)
        groups = [g for g in groups if g[1] < osl]
    return {"mean_ttft": r.calibration.request_overhead_s + ttft_sum / n_requests,
            "mean_itl_tpot": itl_sum / n_requests if osl > 1 else 0.0,
            "output_throughput_total": n_requests * osl / t}


@functools.lru_cache(maxsize=512)
def _closed_batch_cached(r: Replica, n_requests: int, isl: int, osl: int) -> dict:
    return closed_batch(r, n_requests, isl, osl)  # three metrics per run share one replay


def _requests_in(row: Row) -> int:
    import re

    m = re.search(r"requests=(\d+)", row.notes)
    return int(m.group(1)) if m else ONLINE_REQUESTS


def predict_row(row: Row, calibration: Calibration | None = None) -> float | None:
    """The model's prediction for one timing row, in the row's SI unit (s or tokens/s); None if the
    row is not a timing measurement the model predicts."""
    cal = sizing.fitted_calibration() if calibration is None else \
        v.check_instance("calibration", calibration, Calibration, "sizing.Calibration")
    if not is_timing(row):
        return None
    if row.metric == "ttft_bs1":
        r = replica_for(row, cal, max_batched_tokens=max(TRTLLM_MAX_NUM_TOKENS, row.isl))
        return sizing.prefill_time_s(r, row.isl)
    if row.metric == "output_throughput_per_gpu":
        return static_batch_throughput_per_gpu(replica_for(row, cal), row.batch_size, row.isl,
                                               row.osl)
    r = replica_for(row, cal)
    if is_offline(row):
        replicas = max(1, (row.n_gpus or r.n_gpus) // r.n_gpus)
        return replicas * sizing.saturated_throughput(r, row.isl, row.osl)["output_tokens_per_s"]
    qps = row.offered_qps
    if qps is None:
        return None
    out = (_closed_batch_cached(r, _requests_in(row), row.isl, row.osl) if math.isinf(qps)
           else light_load(r, qps, row.isl, row.osl))
    return out[row.metric]
