"""The requests themselves: one :class:`Request` for reading, a columnar :class:`Workload` for work.

A workload is a set of requests, each with an arrival time (seconds from the start), a prompt length
and an output length (tokens), optionally a shared-prefix id (requests that begin with the same
document) and a priority class. Simulators read a :class:`Workload` and emit request timelines that
:mod:`vidya_lab.slo` turns into metrics. It holds one numpy array per field, never one Python object
per request: a 24-hour exam day has millions of arrivals. :class:`Request` exists for reading one
request at a time and for small hand-made examples.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from vidya_lab._validate import check_int, check_labels, check_real, check_reals
from vidya_lab.workload.seeding import MAX_ARRIVALS

#: Largest token count a float column may hold (beyond it float64 is no longer whole numbers).
MAX_TOKENS = 2.0**53


@dataclass(frozen=True)
class Request:
    """One request, for reading a workload one row at a time or writing a small example.

    Parameters
    ----------
    request_id : index of the request in its workload.
    arrival_s : arrival time, seconds from the start.
    prompt_tokens : prompt length, tokens (including any shared prefix).
    output_tokens : tokens the model will generate (≥ 1 for a request that gets an answer).
    prefix_id : id of the shared prefix (e.g. an uploaded document) the prompt begins with; ``-1``
        for none.
    prefix_tokens : how many leading prompt tokens are that shared prefix (≤ prompt_tokens).
    klass : priority class label (e.g. ``"interactive"``, ``"batch"``); ``""`` for none.
    """

    request_id: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    prefix_id: int = -1
    prefix_tokens: int = 0
    klass: str = ""

    def __post_init__(self) -> None:
        check_int("request_id", self.request_id, minimum=0)
        check_real("arrival_s", self.arrival_s, minimum=0.0)
        check_int("prompt_tokens", self.prompt_tokens, minimum=0)
        check_int("output_tokens", self.output_tokens, minimum=0)
        check_int("prefix_id", self.prefix_id, minimum=-1)
        check_int("prefix_tokens", self.prefix_tokens, minimum=0, maximum=self.prompt_tokens)
        if self.prefix_id == -1 and self.prefix_tokens:
            raise ValueError("prefix_tokens must be 0 when prefix_id is -1 (no shared prefix)")
        if not isinstance(self.klass, str):
            raise TypeError(f"klass must be a string, got {type(self.klass).__name__}")


def _int_array(name: str, values, n: int | None, minimum: int = 0) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    floating = np.issubdtype(arr.dtype, np.floating)
    if arr.size and not (np.issubdtype(arr.dtype, np.integer)
                         or (floating and np.all(arr == np.round(arr)))):
        raise TypeError(f"{name} must hold whole numbers of tokens, got dtype {arr.dtype}")
    if floating and arr.size and np.abs(arr).max() > MAX_TOKENS:
        raise ValueError(f"{name} must be at most {MAX_TOKENS:.3g} tokens, got {np.abs(arr).max():.3g}")
    arr = arr.astype(np.int64)
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have one entry per request ({n}), got {arr.size}")
    if arr.size and arr.min() < minimum:
        i = int(np.argmin(arr))
        raise ValueError(f"{name} must be >= {minimum}; request {i} has {int(arr[i])}")
    return arr


@dataclass(frozen=True, eq=False)
class Workload:
    """A workload in columnar form: one numpy array per field, one entry per request.

    Build it with :func:`make_workload` (sampled) or :meth:`from_arrays` (given); requests are kept
    sorted by arrival. ``len(w)`` is the number of requests, ``w[i]`` is a :class:`Request`, ``w[mask]``
    or ``w[a:b]`` a smaller :class:`Workload`; iterate with :meth:`requests`.

    Attributes
    ----------
    arrival_s : float64, seconds, non-decreasing.
    prompt_tokens, output_tokens, prefix_tokens : int64, tokens.
    prefix_id : int64, ``-1`` for no shared prefix.
    klass : str array of class labels (``""`` for none).
    """

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_id: np.ndarray
    prefix_tokens: np.ndarray
    klass: np.ndarray

    @classmethod
    def from_arrays(cls, arrival_s, prompt_tokens, output_tokens, *, prefix_id=None,
                    prefix_tokens=None, klass=None) -> Workload:
        """Validate and sort columns into a workload (times in s, lengths in tokens)."""
        arr = check_reals("arrival_s", arrival_s, minimum=0.0, max_length=MAX_ARRIVALS)
        n = arr.size
        prompt = _int_array("prompt_tokens", prompt_tokens, n)
        out = _int_array("output_tokens", output_tokens, n)
        pid = (np.full(n, -1, dtype=np.int64) if prefix_id is None
               else _int_array("prefix_id", prefix_id, n, minimum=-1))
        ptok = (np.zeros(n, dtype=np.int64) if prefix_tokens is None
                else _int_array("prefix_tokens", prefix_tokens, n))
        if np.any(ptok > prompt):
            i = int(np.argmax(ptok > prompt))
            raise ValueError(f"prefix_tokens must be <= prompt_tokens; request {i} has "
                             f"{int(ptok[i])} > {int(prompt[i])}")
        if np.any((pid == -1) & (ptok > 0)):
            raise ValueError("prefix_tokens must be 0 where prefix_id is -1 (no shared prefix)")
        kl = check_labels("klass", klass, n)
        if not np.any(arr[1:] < arr[:-1]):  # already in order (every generator's case): no copy
            return cls(arr, prompt, out, pid, ptok, kl)
        order = np.argsort(arr, kind="stable")
        return cls(arr[order], prompt[order], out[order], pid[order], ptok[order], kl[order])

    @classmethod
    def from_requests(cls, requests: Sequence[Request]) -> Workload:
        """A workload from :class:`Request` objects (for small, hand-made examples)."""
        if isinstance(requests, (str, bytes, Request)) or not hasattr(requests, "__iter__"):
            raise TypeError(f"requests must be a sequence of Request objects, got "
                            f"{type(requests).__name__}")
        reqs = list(requests)
        for r in reqs:
            if not isinstance(r, Request):
                raise TypeError(f"requests must be Request objects, got {type(r).__name__}")
        return cls.from_arrays([r.arrival_s for r in reqs], [r.prompt_tokens for r in reqs],
                               [r.output_tokens for r in reqs],
                               prefix_id=[r.prefix_id for r in reqs],
                               prefix_tokens=[r.prefix_tokens for r in reqs],
                               klass=[r.klass for r in reqs] if reqs else None)

    @staticmethod
    def merge(*workloads: Workload) -> Workload:
        """One workload from several, sorted by arrival (e.g. student traffic plus one teacher's
        40,000-token upload made with :meth:`from_requests`)."""
        if not workloads or not all(isinstance(w, Workload) for w in workloads):
            raise TypeError("merge needs one or more Workload objects")
        return Workload.from_arrays(
            np.concatenate([w.arrival_s for w in workloads]),
            np.concatenate([w.prompt_tokens for w in workloads]),
            np.concatenate([w.output_tokens for w in workloads]),
            prefix_id=np.concatenate([w.prefix_id for w in workloads]),
            prefix_tokens=np.concatenate([w.prefix_tokens for w in workloads]),
            klass=np.concatenate([w.klass.astype(str) for w in workloads]))

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    def __getitem__(self, key):
        if isinstance(key, Integral):
            i = int(key)
            if not -len(self) <= i < len(self):
                raise IndexError(f"request index {i} out of range for {len(self)} requests")
            i %= len(self)
            return Request(i, float(self.arrival_s[i]), int(self.prompt_tokens[i]),
                           int(self.output_tokens[i]), int(self.prefix_id[i]),
                           int(self.prefix_tokens[i]), str(self.klass[i]))
        return Workload(self.arrival_s[key], self.prompt_tokens[key], self.output_tokens[key],
                        self.prefix_id[key], self.prefix_tokens[key], self.klass[key])

    def requests(self) -> Iterator[Request]:
        """Iterate over the requests as :class:`Request` objects (slow for millions: prefer arrays)."""
        for i in range(len(self)):
            yield self[i]

    @property
    def duration_s(self) -> float:
        """Time of the last arrival, seconds (0 for an empty workload)."""
        return float(self.arrival_s[-1]) if len(self) else 0.0

    def total_tokens(self) -> dict[str, int]:
        """Total prompt and output tokens (tokens)."""
        return {"prompt_tokens": int(self.prompt_tokens.sum()),
                "output_tokens": int(self.output_tokens.sum())}
