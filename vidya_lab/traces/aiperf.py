"""NVIDIA AIPerf's per-request export (``profile_export.jsonl``). AIPerf (ai-dynamo/aiperf) is
GenAI-Perf's successor; GenAI-Perf's ``profile_export.json`` is read by :mod:`.genai_perf`.

Layout (AIPerf's "Working with Profile Export Files" guide, ``docs/tutorials/
working-with-profile-exports.md`` at ai-dynamo/aiperf@13992dbd, records defined by
``MetricRecordInfo`` in ``src/aiperf/common/models/record_models.py``): one JSON object per line,
one line per request sent, with

* ``metadata``: ``session_num``, ``x_request_id``, ``request_start_ns`` (epoch ns at the send),
  ``request_ack_ns``, ``request_end_ns`` (the last response), ``benchmark_phase``,
  ``was_cancelled``, ``cancellation_time_ns``;
* ``metrics``: each ``{"value": ..., "unit": ...}``: ``input_sequence_length`` (tokens),
  ``time_to_first_token`` (ms), ``inter_chunk_latency`` (ms, a list: the gaps between streamed
  chunks), ``request_latency`` (ms), ``output_token_count`` / ``output_sequence_length``
  (tokens); a failed request has only ``error_isl``;
* ``error``: ``null``, or ``{"code", "type", "message"}`` for a failed request.

Mapping: arrival = ``request_start_ns``; first token = arrival + ``time_to_first_token``; each
later chunk = the running sum of ``inter_chunk_latency``; ``n`` = ``output_token_count`` (else
``output_sequence_length``); a record with an ``error`` (or cancelled) failed, its error text
``type: message``. Records of a phase other than ``profiling`` (warm-up) are left out.
"""

from __future__ import annotations

import numpy as np

from vidya_lab.traces import _load
from vidya_lab.traces._trace import Request, Trace, build_trace

FORMAT = "aiperf"
_UNIT_S = {"ms": 1e-3, "s": 1.0, "us": 1e-6, "ns": 1e-9}


def read_aiperf(path) -> Trace:
    """Read an AIPerf ``profile_export.jsonl`` into a :class:`~vidya_lab.traces.Trace`.

    Raises ``ValueError`` naming the file and line for a record that is not AIPerf's, a time in
    an unknown unit, or a value that is not a finite non-negative number.
    """
    name, kind, doc = _load.load_document(path)
    return from_document(name, kind, doc)


def is_record(obj) -> bool:
    """Does this JSON object look like one AIPerf per-request record?"""
    return isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) \
        and "request_start_ns" in obj["metadata"] and "metrics" in obj


def _seconds(metrics: dict, key: str, where: str):
    item = metrics.get(key)
    if item is None:
        return None
    if not isinstance(item, dict) or "value" not in item:
        raise ValueError(f"{where}: metrics.{key} must be an object with value and unit")
    unit = item.get("unit", "ms")
    if unit not in _UNIT_S:
        raise ValueError(f"{where}: metrics.{key} has unit {unit!r}; known: {sorted(_UNIT_S)}")
    value = item["value"]
    if isinstance(value, list):
        return _load.numbers(value, f"{where}: metrics.{key}", minimum=0.0) * _UNIT_S[unit]
    return _load.number(value, f"{where}: metrics.{key}", minimum=0.0) * _UNIT_S[unit]


def _tokens(metrics: dict, keys: tuple[str, ...], where: str):
    for key in keys:
        item = metrics.get(key)
        if isinstance(item, dict) and item.get("value") is not None:
            return _load.whole(item["value"], f"{where}: metrics.{key}")
    return None


def _request(where: str, rec: dict) -> Request:
    meta = rec["metadata"]
    metrics = rec.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise ValueError(f"{where}: metrics must be an object")
    sent = _load.whole(meta.get("request_start_ns"), f"{where}: metadata.request_start_ns") * 1e-9
    prompt = _tokens(metrics, ("input_sequence_length", "error_isl"), where)
    err = rec.get("error")
    cancelled = bool(meta.get("was_cancelled"))
    if err is not None or cancelled:
        text = (f"{err.get('type', 'error')}: {err.get('message', '')}" if isinstance(err, dict)
                else str(err) if err is not None else "cancelled")
        end = meta.get("request_end_ns")
        return Request(sent_s=sent, prompt_tokens=prompt, error=text, failed=True,
                       end_s=end * 1e-9 if isinstance(end, int) else None)
    ttft = _seconds(metrics, "time_to_first_token", where)
    if ttft is None:
        raise ValueError(f"{where}: a successful record needs metrics.time_to_first_token "
                         f"(AIPerf writes it for streaming runs: profile with --streaming)")
    gaps = _seconds(metrics, "inter_chunk_latency", where)
    gaps = np.empty(0) if gaps is None else np.atleast_1d(gaps)
    chunks = sent + ttft + np.concatenate([[0.0], np.cumsum(gaps)])
    n = _tokens(metrics, ("output_token_count", "output_sequence_length"), where)
    return Request(sent_s=sent, chunk_times_s=chunks, output_tokens=n, prompt_tokens=prompt,
                   request_id=meta.get("x_request_id"))


def from_document(name: str, kind: str, doc) -> Trace:
    """:func:`read_aiperf` on an already loaded document (one record, or JSON lines)."""
    if kind == _load.JSON and is_record(doc):
        lines = [(1, doc)]
    elif kind == _load.JSON_LINES:
        lines = doc
    else:
        raise ValueError(f"{name}: not an AIPerf per-request export (expected profile_export.jsonl"
                         f": one JSON object per line with metadata and metrics)")
    requests, warmup = [], 0
    for number, rec in lines:
        where = f"{name} line {number}"
        if not is_record(rec):
            raise ValueError(f"{where}: not an AIPerf record (needs metadata.request_start_ns "
                             f"and metrics)")
        if rec["metadata"].get("benchmark_phase", "profiling") != "profiling":
            warmup += 1
            continue
        requests.append(_request(where, rec))
    if not requests:
        raise ValueError(f"{name}: no profiling-phase request in the AIPerf export")
    conv = ["AIPerf's times: request_start_ns (epoch ns) is the send; first token = send + "
            "time_to_first_token; later chunks = the running sum of inter_chunk_latency; finish "
            "= the last chunk", "TPOT = (finish - first token)/(output tokens - 1)"]
    if warmup:
        conv.append(f"{warmup} warm-up record(s) (benchmark_phase not 'profiling') left out")
    ids = [r.request_id for r in requests]
    if any(i is None for i in ids) or len(set(ids)) != len(ids):
        for r in requests:
            r.request_id = None
    return build_trace(name, FORMAT, requests, arrivals_known=True, conversions=conv,
                       metadata={"tool": "AIPerf per-request export (profile_export.jsonl)"})
