"""Ray LLMPerf's per-request output: ``<model>_<in>_<out>_individual_responses.json`` written by
``token_benchmark_ray.py --results-dir``.

Layout (read from ray-project/llmperf: ``token_benchmark_ray.py`` at commit 004d3afb,
``src/llmperf/common_metrics.py`` at 1eac866f, ``src/llmperf/ray_clients/
openai_chat_completions_client.py`` at 0451d33b; a real file of this shape is
``benchmarks/results/yi/4xa10g/vllm/result_01-ai_Yi-1.5-34B-Chat_2/...individual_responses.json``
at 834d569e): a JSON list with one object per request holding ``error_code`` (``null`` when it
succeeded; the HTTP status or -1), ``error_msg``, ``ttft_s`` (s from the send to the first chunk
with content), ``end_to_end_latency_s`` (s from the send until the stream closed),
``inter_token_latency_s``, ``request_output_throughput_token_per_s``, ``number_input_tokens``,
``number_output_tokens`` (counted with the model's tokenizer over the generated text) and
``number_total_tokens``. The summary beside it (``..._summary.json``, e.g. the one of that
run) holds aggregates only, flattened as ``results_<metric>_quantiles_p50`` etc., with the run's
``model``, ``num_concurrent_requests``, ``mean_input_tokens`` and ``mean_output_tokens``: the
reader refuses it as a trace, and takes those settings from it when it lies beside the file read.

LLMPerf's ``inter_token_latency_s`` is the sum of every gap from the send to the last chunk
(TTFT included) divided by the output tokens, about ``(c − a)/n``; chapter 1's TPOT excludes the
first token: ``(c − f)/(n − 1)``. The reader recomputes TPOT from ``ttft_s`` and
``end_to_end_latency_s`` and does not use LLMPerf's value. The file has no send times and no
per-chunk times: arrivals are all 0 and ITL cannot be recovered.
"""

from __future__ import annotations

import json

from vidya_lab._validate import atomic_write_text, check_output_file
from vidya_lab.traces import _load
from vidya_lab.traces._trace import Request, Trace, build_trace
from vidya_lab.traces._write import error_text, prompt_column, timelines_of

FORMAT = "llmperf"
SUMMARY_KEYS = {"model": "model", "num_concurrent_requests": "concurrency",
                "mean_input_tokens": "mean_input_tokens",
                "mean_output_tokens": "mean_output_tokens", "timestamp": "timestamp"}
REQUIRED = ("ttft_s", "end_to_end_latency_s", "number_output_tokens")

CONVERSIONS = (
    "LLMPerf's inter_token_latency_s = (time of the last chunk - send)/output tokens includes "
    "TTFT (chapter 1's TPOT does not): not used; TPOT = (end_to_end_latency_s - ttft_s)/"
    "(number_output_tokens - 1)",
    "first token = send + ttft_s; finish = send + end_to_end_latency_s (LLMPerf stops this clock "
    "when the stream closes, a little after the last token)",
    "a request with error_code set is failed; output tokens are LLMPerf's tokenizer count",
)
NO_ITL = ("the file has no per-chunk times: ITL (gaps between emissions) cannot be recovered, "
          "only each request's mean TPOT")


def read_llmperf(path) -> Trace:
    """Read LLMPerf's ``..._individual_responses.json`` into a :class:`~vidya_lab.traces.Trace`."""
    name, kind, doc = _load.load_document(path)
    return from_document(name, kind, doc)


def from_document(name: str, kind: str, doc) -> Trace:
    """:func:`read_llmperf` on an already loaded document."""
    if kind == _load.JSON and isinstance(doc, dict) and _is_summary(doc):
        raise ValueError(f"{name}: this is LLMPerf's summary (aggregates only); read the "
                         f"..._individual_responses.json written beside it")
    if kind != _load.JSON or not isinstance(doc, list):
        raise ValueError(f"{name}: not LLMPerf individual responses (expected a JSON list of "
                         f"objects with {', '.join(REQUIRED)})")
    if not doc:
        raise ValueError(f"{name}: the LLMPerf file lists no requests")
    records, empty = [], 0
    for i, r in enumerate(doc):
        where = f"{name}: request {i}"
        if not isinstance(r, dict):
            raise ValueError(f"{where}: must be an object")
        missing = [k for k in (*REQUIRED, "error_code") if k not in r]
        if missing:
            raise ValueError(f"{where}: missing {', '.join(missing)} (not LLMPerf individual "
                             f"responses?)")
        record = _record(where, r)
        if record.error == "no output tokens (LLMPerf counted 0)":
            empty += 1
        records.append(record)
    conv = list(CONVERSIONS)
    if empty:
        conv.append(f"{empty} request(s) without error but with 0 output tokens counted as failed "
                    f"(no first token to time)")
    meta = {"tool": "Ray LLMPerf (token_benchmark_ray.py)"}
    summary = _summary_beside(name)
    if summary is not None:
        path, doc = summary
        meta.update({out: doc[key] for key, out in SUMMARY_KEYS.items()
                     if isinstance(doc.get(key), str | int | float)})
        conv.append(f"run settings (model, concurrency) from the summary beside it: {path}")
    return build_trace(name, FORMAT, records, arrivals_known=False, conversions=conv,
                       assumptions=[NO_ITL], has_chunks=False, metadata=meta)


def _is_summary(doc: dict) -> bool:
    return "num_concurrent_requests" in doc or any(str(k).startswith("results_") for k in doc)


def _summary_beside(name: str) -> tuple[str, dict] | None:
    """LLMPerf's ``..._summary.json`` next to ``..._individual_responses.json``, if readable."""
    suffix = "_individual_responses.json"
    if not name.endswith(suffix):
        return None
    path = name[: -len(suffix)] + "_summary.json"
    try:
        _, kind, doc = _load.load_document(path)
    except (OSError, ValueError):
        return None
    return (path, doc) if kind == _load.JSON and isinstance(doc, dict) and _is_summary(doc) \
        else None


def _record(where: str, r: dict) -> Request:
    code = r["error_code"]
    message = _load.text_or_empty(r.get("error_msg"), f"{where}: error_msg")
    prompt = r.get("number_input_tokens")
    prompt = None if prompt is None else _load.whole(prompt, f"{where}: number_input_tokens")
    if code is not None:
        return Request(sent_s=0.0, error=message or f"error_code {code}", failed=True,
                       prompt_tokens=prompt)
    ttft = _load.number(r["ttft_s"], f"{where}: ttft_s", minimum=0.0)
    e2e = _load.number(r["end_to_end_latency_s"], f"{where}: end_to_end_latency_s", minimum=0.0)
    n = _load.whole(r["number_output_tokens"], f"{where}: number_output_tokens")
    if n == 0:
        return Request(sent_s=0.0, error="no output tokens (LLMPerf counted 0)", failed=True,
                       prompt_tokens=prompt)
    return Request(sent_s=0.0, first_s=ttft, finish_s=e2e, output_tokens=n, prompt_tokens=prompt)


# ----------------------------------------------------------------------------- writer

def write_llmperf(timelines, path, *, prompt_tokens=None) -> None:
    """Write timelines as LLMPerf's ``..._individual_responses.json``.

    Per-token times are not needed (LLMPerf keeps none); send times are lost (LLMPerf keeps none).
    ``inter_token_latency_s`` is written with LLMPerf's definition ``(c − a)/n``. A request that
    did not finish gets ``error_code`` 503 (rejected) or -1 (timed out, as LLMPerf's client sets
    on an exception) and zero times. ``number_input_tokens`` and ``number_total_tokens`` come from
    ``prompt_tokens`` and are left out when it is not known.
    """
    t = timelines_of(timelines, FORMAT, needs_token_times=False)
    out_path = check_output_file("path", path)
    prompts = prompt_column(timelines, prompt_tokens, len(t))
    rows = []
    for i in range(len(t)):
        if t.outcome[i] != 0:
            row = {"error_code": -1 if t.outcome[i] == 2 else 503,
                   "error_msg": error_text(int(t.outcome[i])), "inter_token_latency_s": 0,
                   "ttft_s": 0, "end_to_end_latency_s": 0,
                   "request_output_throughput_token_per_s": 0, "number_output_tokens": 0}
        else:
            a, f, c = float(t.arrival_s[i]), float(t.first_token_s[i]), float(t.finish_s[i])
            n, e2e = int(t.output_tokens[i]), c - a
            row = {"error_code": None, "error_msg": "", "inter_token_latency_s": e2e / n,
                   "ttft_s": f - a, "end_to_end_latency_s": e2e,
                   "request_output_throughput_token_per_s": n / e2e if e2e > 0 else 0,
                   "number_output_tokens": n}
        if prompts is not None:
            row["number_input_tokens"] = int(prompts[i])
            row["number_total_tokens"] = int(prompts[i]) + row["number_output_tokens"]
        rows.append(row)
    atomic_write_text(out_path, json.dumps(rows, indent=4))
