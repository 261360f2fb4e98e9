"""vLLM's serving benchmark result: ``vllm bench serve --save-result --save-detailed`` and the older
``python benchmarks/benchmark_serving.py --save-result``.

Layout (read from vllm-project/vllm: ``vllm/benchmarks/serve.py`` at commit 009e6d4a,
``vllm/benchmarks/lib/endpoint_request_func.py`` at 02cfb534, and the older
``benchmarks/benchmark_serving.py`` at 0049e29c): one JSON object with

* settings: ``date``, ``backend``, ``label``, ``model_id``, ``tokenizer_id``, ``num_prompts``,
  ``request_rate`` (a number or ``"inf"``), ``burstiness``, ``max_concurrency``;
* aggregates: ``duration`` (s), ``completed``, ``failed``, ``total_input_tokens``,
  ``total_output_tokens``, ``request_throughput`` (req/s), ``output_throughput`` (tok/s),
  ``mean_/median_/std_/p99_{ttft,tpot,itl,e2el}_ms`` (milliseconds);
* per-request lists, one entry per request in send order, kept only with ``--save-detailed``
  (the older script kept them always): ``input_lens``, ``output_lens`` (0 for a failed request),
  ``ttfts`` (s from the send to the first streamed chunk; 0.0 if it failed), ``itls`` (per request,
  the s between consecutive chunks), ``errors`` (``""`` when it succeeded), ``generated_texts``;
  newer versions add ``start_times`` (the client's ``time.perf_counter()`` at the send),
  ``latencies`` (s from the send to the last chunk) and ``queue_times`` (s the client waited for a
  ``--max-concurrency`` slot before sending).

Mapping: arrival = send time, first token = send + ``ttfts``, each later chunk = the running sum of
``itls``, finish = the last chunk, ``n`` = ``output_lens``. vLLM's TTFT and TPOT
``(latency − ttft)/(output_len − 1)`` are chapter 1's; vLLM's ITL list (gaps between chunks) is
chapter 1's ITL. Without ``start_times`` every request is placed at 0 s (see
:data:`~vidya_lab.traces._trace.NO_ARRIVALS`).
"""

from __future__ import annotations

import json
import math

import numpy as np

from vidya_lab import slo
from vidya_lab._validate import atomic_write_text, check_output_file
from vidya_lab.traces import _load
from vidya_lab.traces._trace import Request, Trace, build_trace
from vidya_lab.traces._write import emissions, error_text, prompt_column, timelines_of

FORMAT = "vllm"
PER_REQUEST = ("ttfts", "itls", "output_lens")
OPTIONAL = ("input_lens", "errors", "latencies", "start_times", "queue_times")
SETTINGS = {"model_id": "model", "backend": "backend", "label": "label", "date": "date",
            "tokenizer_id": "tokenizer", "num_prompts": "num_prompts", "burstiness": "burstiness",
            "max_concurrency": "concurrency", "duration": "duration_s"}


def read_vllm(path) -> Trace:
    """Read a vLLM serving benchmark result (JSON) into a :class:`~vidya_lab.traces.Trace`.

    Raises ``ValueError`` (naming the file) for a file that is not a vLLM result, one saved
    without its per-request lists (``--save-detailed``), lists of different lengths, or values
    that are not finite non-negative numbers.
    """
    name, kind, doc = _load.load_document(path)
    return from_document(name, kind, doc)


def from_document(name: str, kind: str, doc) -> Trace:
    """:func:`read_vllm` on an already loaded document."""
    if kind != _load.JSON or not isinstance(doc, dict):
        raise ValueError(f"{name}: not a vLLM benchmark result (expected one JSON object with "
                         f"{', '.join(PER_REQUEST)})")
    missing = [k for k in PER_REQUEST if doc.get(k) is None]
    if missing:
        if len(missing) == len(PER_REQUEST) and any(
                k in doc for k in ("mean_ttft_ms", "completed", "request_throughput")):
            raise ValueError(f"{name}: this vLLM result holds aggregates only (no per-request "
                             f"{', '.join(missing)}): re-run `vllm bench serve` with "
                             f"--save-result --save-detailed")
        if len(missing) < len(PER_REQUEST):
            raise ValueError(f"{name}: the vLLM result lacks the per-request {', '.join(missing)} "
                             f"(it needs {', '.join(PER_REQUEST)})")
        raise ValueError(f"{name}: not a vLLM benchmark result: missing {', '.join(missing)}")
    cols = {k: doc[k] for k in (*PER_REQUEST, *OPTIONAL) if doc.get(k) is not None}
    for key, value in cols.items():
        if not isinstance(value, list):
            raise ValueError(f"{name}: {key} must be a list with one entry per request")
    count = len(cols["ttfts"])
    for key, value in cols.items():
        if len(value) != count:
            raise ValueError(f"{name}: {key} has {len(value)} entries but ttfts has {count}: "
                             f"the per-request lists must be equally long")
    if count == 0:
        raise ValueError(f"{name}: the vLLM result lists no requests")
    burst = "start_times" not in cols and _is_burst(doc)
    if burst:
        cols["start_times"] = burst_send_times(cols, doc.get("max_concurrency"))
    requests, notes = _requests(name, cols)
    assumptions = _assumptions(cols)
    if burst:
        assumptions = [a for a in assumptions if not a.startswith("this result has no start_")]
        assumptions.append(_burst_note(doc.get("max_concurrency")))
    return build_trace(name, FORMAT, requests, arrivals_known="start_times" in cols,
                       conversions=_conversions(cols, notes), assumptions=assumptions,
                       metadata=_metadata(doc))


def _is_burst(doc: dict) -> bool:
    """``request_rate`` ``"inf"`` (or infinite): vLLM sends every request at once."""
    rate = doc.get("request_rate")
    if isinstance(rate, str):
        return rate.strip().lower() in ("inf", "infinity")
    return isinstance(rate, float) and math.isinf(rate) and rate > 0


def burst_send_times(cols: dict, max_concurrency) -> list[float]:
    """Send times of a ``request_rate inf`` run without ``start_times``, seconds from the start.

    vLLM's client then sends every request at once (``get_request`` does not wait when the rate
    is infinite), or, with ``--max-concurrency N``, N at once and each next one, in list order,
    when a slot frees (an ``asyncio.Semaphore``): a slot frees at send + latency (``latencies``,
    else ttft + the sum of itls; a failed request frees it at once).
    """
    n = len(cols["ttfts"])
    if not isinstance(max_concurrency, int) or isinstance(max_concurrency, bool) \
            or max_concurrency < 1 or max_concurrency >= n:
        return [0.0] * n
    import heapq

    lat = cols.get("latencies")
    busy: list[float] = []
    out = []
    for i in range(n):
        sent = heapq.heappop(busy) if len(busy) >= max_concurrency else 0.0
        try:
            took = float(lat[i]) if lat is not None else \
                float(cols["ttfts"][i]) + float(sum(cols["itls"][i]))
        except (TypeError, ValueError):
            took = 0.0  # the reader names the bad value when it reads the request
        heapq.heappush(busy, sent + max(0.0, took))
        out.append(sent)
    return out


def _burst_note(max_concurrency) -> str:
    if isinstance(max_concurrency, int) and not isinstance(max_concurrency, bool):
        return (f"request_rate inf with max_concurrency {max_concurrency} and no start_times: "
                f"the first {max_concurrency} requests are sent at 0 s and each next one, in "
                f"list order, when a request in flight finishes (vLLM's semaphore), so the "
                f"send times are rebuilt from the latencies")
    return ("request_rate inf and no start_times: vLLM sent every request at once, so every "
            "send time is 0 s (a burst: the concurrency is the number of requests)")


def _requests(name: str, cols: dict) -> tuple[list[Request], dict]:
    notes = {"zero_lens": 0, "no_chunk": 0, "tail_s": 0.0}
    starts = cols.get("start_times")
    out = []
    for i in range(len(cols["ttfts"])):
        where = f"{name}: request {i}"
        ttft = _load.number(cols["ttfts"][i], f"{where}: ttfts[{i}]", minimum=0.0)
        itl = _load.numbers(cols["itls"][i], f"{where}: itls[{i}]", minimum=0.0)
        n = _load.whole(cols["output_lens"][i], f"{where}: output_lens[{i}]")
        error = _load.text_or_empty(cols["errors"][i], f"{where}: errors[{i}]") \
            if "errors" in cols else ""
        sent = _load.number(starts[i], f"{where}: start_times[{i}]") if starts else 0.0
        prompt = (_load.whole(cols["input_lens"][i], f"{where}: input_lens[{i}]")
                  if "input_lens" in cols else None)
        # vLLM marks success by an empty error text and counts every success as completed, its
        # ttft (0.0 when no chunk came) in the TTFT statistics; without an errors list (never
        # written by vLLM) a request with no time and no token is taken as failed
        ok = error == "" if "errors" in cols else (ttft > 0 or itl.size > 0 or n > 0)
        chunks = sent + ttft + np.concatenate([[0.0], np.cumsum(itl)]) if ok else ()
        if ok and n == 0:
            notes["zero_lens"] += 1
            if ttft == 0 and itl.size == 0:
                notes["no_chunk"] += 1
            n = len(chunks)
        if ok and "latencies" in cols:
            latency = _load.number(cols["latencies"][i], f"{where}: latencies[{i}]", minimum=0.0)
            gap = latency - (chunks[-1] - sent)
            if gap < -1e-6 * max(1.0, latency):
                raise ValueError(f"{where}: latencies[{i}] ({latency} s) is shorter than "
                                 f"ttfts[{i}] + sum(itls[{i}]) ({chunks[-1] - sent} s)")
            notes["tail_s"] = max(notes["tail_s"], gap)
        out.append(Request(sent_s=sent, chunk_times_s=chunks, output_tokens=n if ok else None,
                           prompt_tokens=prompt, error=error, failed=not ok))
    return out, notes


def _conversions(cols: dict, notes: dict) -> list[str]:
    out = ["vLLM's per-request lists are seconds from each request's send; arrival = the send, "
           "first token = send + ttfts (vLLM's TTFT is chapter 1's TTFT, measured at the client)",
           "emit times rebuilt as first token + running sum of itls (one emission per streamed "
           "chunk): vLLM's ITL list is chapter 1's ITL; finish = the last chunk",
           "TPOT = (finish - first token)/(output_lens - 1), the same as vLLM's TPOT"]
    if "start_times" in cols:
        out.append("arrival_s = start_times - min(start_times) (the client's perf_counter clock)")
    if notes["zero_lens"]:
        out.append(f"{notes['zero_lens']} successful request(s) had output_lens 0 (vLLM counts "
                   f"tokens with the tokenizer; its errors text is empty, so vLLM counts them "
                   f"completed): kept as finished, their chunk count used as output tokens")
    if notes["no_chunk"]:
        out.append(f"{notes['no_chunk']} of them streamed no chunk at all (ttfts 0.0, itls []): "
                   f"one empty emission at the send, so their TTFT is 0 s as in vLLM's own TTFT "
                   f"statistics, and they have no TPOT (one token), as in vLLM's")
    if notes["tail_s"] > 1e-6:
        out.append(f"latencies exceed ttfts + sum(itls) by up to {notes['tail_s']:.3g} s (time "
                   f"after the last chunk): finish_s is the last chunk, as chapter 1 defines it")
    return out


def _assumptions(cols: dict) -> list[str]:
    out = []
    if "start_times" not in cols:
        out.append("this result has no start_times (older vLLM, or benchmarks/benchmark_serving"
                   ".py): the file's duration and request_throughput still give the run's totals")
    queue = [float(q) for q in cols.get("queue_times", []) if isinstance(q, int | float)]
    if queue and max(queue) > 0:
        out.append(f"client-side queue times (waiting for a --max-concurrency slot, up to "
                   f"{max(queue):.3g} s) are not part of TTFT, as in vLLM: arrival is the send")
    if "input_lens" not in cols:
        out.append("no input_lens: prompt tokens unknown (-1)")
    return out


def _metadata(doc: dict) -> dict:
    meta = {"tool": "vLLM serving benchmark (vllm bench serve / benchmark_serving.py)"}
    for key, out in SETTINGS.items():
        value = doc.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            meta[out] = value
    rate = doc.get("request_rate")
    if isinstance(rate, int | float) and not isinstance(rate, bool) and math.isfinite(rate):
        meta["request_rate_per_s"] = rate
    elif rate is not None:
        meta["request_rate_per_s"] = None  # "inf": every request sent at once
    return meta


# ----------------------------------------------------------------------------- writer

def write_vllm(timelines, path, *, prompt_tokens=None, metadata: dict | None = None) -> None:
    """Write timelines as a ``vllm bench serve --save-result --save-detailed`` result JSON.

    Needs per-token emit times (``token_times_s``): each distinct emit time becomes a streamed
    chunk. A rejected or timed-out request is written as vLLM writes a failed one (``ttfts`` 0,
    ``output_lens`` 0, an error text). ``prompt_tokens`` (per request) fills ``input_lens``; left
    out, ``input_lens`` is omitted. ``metadata`` may give ``model``, ``backend``,
    ``request_rate_per_s``, ``burstiness``, ``concurrency``. Aggregates are computed as vLLM does.
    """
    t = timelines_of(timelines, FORMAT)
    out_path = check_output_file("path", path)
    prompts = prompt_column(timelines, prompt_tokens, len(t))
    meta = dict(metadata or {})
    per = _per_request(t)
    rate = meta.get("request_rate_per_s")
    doc = {"date": meta.get("date", ""), "backend": meta.get("backend", "vidya-lab"),
           "model_id": meta.get("model", "unknown"), "tokenizer_id": meta.get("model", "unknown"),
           "num_prompts": len(t), "request_rate": "inf" if rate is None else rate,
           "burstiness": meta.get("burstiness", 1.0), "max_concurrency": meta.get("concurrency")}
    doc.update(_aggregates(t, per, prompts))
    if prompts is not None:
        doc["input_lens"] = [int(p) for p in prompts]
    doc.update(per)
    doc["generated_texts"] = [""] * len(t)
    atomic_write_text(out_path, json.dumps(doc))


def _per_request(t: slo.Timelines) -> dict:
    ttfts, itls, lat, starts, lens, errors = [], [], [], [], [], []
    for i in range(len(t)):
        a = float(t.arrival_s[i])
        starts.append(a)
        if t.outcome[i] == 0:
            times = emissions(t, i)
            ttfts.append(float(times[0]) - a)
            itls.append(np.diff(times).tolist())
            lat.append(float(t.finish_s[i]) - a)
            lens.append(int(t.output_tokens[i]))
            errors.append("")
        else:
            ttfts.append(0.0)
            itls.append([])
            lat.append(0.0)
            lens.append(0)
            errors.append(error_text(int(t.outcome[i])))
    return {"output_lens": lens, "ttfts": ttfts, "itls": itls, "latencies": lat,
            "start_times": starts, "queue_times": [0.0] * len(t), "errors": errors}


def _aggregates(t: slo.Timelines, per: dict, prompts) -> dict:
    fin = t.finished
    done = np.flatnonzero(fin)
    span = float(np.nanmax(np.where(fin, t.finish_s, t.arrival_s)) - np.min(t.arrival_s))
    dur = span if span > 0 else 1.0
    out_tokens = int(t.output_tokens[fin].sum())
    in_tokens = int(prompts[fin].sum()) if prompts is not None else 0
    ttft = [per["ttfts"][i] for i in done]
    e2e = [per["latencies"][i] for i in done]
    tpot = [(per["latencies"][i] - per["ttfts"][i]) / (per["output_lens"][i] - 1)
            for i in done if per["output_lens"][i] > 1]
    itl = [g for i in done for g in per["itls"][i]]
    doc = {"duration": dur, "completed": int(done.size), "failed": int(len(t) - done.size),
           "total_input_tokens": in_tokens, "total_output_tokens": out_tokens,
           "request_throughput": done.size / dur, "request_goodput": None,
           "output_throughput": out_tokens / dur,
           "total_token_throughput": (in_tokens + out_tokens) / dur}
    for key, values in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2e)):
        v = np.asarray(values or [0.0]) * 1000  # vLLM reports 0 for an empty list
        doc.update({f"mean_{key}_ms": float(v.mean()), f"median_{key}_ms": float(np.median(v)),
                    f"std_{key}_ms": float(v.std()), f"p99_{key}_ms": float(np.percentile(v, 99))})
    return doc
