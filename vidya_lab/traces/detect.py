"""Which tool wrote a file: told by its shape, never by its name.

============  ==========================================================================
format        recognised by
============  ==========================================================================
csv           not JSON (vidya-lab's own trace CSV, :func:`vidya_lab.slo.read_trace_csv`)
vllm          a JSON object with ``ttfts`` (or vLLM's aggregates ``mean_ttft_ms`` /
              ``request_throughput``: then the reader says the per-request lists are missing)
genai-perf    a JSON object with ``experiments`` (or GenAI-Perf's summary metrics)
llmperf       a JSON list of objects with ``ttft_s`` (or LLMPerf's summary object)
stream-log    JSON lines (or one object) with ``chunk_times_s`` or the stream-log header
aiperf        JSON lines (or one object) with ``metadata.request_start_ns`` and ``metrics``
              (AIPerf's ``profile_export.jsonl``; AIPerf is GenAI-Perf's successor)
============  ==========================================================================
"""

from __future__ import annotations

from vidya_lab.traces import _load, aiperf

FORMATS: tuple[str, ...] = ("csv", "vllm", "genai-perf", "llmperf", "stream-log", "aiperf")


def detect_format(path) -> str:
    """The format of the file at ``path`` (one of :data:`FORMATS`); ``ValueError`` naming the
    file when it matches none."""
    name, kind, doc = _load.load_document(path)
    return format_of(name, kind, doc)


def format_of(name: str, kind: str, doc) -> str:
    """:func:`detect_format` on an already loaded document."""
    if kind == _load.CSV:
        return "csv"
    if kind == _load.JSON_LINES:
        first = doc[0][1] if doc else {}
        if first.get("format") == "vidya-lab-stream-log" or "chunk_times_s" in first:
            return "stream-log"
        if aiperf.is_record(first):
            return "aiperf"
    elif isinstance(doc, list):
        if doc and isinstance(doc[0], dict) and "ttft_s" in doc[0]:
            return "llmperf"
    elif isinstance(doc, dict):
        if aiperf.is_record(doc):
            return "aiperf"
        if "experiments" in doc or "time_to_first_token" in doc or "request_latency" in doc:
            return "genai-perf"
        if any(k in doc for k in ("ttfts", "mean_ttft_ms", "request_throughput")):
            return "vllm"
        if "num_concurrent_requests" in doc or any(str(k).startswith("results_ttft_s")
                                                    for k in doc):
            return "llmperf"
        if doc.get("format") == "vidya-lab-stream-log" or "chunk_times_s" in doc:
            return "stream-log"
    raise ValueError(f"{name}: cannot tell which tool wrote this file (not a trace CSV, a vLLM "
                     f"result, a GenAI-Perf profile export, an AIPerf profile_export.jsonl, LLMPerf "
                     f"individual responses or a streaming log); name it with --format")
