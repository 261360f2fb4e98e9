"""NVIDIA GenAI-Perf's per-request profile export (``profile_export.json``, written by Perf Analyzer
into GenAI-Perf's artifacts folder).

Layout (read from triton-inference-server/perf_analyzer at commit 00168fe7:
``genai-perf/genai_perf/profile_data_parser/profile_data_parser.py`` and
``llm_profile_data_parser.py``; field names also in ``genai-perf/tests/test_data_parser/
test_llm_profile_data_parser.py``): one JSON object with ``service_kind`` (``openai``, ``triton``,
``triton_c_api``), ``endpoint`` (e.g. ``v1/chat/completions``) and ``experiments``, a list of
``{"experiment": {"mode": "concurrency" | "request_rate", "value": N}, "requests": [...]}``; each
request has ``timestamp`` (the send, integer nanoseconds), ``request_inputs`` (``{"payload": "<the
request JSON>"}`` for openai, ``text_input`` / ``input_ids`` for triton), ``response_timestamps``
(ns, one per response) and ``response_outputs`` (``{"response": "data: {...}\\n\\n"}`` server-sent
events for openai, ``{"text_output": ...}`` for triton, ``{"output_ids": [...]}`` for the C API).

Mapping, as GenAI-Perf's parser does: SSE events split across responses are merged back;
responses without content (the role-only first chunk, an empty delta, a usage-only chunk,
``[DONE]``) are dropped; the first response with content is the first token, the last is the
finish. GenAI-Perf's ``inter_token_latency`` ``(request_latency − TTFT)/(output tokens − 1)`` is
chapter 1's **TPOT**; chapter 1's ITL here is the gap between responses with content. GenAI-Perf
counts output tokens with a tokenizer over the text; this reader has none, so it takes
``usage.completion_tokens`` when the stream carries it (``stream_options.include_usage``), the
``output_ids`` count for the C API, and else one token per response (said in ``assumptions``).
"""

from __future__ import annotations

import json

from vidya_lab._validate import atomic_write_text, check_int, check_output_file
from vidya_lab.traces import _load
from vidya_lab.traces._trace import Request, Trace, build_trace
from vidya_lab.traces._write import emission_tokens, emissions, prompt_column, timelines_of

FORMAT = "genai-perf"
_SSE_FIELDS = (":", "event:", "id:", "retry:")


def read_genai_perf(path, experiment: int | None = None) -> Trace:
    """Read a GenAI-Perf / Perf Analyzer ``profile_export.json`` into a
    :class:`~vidya_lab.traces.Trace`.

    ``experiment`` picks one of the file's experiments (0-based) when it holds several load levels
    (pooling them would mix load levels); ``None`` requires exactly one.
    """
    name, kind, doc = _load.load_document(path)
    return from_document(name, kind, doc, experiment=experiment)


def from_document(name: str, kind: str, doc, *, experiment: int | None = None) -> Trace:
    """:func:`read_genai_perf` on an already loaded document."""
    if kind != _load.JSON or not isinstance(doc, dict):
        raise ValueError(f"{name}: not a GenAI-Perf profile export (expected one JSON object with "
                         f"service_kind and experiments)")
    if "experiments" not in doc:
        if any(k in doc for k in ("time_to_first_token", "request_latency", "inter_token_latency")):
            raise ValueError(f"{name}: this is a summary (aggregates only); read the per-request "
                             f"export beside it: profile_export.json (GenAI-Perf) or "
                             f"profile_export.jsonl (AIPerf, GenAI-Perf's successor)")
        raise ValueError(f"{name}: not a GenAI-Perf profile export: missing experiments")
    exp = _experiment(name, doc["experiments"], experiment)
    service = doc.get("service_kind", "openai")
    if service not in ("openai", "triton", "triton_c_api"):
        raise ValueError(f"{name}: service_kind {service!r} is not read (openai, triton, "
                         f"triton_c_api are)")
    reqs = exp.get("requests")
    if not isinstance(reqs, list) or not reqs:
        raise ValueError(f"{name}: the experiment has no per-request data (requests is "
                         f"{'empty' if isinstance(reqs, list) else 'missing'})")
    origin = min(_load.whole(r.get("timestamp") if isinstance(r, dict) else None,
                             f"{name}: request {i}: timestamp") for i, r in enumerate(reqs))
    records, counted = [], {"usage": 0, "ids": 0, "assumed": 0}
    for i, r in enumerate(reqs):
        records.append(_request(f"{name}: request {i}", r, service, origin, counted))
    mode, value = exp["experiment"].get("mode"), exp["experiment"].get("value")
    meta = {"tool": "GenAI-Perf / Perf Analyzer profile export", "service_kind": service,
            "time_origin_ns": origin,
            "endpoint": doc.get("endpoint", ""), "experiment_mode": mode, "experiment_value": value,
            "experiments_in_file": len(doc["experiments"])}
    if mode == "concurrency":
        meta["concurrency"] = value
    elif mode == "request_rate":
        meta["request_rate_per_s"] = value
    model = _model(reqs[0])
    if model:
        meta["model"] = model
    return build_trace(name, FORMAT, records, arrivals_known=True,
                       conversions=_conversions(counted), assumptions=_assumptions(counted),
                       metadata=meta)


def _experiment(name: str, experiments, choice: int | None) -> dict:
    if not isinstance(experiments, list) or not experiments:
        raise ValueError(f"{name}: experiments must be a non-empty list")
    labels = [f"{k}: {e.get('experiment', {}).get('mode')}={e.get('experiment', {}).get('value')}"
              if isinstance(e, dict) and isinstance(e.get("experiment"), dict) else f"{k}: ?"
              for k, e in enumerate(experiments)]
    if choice is None:
        if len(experiments) > 1:
            raise ValueError(f"{name}: holds {len(experiments)} experiments ({', '.join(labels)}); "
                             f"choose one with --experiment N (0-based)")
        choice = 0
    choice = check_int("experiment", choice, minimum=0)
    if not 0 <= choice < len(experiments):
        raise ValueError(f"experiment must be 0..{len(experiments) - 1} for {name}, got {choice}")
    exp = experiments[choice]
    if not isinstance(exp, dict) or not isinstance(exp.get("experiment"), dict):
        raise ValueError(f"{name}: experiment {choice} has no experiment {{mode, value}}")
    return exp


def _request(where: str, r, service: str, origin: int, counted: dict) -> Request:
    if not isinstance(r, dict):
        raise ValueError(f"{where}: must be an object")
    sent = _load.whole(r.get("timestamp"), f"{where}: timestamp")
    stamps = r.get("response_timestamps")
    outputs = r.get("response_outputs")
    if not isinstance(stamps, list) or not isinstance(outputs, list) or len(stamps) != len(outputs):
        raise ValueError(f"{where}: response_timestamps and response_outputs must be lists of "
                         f"equal length")
    stamps = _load.wholes(stamps, f"{where}: response_timestamps")
    inputs = r.get("request_inputs") if isinstance(r.get("request_inputs"), dict) else {}
    if service == "openai":
        parsed = _openai(where, outputs)
    else:
        parsed = [_triton(where, k, o, service) for k, o in enumerate(outputs)]
    content = [(s, tok) for s, (tok, _, _) in zip(stamps, parsed, strict=True) if tok != 0]
    usage = next((u for _, u, _ in reversed(parsed) if u), {})
    error = next((e for _, _, e in parsed if e), "")
    if not content and not error:
        error = "no response with content (GenAI-Perf skips such requests)"
    n = prompt = None
    per_chunk = None
    if service == "triton_c_api":
        per_chunk = [tok for _, tok in content]
        n = sum(per_chunk)
        ids = inputs.get("input_ids")
        prompt = len(ids) if isinstance(ids, list) else None
        counted["ids"] += 1
    elif usage.get("completion_tokens") is not None:
        n = _load.whole(usage["completion_tokens"], f"{where}: usage.completion_tokens")
        prompt = usage.get("prompt_tokens")
        prompt = None if prompt is None else _load.whole(prompt, f"{where}: usage.prompt_tokens")
        counted["usage"] += 1
    elif content:
        counted["assumed"] += 1
    return Request(sent_s=(sent - origin) / 1e9,
                   chunk_times_s=[(s - origin) / 1e9 for s, _ in content], output_tokens=n,
                   chunk_tokens=per_chunk, prompt_tokens=prompt, error=error,
                   failed=bool(error) or not content)


def _openai(where: str, outputs: list) -> list[tuple[int, dict, str]]:
    """Per response: (1 if it carries content else 0, usage dict, error text)."""
    texts = []
    for k, o in enumerate(outputs):
        if not isinstance(o, dict) or not isinstance(o.get("response", ""), str):
            raise ValueError(f"{where}: response_outputs[{k}] must be {{\"response\": \"...\"}}")
        texts.append(o.get("response", ""))
    for k in range(len(texts) - 1, 0, -1):  # a splintered SSE event continues the one before
        body = texts[k].lstrip()
        if body and not body.startswith(("data:", *_SSE_FIELDS)):
            cut = texts[k].find("data: ")
            cut = len(texts[k]) if cut < 0 else cut
            texts[k - 1] += texts[k][:cut]
            texts[k] = texts[k][cut:]
    parsed: dict[str, tuple[int, dict, str]] = {}  # a stream repeats its chunks' text: parse once
    out = []
    for k, text in enumerate(texts):
        got = parsed.get(text)
        if got is None:
            got = parsed[text] = _sse(where, k, text)
        out.append(got)
    return out


def _sse(where: str, k: int, text: str) -> tuple[int, dict, str]:
    content, usage, error = 0, {}, ""
    for event in text.strip().split("\n\n"):
        event = event.strip()
        if not event.startswith("data:"):
            continue
        body = event[5:].strip()
        if body == "[DONE]" or not body:
            continue
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            raise ValueError(f"{where}: response_outputs[{k}] holds an SSE event that is not "
                             f"JSON: {body[:60]!r}") from None
        if not isinstance(data, dict):
            continue
        if "error" in data:
            err = data["error"]
            error = str(err.get("message", err) if isinstance(err, dict) else err)
        if isinstance(data.get("usage"), dict):
            usage = data["usage"]
        choices = data.get("choices") or []
        c = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) \
            else {}
        delta = c.get("delta") if isinstance(c.get("delta"), dict) else {}
        message = c.get("message") if isinstance(c.get("message"), dict) else {}
        if c.get("text") or delta.get("content") or message.get("content"):
            content = 1
    return content, usage, error


def _triton(where: str, k: int, o, service: str) -> tuple[int, dict, str]:
    if not isinstance(o, dict):
        raise ValueError(f"{where}: response_outputs[{k}] must be an object")
    if service == "triton_c_api":
        ids = o.get("output_ids")
        return (len(ids) if isinstance(ids, list) else 1 if isinstance(ids, int) else 0), {}, ""
    return (1 if o.get("text_output") else 0), {}, ""


def _model(request) -> str:
    try:
        payload = json.loads(request["request_inputs"]["payload"])
        return str(payload.get("model", ""))
    except (KeyError, TypeError, ValueError, AttributeError):
        return ""


def _conversions(counted: dict) -> list[str]:
    out = ["timestamps are integer nanoseconds, rebased to the first send and divided by 1e9",
           "responses without content dropped (role-only first chunk, empty delta, usage-only "
           "chunk, [DONE]) and splintered SSE events merged, as GenAI-Perf's parser does",
           "GenAI-Perf's inter_token_latency = (request_latency - TTFT)/(output tokens - 1) is "
           "chapter 1's TPOT; chapter 1's ITL = the gaps between responses with content",
           "GenAI-Perf's request_latency (last response - send) is chapter 1's end-to-end"]
    if counted["usage"]:
        out.append(f"output and prompt tokens of {counted['usage']} request(s) from the stream's "
                   f"usage chunk (completion_tokens, prompt_tokens)")
    if counted["ids"]:
        out.append(f"output tokens of {counted['ids']} request(s) counted from output_ids")
    return out


def _assumptions(counted: dict) -> list[str]:
    if not counted["assumed"]:
        return []
    return [f"{counted['assumed']} request(s) carry no usage chunk and this reader has no "
            f"tokenizer: one token per response with content is assumed (GenAI-Perf would "
            f"re-tokenize the text); TPOT is exact only if the server streamed one token per "
            f"chunk, and prompt tokens are unknown (-1)"]


# ----------------------------------------------------------------------------- writer

def write_genai_perf(timelines, path, *, prompt_tokens=None, metadata: dict | None = None) -> None:
    """Write timelines as a Perf Analyzer ``profile_export.json`` (service_kind ``openai``,
    endpoint ``v1/chat/completions``, one experiment), timestamps in integer nanoseconds.

    Each distinct emit time is one ``chat.completion.chunk`` response; a usage chunk
    (``completion_tokens``, ``prompt_tokens`` when known) and ``[DONE]`` close the stream. A
    request that did not finish has no responses (GenAI-Perf skips such requests). The experiment
    is ``metadata["concurrency"]`` if given, else ``metadata["request_rate_per_s"]``, else the
    run's mean offered rate (requests / span of arrivals).
    """
    t = timelines_of(timelines, FORMAT)
    out_path = check_output_file("path", path)
    prompts = prompt_column(timelines, prompt_tokens, len(t))
    meta = dict(metadata or {})
    model = str(meta.get("model", "unknown"))
    requests = []
    for i in range(len(t)):
        requests.append(_write_request(t, i, model, None if prompts is None else int(prompts[i])))
    if meta.get("concurrency") is not None:
        mode, value = "concurrency", meta["concurrency"]
    else:
        span = float(t.arrival_s.max() - t.arrival_s.min())
        mode = "request_rate"
        value = meta.get("request_rate_per_s") or (round(len(t) / span, 6) if span > 0 else 1.0)
    doc = {"experiments": [{"experiment": {"mode": mode, "value": value}, "requests": requests}],
           "version": "", "service_kind": "openai", "endpoint": "v1/chat/completions"}
    atomic_write_text(out_path, json.dumps(doc))


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def _write_request(t, i: int, model: str, prompt: int | None) -> dict:
    payload = {"model": model, "messages": [{"role": "user", "content": ""}], "stream": True,
               "stream_options": {"include_usage": True}}
    out = {"timestamp": _ns(float(t.arrival_s[i])),
           "request_inputs": {"payload": json.dumps(payload)},
           "response_timestamps": [], "response_outputs": []}
    if t.outcome[i] != 0:
        return out
    chunk = {"id": f"req-{i}", "object": "chat.completion.chunk", "created": 0, "model": model}
    times, tokens = emissions(t, i), emission_tokens(t, i)
    responses: dict[int, str] = {}  # the SSE text of a chunk of k tokens: the same for every k
    for when, k in zip(times, tokens, strict=True):
        k = int(k)
        text = responses.get(k)
        if text is None:
            body = dict(chunk, choices=[{"index": 0, "delta": {"content": " tok" * k},
                                         "finish_reason": None}])
            text = responses[k] = f"data: {json.dumps(body)}\n\n"
        out["response_timestamps"].append(_ns(float(when)))
        out["response_outputs"].append({"response": text})
    usage = {"completion_tokens": int(t.output_tokens[i])}
    if prompt is not None:
        usage.update(prompt_tokens=prompt, total_tokens=prompt + int(t.output_tokens[i]))
    last = out["response_timestamps"][-1]
    out["response_timestamps"] += [last, last]
    closing = json.dumps(dict(chunk, choices=[], usage=usage))
    out["response_outputs"] += [{"response": f"data: {closing}\n\n"},
                                {"response": "data: [DONE]\n\n"}]
    return out
