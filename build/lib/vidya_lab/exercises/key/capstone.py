"""The capstone's design exercise: its rubric, and the figures an instructor checks answers against.

The exercise (``book/capstone.md``, "A design exercise with no single answer"): the district adds a
second exam season; propose how many GPUs to reserve for a year, what to rent on demand and when,
and what spare capacity to keep against a forecast wrong by 30 %. There is no single right answer
(the length of the seasons, the GPU type and the risk accepted are the student's to choose), so it
is graded by hand with :data:`RUBRIC`. :func:`reference` recomputes, for the season length a student
assumed, the figures a sound answer should arrive at, so an instructor can check the student's
numbers rather than re-derive them.

The year's purchase rule is chapter 6's, over a year instead of a day: reserving the k-th replica
for a year costs ρ × 8,760 on-demand hours (ρ = reserved ÷ on-demand price), so it pays when that
replica is in service for at least that many hours over the year's normal and exam days together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vidya_lab import _validate as v
from vidya_lab import procurement
from vidya_lab.scenario import TANVI, Scenario

HOURS_PER_YEAR = 8760.0
#: The season length :func:`reference` assumes when a student states none: two exam seasons of four
#: weeks (an assumption of the exercise, not a sourced figure; students state their own).
DEFAULT_EXAM_DAYS_PER_YEAR = 56
#: The forecast error the exercise asks the plan to survive.
EXERCISE_TRAFFIC_MARGIN = 0.3


@dataclass(frozen=True)
class Criterion:
    """One line of the rubric: what it assesses, its marks, and what earns full or half marks."""

    name: str
    points: int
    full: str
    half: str


RUBRIC = (
    Criterion("assumptions stated", 1,
              "states the days of exam season per year and the traffic of a normal and an exam "
              "day, and says which are guesses",
              "uses a season length or traffic without saying where it comes from"),
    Criterion("layout chosen for the exam peak", 2,
              "names a GPU type, precision and tp × pp from vidya-lab plan at a 30 % margin, "
              "and why (memory first, then cost at the targets)",
              "names a layout but not the run or the margin it comes from"),
    Criterion("year's reservation computed", 3,
              "applies the purchase rule over the year (a replica's in-service hours over normal "
              "and exam days against ρ × 8,760) and gets the reserved count reference() gives "
              "for the stated season length, ±1 replica",
              "reserves the exam month's baseline or the normal day's without the year's hours"),
    Criterion("on-demand burst: when and how much", 2,
              "gives the on-demand GPU-hours of an exam day (and when in the day they are used), "
              "and the year's on-demand bill",
              "gives a total without saying when it is needed"),
    Criterion("risk accepted, and the first measurement", 2,
              "states what fails first beyond the margin (from the plan's risks) and names one "
              "measurement that would shrink the uncertainty (for example their own engine's "
              "throughput via vidya-lab calibrate, or last season's traffic)",
              "names a risk without a computed figure, or a measurement without saying why"),
)
TOTAL_POINTS = sum(c.points for c in RUBRIC)


def reserved_for_year(curves, *, rho: float) -> int:
    """Replicas worth reserving for a year, given the year's days as replica curves.

    ``curves``: ``[(replicas_by_hour, days), ...]`` — each a 24-value curve (replicas in service
    each hour, fractional allowed) and the number of days a year that curve is lived. The k-th
    replica is reserved when its in-service hours over the year are at least ``rho`` × 8,760.
    """
    rho = v.check_fraction("rho", rho, allow_zero=False)
    year = []
    total_days = 0
    for i, (hours, days) in enumerate(curves):
        hours = v.check_reals(f"curves[{i}] replicas_by_hour", hours, minimum=0.0,
                              max_length=24, allow_empty=False)
        if len(hours) != 24:
            raise ValueError(f"curves[{i}] must give 24 hourly values, got {len(hours)}")
        days = v.check_int(f"curves[{i}] days", days, minimum=0, maximum=366)
        total_days += days
        year.append((hours, days))
    if total_days > 366:
        raise ValueError(f"curves cover {total_days} days; a year has at most 366")
    peak = max(math.ceil(float(h.max()) - 1e-9) for h, _ in year)
    reserved = 0
    for k in range(1, peak + 1):
        in_service = sum(d * float(sum(min(1.0, max(0.0, x - (k - 1))) for x in h))
                         for h, d in year)
        if in_service >= HOURS_PER_YEAR * rho:
            reserved = k
    return reserved


def reference(exam_days_per_year: int = DEFAULT_EXAM_DAYS_PER_YEAR, *,
              scenario: Scenario = TANVI,
              traffic_margin: float = EXERCISE_TRAFFIC_MARGIN) -> dict:
    """The figures a sound answer reaches for ``exam_days_per_year`` days of exam traffic a year.

    Plans the exam day at ``traffic_margin`` (vidya-lab plan), then the normal day on the same GPU
    type, precision and layout, and applies the year's purchase rule to both curves.

    Returns ``gpu``, ``precision``, ``tp``, ``pp``, ``exam_peak_gpus``, ``normal_peak_gpus``,
    ``spare_replicas``, ``reserved_replicas_year``, ``reserved_gpus_year``,
    ``reserved_gpus_exam_month`` (what the capstone's month rule reserves, for comparison),
    ``exam_day_on_demand_gpu_hours`` (above the year's reservation), ``year_cost_usd`` and
    ``year_cost_all_on_demand_usd``, ``breaks_first`` and the inputs.
    """
    from vidya_lab import plan  # the planner is slow to import with its simulators; only here

    exam_days = v.check_int("exam_days_per_year", exam_days_per_year, minimum=0, maximum=365)
    exam = plan.plan(scenario, traffic_margin=traffic_margin)
    normal = plan.plan(scenario, day="normal", gpu_ids=[exam["gpu"]],
                       precisions=(exam["precision"],), traffic_margin=traffic_margin,
                       risks=False)
    per = exam["tp"] * exam["pp"]
    normal_curve = normal["replicas_by_hour"]
    if (normal["tp"], normal["pp"]) != (exam["tp"], exam["pp"]):
        # a different layout on normal days: count its GPUs in the exam layout's replicas
        scale = normal["tp"] * normal["pp"] / per
        normal_curve = [x * scale for x in normal_curve]
    rho, _ = procurement.price_ratio(exam["gpu"], "reserved")
    curves = [(exam["replicas_by_hour"], exam_days), (normal_curve, 365 - exam_days)]
    reserved = reserved_for_year(curves, rho=rho)
    price = _price(exam["gpu"])
    burst = {name: sum(max(0.0, x - reserved) for x in curve) * per
             for name, curve in (("exam", exam["replicas_by_hour"]), ("normal", normal_curve))}
    on_demand_year = burst["exam"] * exam_days + burst["normal"] * (365 - exam_days)
    all_gpu_hours = per * (sum(exam["replicas_by_hour"]) * exam_days
                           + sum(normal_curve) * (365 - exam_days))
    return {
        "exam_days_per_year": exam_days, "traffic_margin": traffic_margin,
        "gpu": exam["gpu"], "precision": exam["precision"], "tp": exam["tp"], "pp": exam["pp"],
        "exam_peak_gpus": exam["gpus"], "normal_peak_gpus": normal["gpus"],
        "spare_replicas": exam["spare_replicas"], "reserved_ratio": rho,
        "reserved_replicas_year": reserved, "reserved_gpus_year": reserved * per,
        "reserved_gpus_exam_month": exam["reserved_gpus"],
        "exam_day_on_demand_gpu_hours": burst["exam"],
        "year_cost_usd": HOURS_PER_YEAR * reserved * per * price * rho + on_demand_year * price,
        "year_cost_all_on_demand_usd": all_gpu_hours * price,
        "breaks_first": exam["risks"]["breaks_first"],
    }


def _price(gpu: str) -> float:
    from vidya_lab.catalog import get_gpu

    return get_gpu(gpu).price_per_hour_usd
