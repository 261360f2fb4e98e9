"""An OpenAI-compatible streaming log: what any client can record while it streams completions.

The layout (vidya-lab's own; version 1)
---------------------------------------
A text file of JSON lines (UTF-8), one object per line, in any order:

* an optional first line with the run's settings:
  ``{"format": "vidya-lab-stream-log", "version": 1, "model": "...", "concurrency": 8, ...}``
  (any JSON-ready keys; ``model``, ``backend``, ``concurrency``, ``request_rate_per_s`` are
  the ones a reader looks for);
* one line per request:

  ==================  ==========================================================================
  ``id``              the request's id (string or integer; default: its line number)
  ``sent_s``          when the client sent it, seconds on one clock for the whole file
                      (``time.time()`` or ``time.perf_counter()``) — **required**
  ``chunk_times_s``   when each streamed chunk *with content* arrived, same clock, in order
                      (``[]`` if none) — **required**
  ``chunk_tokens``    optional: the tokens in each chunk (e.g. from vLLM's
                      ``stream_options.continuous_usage_stats``), same length as the chunks
  ``completion_tokens``, ``prompt_tokens``
                      optional: the stream's final usage (``stream_options.include_usage``)
  ``error``           ``null`` if it succeeded, else the error text (a text saying it timed out
                      counts as ``timed_out``, any other as ``rejected``)
  ``end_s``           optional: when a failed request gave up (same clock)
  ==================  ==========================================================================

Output tokens are ``completion_tokens`` if given, else the sum of ``chunk_tokens``, else one per
chunk (said in ``assumptions``). Each token's emit time is known when ``chunk_tokens`` is given or
when every chunk holds one token; ITL is measured between chunks either way.

A recorder (openai>=1 client; run one per concurrent user, all appending to one file)::

    import json, time
    from openai import OpenAI

    client = OpenAI(base_url="http://localhost:8000/v1", api_key="none")

    def record(rid, prompt, log, model="my-model"):
        row = {"id": rid, "sent_s": time.time(), "chunk_times_s": [], "error": None}
        try:
            stream = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": prompt}],
                stream=True, stream_options={"include_usage": True})
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    row["chunk_times_s"].append(time.time())
                if chunk.usage:
                    row["prompt_tokens"] = chunk.usage.prompt_tokens
                    row["completion_tokens"] = chunk.usage.completion_tokens
        except Exception as exc:  # a timeout, a 429/503, a dropped connection
            row["error"], row["end_s"] = f"{type(exc).__name__}: {exc}", time.time()
        log.write(json.dumps(row) + "\\n")
"""

from __future__ import annotations

import json

import numpy as np

from vidya_lab._validate import atomic_write_text, check_output_file
from vidya_lab.traces import _load
from vidya_lab.traces._trace import Request, Trace, build_trace
from vidya_lab.traces._write import emission_tokens, emissions, prompt_column, timelines_of

FORMAT = "stream-log"
MARK = "vidya-lab-stream-log"
VERSION = 1
META_KEYS = ("model", "backend", "concurrency", "request_rate_per_s", "burstiness", "date")


def read_stream_log(path) -> Trace:
    """Read a streaming log (JSON lines, layout in the module docstring) into a
    :class:`~vidya_lab.traces.Trace`."""
    name, kind, doc = _load.load_document(path)
    return from_document(name, kind, doc)


def from_document(name: str, kind: str, doc) -> Trace:
    """:func:`read_stream_log` on an already loaded document."""
    if kind == _load.JSON and isinstance(doc, dict):
        rows = [(1, doc)]
    elif kind == _load.JSON_LINES:
        rows = doc
    else:
        raise ValueError(f"{name}: not a streaming log (expected JSON lines with sent_s and "
                         f"chunk_times_s)")
    header = {}
    if rows and rows[0][1].get("format") == MARK:
        header = rows[0][1]
        if header.get("version", VERSION) != VERSION:
            raise ValueError(f"{name} line {rows[0][0]}: stream-log version "
                             f"{header.get('version')!r} is not read (version {VERSION} is)")
        rows = rows[1:]
    if not rows:
        raise ValueError(f"{name}: the streaming log has no request lines")
    records, counts = [], {"assumed": 0, "ids": set()}
    for line, row in rows:
        records.append(_record(f"{name} line {line}", line, row, counts))
    meta = {"tool": "OpenAI-compatible streaming log (vidya-lab layout v1)"}
    meta.update({k: header[k] for k in META_KEYS if k in header})
    assume = []
    if counts["assumed"]:
        assume.append(f"{counts['assumed']} request(s) give neither completion_tokens nor "
                      f"chunk_tokens: one token per chunk assumed")
    if any(r.prompt_tokens is None for r in records):
        assume.append("prompt tokens unknown (-1) where a line has no prompt_tokens")
    return build_trace(name, FORMAT, records, arrivals_known=True, assumptions=assume,
                       conversions=["times rebased to the first send (seconds)"], metadata=meta)


def _record(where: str, line: int, row: dict, counts: dict) -> Request:
    missing = [k for k in ("sent_s", "chunk_times_s") if k not in row]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)} (each request line needs sent_s "
                         f"and chunk_times_s)")
    rid = row.get("id", line)
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        raise ValueError(f"{where}: id must be a string or an integer, got {rid!r}")
    if rid in counts["ids"]:
        raise ValueError(f"{where}: duplicate id {rid!r}")
    counts["ids"].add(rid)
    sent = _load.number(row["sent_s"], f"{where}: sent_s")
    chunks = _load.numbers(row["chunk_times_s"], f"{where}: chunk_times_s")
    if chunks.size and np.any(np.diff(np.concatenate([[sent], chunks])) < 0):
        raise ValueError(f"{where}: chunk_times_s must be in order and not before sent_s")
    error = _load.text_or_empty(row.get("error"), f"{where}: error")
    per_chunk = row.get("chunk_tokens")
    if per_chunk is not None:
        if not isinstance(per_chunk, list) or len(per_chunk) != chunks.size:
            raise ValueError(f"{where}: chunk_tokens must be a list as long as chunk_times_s")
        per_chunk = _load.wholes(per_chunk, f"{where}: chunk_tokens", minimum=1)
    n = row.get("completion_tokens")
    n = None if n is None else _load.whole(n, f"{where}: completion_tokens")
    if n is not None and n < chunks.size and not error:
        raise ValueError(f"{where}: completion_tokens ({n}) is fewer than the chunks with content "
                         f"({chunks.size})")
    if n is None and per_chunk is not None:
        n = sum(per_chunk)
    if n is None and chunks.size and not error:
        counts["assumed"] += 1
    prompt = row.get("prompt_tokens")
    prompt = None if prompt is None else _load.whole(prompt, f"{where}: prompt_tokens")
    end = row.get("end_s")
    end = None if end is None else _load.number(end, f"{where}: end_s", minimum=sent)
    return Request(sent_s=sent, chunk_times_s=chunks, output_tokens=n, chunk_tokens=per_chunk,
                   prompt_tokens=prompt, error=error, failed=bool(error), end_s=end,
                   request_id=rid)


# ----------------------------------------------------------------------------- writer

def write_stream_log(timelines, path, *, prompt_tokens=None, metadata: dict | None = None) -> None:
    """Write timelines as a streaming log: a settings line, then one line per request with its
    distinct emit times as chunks and their token counts (``chunk_tokens``), so per-token times
    survive the round trip. ``metadata`` keys go on the settings line."""
    t = timelines_of(timelines, FORMAT)
    out_path = check_output_file("path", path)
    prompts = prompt_column(timelines, prompt_tokens, len(t))
    lines = [json.dumps({"format": MARK, "version": VERSION, **dict(metadata or {})})]
    for i in range(len(t)):
        rid = t.request_id[i]
        row = {"id": rid.item() if hasattr(rid, "item") else rid,
               "sent_s": float(t.arrival_s[i])}
        if t.outcome[i] == 0:
            row["chunk_times_s"] = emissions(t, i).tolist()
            row["chunk_tokens"] = emission_tokens(t, i).tolist()
            row["completion_tokens"] = int(t.output_tokens[i])
            row["error"] = None
        else:
            row["chunk_times_s"] = []
            row["error"] = "timed out" if t.outcome[i] == 2 else "rejected"
            if t.finish_s[i] == t.finish_s[i]:  # not NaN
                row["end_s"] = float(t.finish_s[i])
        if prompts is not None:
            row["prompt_tokens"] = int(prompts[i])
        lines.append(json.dumps(row))
    atomic_write_text(out_path, "\n".join(lines) + "\n")
