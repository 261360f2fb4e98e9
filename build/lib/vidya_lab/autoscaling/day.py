"""The day the fleet serves: Tanvi's traffic curve, her requests and her targets.

Chapter 6 judges every fleet on one kind of day: an ordinary school day (``"normal"``) or an exam day
(``"exam"``, :attr:`~vidya_lab.scenario.Scenario.exam_multiplier` times busier), both the student
curve of :func:`vidya_lab.workload.student_day_profile` (a quiet night, the 7 am rush, an evening
homework peak). :func:`day_workload` draws the requests of any window of such a day;
:data:`RUSH_HOURS` is the window the chapter calls "the morning rush".
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import slo
from vidya_lab.scenario import TANVI, Scenario
from vidya_lab.workload import DiurnalProfile, Workload, as_rng, student_day_profile, tutor_requests

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0

#: The days the CLI knows: an ordinary school day and an exam-season day (TANVI.exam_multiplier ×).
DAYS = ("normal", "exam")
#: The morning rush the chapter judges policies on: from two hours before TANVI.rush_hour (the end of
#: the quiet night in the day's curve) to one hour after it, hours of the day.
RUSH_HOURS = (TANVI.rush_hour - 2.0, TANVI.rush_hour + 1.0)


def day_profile(day: str | DiurnalProfile = "normal", *,
                peak_rate_per_s: float = TANVI.normal_peak_rps) -> DiurnalProfile:
    """The student day (:func:`vidya_lab.workload.student_day_profile`) for ``"normal"`` or
    ``"exam"`` (× ``TANVI.exam_multiplier``); a :class:`DiurnalProfile` is passed through."""
    if isinstance(day, DiurnalProfile):
        return day
    v.check_choice("day", day, DAYS)
    return student_day_profile(peak_rate_per_s, exam_season=(day == "exam"),
                               exam_multiplier=TANVI.exam_multiplier)


def day_workload(day: str | DiurnalProfile = "normal", *, seed: int | np.random.Generator,
                 start_s: float = 0.0, duration_s: float = SECONDS_PER_DAY,
                 scenario: Scenario = TANVI) -> Workload:
    """Tanvi's requests over ``[start_s, start_s + duration_s)`` of a day (seconds from midnight).

    Arrivals follow the day's curve (thinned Poisson); every prompt is the syllabus and a subject
    prompt (shared prefix) plus the student's question, and answers are lognormal: the lengths of
    :func:`vidya_lab.toyserver.tutor_workload`, from ``scenario`` (default the book's).
    """
    prof = day_profile(day)
    start = v.check_real("start_s", start_s, minimum=0.0)
    dur = v.check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    v.check_instance("scenario", scenario, Scenario, "vidya_lab.scenario.Scenario")
    rng = as_rng(seed)
    shifted = replace(prof, start_hour=float(np.mod(prof.start_hour + start / SECONDS_PER_HOUR, 24.0)))
    arrivals = shifted.arrivals(dur, seed=rng) + start
    return tutor_requests(arrivals, seed=rng, scenario=scenario)


def tutor_slo() -> slo.SLO:
    """Tanvi's per-request targets (TTFT and TPOT) from the scenario."""
    return slo.SLO(ttft_s=TANVI.ttft_target_s, tpot_s=TANVI.tpot_target_s)


def check_hours(name: str, hours) -> tuple[float, float]:
    """``hours`` as a ``(start, end)`` pair of hours of the day with 0 ≤ start < end ≤ 24."""
    try:
        start, end = hours
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a (start, end) pair of hours of the day, got "
                        f"{hours!r}") from None
    start = v.check_real(f"{name}[0]", start, minimum=0.0, maximum=24.0)
    end = v.check_real(f"{name}[1]", end, minimum=0.0, maximum=24.0)
    if not start < end:
        raise ValueError(f"{name} must have start < end (hours of one day), got {hours!r}")
    return start, end
