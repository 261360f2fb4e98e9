"""How long requests are: distributions of prompt and answer lengths, in tokens.

Each distribution has ``sample(n, rng) -> int64 array`` and ``mean_tokens``:
:class:`FixedLength`, :class:`LognormalLength` (from a mean and a median, as papers report them) and
:class:`EmpiricalLength` (resample observed lengths).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from vidya_lab._validate import check_int, check_real
from vidya_lab.workload.seeding import as_rng

#: Most draws one ``sample`` call makes (an int64 array of this many is 0.4 GB).
MAX_SAMPLES = 50_000_000


def _check_n(n: int) -> int:
    return check_int("n", n, minimum=0, maximum=MAX_SAMPLES)


class _LengthDist(ABC):
    """A distribution of request lengths, tokens: :class:`FixedLength`, :class:`LognormalLength`,
    :class:`EmpiricalLength`."""

    @abstractmethod
    def sample(self, n: int, rng: int | np.random.Generator) -> np.ndarray:
        """``n`` lengths drawn with ``rng``, tokens (int64)."""


@dataclass(frozen=True)
class FixedLength(_LengthDist):
    """Every request has ``tokens`` tokens."""

    tokens: int

    def __post_init__(self) -> None:
        check_int("tokens", self.tokens, minimum=0)

    def sample(self, n: int, rng: int | np.random.Generator) -> np.ndarray:
        """``n`` lengths, tokens (int64)."""
        return np.full(_check_n(n), self.tokens, dtype=np.int64)

    @property
    def mean_tokens(self) -> float:
        return float(self.tokens)


@dataclass(frozen=True)
class LognormalLength(_LengthDist):
    """Lengths from a lognormal given its mean and median, rounded to whole tokens and clipped.

    Papers report a mean and a median (p50); a lognormal with median ``m`` and mean ``μ`` has
    ``ln X ~ Normal(ln m, σ²)`` with ``σ = sqrt(2 ln(μ / m))`` (so it needs ``μ ≥ m``: right-skewed,
    as prompt and answer lengths are). Rounding and clipping to ``[min_tokens, max_tokens]`` move the
    mean slightly; :meth:`sample` is what simulations use.

    Parameters
    ----------
    mean_tokens : mean length, tokens (> 0).
    p50_tokens : median length, tokens (> 0, ≤ mean_tokens).
    min_tokens, max_tokens : clip range, tokens (``max_tokens=None``: no upper clip).
    """

    mean_tokens: float
    p50_tokens: float
    min_tokens: int = 1
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        mean = check_real("mean_tokens", self.mean_tokens, minimum=0.0, min_inclusive=False)
        p50 = check_real("p50_tokens", self.p50_tokens, minimum=0.0, min_inclusive=False)
        if p50 > mean:
            raise ValueError(f"p50_tokens ({p50}) must be <= mean_tokens ({mean}): a lognormal's "
                             f"mean is at least its median")
        lo = check_int("min_tokens", self.min_tokens, minimum=0)
        if self.max_tokens is not None:
            check_int("max_tokens", self.max_tokens, minimum=max(lo, 1))

    @property
    def sigma(self) -> float:
        """Standard deviation of ``ln X``."""
        return math.sqrt(2.0 * math.log(self.mean_tokens / self.p50_tokens))

    @property
    def mu(self) -> float:
        """Mean of ``ln X`` (= ln of the median)."""
        return math.log(self.p50_tokens)

    def sample(self, n: int, rng: int | np.random.Generator) -> np.ndarray:
        """``n`` lengths, tokens (int64)."""
        x = as_rng(rng).lognormal(self.mu, self.sigma, size=_check_n(n))
        hi = np.inf if self.max_tokens is None else self.max_tokens
        return np.clip(np.rint(x), self.min_tokens, hi).astype(np.int64)


@dataclass(frozen=True)
class EmpiricalLength(_LengthDist):
    """Lengths resampled (with replacement) from observed values, optionally weighted."""

    values: tuple[int, ...]
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("values", "weights"):
            seq = getattr(self, name)
            if seq is not None and (isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__")):
                raise TypeError(f"{name} must be a sequence of numbers, got {type(seq).__name__}")
        if len(self.values) > MAX_SAMPLES:
            raise ValueError(f"values may hold at most {MAX_SAMPLES:,} lengths, got {len(self.values):,}")
        vals = tuple(check_int(f"values[{i}]", v, minimum=0) for i, v in enumerate(self.values))
        if not vals:
            raise ValueError("values must hold at least one observed length")
        object.__setattr__(self, "values", vals)
        if self.weights is not None:
            w = tuple(check_real(f"weights[{i}]", x, minimum=0.0) for i, x in enumerate(self.weights))
            if len(w) != len(vals):
                raise ValueError(f"weights must have one entry per value ({len(vals)}), got {len(w)}")
            if sum(w) <= 0:
                raise ValueError("weights must not all be zero")
            object.__setattr__(self, "weights", w)

    @property
    def mean_tokens(self) -> float:
        v = np.asarray(self.values, dtype=float)
        if self.weights is None:
            return float(v.mean())
        w = np.asarray(self.weights, dtype=float)
        return float(np.sum(v * w) / np.sum(w))

    def sample(self, n: int, rng: int | np.random.Generator) -> np.ndarray:
        """``n`` lengths, tokens (int64)."""
        n = _check_n(n)
        p = None
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=float)
            p = w / w.sum()
        return as_rng(rng).choice(np.asarray(self.values, dtype=np.int64), size=n, p=p)
