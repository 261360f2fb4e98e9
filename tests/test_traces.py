"""Readers of real benchmark outputs: each fixture (in its tool's layout, see tests/data/*/NOTE.md)
gives the metrics computed by hand from the raw file, with the conversions said; bad files get one
clear ValueError naming the file and what is missing."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from vidya_lab import slo, traces
from vidya_lab.traces import _load

DATA = Path(__file__).parent / "data"
VLLM = DATA / "vllm_bench" / "serve_detailed.json"
VLLM_LEGACY = DATA / "vllm_bench" / "benchmark_serving_legacy.json"
VLLM_AGG = DATA / "vllm_bench" / "serve_aggregates_only.json"
GENAI = DATA / "genai_perf" / "profile_export.json"
LLMPERF = DATA / "llmperf" / "01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json"
LLMPERF_SUMMARY = DATA / "llmperf" / "01-ai-Yi-1-5-34B-Chat_550_150_summary.json"
STREAM = DATA / "stream_log" / "tutor_stream.jsonl"
CSV = DATA / "slo" / "small_trace.csv"


# ----------------------------------------------------------------------------- hand computation

def by_hand(path: Path, fmt: str) -> dict[str, list[float]]:
    """Per-request TTFT, TPOT, end-to-end and the ITL gaps of the finished requests, from the raw
    file with plain Python (the tool's own definitions, converted as the module docstrings say)."""
    raw = path.read_text()
    parse = {"vllm": _vllm, "genai-perf": _genai, "llmperf": _llmperf, "stream-log": _stream}[fmt]
    rows = parse(raw)
    out = {"ttft": [], "tpot": [], "e2e": [], "itl": []}
    for sent, first, last, n, gaps in rows:
        out["ttft"].append(first - sent)
        out["e2e"].append(last - sent)
        if n > 1:
            out["tpot"].append((last - first) / (n - 1))
        out["itl"] += gaps
    return out


def _vllm(raw):
    d = json.loads(raw)
    for i, ttft in enumerate(d["ttfts"]):
        if d["errors"][i] == "":
            sent = d["start_times"][i] if "start_times" in d else 0.0
            yield sent, sent + ttft, sent + ttft + sum(d["itls"][i]), d["output_lens"][i], \
                d["itls"][i]


def _genai(raw):
    d = json.loads(raw)
    for r in d["experiments"][0]["requests"]:
        stamps = []
        outs = [o["response"] for o in r["response_outputs"]]
        for k, text in enumerate(outs):
            # a response's own events start at its first "data: " (a splinter before it is not)
            own = text[text.find("data: "):] if "data: " in text else ""
            nxt = outs[k + 1] if k + 1 < len(outs) else "data: "
            if not nxt.startswith("data: "):  # the next response continues this one's event
                own += nxt.split("data: ")[0]
            for event in own.split("\n\n"):
                body = event.strip()[len("data: "):]
                if body and body != "[DONE]" and json.loads(body)["choices"][0]["delta"].get(
                        "content"):
                    stamps.append(r["response_timestamps"][k])
                    break
        if stamps:  # integer nanoseconds: subtract first, then divide
            s = [(x - r["timestamp"]) / 1e9 for x in stamps]
            yield 0.0, s[0], s[-1], len(s), [(b - a) / 1e9 for a, b in pairwise(stamps)]


def _llmperf(raw):
    for r in json.loads(raw):
        if r["error_code"] is None and r["number_output_tokens"] > 0:
            yield 0.0, r["ttft_s"], r["end_to_end_latency_s"], r["number_output_tokens"], []


def _stream(raw):
    for line in raw.splitlines()[1:]:
        r = json.loads(line)
        if r["error"] is None and r["chunk_times_s"]:
            c = r["chunk_times_s"]
            n = r.get("completion_tokens") or sum(r.get("chunk_tokens") or []) or len(c)
            yield r["sent_s"], c[0], c[-1], n, [b - a for a, b in pairwise(c)]


def pct(values, q):
    """Hyndman-Fan type 7 percentile, in plain Python."""
    xs = sorted(values)
    rank = (len(xs) - 1) * q / 100
    lo = int(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


def hand_summary(values):
    out = {f"p{q}": pct(values, q) for q in (50, 90, 95, 99)}
    out["mean"] = sum(values) / len(values)
    return out


CASES = [(VLLM, "vllm"), (VLLM_LEGACY, "vllm"), (GENAI, "genai-perf"), (LLMPERF, "llmperf"),
         (STREAM, "stream-log")]


@pytest.mark.parametrize("path, fmt", CASES, ids=lambda x: getattr(x, "name", x))
def test_fixture_metrics_equal_the_hand_computation(path, fmt):
    trace = traces.read_trace(path)
    assert trace.source_format == fmt and traces.detect_format(path) == fmt
    hand = by_hand(path, fmt)
    t = trace.timelines
    assert np.sort(slo.ttft_s(t)) == pytest.approx(sorted(hand["ttft"]), abs=1e-9)
    assert np.sort(slo.e2e_s(t)) == pytest.approx(sorted(hand["e2e"]), abs=1e-9)
    tp = slo.tpot_s(t)
    assert np.sort(tp[~np.isnan(tp)]) == pytest.approx(sorted(hand["tpot"]), abs=1e-9)
    summary = trace.summary()
    for key, values in (("ttft_s", hand["ttft"]), ("tpot_s", hand["tpot"]), ("e2e_s", hand["e2e"])):
        assert summary[key] == pytest.approx(hand_summary(values), abs=1e-9), key
    if fmt == "llmperf":
        assert summary["itl_s"] is None
    else:
        assert summary["itl_s"] == pytest.approx(hand_summary(hand["itl"]), abs=1e-9)
    assert summary["source_format"] == fmt and summary["conversions"]


def test_vllm_detailed_maps_fields_and_failures():
    doc = json.loads(VLLM.read_text())
    trace = traces.read_vllm(VLLM)
    t = trace.timelines
    assert trace.arrivals_known
    assert t.arrival_s == pytest.approx(np.asarray(doc["start_times"]) - min(doc["start_times"]))
    assert list(trace.prompt_tokens) == doc["input_lens"]
    failed = [i for i, e in enumerate(doc["errors"]) if e]
    assert list(np.flatnonzero(~t.finished)) == failed
    assert "ServerDisconnectedError" in trace.errors[failed[0]]
    assert t.token_times_s is not None  # one token per chunk in this run: per-token times known
    meta = trace.metadata
    assert meta["model"] == doc["model_id"] and meta["concurrency"] == doc["max_concurrency"]
    assert meta["request_rate_per_s"] == doc["request_rate"]
    assert any("perf_counter" in c for c in trace.conversions)


def test_vllm_legacy_without_start_times_says_what_it_assumes(tmp_path):
    # a request_rate inf run: vLLM sent everything at once, so the send times ARE known (issue 30)
    trace = traces.read_vllm(VLLM_LEGACY)
    assert trace.arrivals_known and np.all(trace.timelines.arrival_s == 0)
    assert any("sent every request at once" in a for a in trace.assumptions)
    # the same file at a finite rate: send times unknown, and said so
    doc = json.loads(VLLM_LEGACY.read_text())
    doc["request_rate"] = 4.0
    (tmp_path / "rate.json").write_text(json.dumps(doc))
    paced = traces.read_vllm(tmp_path / "rate.json")
    assert not paced.arrivals_known and np.all(paced.timelines.arrival_s == 0)
    assert any("no send times" in a and "throughput" in a for a in paced.assumptions)
    # request 1 streamed 8 chunks for 10 tokens: per-token times unknown, ITL measured on chunks
    assert trace.timelines.token_times_s is None
    assert trace.chunks(1).size == 8 and trace.timelines.output_tokens[1] == 10
    assert any("chunk count different" in c for c in trace.conversions)
    assert trace.metadata["request_rate_per_s"] is None  # "inf": all sent at once


def test_genai_perf_counts_only_responses_with_content():
    trace = traces.read_genai_perf(GENAI)
    t = trace.timelines
    assert trace.metadata["concurrency"] == 4
    assert trace.metadata["endpoint"] == "v1/chat/completions"
    assert trace.metadata["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert list(t.outcome) == [0, 0, 0, 1, 0, 0]
    assert "no response with content" in trace.errors[3]
    assert any("TPOT" in c and "inter_token_latency" in c for c in trace.conversions)
    assert any("no tokenizer" in a for a in trace.assumptions)
    assert np.all(trace.prompt_tokens == -1)


def test_genai_perf_usage_chunk_gives_token_counts(tmp_path):
    doc = json.loads(GENAI.read_text())
    req = doc["experiments"][0]["requests"][0]
    usage = {"object": "chat.completion.chunk", "choices": [],
             "usage": {"prompt_tokens": 17, "completion_tokens": 24, "total_tokens": 41}}
    req["response_outputs"].insert(-1, {"response": f"data: {json.dumps(usage)}\n\n"})
    req["response_timestamps"].insert(-1, req["response_timestamps"][-2])
    path = tmp_path / "usage.json"
    path.write_text(json.dumps(doc))
    trace = traces.read_trace(path)
    assert trace.timelines.output_tokens[0] == 24 and trace.prompt_tokens[0] == 17
    assert trace.timelines.token_times_s is None  # 12 chunks for 24 tokens
    assert any("usage chunk" in c for c in trace.conversions)


def test_genai_perf_experiments_must_be_chosen(tmp_path):
    doc = json.loads(GENAI.read_text())
    second = json.loads(json.dumps(doc["experiments"][0]))
    second["experiment"] = {"mode": "request_rate", "value": 2.0}
    second["requests"] = second["requests"][:2]
    doc["experiments"].append(second)
    path = tmp_path / "two.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"2 experiments \(0: concurrency=4, 1: request_rate=2.0"):
        traces.read_trace(path)
    one = traces.read_trace(path, experiment=1)
    assert len(one) == 2 and one.metadata["request_rate_per_s"] == 2.0
    with pytest.raises(ValueError, match="experiment must be 0..1"):
        traces.read_trace(path, experiment=2)
    with pytest.raises(ValueError, match="only for"):
        traces.read_trace(VLLM, experiment=0)


def test_llmperf_reads_settings_from_the_summary_beside_it():
    trace = traces.read_llmperf(LLMPERF)
    assert trace.metadata["model"] == "01-ai/Yi-1.5-34B-Chat"
    assert trace.metadata["concurrency"] == 2
    assert trace.chunk_times_s is None and not trace.arrivals_known
    assert trace.timelines.counts()["finished"] == 6
    assert "Too many requests" in trace.errors[6] and trace.errors[7] == "error_code -1"
    with pytest.raises(ValueError, match="ITL cannot be computed"):
        trace.itl_s()
    # LLMPerf's own inter-token latency includes the TTFT: it is not chapter 1's TPOT
    raw = json.loads(LLMPERF.read_text())[0]
    tpot = slo.tpot_s(trace.timelines)[0]
    assert raw["inter_token_latency_s"] > tpot
    assert raw["inter_token_latency_s"] == pytest.approx(raw["end_to_end_latency_s"]
                                                         / raw["number_output_tokens"], rel=0.01)


def test_stream_log_outcomes_tokens_and_per_token_times():
    trace = traces.read_stream_log(STREAM)
    t = trace.timelines
    assert list(t.request_id) == ["q-001", "q-002", "q-003", "q-004", "q-005", "q-006"]
    assert t.counts() == {"count": 6, "finished": 4, "rejected": 1, "timed_out": 1}
    assert list(t.output_tokens) == [5, 7, 0, 1, 6, 0]
    assert list(trace.prompt_tokens) == [412, 980, -1, 150, -1, -1]
    # q-002's chunks carried 1, 3, 1, 2 tokens: each token's time is known
    q2 = t.token_times_s[t.token_offsets[1]:t.token_offsets[2]]
    assert q2.size == 7 and np.count_nonzero(np.diff(q2) == 0) == 3
    assert t.finish_s[2] == pytest.approx(30.553)  # q-003 gave up 30 s after it was sent
    assert trace.metadata["concurrency"] == 3
    assert any("one token per chunk" in a for a in trace.assumptions)


def test_csv_still_reads_through_read_trace():
    trace = traces.read_trace(CSV)
    assert trace.source_format == "csv" and trace.conversions == ()
    assert slo.summarize(trace.timelines) == slo.summarize(slo.read_trace_csv(CSV))


# ----------------------------------------------------------------------------- bad files

def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_aggregates_only_vllm_result_names_save_detailed():
    with pytest.raises(ValueError) as exc:
        traces.read_trace(VLLM_AGG)
    assert str(VLLM_AGG) in str(exc.value) and "--save-detailed" in str(exc.value)
    assert "ttfts" in str(exc.value)


def test_summaries_are_refused_with_the_file_to_read_instead(tmp_path):
    with pytest.raises(ValueError, match="individual_responses"):
        traces.read_trace(LLMPERF_SUMMARY)
    gp = _write(tmp_path, "profile_export_genai_perf.json",
                {"request_latency": {"unit": "ms", "avg": 120.0}, "time_to_first_token": {}})
    with pytest.raises(ValueError, match="profile_export.json"):
        traces.read_trace(gp)


@pytest.mark.parametrize("fmt, path, message", [
    ("vllm", GENAI, "not a vLLM benchmark result: missing ttfts, itls, output_lens"),
    ("genai-perf", VLLM, "not a GenAI-Perf profile export: missing experiments"),
    ("llmperf", VLLM, "not LLMPerf individual responses"),
    ("stream-log", LLMPERF, "not a streaming log"),
    ("csv", VLLM, "not a trace CSV"),
    ("vllm", CSV, "not a vLLM benchmark result"),
])
def test_wrong_format_is_named(fmt, path, message):
    with pytest.raises(ValueError) as exc:
        traces.read_trace(path, fmt)
    assert message in str(exc.value) and str(path) in str(exc.value)


def test_truncated_and_malformed_json(tmp_path):
    text = VLLM.read_text()
    cut = _write(tmp_path, "cut.json", text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"cut.json: truncated JSON \(the file ends at line"):
        traces.read_trace(cut)
    bad = _write(tmp_path, "bad.json", '{"ttfts": [0.1,, 0.2]}')
    with pytest.raises(ValueError, match="bad.json: malformed JSON at line 1, column 16: Expecting"):
        traces.read_trace(bad)
    log = _write(tmp_path, "log.jsonl", STREAM.read_text()[:-40])
    with pytest.raises(ValueError, match=r"log.jsonl: truncated JSON .*line 7"):
        traces.read_trace(log)
    deep = _write(tmp_path, "deep.json", "[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        traces.read_trace(deep)


def test_unknown_json_and_empty_and_binary(tmp_path):
    with pytest.raises(ValueError, match="cannot tell which tool wrote this file"):
        traces.read_trace(_write(tmp_path, "x.json", {"hello": 1}))
    with pytest.raises(ValueError, match="empty file"):
        traces.read_trace(_write(tmp_path, "e.json", "  \n"))
    binary = tmp_path / "b.json"
    binary.write_bytes(b"{\xff\xfe}")
    with pytest.raises(ValueError, match="not a UTF-8 text file"):
        traces.read_trace(binary)
    with pytest.raises(ValueError, match="format must be one of"):
        traces.read_trace(VLLM, "vllm-json")


def test_size_is_bounded_before_parsing(monkeypatch):
    monkeypatch.setattr(_load, "MAX_TRACE_BYTES", 1000)
    with pytest.raises(ValueError, match=r"serve_detailed.json is [\d,]+ bytes; the limit is 1,0"):
        traces.read_trace(VLLM)
    with pytest.raises(ValueError, match="pass --max-mib, or max_bytes="):
        traces.read_trace(VLLM)
    assert len(traces.read_trace(VLLM, max_bytes=10**6)) == 6
    with pytest.raises(ValueError, match="the limit is 100 "):
        traces.read_trace(VLLM, max_bytes=100)
    with pytest.raises(TypeError, match="max_bytes must be an integer"):
        traces.read_trace(VLLM, max_bytes=1.5)


def _vllm_doc():
    return json.loads(VLLM.read_text())


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["itls"].pop(), "itls has 5 entries but ttfts has 6"),
    (lambda d: d["ttfts"].__setitem__(2, -0.1), "ttfts[2] must be >= 0"),
    (lambda d: d["itls"][0].__setitem__(1, "fast"), 'itls[0][1] must be a number, got "fast"'),
    (lambda d: d["output_lens"].__setitem__(1, 2.5), "output_lens[1] must be a whole number"),
    (lambda d: d["latencies"].__setitem__(0, 0.05), "latencies[0] (0.05 s) is shorter than"),
    (lambda d: d.update(ttfts=[], itls=[], output_lens=[], input_lens=[], latencies=[],
                        start_times=[], queue_times=[], errors=[]), "lists no requests"),
    (lambda d: d.update(itls=None), "lacks the per-request itls"),
])
def test_inconsistent_vllm_requests_are_named(tmp_path, edit, message):
    doc = _vllm_doc()
    edit(doc)
    path = _write(tmp_path, "r.json", doc)
    with pytest.raises(ValueError) as exc:
        traces.read_trace(path)
    assert message in str(exc.value) and "r.json" in str(exc.value)


def test_genai_perf_missing_requests_and_times_out_of_order(tmp_path):
    doc = json.loads(GENAI.read_text())
    doc["experiments"][0]["requests"] = []
    with pytest.raises(ValueError, match="no per-request data"):
        traces.read_trace(_write(tmp_path, "empty.json", doc))
    doc = json.loads(GENAI.read_text())
    r = doc["experiments"][0]["requests"][2]
    r["response_timestamps"] = [r["timestamp"] - 5] + r["response_timestamps"][1:]
    r["response_outputs"][0] = r["response_outputs"][1]
    with pytest.raises(ValueError, match="first_token_s .* is before arrival_s"):
        traces.read_trace(_write(tmp_path, "early.json", doc))
    doc = json.loads(GENAI.read_text())
    doc["experiments"][0]["requests"][0]["response_timestamps"].pop()
    with pytest.raises(ValueError, match="request 0: response_timestamps and response_outputs"):
        traces.read_trace(_write(tmp_path, "ragged.json", doc))


@pytest.mark.parametrize("line, message", [
    ('{"id": "a", "chunk_times_s": [1.0]}', "line 2: missing sent_s"),
    ('{"id": "a", "sent_s": 2.0, "chunk_times_s": [1.0]}', "must be in order and not before"),
    ('{"id": "a", "sent_s": 0, "chunk_times_s": [1, 2], "completion_tokens": 1}',
     "completion_tokens (1) is fewer than the chunks"),
    ('{"id": "a", "sent_s": 0, "chunk_times_s": [1, 2], "chunk_tokens": [1]}',
     "chunk_tokens must be a list as long as chunk_times_s"),
    ('{"id": "a", "sent_s": 0, "chunk_times_s": [1, 2], "chunk_tokens": [1, 1], '
     '"completion_tokens": 5}', "its chunks hold 2 tokens but it reports 5"),
    ('{"id": true, "sent_s": 0, "chunk_times_s": [1]}', "id must be a string or an integer"),
    ('{"id": "a", "sent_s": NaN, "chunk_times_s": [1]}', "sent_s must be finite"),
])
def test_bad_stream_log_lines(tmp_path, line, message):
    header = '{"format": "vidya-lab-stream-log", "version": 1}\n'
    path = _write(tmp_path, "s.jsonl", header + line + "\n" + '{"id": "b", "sent_s": 0, '
                  '"chunk_times_s": [0.5]}\n')
    with pytest.raises(ValueError) as exc:
        traces.read_trace(path)
    assert message in str(exc.value) and "s.jsonl" in str(exc.value)


def test_stream_log_duplicate_ids_and_unknown_version(tmp_path):
    row = '{"id": "a", "sent_s": 0, "chunk_times_s": [1]}\n'
    with pytest.raises(ValueError, match="line 2: duplicate id 'a'"):
        traces.read_trace(_write(tmp_path, "d.jsonl", row + row))
    with pytest.raises(ValueError, match="version 2 is not read"):
        traces.read_trace(_write(tmp_path, "v.jsonl", '{"format": "vidya-lab-stream-log", '
                                 '"version": 2}\n' + row))


def test_llmperf_record_without_required_fields(tmp_path):
    rows = json.loads(LLMPERF.read_text())
    del rows[2]["ttft_s"]
    with pytest.raises(ValueError, match="request 2: missing ttft_s"):
        traces.read_trace(_write(tmp_path, "l.json", rows))
    rows = json.loads(LLMPERF.read_text())
    rows[0]["ttft_s"] = 9.0  # after the end of the request
    with pytest.raises(ValueError, match="finish_s .* is before first_token_s"):
        traces.read_trace(_write(tmp_path, "l2.json", rows))


def test_timeout_error_texts_become_timed_out():
    from vidya_lab.traces._trace import outcome_of_error

    for text in ("Request timed out.", "asyncio.TimeoutError", "httpx.ReadTimeout",
                 "DEADLINE_EXCEEDED: deadline exceeded", "time-out"):
        assert outcome_of_error(text) == "timed_out", text
    for text in ("Bad Request", "Server disconnected", "429 Too Many Requests", ""):
        assert outcome_of_error(text) == "rejected", text
    assert math.isnan(traces.read_stream_log(STREAM).timelines.first_token_s[2])


VLLM_ZERO = DATA / "vllm_bench" / "serve_zero_output.json"


def test_vllm_zero_output_completions_are_finished_and_match_the_files_own_summary(capsys):
    # issue 30: vLLM counts a success with 0 output tokens as completed (errors "") and puts its
    # ttft into its statistics; the reader must agree with the file within 1 %
    from vidya_lab import cli

    doc = json.loads(VLLM_ZERO.read_text())
    assert cli.main(["slo", str(VLLM_ZERO), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["finished"] == doc["completed"] == 8 and out["rejected"] + out["timed_out"] == 1
    for ours, theirs in (("ttft_s", "ttft"), ("tpot_s", "tpot")):
        for stat, key in (("mean", "mean"), ("p50", "median"), ("p99", "p99")):
            assert out[ours][stat] * 1000 == pytest.approx(doc[f"{key}_{theirs}_ms"], rel=0.01)
    trace = traces.read_vllm(VLLM_ZERO)
    zero = [i for i, (e, n) in enumerate(zip(doc["errors"], doc["output_lens"], strict=True))
            if e == "" and n == 0]
    assert len(zero) == 2 and all(trace.timelines.finished[zero])
    assert all(trace.errors[i] == "" for i in zero)
    assert any("no chunk at all" in c for c in trace.conversions)
    assert not any("rejected (any other error)" in c and "1 rejected" not in c
                   for c in trace.conversions)


def test_vllm_burst_with_max_concurrency_rebuilds_sends_from_the_semaphore(tmp_path):
    doc = json.loads(VLLM_LEGACY.read_text())
    doc["max_concurrency"] = 2
    (tmp_path / "burst2.json").write_text(json.dumps(doc))
    trace = traces.read_vllm(tmp_path / "burst2.json")
    took = [t + sum(i) for t, i in zip(doc["ttfts"], doc["itls"], strict=True)]
    # by hand: two at 0; each next one when the earlier of the two in flight finishes
    busy, want = [], []
    for k, d in enumerate(took):
        sent = 0.0 if k < 2 else sorted(busy).pop(0)
        if k >= 2:
            busy.remove(sent)
        busy.append(sent + d)
        want.append(sent)
    assert trace.arrivals_known
    assert trace.timelines.arrival_s == pytest.approx(np.asarray(want) - min(want))
    assert any("max_concurrency 2" in a for a in trace.assumptions)


AIPERF = DATA / "aiperf" / "profile_export.jsonl"


def test_aiperf_profile_export_jsonl_is_detected_and_read():
    assert traces.detect_format(AIPERF) == "aiperf"
    trace = traces.read_trace(AIPERF)
    t = trace.timelines
    assert len(t) == 3  # the warm-up record is left out
    assert list(t.finished) == [True, True, False]
    assert "RequestCancellationError" in trace.errors[2]
    assert t.arrival_s == pytest.approx([0.0, 0.5, 1.0])
    assert t.first_token_s[0] == pytest.approx(0.255886568)
    gaps = [4.898437, 5.316006, 4.801489, 5.674918, 4.811467, 5.097998, 5.504797, 5.533548]
    assert t.finish_s[0] == pytest.approx(0.255886568 + sum(gaps) / 1000)
    assert list(t.output_tokens[:2]) == [9, 4] and list(trace.prompt_tokens) == [550, 128, 550]
    s = trace.summary()
    assert s["tpot_s"]["mean"] == pytest.approx((sum(gaps) / 1000 / 8 + 0.060 / 3) / 2)
    assert any("warm-up" in c for c in trace.conversions)


def test_aiperf_bad_record_names_the_line(tmp_path):
    p = tmp_path / "profile_export.jsonl"
    lines = AIPERF.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["metrics"]["time_to_first_token"]["unit"] = "fortnights"
    p.write_text("\n".join([lines[2], json.dumps(rec)]) + "\n")
    with pytest.raises(ValueError, match=r"line 2: metrics.time_to_first_token has unit"):
        traces.read_trace(p)
