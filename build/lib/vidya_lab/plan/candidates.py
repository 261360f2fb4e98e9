"""Step 1 of the plan: the candidate space — one layout per GPU type and precision, set up as
the chapters say it must run.

Chapter 3's search (:func:`vidya_lab.layouts.search_layouts`) on each candidate GPU type × precision
gives the layouts whose replicas fit in memory (chapter 2) and meet the TTFT and TPOT targets at the
peak, sized by the cost model. :func:`prepare` then sets the cheapest of each up as it will run:

* its **token budget** per iteration: the largest that keeps the fullest iteration within the ITL
  target (chapter 5's stall-free budget, :func:`~vidya_lab.plan.tail.itl_budget`); a layout with none
  cannot hold the ITL target and leaves the candidate space, with the reason;
* its **prefix cache** under the scenario's isolation (chapter 4: a salt per school by default,
  :func:`~vidya_lab.plan.isolation.prefix_cache`), counted at the replicas its peak needs.

The calculator is fast and a little optimistic (every replica at its best batch, no queue, no rush,
a steady mean against the target); the simulated days of :mod:`vidya_lab.plan.search` have the last
word.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from vidya_lab import _validate as v
from vidya_lab import layouts, sizing, slo
from vidya_lab.autoscaling.day import DAYS
from vidya_lab.catalog import get_gpu, get_precision
from vidya_lab.scenario import TANVI, Scenario
from vidya_lab.workload import student_day_profile


@dataclass(frozen=True)
class Candidate:
    """A layout of one GPU type and precision at the peak load (chapter 3's search), and how it
    runs: ``budget_tokens`` per iteration (``None``: the engine's default), ``cached_tokens`` of
    every prompt in its prefix cache with ``resident_prefix_tokens`` held once, and ``cache`` (the
    isolation's numbers, :func:`~vidya_lab.plan.isolation.prefix_cache`)."""

    gpu: str
    precision: str
    layout: layouts.Layout
    calibration: sizing.Calibration | None = None
    budget_tokens: int | None = None
    cached_tokens: int = 0
    resident_prefix_tokens: int | None = None
    cache: dict | None = None
    calculator: dict | None = None

    def __post_init__(self) -> None:
        get_gpu(v.check_str("gpu", self.gpu))
        get_precision(v.check_str("precision", self.precision))
        v.check_instance("layout", self.layout, layouts.Layout, "layouts.Layout")
        if self.calibration is not None:
            v.check_instance("calibration", self.calibration, sizing.Calibration,
                             "sizing.Calibration")
        if self.budget_tokens is not None:
            v.check_int("budget_tokens", self.budget_tokens, minimum=2, maximum=1 << 20)
        v.check_int("cached_tokens", self.cached_tokens, minimum=0, maximum=10_000_000)
        if self.resident_prefix_tokens is not None:
            v.check_int("resident_prefix_tokens", self.resident_prefix_tokens, minimum=0,
                        maximum=10**9)
        for name in ("cache", "calculator"):
            if getattr(self, name) is not None:
                v.check_instance(name, getattr(self, name), dict, "dict")

    @property
    def cost_per_hour(self) -> float:
        """USD an hour of the calculator's peak fleet (the prepared one's, once :func:`prepare`d)."""
        return self.layout.cost_per_hour if self.calculator is None else \
            self.calculator["cost_per_hour_usd"]

    def replica(self) -> sizing.Replica:
        return sizing.Replica(self.layout.model, self.gpu, tp=self.layout.tp, pp=self.layout.pp,
                              precision=self.precision, calibration=self.calibration,
                              max_batched_tokens=self.budget_tokens)

    @property
    def gpus_per_replica(self) -> int:
        return self.layout.tp * self.layout.pp

    @property
    def label(self) -> str:
        return f"{self.gpu} {self.precision} TP{self.layout.tp}xPP{self.layout.pp}"

    def as_dict(self) -> dict:
        """The layout's keys, then how it runs: ``budget_tokens``, ``cached_tokens``."""
        return {"gpu": self.gpu, "precision": self.precision, **self.layout.as_dict(),
                "budget_tokens": self.budget_tokens, "cached_tokens": self.cached_tokens}


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
    """The scenario's latency targets: TTFT, TPOT and the longest gap between two tokens (ITL)."""
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    return slo.SLO(ttft_s=scenario.ttft_target_s, tpot_s=scenario.tpot_target_s,
                   itl_s=scenario.itl_target_s)


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



def _calculator(c: Candidate, scenario: Scenario, peak: float) -> dict:
    rep = c.replica()
    return sizing.gpus_for_peak_load(rep, peak, scenario.prompt_tokens_mean,
                                     scenario.answer_tokens_mean,
                                     tpot_slo_s=scenario.tpot_target_s,
                                     utilisation=layouts.DEFAULT_UTILISATION,
                                     cached_tokens=c.cached_tokens)


def prepare(cand: Candidate, scenario: Scenario = TANVI, *, day: str = "exam",
            isolation: str | None = None,
            shared_tokens: int | None = None) -> tuple[Candidate | None, str | None]:
    """``cand`` set up as it will run (module docstring): ``(candidate, None)``, or ``(None, why)``
    when no token budget keeps the ITL target or the TPOT target cannot be met.

    The budget is chosen with the shared prefix counted, the fleet sized by the calculator, the
    isolation's cache counted at that fleet (``isolation``: default the scenario's), and the budget
    and the calculator's fleet taken again with that cache. ``shared_tokens`` overrides what one
    shared cache holds (the planner's ``prefix_share``).
    """
    from vidya_lab.plan import isolation as iso
    from vidya_lab.plan.tail import itl_budget

    v.check_instance("cand", cand, Candidate, "plan.Candidate")
    peak = peak_rps(scenario, day)
    shared = iso.shared_prefix_tokens(scenario) if shared_tokens is None else shared_tokens
    c = replace(cand, cached_tokens=shared)
    calc = None
    for step in ("shared", "isolated"):
        budget = itl_budget(c.replica(), scenario, c.cached_tokens)
        if budget is None:
            return None, (f"ITL: no token budget keeps an iteration of {c.label} within "
                          f"{scenario.itl_target_s:.3g} s")
        c = replace(c, budget_tokens=budget)
        try:
            calc = _calculator(c, scenario, peak)
        except ValueError as e:
            return None, f"TPOT: {e}"
        if step == "shared":  # the isolation's cache, counted at the fleet the shared one needs
            cache = iso.prefix_cache(c.replica(), scenario, replicas=calc["replicas"],
                                     isolation=isolation, shared_tokens=shared)
            c = replace(c, cached_tokens=cache["cached_tokens"],
                        resident_prefix_tokens=cache["resident_prefix_tokens"], cache=cache)
    return replace(c, calculator=calc), None
