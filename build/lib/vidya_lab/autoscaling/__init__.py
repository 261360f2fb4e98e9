"""The fleet over a day: cold starts, a router, autoscaling policies, failures and the bill.

Chapter 6 asks why Tanvi's 7 am rush took minutes to scale up, and what it costs to never let that
happen again. The package answers in small files, one idea each; read them in this order (the one
function or class that holds each idea in brackets):

=================  ==========================================================================
``cold_start``     a cold start in parts, each a figure with a source; mitigations; pools
                   (:meth:`ColdStart.parts_s`)
``replica``        the coarse model of one replica, from the cost model, with the prefix cache
                   counted or not (:func:`replica_model`)
``policies``       the one definition of utilisation; reactive, scheduled and predictive policies
                   (:func:`utilisation`, :meth:`Reactive.raw_desired`)
``autoscaler``     the tick rule shared by both fleet models (:meth:`Autoscaler.want`)
``replicas``       a replica's lifecycle, its batch, its prefill server, the pool
                   (:meth:`~vidya_lab.autoscaling.replicas.PrefillServers.run`)
``waiting``        the waiting room and the router (:meth:`WaitingRoom.route`)
``simulate``       the fleet over a window, request by request (:func:`simulate_fleet`)
``fluid``          the fleet as a flow of expected requests, for widgets (:func:`simulate_fluid`)
``fidelity``       three replica models and how far apart they land (:func:`compare_fidelities`)
``metrics``        reading a day: per hour, the rush, the summary (:func:`summary`)
``run_day``        one call for a whole day (:func:`simulate_day`)
``routing``        routers that follow the prefix cache: round robin, session affinity,
                   prefix-aware; each replica's cache hit rate, counted in capacity
                   (:func:`~vidya_lab.autoscaling.routing.replay_routed`)
``regions``        a second region: losing the first, and the spare replicas that cover it
                   (:func:`~vidya_lab.autoscaling.regions.failover`)
=================  ==========================================================================

(``day`` holds the day's curve and requests, ``fleet`` the fleet's settings, its result and the
stated limits, ``run_state`` the simulation's requests and state together.)

Every public name is importable from here: ``from vidya_lab import autoscaling as a;
a.simulate_day(...)``.

References: Harchol-Balter, *Performance Modeling and Design of Computer Systems* (2013) for M/M/c and
processor sharing; Kubernetes HPA documentation for the reactive rule; the cold-start sources in
:data:`COLD_START_SOURCES`.
"""

from vidya_lab.autoscaling.autoscaler import Autoscaler, Signals
from vidya_lab.autoscaling.cold_start import (
    ANYSCALE_NAIVE_LOAD_S,
    CACHED_COMPILE_S,
    COLD_START_SOURCES,
    COMPILE_S,
    GB,
    MITIGATIONS,
    NAIVE_STORAGE_BYTES_PER_S,
    POOLS,
    PROVISION_RANGE_S,
    SLIM_IMAGE_BYTES,
    ColdStart,
    mitigated,
    pool_start_s,
    prefix_warm_up_s,
)
from vidya_lab.autoscaling.day import (
    DAYS,
    RUSH_HOURS,
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    day_profile,
    day_workload,
    tutor_slo,
)
from vidya_lab.autoscaling.fidelity import FIDELITIES, compare_fidelities
from vidya_lab.autoscaling.fleet import (
    DRAINING,
    MAX_REPLICAS,
    MAX_REQUESTS,
    MAX_START_S,
    MAX_STEPS,
    MAX_WAITING_WORK,
    OFF,
    ROUTERS,
    SERVING,
    STARTING,
    STATE_NAMES,
    Fleet,
    FleetRun,
)
from vidya_lab.autoscaling.fluid import (
    FLUID_CURVE_S,
    FLUID_CURVE_UTILISATIONS,
    MAX_FLUID_HORIZON_S,
    FluidRun,
    fluid_curve,
    simulate_fluid,
)
from vidya_lab.autoscaling.metrics import hourly, rush_attainment, summary
from vidya_lab.autoscaling.policies import (
    MAX_LEAD_S,
    METRICS,
    POLICIES,
    TARGET_UTILISATION,
    Predictive,
    Reactive,
    Scheduled,
    erlang_replicas,
    make_policy,
    predictive_from,
    replicas_for_rate,
    scheduled_for,
    utilisation,
)
from vidya_lab.autoscaling.regions import failover, failover_workload, region_profile
from vidya_lab.autoscaling.replica import MAX_SLOTS, ReplicaModel, replica_model, smallest_tp
from vidya_lab.autoscaling.routing import (
    ROUTING_POLICIES,
    PrefixAware,
    RoutedCache,
    replay_routed,
    route,
    routed_capacity,
)
from vidya_lab.autoscaling.run_day import simulate_day
from vidya_lab.autoscaling.simulate import simulate_fleet
from vidya_lab.autoscaling.waiting import Router, WaitingRoom

__all__ = [
    "ColdStart",
    "COLD_START_SOURCES",
    "MITIGATIONS",
    "mitigated",
    "pool_start_s",
    "prefix_warm_up_s",
    "PROVISION_RANGE_S",
    "COMPILE_S",
    "CACHED_COMPILE_S",
    "ReplicaModel",
    "replica_model",
    "smallest_tp",
    "DAYS",
    "day_profile",
    "day_workload",
    "Reactive",
    "Scheduled",
    "Predictive",
    "scheduled_for",
    "predictive_from",
    "replicas_for_rate",
    "make_policy",
    "utilisation",
    "TARGET_UTILISATION",
    "Autoscaler",
    "Fleet",
    "FleetRun",
    "simulate_fleet",
    "simulate_day",
    "simulate_fluid",
    "FluidRun",
    "fluid_curve",
    "summary",
    "hourly",
    "rush_attainment",
    "RUSH_HOURS",
    "tutor_slo",
    "erlang_replicas",
    "compare_fidelities",
    "FIDELITIES",
    "MAX_REPLICAS",
    "MAX_STEPS",
    "MAX_REQUESTS",
    "MAX_WAITING_WORK",
    "MAX_START_S",
    "MAX_LEAD_S",
    "MAX_SLOTS",
    "MAX_FLUID_HORIZON_S",
    "ANYSCALE_NAIVE_LOAD_S",
    "NAIVE_STORAGE_BYTES_PER_S",
    "SLIM_IMAGE_BYTES",
    "GB",
    "POOLS",
    "SECONDS_PER_DAY",
    "SECONDS_PER_HOUR",
    "OFF",
    "STARTING",
    "SERVING",
    "DRAINING",
    "STATE_NAMES",
    "ROUTERS",
    "METRICS",
    "POLICIES",
    "FLUID_CURVE_S",
    "FLUID_CURVE_UTILISATIONS",
    "Signals",
    "Router",
    "WaitingRoom",
    "ROUTING_POLICIES",
    "PrefixAware",
    "RoutedCache",
    "route",
    "replay_routed",
    "routed_capacity",
    "failover",
    "failover_workload",
    "region_profile",
]
