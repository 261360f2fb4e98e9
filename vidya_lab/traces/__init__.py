"""Bring your own measurements: read real benchmark outputs into chapter 1's request timelines.

``read_trace(path)`` detects the format (or take ``format=``) and returns a :class:`Trace`: the
:class:`vidya_lab.slo.Timelines` every metric reads, plus what the file said about the run (prompt
tokens, errors, per-chunk times, concurrency / rate, model) and, in words, the conversions applied
and the assumptions made where the tool's metric or record differs from chapter 1's.

==============  =================================================  ============================
format          file                                               reader / writer
==============  =================================================  ============================
``vllm``        ``vllm bench serve --save-result --save-detailed``  :func:`read_vllm`,
                (and ``benchmarks/benchmark_serving.py``)          :func:`write_vllm`
``genai-perf``  GenAI-Perf's ``profile_export.json``               :func:`read_genai_perf`,
                                                                   :func:`write_genai_perf`
``llmperf``     LLMPerf's ``..._individual_responses.json``        :func:`read_llmperf`,
                                                                   :func:`write_llmperf`
``stream-log``  any client's JSON-lines streaming log              :func:`read_stream_log`,
                (layout in :mod:`vidya_lab.traces.stream_log`)     :func:`write_stream_log`
``aiperf``      AIPerf's ``profile_export.jsonl`` (AIPerf is        :func:`read_aiperf`
                GenAI-Perf's successor)
``csv``         vidya-lab's trace CSV                              ``slo.read_trace_csv``
==============  =================================================  ============================

What each can give: TTFT, TPOT and end-to-end for every format; ITL where the file has per-chunk
times (not LLMPerf); arrival times where it has send times (not LLMPerf, not vLLM results saved
before ``start_times``). The writers let a simulated run be written in each format and read back
(the round trip that calibration is tested on).
"""

from __future__ import annotations

import numpy as np

from vidya_lab import slo
from vidya_lab.traces import _load, aiperf, genai_perf, llmperf, stream_log, vllm
from vidya_lab.traces._load import MAX_TRACE_BYTES
from vidya_lab.traces._trace import Trace
from vidya_lab.traces.aiperf import read_aiperf
from vidya_lab.traces.detect import FORMATS, detect_format, format_of
from vidya_lab.traces.genai_perf import read_genai_perf, write_genai_perf
from vidya_lab.traces.llmperf import read_llmperf, write_llmperf
from vidya_lab.traces.stream_log import read_stream_log, write_stream_log
from vidya_lab.traces.vllm import read_vllm, write_vllm

__all__ = ["FORMATS", "MAX_TRACE_BYTES", "Trace", "detect_format", "read_trace", "read_vllm",
           "read_aiperf",
           "read_genai_perf", "read_llmperf", "read_stream_log", "write_vllm",
           "write_genai_perf", "write_llmperf", "write_stream_log", "WRITERS"]

#: The writer of each format (``csv`` is :func:`vidya_lab.slo.write_trace_csv`).
WRITERS = {"vllm": write_vllm, "genai-perf": write_genai_perf, "llmperf": write_llmperf,
           "stream-log": write_stream_log}


def read_trace(path, format: str | None = None, *, experiment: int | None = None,
               max_bytes: int | None = None) -> Trace:
    """Read a benchmark output (or a vidya-lab trace CSV) into a :class:`Trace`.

    Parameters
    ----------
    path : the file.
    format : one of :data:`FORMATS`, or ``None``/``"auto"`` to detect it from the file's shape.
    experiment : GenAI-Perf only: which experiment of a multi-experiment export (0-based).
    max_bytes : refuse a larger file before parsing it (default :data:`MAX_TRACE_BYTES`).

    Raises
    ------
    ValueError : one line naming the file and what is wrong or missing (not that format, truncated
        JSON, no per-request data, an inconsistent request). ``FileNotFoundError`` if absent.
    """
    if format not in (None, "auto") and format not in FORMATS:
        raise ValueError(f"format must be one of auto, {', '.join(FORMATS)}; got {format!r}")
    if experiment is not None and format not in (None, "auto", "genai-perf"):
        raise ValueError("experiment is only for the genai-perf format")
    name, kind, doc = _load.load_document(path, max_bytes)
    fmt = format_of(name, kind, doc) if format in (None, "auto") else format
    if fmt == "csv":
        return _csv(path, name, kind)
    if fmt == "genai-perf":
        return genai_perf.from_document(name, kind, doc, experiment=experiment)
    if experiment is not None:
        raise ValueError(f"experiment is only for GenAI-Perf exports; {name} is {fmt}")
    module = {"vllm": vllm, "llmperf": llmperf, "stream-log": stream_log, "aiperf": aiperf}[fmt]
    return module.from_document(name, kind, doc)


def _csv(path, name: str, kind: str) -> Trace:
    if kind != _load.CSV:
        raise ValueError(f"{name}: not a trace CSV (the file is JSON; leave --format out to "
                         f"detect its tool)")
    t = slo.read_trace_csv(path)
    return Trace(timelines=t, source_format="csv", source=name,
                 prompt_tokens=np.full(len(t), -1, dtype=np.int64),
                 errors=tuple("" for _ in range(len(t))), chunk_times_s=None, chunk_offsets=None,
                 chunk_tokens=None, arrivals_known=True)
