"""Reproducible randomness and the bound on how many arrivals one call may generate.

Every random result in vidya-lab comes from an explicit seed: an ``int`` or a
``numpy.random.Generator``; same seed, same workload. :data:`MAX_ARRIVALS` is the one stated limit
on the size of a generated workload, checked before anything is drawn.
"""

from __future__ import annotations

import math

import numpy as np

from vidya_lab._validate import check_int, check_real, check_str, check_work

#: Largest number of arrivals one call will generate, checked up front (it guards against a typo
#: such as a rate in requests per hour given per second, over a year). 10 million arrival times are
#: 80 MB of float64 and take about 1 s to draw and sort on this machine; a :class:`Workload` of
#: that many requests (lengths, prefixes, labels) peaks near 1.3 GB while it is built (measured:
#: 4 million took 0.57 GB; at the earlier bound of 50 million it was over 6 GB, issue 16). An exam
#: day of the story has about 1.8 million.
MAX_ARRIVALS = 10_000_000


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A ``numpy.random.Generator`` from an int seed or a Generator (passed through).

    ``None`` is refused: every random result in vidya-lab must be reproducible.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        raise TypeError("seed must be an int or a numpy.random.Generator (results must be "
                        "reproducible), got None")
    return np.random.default_rng(check_int("seed", seed, minimum=0))


def check_arrival_count(expected: float, what: str) -> None:
    """Refuse a call expected to generate more than :data:`MAX_ARRIVALS` arrivals, before drawing."""
    try:
        expected = check_real("expected", expected, minimum=0.0)
    except ValueError as exc:  # an integer beyond float range is still too many arrivals
        if "float range" not in str(exc):
            raise
        expected = math.inf
    check_work(check_str("what", what), expected, MAX_ARRIVALS, unit="arrivals",
               hint="check the rate's unit (requests per second) and the duration (seconds)")
