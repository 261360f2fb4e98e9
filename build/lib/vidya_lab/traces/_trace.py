"""What every reader returns: a :class:`Trace`, chapter 1's timelines plus what the file said about
the run (prompt tokens, errors, per-chunk times, settings) and how the reader got there.

The readers differ in what their tool recorded; :func:`build_trace` is the one place a per-request
record becomes a timeline, so every format obeys the same rules:

* a request is *finished* when the tool says it succeeded and it streamed at least one chunk; its
  first token is its first chunk and its finish the last chunk (chapter 1's ``f`` and ``c``);
* a failed request is ``timed_out`` when its error text says so (``timeout``, ``timed out``,
  ``deadline exceeded``), else ``rejected``: either way it is counted, and missed in attainment;
* per-token emit times are kept only when the file pins each token to a chunk (one token per chunk,
  or per-chunk token counts); otherwise the chunk times are kept and ITL is measured over chunks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from vidya_lab import slo

_TIMEOUT = re.compile(r"time[d\s_-]*out|deadline exceeded", re.IGNORECASE)

#: Said of every reader's output when a file has no send times.
NO_ARRIVALS = ("the file records no send times: every request is placed at arrival_s = 0; each "
               "request's own latencies (TTFT, TPOT, end-to-end, and ITL where there are chunk "
               "times) are unaffected, but throughput, goodput per second, concurrency over time "
               "and the arrival process cannot be recovered from it")


def outcome_of_error(error: str) -> str:
    """``"timed_out"`` if the error text says the request timed out, else ``"rejected"``."""
    return "timed_out" if _TIMEOUT.search(error) else "rejected"


@dataclass(frozen=True, eq=False)
class Trace:
    """A benchmark's per-request record, read into chapter 1's timeline.

    Attributes
    ----------
    timelines : :class:`vidya_lab.slo.Timelines` (seconds from the first send; ``token_times_s``
        only where each token's emit time is known).
    source_format : the format read (``"vllm"``, ``"genai-perf"``, ``"llmperf"``, ``"stream-log"``,
        ``"csv"``).
    source : the file's path.
    prompt_tokens : int64 per request; -1 where the file does not say.
    errors : per request, the tool's error text (``""`` for none).
    chunk_times_s, chunk_offsets : per-chunk emit times (seconds, same clock as ``timelines``) in
        CSR layout (request ``i``'s are ``chunk_times_s[chunk_offsets[i]:chunk_offsets[i + 1]]``);
        ``None`` when the file has no per-chunk times (LLMPerf).
    chunk_tokens : per chunk, its token count where the file says (else ``None``).
    arrivals_known : whether the file gives each request's send time (else all are 0).
    conversions : how the tool's fields and metrics were mapped onto chapter 1's (sentences).
    assumptions : what the reader had to assume, and which metrics that limits (sentences).
    metadata : the run's settings the file holds (``model``, ``backend``, ``concurrency``,
        ``request_rate_per_s``, ``burstiness``, ``tool``, ...); JSON-ready.
    """

    timelines: slo.Timelines
    source_format: str
    source: str
    prompt_tokens: np.ndarray
    errors: tuple[str, ...]
    chunk_times_s: np.ndarray | None
    chunk_offsets: np.ndarray | None
    chunk_tokens: np.ndarray | None
    arrivals_known: bool
    conversions: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.timelines)

    def chunks(self, i: int) -> np.ndarray:
        """Request ``i``'s chunk emit times (seconds); empty when the file has none."""
        if self.chunk_times_s is None:
            return np.empty(0)
        return self.chunk_times_s[self.chunk_offsets[i]:self.chunk_offsets[i + 1]]

    def itl_s(self) -> np.ndarray:
        """Chapter 1's ITL (seconds): gaps between consecutive emissions of finished requests.

        From per-token times when known (:func:`vidya_lab.slo.itl_s`), else from the chunks, each
        chunk one emission. Raises ``ValueError`` when the file has neither (LLMPerf).
        """
        t = self.timelines
        if t.token_times_s is not None:
            return slo.itl_s(t)
        if self.chunk_times_s is None:
            raise ValueError(f"{self.source}: ITL cannot be computed: the {self.source_format} "
                             f"file has no per-token or per-chunk times")
        counts = np.diff(self.chunk_offsets)
        seqs = [self.chunks(i) for i in range(len(t))]
        emissions = slo.Timelines.from_arrays(
            arrival_s=t.arrival_s, first_token_s=t.first_token_s, finish_s=t.finish_s,
            output_tokens=np.where(t.finished, counts, 0), outcome=t.outcome,
            token_times_s=[s if fin else () for s, fin in zip(seqs, t.finished, strict=True)])
        return slo.itl_s(emissions)

    def summary(self, target: slo.SLO | None = None) -> dict:
        """:func:`vidya_lab.slo.summarize` plus ``source_format``, ``conversions``,
        ``assumptions``, ``arrivals_known``, ``itl_s`` (a percentile summary, or ``None`` when the
        file cannot give ITL) and ``metadata``."""
        out = slo.summarize(self.timelines, target)
        out["source_format"] = self.source_format
        out["conversions"] = list(self.conversions)
        out["assumptions"] = list(self.assumptions)
        out["arrivals_known"] = self.arrivals_known
        try:
            out["itl_s"] = slo.percentile_summary(self.itl_s())
        except ValueError:
            out["itl_s"] = None
        out["metadata"] = dict(self.metadata)
        return out


@dataclass
class Request:
    """One request as a reader saw it (seconds on the file's clock, before rebasing).

    Formats with per-chunk times give ``chunk_times_s`` (first token = first chunk, finish = last);
    formats without them (LLMPerf) give ``first_s`` and ``finish_s`` instead.
    """

    sent_s: float
    chunk_times_s: Sequence[float] = ()
    first_s: float | None = None
    finish_s: float | None = None
    output_tokens: int | None = None
    chunk_tokens: Sequence[int] | None = None
    prompt_tokens: int | None = None
    error: str = ""
    failed: bool = False
    end_s: float | None = None
    request_id: object = None


def _token_times(r: Request, n: int, chunks: np.ndarray) -> np.ndarray | None:
    if r.chunk_tokens is not None:
        return np.repeat(chunks, np.asarray(r.chunk_tokens, dtype=np.int64))
    return chunks if chunks.size == n else None


def _row(name: str, i: int, r: Request, origin: float, has_chunks: bool) -> dict:
    """One request's timeline columns (rebased to ``origin``), checked."""
    chunks = np.asarray(r.chunk_times_s, dtype=float) - origin
    if has_chunks:
        first, last = (chunks[0], chunks[-1]) if chunks.size else (np.nan, np.nan)
    else:
        first, last = (np.nan if x is None else x - origin for x in (r.first_s, r.finish_s))
    done = not r.failed and not np.isnan(first)
    tokens = r.output_tokens if r.output_tokens is not None else int(chunks.size)
    if r.chunk_tokens is not None and len(r.chunk_tokens) != chunks.size:
        raise ValueError(f"{name}: request {i} has {len(r.chunk_tokens)} chunk token counts for "
                         f"{chunks.size} chunks")
    if done and tokens < 1:
        raise ValueError(f"{name}: request {i} succeeded but reports {tokens} output tokens")
    if done and r.chunk_tokens is not None and int(np.sum(r.chunk_tokens)) != tokens:
        raise ValueError(f"{name}: request {i}: its chunks hold {int(np.sum(r.chunk_tokens))} "
                         f"tokens but it reports {tokens} output tokens")
    end = np.nan if r.end_s is None else r.end_s - origin
    return {"a": r.sent_s - origin, "f": first if done else np.nan, "c": last if done else end,
            "n": tokens if done else 0,
            "outcome": "finished" if done else outcome_of_error(r.error),
            "prompt": -1 if r.prompt_tokens is None else r.prompt_tokens,
            "error": "" if done else (r.error or "failed (no error text)"),
            "id": i if r.request_id is None else r.request_id, "chunks": chunks,
            "chunk_tokens": r.chunk_tokens,
            "tokens": (_token_times(r, tokens, chunks) if has_chunks else None) if done
            else np.empty(0)}


def build_trace(name: str, source_format: str, requests: Sequence[Request], *,
                arrivals_known: bool, conversions: Sequence[str] = (),
                assumptions: Sequence[str] = (), metadata: dict | None = None,
                has_chunks: bool = True) -> Trace:
    """Turn readers' :class:`Request` records into a :class:`Trace` (times rebased so the first
    send is 0 s; the origin is kept in ``metadata["time_origin_s"]``).

    A request with ``failed`` set, or with no first token, is not finished (see the module
    docstring). ``output_tokens`` defaults to the number of chunks (the reader then says so).
    Raises ``ValueError`` naming the file and the request when a record is inconsistent.
    """
    if not requests:
        raise ValueError(f"{name}: no requests in the file")
    origin = min(r.sent_s for r in requests)
    rows = [_row(name, i, r, origin, has_chunks) for i, r in enumerate(requests)]
    per_token = has_chunks and all(row["tokens"] is not None for row in rows)
    try:
        timelines = slo.Timelines.from_arrays(
            arrival_s=[r["a"] for r in rows], first_token_s=[r["f"] for r in rows],
            finish_s=[r["c"] for r in rows],
            output_tokens=np.asarray([r["n"] for r in rows], dtype=np.int64),
            outcome=[r["outcome"] for r in rows], request_id=_ids([r["id"] for r in rows]),
            token_times_s=[r["tokens"] for r in rows] if per_token else None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}: {exc}") from None
    conv, assume = list(conversions), list(assumptions)
    conv += _notes(rows, timelines, has_chunks and not per_token)
    if not arrivals_known:
        assume.append(NO_ARRIVALS)
    chunk_seqs = [r["chunks"] for r in rows]
    offsets = np.concatenate([[0], np.cumsum([c.size for c in chunk_seqs])]).astype(np.int64)
    known = all(r["chunk_tokens"] is not None for r in rows if r["chunks"].size)
    tokens = (np.concatenate([np.asarray(r["chunk_tokens"] or [], dtype=np.int64) for r in rows])
              if has_chunks and known else None)
    meta = dict(metadata or {})
    meta["time_origin_s"] = float(origin)
    return Trace(timelines=timelines, source_format=source_format, source=name,
                 prompt_tokens=np.asarray([r["prompt"] for r in rows], dtype=np.int64),
                 errors=tuple(r["error"] for r in rows),
                 chunk_times_s=np.concatenate(chunk_seqs) if has_chunks else None,
                 chunk_offsets=offsets if has_chunks else None, chunk_tokens=tokens,
                 arrivals_known=arrivals_known, conversions=tuple(conv),
                 assumptions=tuple(assume), metadata=meta)


def _notes(rows: list[dict], timelines: slo.Timelines, chunk_level: bool) -> list[str]:
    out = []
    counts = timelines.counts()
    if chunk_level:
        odd = sum(1 for r in rows if r["outcome"] == "finished" and r["chunks"].size != r["n"])
        out.append(f"{odd} of {counts['finished']} finished requests have a chunk count different "
                   f"from their output tokens (several tokens per chunk, e.g. speculative "
                   f"decoding or a stream interval above 1): per-token times are unknown, so ITL "
                   f"is measured between chunks and TPOT from the token count")
    failed = counts["rejected"] + counts["timed_out"]
    if failed:
        out.append(f"{failed} failed request(s) kept and counted as missed: "
                   f"{counts['timed_out']} timed_out (the error text says so), "
                   f"{counts['rejected']} rejected (any other error); error texts in Trace.errors")
    return out


def _ids(ids: list) -> np.ndarray:
    if all(isinstance(x, int) and not isinstance(x, bool) for x in ids):
        return np.asarray(ids, dtype=np.int64)
    return np.asarray([str(x) for x in ids], dtype=str)
