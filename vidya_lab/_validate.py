"""Argument checks for the public boundary of every module.

Each raises a ``ValueError``/``TypeError`` that names the parameter, the allowed range and the value
received, so a reader sees ``ValueError: batch must be an integer >= 1, got 0`` instead of a traceback
from deep inside numpy or simpy. Internals trust validated input.
"""

from __future__ import annotations

import math
from numbers import Integral, Real


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def check_int(name: str, value: object, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as ``int`` if it is an integer within ``[minimum, maximum]``."""
    if _is_bool(value) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {value}")
    return value


def check_real(name: str, value: object, *, minimum: float | None = None,
               maximum: float | None = None, min_inclusive: bool = True,
               max_inclusive: bool = True) -> float:
    """Return ``value`` as a finite ``float`` within the stated bounds."""
    if _is_bool(value) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None:
        if value < minimum or (not min_inclusive and value == minimum):
            op = ">=" if min_inclusive else ">"
            raise ValueError(f"{name} must be {op} {minimum}, got {value}")
    if maximum is not None:
        if value > maximum or (not max_inclusive and value == maximum):
            op = "<=" if max_inclusive else "<"
            raise ValueError(f"{name} must be {op} {maximum}, got {value}")
    return value


def check_fraction(name: str, value: object, *, allow_zero: bool = True,
                   allow_one: bool = True) -> float:
    """Return ``value`` as a float in [0, 1] (ends included as asked)."""
    return check_real(name, value, minimum=0.0, maximum=1.0,
                      min_inclusive=allow_zero, max_inclusive=allow_one)


def check_choice(name: str, value: object, choices) -> str:
    """Return ``value`` if it is one of ``choices``; else list them in the error."""
    choices = tuple(choices)
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value  # type: ignore[return-value]


def check_labels(name: str, value, n: int):
    """One string label per request as a numpy array: ``None`` → all "", a str → all that str."""
    import numpy as np

    if value is None:
        return np.full(n, "", dtype=str)
    if isinstance(value, str):
        return np.full(n, value)
    labels = np.asarray(value, dtype=str)
    if labels.shape != (n,):
        raise ValueError(f"{name} must have one label per request ({n}), got {labels.shape}")
    return labels
