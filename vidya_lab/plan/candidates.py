"""Step 1 of the plan: the cheapest layout of every GPU type and precision at the forecast peak.

Chapter 3's search (:func:`vidya_lab.layouts.search_layouts`) on each candidate GPU type × precision:
layouts whose replicas fit in memory (chapter 2) and meet the TTFT and TPOT targets at the peak,
sized by the cost model. The calculator is fast and a little optimistic (every replica at its best
batch, no queue, no rush); the simulated day of :mod:`vidya_lab.plan.confirm` has the last word.
"""

from __future__ import annotations

from dataclasses import dataclass

from vidya_lab import _validate as v
from vidya_lab import layouts, sizing, slo
from vidya_lab.autoscaling.day import DAYS
from vidya_lab.catalog import get_gpu, get_precision
from vidya_lab.scenario import TANVI, Scenario
from vidya_lab.workload import student_day_profile


@dataclass(frozen=True)
class Candidate:
    """The cheapest layout of one GPU type and precision at the peak load (chapter 3's search)."""

    gpu: str
    precision: str
    layout: layouts.Layout
    calibration: sizing.Calibration | None = None

    def __post_init__(self) -> None:
        get_gpu(v.check_str("gpu", self.gpu))
        get_precision(v.check_str("precision", self.precision))
        v.check_instance("layout", self.layout, layouts.Layout, "layouts.Layout")
        if self.calibration is not None:
            v.check_instance("calibration", self.calibration, sizing.Calibration,
                             "sizing.Calibration")

    @property
    def cost_per_hour(self) -> float:
        return self.layout.cost_per_hour

    def replica(self) -> sizing.Replica:
        return sizing.Replica(self.layout.model, self.gpu, tp=self.layout.tp, pp=self.layout.pp,
                              precision=self.precision, calibration=self.calibration)

    def as_dict(self) -> dict:
        return {"gpu": self.gpu, "precision": self.precision, **self.layout.as_dict()}


#: Largest traffic factor a day may be scaled by (a hundred times the forecast).
MAX_TRAFFIC_FACTOR = 100.0


def _day(scenario, day, traffic_factor) -> float:
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    v.check_choice("day", day, DAYS)
    return v.check_real("traffic_factor", traffic_factor, minimum=0.0, min_inclusive=False,
                        maximum=MAX_TRAFFIC_FACTOR)


def peak_rps(scenario: Scenario, day: str, traffic_factor: float = 1.0) -> float:
    """The day's peak request rate × ``traffic_factor``, requests/s."""
    traffic_factor = _day(scenario, day, traffic_factor)
    peak = scenario.exam_peak_rps if day == "exam" else scenario.normal_peak_rps
    return peak * traffic_factor


def day_curve(scenario: Scenario, day: str, traffic_factor: float = 1.0):
    """The day's traffic curve (chapter 6) for ``scenario``, scaled by ``traffic_factor``."""
    traffic_factor = _day(scenario, day, traffic_factor)
    return student_day_profile(scenario.normal_peak_rps * traffic_factor,
                               exam_season=(day == "exam"),
                               exam_multiplier=scenario.exam_multiplier)


def target(scenario: Scenario) -> slo.SLO:
    """The scenario's latency targets."""
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    return slo.SLO(ttft_s=scenario.ttft_target_s, tpot_s=scenario.tpot_target_s)


def candidates(scenario: Scenario = TANVI, *, gpu_ids=None, precisions=("bf16", "fp8"), day: str = "exam",
               traffic_factor: float = 1.0, calibration=None,
               cached_tokens: int = 0) -> list[Candidate]:
    """Every layout, on every GPU type × precision, that meets the targets at the peak.

    Each (GPU type, precision) contributes its layouts in :func:`vidya_lab.layouts.search_layouts`'
    order (cheapest, with layouts within 5 % of each other ranked simplest first); the groups are
    ordered by the cost of their first layout. A GPU type without fp8 support (the A100) is skipped
    for fp8; a GPU type on which no layout meets the targets contributes nothing.
    """
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    gpu_ids = scenario.candidate_gpu_ids if gpu_ids is None else tuple(
        v.check_instances("gpu_ids", list(gpu_ids) if isinstance(gpu_ids, (set, range)) else
                          gpu_ids, str, "GPU id string"))
    precisions = v.check_instances("precisions", precisions, str, "precision id string")
    if not gpu_ids:
        raise ValueError("gpu_ids must name at least one GPU type")
    if not precisions:
        raise ValueError("precisions must name at least one precision, e.g. bf16 or fp8")
    peak = peak_rps(scenario, day, traffic_factor)
    groups = []
    for gpu_id in gpu_ids:
        gpu = get_gpu(gpu_id)
        for precision in precisions:
            if precision == "fp8" and gpu.fp8_flops_per_s is None:
                continue
            ranked = layouts.search_layouts(
                scenario.model_id, gpu.id, peak_rps=peak, isl=scenario.prompt_tokens_mean,
                osl=scenario.answer_tokens_mean, ttft_target_s=scenario.ttft_target_s,
                tpot_target_s=scenario.tpot_target_s, precision=precision, calibration=calibration,
                cached_tokens=cached_tokens)
            group = [Candidate(gpu.id, precision, lay, calibration) for lay in ranked
                     if lay.meets_slo]
            if group:
                groups.append(group)
    # each GPU type's layouts in the search's own order (ties within 5 % go to the simplest);
    # GPU types by the cost of their first layout
    groups.sort(key=lambda g: (g[0].cost_per_hour, g[0].layout.gpus))
    return [c for g in groups for c in g]


def cheapest_per_gpu(cands: list[Candidate]) -> list[Candidate]:
    """The cheapest candidate of each (GPU type, precision), in cost order."""
    seen, out = set(), []
    for c in v.check_instances("cands", cands, Candidate, "plan.Candidate"):
        if (c.gpu, c.precision) not in seen:
            seen.add((c.gpu, c.precision))
            out.append(c)
    return out
