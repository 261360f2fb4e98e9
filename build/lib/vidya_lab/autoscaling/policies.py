"""Scaling policies: how many replicas to ask for, and the one definition of utilisation.

**Utilisation** in this package (and in the book) is one number: the *offered* request rate divided
by what the replicas can carry while meeting the SLO,

    utilisation = rate_per_s / (replicas × ReplicaModel.capacity_rps())     (:func:`utilisation`)

where :meth:`~vidya_lab.autoscaling.replica.ReplicaModel.capacity_rps` is the request rate one
replica sustains with its mean TPOT and TTFT at their targets. Every policy's utilisation target
divides by it: :class:`Reactive` on the ``"utilisation"`` metric, :func:`replicas_for_rate` (and so
:class:`Scheduled` and :class:`Predictive`), :func:`erlang_replicas`'s ``utilisation`` and the fluid
fleet's per-tick utilisation. :data:`TARGET_UTILISATION` is the default target.

Three policies, as the chapter tells them:

* :class:`Reactive` scales on what the fleet shows now, as Kubernetes' Horizontal Pod Autoscaler
  does (``desired = ceil(ready × metric / target)``), with a scale-up cooldown and a scale-down
  stabilisation window;
* :class:`Scheduled` applies a replica count per hour of the day, ``lead_s`` early
  (:func:`scheduled_for` writes one from the day's curve);
* :class:`Predictive` follows yesterday's arrivals per time bin (:func:`predictive_from`), and, as
  real predictive scalers do, never asks for fewer replicas than a reactive rule on the live load:
  AWS combines the policies of a group by taking "the maximum of those" desired capacities, and
  Google Compute Engine's predictive autoscaler "works with real-time data as well as with
  historical data to cover both the current and forecasted load" (references on
  :class:`Predictive`). A forecast that underestimates is rescued by live load, a cold start late.

:func:`erlang_replicas` is the analytic counterpart: Erlang C (:mod:`vidya_lab.queueing`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vidya_lab import _validate as v
from vidya_lab.autoscaling.day import SECONDS_PER_DAY, SECONDS_PER_HOUR, day_profile
from vidya_lab.autoscaling.replica import ReplicaModel
from vidya_lab.scenario import TANVI
from vidya_lab.workload import DiurnalProfile

METRICS = ("utilisation", "queue", "kv")
POLICIES = ("reactive", "scheduled", "predictive")
#: The utilisation (:func:`utilisation`: offered load ÷ capacity_rps) every policy aims at by
#: default. At capacity the *mean* TPOT just meets the target, so about half the requests miss it;
#: at 0.6 a steady Poisson load keeps 99 % of requests within Tanvi's targets (the coarse model,
#: 30 min at a fixed rate; pinned by a test), which is her attainment target.
TARGET_UTILISATION = 0.6


def _model(model) -> ReplicaModel:
    return v.check_instance("model", model, ReplicaModel, "ReplicaModel (see replica_model)")


def utilisation(rate_per_s: float, replicas: float, model: ReplicaModel) -> float:
    """THE utilisation: offered requests/s ÷ (replicas × :meth:`ReplicaModel.capacity_rps`).

    1.0 means the replicas carry exactly the rate at which their mean TPOT (or TTFT) meets its
    target; every policy's target (:data:`TARGET_UTILISATION`) is a fraction of that.
    """
    lam = v.check_real("rate_per_s", rate_per_s, minimum=0.0)
    n = v.check_real("replicas", replicas, minimum=0.0, min_inclusive=False)
    return lam / (n * _model(model).capacity_rps())


@dataclass(frozen=True)
class Reactive:
    """Scale on what the fleet shows now, as Kubernetes' Horizontal Pod Autoscaler does.

    Every tick, with ``n`` ready (serving) replicas:

    * ``"utilisation"``: ρ = requests arriving per second over the last ``rate_window_s`` ÷
      (n × :meth:`ReplicaModel.capacity_rps`), the package's one utilisation (:func:`utilisation`),
      linear in the load; desired = ceil(n × ρ / target);
    * ``"kv"``: m = KV tokens in use ÷ (n × KV capacity); desired = ceil(n × m / target). Not linear
      in the load: fewer replicas make every batch slower, so each holds its sequences longer; and
      it saturates at 1, so it cannot show how far a replica is overloaded;
    * ``"queue"``: m = requests waiting per replica; above ``target`` add enough replicas for the
      backlog, desired = n + ceil(waiting / slo_batch); with nobody waiting and batches below
      ``scale_down_below`` of the SLO batch, desired = ceil(in batches / (slo_batch ×
      scale_down_below)).

    A metric within ``tolerance`` of its target changes nothing. After a scale-up the policy waits
    ``scale_up_cooldown_s`` before the next; it scales down only to the highest count it wanted over
    the last ``scale_down_window_s`` (HPA's stabilisation window, 300 s by default there).
    """

    metric: str = "utilisation"
    target: float = TARGET_UTILISATION
    tolerance: float = 0.1
    scale_up_cooldown_s: float = 60.0
    scale_down_window_s: float = 300.0
    scale_down_below: float = 0.5
    rate_window_s: float = 60.0
    name: str = field(default="reactive", init=False)

    def __post_init__(self) -> None:
        v.check_choice("metric", self.metric, METRICS)
        if self.metric == "queue":
            v.check_real("target", self.target, minimum=0.0, maximum=1e9)
        else:
            v.check_fraction("target", self.target, allow_zero=False)
        v.check_fraction("tolerance", self.tolerance, allow_one=False)
        v.check_real("scale_up_cooldown_s", self.scale_up_cooldown_s, minimum=0.0)
        v.check_real("scale_down_window_s", self.scale_down_window_s, minimum=0.0)
        v.check_fraction("scale_down_below", self.scale_down_below, allow_zero=False)
        v.check_real("rate_window_s", self.rate_window_s, minimum=0.0, min_inclusive=False)

    def raw_desired(self, n: int, active: int, queued: int, kv_tokens: float,
                    rate_per_s: float, model: ReplicaModel) -> int:
        """The replica count the metric asks for (before cooldowns, headroom and limits).

        ``active``: sequences in batches; ``queued``: requests waiting; ``kv_tokens``: KV tokens in
        use; ``rate_per_s``: arrivals per second over the last ``rate_window_s``.
        """
        if n == 0:
            return 1 if (active + queued) > 0 or rate_per_s > 0 else 0
        if self.metric == "queue":
            if queued / n > self.target:
                return n + math.ceil(queued / model.slo_batch)
            occ = active / (n * model.slo_batch)
            if queued == 0 and occ < self.scale_down_below:
                return math.ceil(active / (model.slo_batch * self.scale_down_below))
            return n
        if self.metric == "utilisation":
            m = rate_per_s / (n * model.capacity_rps())  # utilisation(rate_per_s, n, model)
        else:
            m = kv_tokens / (n * max(model.kv_capacity_tokens, 1))
        if abs(m / self.target - 1.0) <= self.tolerance:
            return n
        return math.ceil(n * m / self.target - 1e-9)


#: The longest lead (seconds) a schedule or forecast may act ahead: 30 days. A lead is the cold
#: start it covers; the bound keeps the hour-of-day arithmetic exact.
MAX_LEAD_S = 30 * SECONDS_PER_DAY


@dataclass(frozen=True)
class Scheduled:
    """A replica count for each hour of the day, applied ``lead_s`` seconds early."""

    replicas_by_hour: tuple[int, ...]
    lead_s: float = 0.0
    name: str = field(default="scheduled", init=False)

    def __post_init__(self) -> None:
        if isinstance(self.replicas_by_hour, (str, bytes)) or not hasattr(self.replicas_by_hour,
                                                                           "__len__"):
            raise TypeError(f"replicas_by_hour must be a sequence of 24 counts, got "
                            f"{type(self.replicas_by_hour).__name__}")
        if len(self.replicas_by_hour) != 24:
            raise ValueError(f"replicas_by_hour needs 24 entries, got {len(self.replicas_by_hour)}")
        object.__setattr__(self, "replicas_by_hour", tuple(
            v.check_int(f"replicas_by_hour[{i}]", x, minimum=0)
            for i, x in enumerate(self.replicas_by_hour)))
        v.check_real("lead_s", self.lead_s, minimum=0.0, maximum=MAX_LEAD_S)

    def desired_at(self, t_s: float) -> int:
        hour = int(np.mod((t_s + self.lead_s) / SECONDS_PER_HOUR, 24.0))
        return self.replicas_by_hour[hour]


@dataclass(frozen=True)
class Predictive:
    """Yesterday's curve plus a margin, applied ``lead_s`` early, with live load as a floor.

    ``replicas_by_bin[i]`` covers ``[i·bin_s, (i+1)·bin_s)`` of the day (it wraps around midnight).
    ``live`` is a :class:`Reactive` rule on what the fleet shows now; the autoscaler asks for the
    larger of the forecast and that rule's answer (``None``: the forecast alone), as real predictive
    scalers do. On AWS, "when multiple scaling policies are active, each policy determines the
    desired capacity independently, and the desired capacity is set to the maximum of those"
    (AWS EC2 Auto Scaling workshop, "Configure dynamic scaling": predictive scaling "does not scale
    in", so it is paired with a dynamic policy); Google Compute Engine's predictive autoscaler
    "works with real-time data as well as with historical data to cover both the current and
    forecasted load" (cloud.google.com/compute/docs/autoscaler/predictive-autoscaling).
    """

    replicas_by_bin: tuple[int, ...]
    bin_s: float = 600.0
    lead_s: float = 0.0
    live: Reactive | None = field(default_factory=Reactive)
    name: str = field(default="predictive", init=False)

    def __post_init__(self) -> None:
        if isinstance(self.replicas_by_bin, (str, bytes)) or not hasattr(self.replicas_by_bin,
                                                                          "__len__"):
            raise TypeError(f"replicas_by_bin must be a sequence of counts, got "
                            f"{type(self.replicas_by_bin).__name__}")
        if not self.replicas_by_bin:
            raise ValueError("replicas_by_bin must not be empty")
        v.check_work("replicas_by_bin", len(self.replicas_by_bin), 1_000_000, unit="bins")
        object.__setattr__(self, "replicas_by_bin", tuple(
            v.check_int(f"replicas_by_bin[{i}]", x, minimum=0)
            for i, x in enumerate(self.replicas_by_bin)))
        v.check_real("bin_s", self.bin_s, minimum=0.0, min_inclusive=False, maximum=SECONDS_PER_DAY)
        v.check_real("lead_s", self.lead_s, minimum=0.0, maximum=MAX_LEAD_S)
        if self.live is not None:
            v.check_instance("live", self.live, Reactive, "Reactive (or None)")

    def desired_at(self, t_s: float) -> int:
        """The forecast's replica count at ``t_s`` (the live floor is the autoscaler's to add)."""
        i = int(math.floor((t_s + self.lead_s) / self.bin_s)) % len(self.replicas_by_bin)
        return self.replicas_by_bin[i]


def replicas_for_rate(rate_per_s: float, model: ReplicaModel, *, margin: float = 0.0,
                      utilisation: float = TARGET_UTILISATION) -> int:
    """Replicas for a steady rate at a target :func:`utilisation`:
    ceil(rate × (1 + margin) / (capacity_rps × utilisation)), ≥ 1."""
    lam = v.check_real("rate_per_s", rate_per_s, minimum=0.0)
    m = v.check_real("margin", margin, minimum=0.0, maximum=100.0)
    u = v.check_fraction("utilisation", utilisation, allow_zero=False)
    return max(1, math.ceil(lam * (1.0 + m) / (_model(model).capacity_rps() * u) - 1e-9))


def scheduled_for(day: str | DiurnalProfile, model: ReplicaModel, *, margin: float = 0.1,
                  utilisation: float = TARGET_UTILISATION, lead_s: float = 0.0) -> Scheduled:
    """A schedule from the day's curve: for each hour, replicas for its busiest moment.

    replicas(h) = :func:`replicas_for_rate` (max rate in hour h). Give ``lead_s`` = the cold start
    so each hour's replicas are serving when it begins.
    """
    prof = day_profile(day)
    _model(model)
    table = tuple(replicas_for_rate(prof.max_rate_between(h * SECONDS_PER_HOUR,
                                                          (h + 1) * SECONDS_PER_HOUR), model,
                                    margin=margin, utilisation=utilisation)
                  for h in range(24))
    return Scheduled(table, lead_s=lead_s)


def predictive_from(yesterday_arrival_s, model: ReplicaModel, *, bin_s: float = 600.0,
                    margin: float = 0.1, utilisation: float = TARGET_UTILISATION,
                    lead_s: float = 0.0, live: Reactive | None = None) -> Predictive:
    """A forecast from yesterday's arrivals: per bin, replicas for yesterday's rate plus a margin.

    replicas(i) = :func:`replicas_for_rate` (count_i / bin_s), where ``count_i`` is yesterday's
    arrivals in bin ``i`` (seconds from midnight, wrapped into one day). ``live``: the reactive
    floor (default :class:`Reactive` at the same ``utilisation`` target; pass ``Reactive`` settings
    of your own, or use ``dataclasses.replace(policy, live=None)`` for the forecast alone).
    """
    b = v.check_real("bin_s", bin_s, minimum=1.0, maximum=SECONDS_PER_DAY)
    _model(model)
    t = np.mod(v.check_reals("yesterday_arrival_s", yesterday_arrival_s, minimum=0.0,
                             max_length=50_000_000), SECONDS_PER_DAY)
    nbins = int(math.ceil(SECONDS_PER_DAY / b))
    counts = np.bincount((t // b).astype(np.int64), minlength=nbins)[:nbins]
    table = tuple(replicas_for_rate(c / b, model, margin=margin, utilisation=utilisation)
                  for c in counts)
    floor = Reactive(target=utilisation) if live is None else live
    return Predictive(table, bin_s=b, lead_s=lead_s, live=floor)


def make_policy(policy: str, model: ReplicaModel, *, day: str | DiurnalProfile = "exam",
                lead_s: float = 0.0, margin: float = 0.1, utilisation: float = TARGET_UTILISATION,
                yesterday: str | DiurnalProfile | None = None, seed: int = 0,
                reactive: Reactive | None = None):
    """A policy by name: ``"reactive"`` (``reactive`` or :class:`Reactive` defaults),
    ``"scheduled"`` (:func:`scheduled_for` the day) or ``"predictive"`` (:func:`predictive_from`
    yesterday's arrivals: a day of kind ``yesterday``, default the same as today, drawn with another
    seed; ``reactive``, if given, is its live floor). Every target is a :func:`utilisation`."""
    v.check_choice("policy", policy, POLICIES)
    utilisation = v.check_fraction("utilisation", utilisation, allow_zero=False)
    if reactive is not None:
        v.check_instance("reactive", reactive, Reactive)
    if policy == "reactive":
        return Reactive(target=utilisation) if reactive is None else reactive
    if policy == "scheduled":
        return scheduled_for(day, model, margin=margin, utilisation=utilisation, lead_s=lead_s)
    past = day if yesterday is None else yesterday
    seed = v.check_int("seed", seed, minimum=0)
    arrivals = day_profile(past).arrivals(SECONDS_PER_DAY, seed=np.random.default_rng([seed, 1]))
    return predictive_from(arrivals, model, margin=margin, utilisation=utilisation, lead_s=lead_s,
                           live=reactive)


def erlang_replicas(rate_per_s: float, model: ReplicaModel, *,
                    wait_s: float = TANVI.ttft_target_s,
                    max_wait_exceeds_probability: float = 1.0 - TANVI.attainment_target) -> dict:
    """How many replicas Erlang C (M/M/c, :mod:`vidya_lab.queueing`) asks for, two ways.

    * ``slots``: every batch slot is a server (c = replicas × slo_batch) whose service time is the
      time a request holds its slot at capacity, ``slo_batch / capacity_rps``; the smallest ``c``
      with ``P(wait > wait_s) ≤ max_wait_exceeds_probability``, then replicas = ceil(c / slo_batch).
    * ``replicas``: every replica is one server of rate ``capacity_rps``.

    Both treat servers as independent. A continuous-batching replica is not: every busy slot slows
    every other one (the step time grows with the batch), so the coarse model and the
    iteration-level simulator need more replicas than either answer (chapter 6 shows how many).

    Returns ``replicas`` (the slot view), ``replicas_mm_c`` (the replica view), ``offered_load``
    (erlangs of the slot view), ``wait_probability`` (Erlang C at the answer) and ``utilisation``
    (:func:`utilisation` of the slot view's fleet).
    """
    from vidya_lab import queueing

    lam = v.check_real("rate_per_s", rate_per_s, minimum=0.0, min_inclusive=False)
    cap = _model(model).capacity_rps()
    per_slot = cap / model.slo_batch
    st = queueing.servers_needed(lam, per_slot, wait_s=wait_s,
                                 max_wait_exceeds_probability=max_wait_exceeds_probability)
    st_r = queueing.servers_needed(lam, cap, wait_s=wait_s,
                                   max_wait_exceeds_probability=max_wait_exceeds_probability)
    replicas = int(math.ceil(st.servers / model.slo_batch))
    return {"replicas": replicas, "slots": st.servers,
            "replicas_mm_c": st_r.servers, "offered_load": lam / per_slot,
            "wait_probability": st.wait_probability, "utilisation": lam / (cap * replicas)}
