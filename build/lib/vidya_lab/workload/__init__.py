"""Workloads: when requests arrive and how long they are (seeded, vectorised).

A workload is a set of requests, each with an arrival time (seconds from the start), a prompt length
and an output length (tokens), optionally a shared-prefix id and a priority class. Simulators read a
:class:`Workload` and emit request timelines that :mod:`vidya_lab.slo` turns into metrics. Everything
here produces numpy arrays, never one Python object per request: a 24-hour exam day has millions of
arrivals and is generated in seconds.

Read the code in this order (each file one idea, with the function that holds it):

1. :mod:`~vidya_lab.workload.seeding` — reproducible randomness and the one bound on size
   (:func:`as_rng`, :data:`MAX_ARRIVALS`).
2. :mod:`~vidya_lab.workload.arrivals` — arrival processes: :func:`poisson_arrivals` (the idea:
   a Poisson count, then uniform times), :func:`mmpp_arrivals` and :func:`on_off_arrivals` (bursts),
   :func:`nonhomogeneous_arrivals` (a time-varying rate by thinning).
3. :mod:`~vidya_lab.workload.day` — the day curve: :class:`DiurnalProfile` (exact rate, mean, count
   and bounds of a piecewise-linear day) and :func:`student_day_profile` (the 7 am rush, the evening
   peak, ×10 in exam season).
4. :mod:`~vidya_lab.workload.lengths` — length distributions: :class:`FixedLength`,
   :class:`LognormalLength` (from a mean and a median), :class:`EmpiricalLength`.
5. :mod:`~vidya_lab.workload.requests` — :class:`Request` and the columnar :class:`Workload`.
6. :mod:`~vidya_lab.workload.make` — :func:`make_workload` (arrivals + lengths + classes + a shared
   prefix) and :func:`tutor_requests` (Tanvi's requests).

Randomness only through ``seed`` (an ``int`` or a ``numpy.random.Generator``): same seed, same
workload.
"""

from __future__ import annotations

from vidya_lab.workload.arrivals import (
    MAX_CHUNKS,
    MAX_STATE_CHANGES,
    mmpp_arrivals,
    nonhomogeneous_arrivals,
    on_off_arrivals,
    poisson_arrivals,
)
from vidya_lab.workload.day import STUDENT_DAY_SHAPE, DiurnalProfile, student_day_profile
from vidya_lab.workload.lengths import (
    MAX_SAMPLES,
    EmpiricalLength,
    FixedLength,
    LognormalLength,
)
from vidya_lab.workload.lengths import (
    _LengthDist as _LengthDist,  # the base class: caching and admission check isinstance
)
from vidya_lab.workload.make import make_workload, tutor_requests
from vidya_lab.workload.requests import Request, Workload
from vidya_lab.workload.seeding import MAX_ARRIVALS, as_rng, check_arrival_count

__all__ = [
    "Request",
    "Workload",
    "FixedLength",
    "LognormalLength",
    "EmpiricalLength",
    "DiurnalProfile",
    "as_rng",
    "poisson_arrivals",
    "mmpp_arrivals",
    "on_off_arrivals",
    "nonhomogeneous_arrivals",
    "student_day_profile",
    "make_workload",
    "tutor_requests",
    "STUDENT_DAY_SHAPE",
    "MAX_ARRIVALS",
    "MAX_CHUNKS",
    "MAX_STATE_CHANGES",
    "MAX_SAMPLES",
    "check_arrival_count",
]
