"""What the writers share: checking what they are given, and the emissions of a timeline.

A writer turns chapter-1 timelines (a simulation's, or a :class:`~vidya_lab.traces.Trace`'s) into a
tool's file, so the same run can be read back by every reader: the round trip calibration uses.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import slo
from vidya_lab._validate import check_int


def timelines_of(obj, fmt: str, *, needs_token_times: bool = True) -> slo.Timelines:
    """The :class:`~vidya_lab.slo.Timelines` of ``obj`` (Timelines, or a Trace's); a format that
    streams chunks needs per-token emit times."""
    from vidya_lab.traces._trace import Trace

    t = obj.timelines if isinstance(obj, Trace) else obj
    if not isinstance(t, slo.Timelines):
        raise TypeError(f"timelines must be a vidya_lab.slo.Timelines or a traces.Trace, got "
                        f"{type(obj).__name__}")
    if len(t) == 0:
        raise ValueError(f"timelines must hold at least one request to write a {fmt} file")
    if needs_token_times and t.token_times_s is None:
        raise ValueError(f"writing a {fmt} file needs per-token emit times (timelines."
                         f"token_times_s): the file streams one chunk per emission; record them "
                         f"(e.g. toyserver.run(..., record_token_times=True))")
    return t


def emissions(t: slo.Timelines, i: int) -> np.ndarray:
    """The distinct emit times of request ``i`` (seconds): tokens emitted in one step share one."""
    times = t.token_times_s[t.token_offsets[i]:t.token_offsets[i + 1]]
    if times.size == 0:
        return times
    return times[np.concatenate([[True], np.diff(times) > 0])]


def emission_tokens(t: slo.Timelines, i: int) -> np.ndarray:
    """How many tokens each distinct emission of request ``i`` carried (aligned with
    :func:`emissions`)."""
    times = t.token_times_s[t.token_offsets[i]:t.token_offsets[i + 1]]
    if times.size == 0:
        return np.empty(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(times) > 0]))
    return np.diff(np.concatenate([starts, [times.size]])).astype(np.int64)


def prompt_column(obj, prompt_tokens, n: int) -> np.ndarray | None:
    """Prompt tokens per request as int64: ``prompt_tokens`` if given, else a Trace's own when it
    knows every request's, else ``None``."""
    from vidya_lab.traces._trace import Trace

    if prompt_tokens is None:
        if isinstance(obj, Trace) and np.all(obj.prompt_tokens >= 0):
            return obj.prompt_tokens.astype(np.int64)
        return None
    arr = np.asarray(prompt_tokens)
    if arr.shape != (n,):
        raise ValueError(f"prompt_tokens must have one entry per request ({n}), got shape "
                         f"{arr.shape}")
    return np.asarray([check_int(f"prompt_tokens[{i}]", v.item() if hasattr(v, "item") else v,
                                 minimum=0) for i, v in enumerate(arr)], dtype=np.int64)


def error_text(outcome: int) -> str:
    """The error text a writer gives a request that did not finish (readers map it back)."""
    return "timed out (vidya-lab simulation)" if outcome == 2 else "rejected (vidya-lab simulation)"
