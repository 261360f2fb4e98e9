"""What makes a request timeline consistent, in words: the checks every timeline passes once.

A timeline is consistent when its timestamps are in causal order, ``a ≤ s ≤ f ≤ c`` (arrival,
admission, first token, finish), and a finished request has a first token, a finish and at least one
output token. :class:`~vidya_lab.slo.RequestTimeline`, :meth:`~vidya_lab.slo.Timelines.from_arrays`
and :func:`~vidya_lab.slo.read_trace_csv` all ask the same function, :func:`row_problem`, so a
trace read from a file, built by hand or emitted by a simulator is judged by one rule; the columnar
constructor first finds the bad row with a vectorised test (:func:`first_bad_row`) and then asks
:func:`row_problem` to say what is wrong with it.

Outcome codes live here too (they are part of what a timeline is): ``0`` finished, ``1`` rejected,
``2`` timed out, in the order of :data:`OUTCOMES`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real

import numpy as np

from vidya_lab._validate import check_choice

#: Outcomes of a request, in the order of their integer codes in :class:`~vidya_lab.slo.Timelines`.
OUTCOMES: tuple[str, ...] = ("finished", "rejected", "timed_out")
FINISHED, REJECTED, TIMED_OUT = 0, 1, 2

#: Most output tokens one request may report: more than any engine emits for one answer, and small
#: enough that a count is exact as a float and as an int64 (a trace saying ``1e30`` is refused).
MAX_OUTPUT_TOKENS_PER_REQUEST = 1_000_000_000


def row_problem(a: float, s: float, f: float, c: float, n: int, outcome: int) -> str | None:
    """The first thing wrong with one timeline, in words; ``None`` if it is consistent.

    ``a, s, f, c`` are arrival, admission, first-token and finish times (seconds; NaN = not
    recorded), ``n`` the output tokens and ``outcome`` its code.
    """
    if not math.isfinite(a):
        return f"arrival_s must be a finite time, got {a}"
    if n < 0:
        return f"output_tokens must be >= 0, got {n}"
    if n > MAX_OUTPUT_TOKENS_PER_REQUEST:
        return f"output_tokens must be <= {MAX_OUTPUT_TOKENS_PER_REQUEST:,}, got {n:.3g}"
    if not math.isnan(s) and s < a:
        return f"admitted_s ({s}) is before arrival_s ({a})"
    if not math.isnan(f) and f < a:
        return f"first_token_s ({f}) is before arrival_s ({a})"
    if not math.isnan(f) and not math.isnan(s) and f < s:
        return f"first_token_s ({f}) is before admitted_s ({s})"
    if not math.isnan(c) and not math.isnan(f) and c < f:
        return f"finish_s ({c}) is before first_token_s ({f})"
    if not math.isnan(c) and c < a:
        return f"finish_s ({c}) is before arrival_s ({a})"
    if outcome == FINISHED:
        if math.isnan(f) or math.isnan(c):
            return "a finished request needs first_token_s and finish_s"
        if n < 1:
            return f"a finished request needs output_tokens >= 1, got {n}"
    return None


def first_bad_row(a, s, f, c, n, oc) -> int | None:
    """Index of the first inconsistent timeline (the tests of :func:`row_problem`, vectorised),
    or ``None``."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(a)
        bad |= n < 0
        bad |= n > MAX_OUTPUT_TOKENS_PER_REQUEST
        bad |= s < a
        bad |= f < a
        bad |= f < s
        bad |= c < f
        bad |= c < a
        fin = oc == FINISHED
        bad |= fin & (np.isnan(f) | np.isnan(c) | (n < 1))
    if np.any(bad):
        return int(np.argmax(bad))
    return None


def token_times_problem(times: Sequence[float], f: float, c: float, n: int) -> str | None:
    """What is wrong with one request's per-token emit times, or ``None``: there must be ``n`` of
    them, finite, non-decreasing, from ``f`` to ``c``."""
    t = np.asarray(times, dtype=float)
    if t.size != n:
        return f"token_times_s has {t.size} times for output_tokens = {n}"
    if t.size == 0:
        return None
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        return "token_times_s must be finite and non-decreasing"
    if not (math.isclose(t[0], f, abs_tol=1e-9) and math.isclose(t[-1], c, abs_tol=1e-9)):
        return (f"token_times_s must start at first_token_s ({f}) and end at finish_s ({c}), "
                f"got {t[0]} .. {t[-1]}")
    return None


# ----------------------------------------------------------------------------- columns

def opt_time(name: str, value) -> float:
    """A time in seconds, or NaN for 'not recorded' (``None`` / NaN)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number of seconds or None, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number of seconds (within float range)") \
            from None


def plain(value):
    """A numpy scalar as the Python value (for readable messages)."""
    return value.item() if isinstance(value, np.generic) else value


def float_col(name: str, values, n: int | None = None) -> np.ndarray:
    """One column of times as float64 seconds (``None`` → NaN), of length ``n`` if given."""
    try:
        arr = np.asarray([np.nan if v is None else v for v in values]
                         if isinstance(values, list | tuple) else values, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{name} must be numbers of seconds") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have one entry per request ({n}), got {arr.size}")
    if np.any(np.isinf(arr)):
        raise ValueError(f"{name} must be finite (NaN means 'not recorded'), got an infinity")
    return arr


def token_counts(values, n: int) -> np.ndarray:
    """The ``output_tokens`` column as int64: whole numbers, at most
    :data:`MAX_OUTPUT_TOKENS_PER_REQUEST` each (a float ``1e30`` would wrap around silently)."""
    try:
        tokens = np.asarray(values)
    except (ValueError, OverflowError):
        raise ValueError("output_tokens must be a flat sequence of whole numbers") from None
    if tokens.shape != (n,):
        raise ValueError(f"output_tokens must have one entry per request ({n}), got "
                         f"shape {tokens.shape}")
    if not n:
        return tokens.astype(np.int64)
    if tokens.dtype == bool or tokens.dtype.kind not in "iuf":
        raise TypeError(f"output_tokens must be whole numbers, got dtype {tokens.dtype}")
    if tokens.dtype.kind == "f" and not np.all(np.isfinite(tokens) & (tokens == np.round(tokens))):
        raise TypeError(f"output_tokens must be whole numbers, got dtype {tokens.dtype}")
    too_big = np.abs(tokens) > MAX_OUTPUT_TOKENS_PER_REQUEST
    if np.any(too_big):
        i = int(np.argmax(too_big))
        raise ValueError(f"output_tokens of request {i} must be between 0 and "
                         f"{MAX_OUTPUT_TOKENS_PER_REQUEST:,}, got {tokens[i]:.3g}")
    return tokens.astype(np.int64)


def outcome_codes(outcome, n: int) -> np.ndarray:
    """Outcome codes (int8) from ``None`` (all finished), one name for all, or one name or code
    per request."""
    if outcome is None or (n == 0 and len(outcome) == 0):
        return np.zeros(n, dtype=np.int8)
    if isinstance(outcome, str):
        return np.full(n, OUTCOMES.index(check_choice("outcome", outcome, OUTCOMES)), dtype=np.int8)
    arr = np.asarray(outcome)
    if arr.shape != (n,):
        raise ValueError(f"outcome must have one entry per request ({n}), got {arr.shape}")
    if arr.dtype.kind in "US" or arr.dtype == object:
        codes = np.full(n, -1, dtype=np.int8)
        for code, name in enumerate(OUTCOMES):
            codes[arr == name] = code
        if np.any(codes < 0):
            i = int(np.argmax(codes < 0))
            raise ValueError(f"outcome of request {i} must be one of {', '.join(OUTCOMES)}; "
                             f"got {arr[i]!r}")
        return codes
    if not np.issubdtype(arr.dtype, np.integer) or (n and (arr.min() < 0 or arr.max() > 2)):
        raise ValueError("outcome codes must be 0 (finished), 1 (rejected) or 2 (timed_out)")
    return arr.astype(np.int8)
