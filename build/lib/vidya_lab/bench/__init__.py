"""Benchmarking a deployment: how to load it, how long to run, how sure the tail is, what to read.

Chapter 1's practice topic. A benchmark is a load generator, a clock on the client, and a file of
per-request timings; every reading of it is chapter 1's timeline (:mod:`vidya_lab.slo`), and the
files real tools write are read by :mod:`vidya_lab.traces`. The deployment here is the toy replica
(:mod:`vidya_lab.toyserver`) or, for calibration, chapter 5's replica simulator.

Read the code (in this order)
-----------------------------
==============  ==============================================================  ====================
file            the idea                                                        the function to read
==============  ==============================================================  ====================
``loads.py``    open- vs closed-loop load: who decides when a request is sent   :func:`closed_loop`
``precision.py`` how sure one run's p99 is; how long a run must be              :func:`one_run_intervals`
``sweeps.py``   attainment at each rate: the goodput sweep                       :func:`sweep`
``staging.py``  a staging deployment's runs, written as a tool writes them      :func:`write_staging_runs`
==============  ==============================================================  ====================
"""

from vidya_lab.bench.loads import (
    LoadRun,
    closed_loop,
    compare_open_closed,
    max_waiting,
    open_loop,
    replay,
)
from vidya_lab.bench.precision import (
    RunIntervals,
    duration_for_precision,
    one_run_intervals,
    p99_over_runs,
)
from vidya_lab.bench.staging import (
    STAGING_TRUTH,
    recovery_rows,
    staging_calibration,
    staging_replica,
    staging_workloads,
    write_staging_runs,
)
from vidya_lab.bench.sweeps import SWEEP_DURATION_S, SWEEP_SEED, sweep, toy_trace

__all__ = ["LoadRun", "RunIntervals", "STAGING_TRUTH", "SWEEP_DURATION_S", "SWEEP_SEED",
           "closed_loop", "compare_open_closed", "duration_for_precision", "max_waiting",
           "one_run_intervals", "open_loop", "p99_over_runs", "recovery_rows", "replay",
           "staging_calibration", "staging_replica", "staging_workloads", "sweep", "toy_trace",
           "write_staging_runs"]
