"""Every public boundary of vidya_lab under adversarial input (issue 16), driven by hypothesis.

What it drives
--------------
* Every public callable: the functions and classes named by each package's ``__all__`` (or, for a
  module without one, its non-underscore attributes defined in vidya_lab), found by
  :func:`public_callables`. ``vidya_lab.exercises`` and ``vidya_lab.widgets`` are left to their
  own tests; :data:`EXCLUDED` lists, with the reason, every callable deliberately not driven, and
  :func:`test_every_public_callable_is_driven_or_excluded` fails when a new public name appears in
  neither place (or an entry goes stale).
* Every ``vidya-lab`` sub-command (:data:`COMMANDS`), in-process through ``cli.main``.

How
---
Each callable has a *base call* that works (built from :data:`BASE` overrides, the signature's
defaults and :func:`value_for`'s conventions by parameter name and annotation); the base call is
itself a test. Hypothesis then replaces ONE argument with an adversarial value (negative, zero,
NaN, ±inf, 10**400, bools where numbers go, strings, None, wrong object types, empty and huge
sequences, and scalings of the base value) and the call must either

* raise ``ValueError``/``TypeError`` (``KeyError`` for an unknown id, ``OSError`` for a path)
  whose message names the parameter (or one of its :data:`ALIASES`), or
* return a result that passes :func:`check_physical`: no NaN, no negative time, bytes, tokens or
  throughput, attainments and hit rates in [0, 1], and throughput not above the roofline
  (``sizing.PHYSICAL``) where :data:`ROOFLINE` says it applies,

within :data:`CALL_TIME_LIMIT_S` seconds and :data:`CALL_MEMORY_LIMIT_BYTES` of address space more
than before the call (``signal.setitimer`` and ``RLIMIT_AS``). A command must exit 0 (its JSON
passing the same checks), 1 with one line (a failed run) or 2 with one line naming the option; a
traceback never appears (it needs ``--debug``).

Profiles: ``make test`` runs :data:`FAST_EXAMPLES` examples per callable, derandomised (the same
examples every run, about half a minute); ``make fuzz`` (``VIDYA_FUZZ=long``) runs
:data:`LONG_EXAMPLES`, random (:data:`HEAVY_EXAMPLES` for the slow ones).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import math
import os
import pkgutil
import re
import resource
import signal
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vidya_lab

LONG = os.environ.get("VIDYA_FUZZ", "").strip().lower() == "long"
FAST_EXAMPLES = 5
LONG_EXAMPLES = 150
CALL_TIME_LIMIT_S = 30.0 if LONG else 20.0
CALL_MEMORY_LIMIT_BYTES = 2 * 2**30  # GiB: address space a call may add
SKIPPED_PACKAGES = ("exercises", "widgets", "cli")  # owned by their own tests; cli: COMMANDS

SETTINGS = settings(
    max_examples=LONG_EXAMPLES if LONG else FAST_EXAMPLES,
    derandomize=not LONG,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    print_blob=LONG,
)


# ----------------------------------------------------------------------------- discovery

def public_callables() -> dict[str, object]:
    """``"package.name" -> object`` for every public function and class of vidya_lab, each object
    once (under the first package that exports it, in alphabetical order)."""
    found: dict[int, tuple[str, object]] = {}
    for info in sorted(pkgutil.iter_modules(vidya_lab.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in SKIPPED_PACKAGES:
            continue
        module = importlib.import_module(f"vidya_lab.{info.name}")
        names = getattr(module, "__all__", None)
        if names is None:
            names = [n for n in dir(module) if not n.startswith("_")]
        for name in sorted(names):
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if not (getattr(obj, "__module__", "") or "").startswith("vidya_lab."):
                continue
            if obj.__module__.split(".")[1] in SKIPPED_PACKAGES:
                continue
            found.setdefault(id(obj), (f"{info.name}.{name}", obj))
    return dict(sorted(found.values()))


# ----------------------------------------------------------------------------- fixtures
# Small, valid objects the base calls are built from (each built once: all are frozen or only read).

DATA = Path(__file__).resolve().parent / "data"


class Fx:
    """The objects base calls need, built lazily and once."""

    @staticmethod
    @functools.cache
    def replica(model: str = "llama-3.1-8b", tp: int = 1):
        from vidya_lab import sizing

        return sizing.replica(model, "h100-sxm", tp=tp)

    @staticmethod
    @functools.cache
    def replica_model():
        from vidya_lab import autoscaling

        return autoscaling.replica_model(Fx.replica())

    @staticmethod
    @functools.cache
    def fleet():
        from vidya_lab import autoscaling

        return autoscaling.Fleet(Fx.replica_model(), max_replicas=4)

    @staticmethod
    @functools.cache
    def workload():
        from vidya_lab import admission

        return admission.poisson_workload(1.0, 20.0, seed=0, prompt_tokens=256, output_tokens=32)

    @staticmethod
    @functools.cache
    def fleet_run():
        from vidya_lab import autoscaling

        return autoscaling.simulate_fleet(Fx.workload(), Fx.fleet(), autoscaling.Reactive())

    @staticmethod
    @functools.cache
    def fluid_run():
        from vidya_lab import autoscaling

        return autoscaling.simulate_fluid("normal", Fx.fleet(), autoscaling.Reactive(),
                                          horizon_s=3600.0)

    @staticmethod
    @functools.cache
    def sim_result():
        from vidya_lab import admission

        return admission.simulate(Fx.replica(), Fx.workload())

    @staticmethod
    @functools.cache
    def prompt_trace():
        from vidya_lab import caching

        return caching.tutor_trace(60, seed=0, turns_mean=3.0, think_s_mean=2.0)

    @staticmethod
    @functools.cache
    def routed():
        from vidya_lab import autoscaling

        return autoscaling.replay_routed(Fx.prompt_trace(), Fx.replica(), 2)

    @staticmethod
    @functools.cache
    def timelines():
        from vidya_lab import toyserver

        return toyserver.simulate(toyserver.tutor_workload(2.0, 20.0, seed=0),
                                  toyserver.ToyServer(), record_token_times=True)

    @staticmethod
    @functools.cache
    def trace():
        from vidya_lab import traces

        return traces.read_trace(DATA / "vllm_bench" / "serve_detailed.json")

    @staticmethod
    @functools.cache
    def rows():
        from vidya_lab import calibration

        return calibration.reference_rows(calibration.timing_rows(calibration.load_rows()))

    @staticmethod
    def row():
        return Fx.rows()[0]

    @staticmethod
    @functools.cache
    def calibration():
        from vidya_lab import sizing

        return sizing.fitted_calibration()

    @staticmethod
    @functools.cache
    def layout():
        from vidya_lab import layouts

        return layouts.evaluate_layout("llama-3.1-8b", "h100-sxm", 1, peak_rps=2.0, isl=512,
                                       osl=64, ttft_target_s=2.0, tpot_target_s=0.1)

    @staticmethod
    @functools.cache
    def candidate():
        from vidya_lab import plan

        return plan.Candidate("h100-sxm", "bf16", Fx.layout())

    @staticmethod
    @functools.cache
    def scenario():
        from vidya_lab.scenario import Scenario

        return Scenario(candidate_gpu_ids=("h200",), normal_peak_rps=0.5, exam_multiplier=2.0)

    @staticmethod
    @functools.cache
    def plan_result():
        """A real (small) plan: one GPU type, one precision, no risk days."""
        from vidya_lab import plan

        return plan.plan(Fx.scenario(), precisions=("fp8",), day="normal", risks=False, dt_s=60.0)

    @staticmethod
    @functools.cache
    def files() -> dict[str, Path]:
        """Input files in every format the readers accept (copies of tests/data), in a temp dir."""
        import shutil
        import tempfile

        from vidya_lab import sizing

        root = Path(tempfile.mkdtemp(prefix="vidya-fuzz-"))
        out = {"calibration": root / "calibration.json", "rows": root / "rows.csv"}
        data = Path(vidya_lab.__file__).parent / "data"
        shutil.copy(data / sizing.CALIBRATION_FILE, out["calibration"])
        shutil.copy(data / "published_calibration.csv", out["rows"])
        for key, rel in {"csv": "slo/small_trace.csv", "vllm": "vllm_bench/serve_detailed.json",
                         "genai-perf": "genai_perf/profile_export.json",
                         "llmperf": "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json",
                         "stream-log": "stream_log/tutor_stream.jsonl",
                         "aiperf": "aiperf/profile_export.jsonl"}.items():
            out[key] = root / Path(rel).name
            shutil.copy(DATA / rel, out[key])
        out["dir"] = root
        return out


_OUT = iter(range(10**9))


def out_path(suffix: str = ".json") -> Path:
    """A fresh, writable output path in the fixtures' temp dir."""
    return Fx.files()["dir"] / f"out-{next(_OUT)}{suffix}"


def fields_of(obj) -> dict:
    """A dataclass instance's fields, as constructor arguments (shallow)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


def _slo():
    from vidya_lab import slo

    return slo.SLO(ttft_s=2.0, tpot_s=0.1)


#: Base values by annotation (as written in the signature), then by parameter name: the
#: conventions that build most base calls without a :data:`BASE` entry.
BY_ANNOTATION = {
    "Replica": Fx.replica, "sizing.Replica": Fx.replica, "ReplicaModel": Fx.replica_model,
    "Fleet": Fx.fleet, "FleetRun": Fx.fleet_run, "SimResult": Fx.sim_result,
    "PromptTrace": Fx.prompt_trace, "Workload": Fx.workload, "SLO": _slo, "Scenario": Fx.scenario,
    "Calibration": Fx.calibration, "Row": Fx.row, "list[Row]": Fx.rows, "Sequence[Row]": Fx.rows,
    "Candidate": Fx.candidate, "list[Candidate]": lambda: [Fx.candidate()],
    "list[Layout]": lambda: [Fx.layout()], "layouts.Layout": Fx.layout,
    "Model": lambda: importlib.import_module("vidya_lab.catalog").get_model("llama-3.1-8b"),
    "GPU": lambda: importlib.import_module("vidya_lab.catalog").get_gpu("h100-sxm"),
    "Options": lambda: importlib.import_module("vidya_lab.plan").Options(),
    "ColdStart": lambda: importlib.import_module("vidya_lab.autoscaling").ColdStart(),
    "ToyServer": lambda: importlib.import_module("vidya_lab.toyserver").ToyServer(),
}
BY_NAME = {
    "r": Fx.replica, "replica": Fx.replica, "timelines": Fx.timelines, "run": Fx.fleet_run,
    "model": lambda: "llama-3.1-8b", "gpu": lambda: "h100-sxm", "gpu_id": lambda: "h100-sxm",
    "precision": lambda: "bf16", "tp": lambda: 1, "pp": lambda: 1, "seed": lambda: 0,
    "isl": lambda: 512, "osl": lambda: 64, "prompt_tokens": lambda: 512,
    "output_tokens": lambda: 64, "context_tokens": lambda: 1024, "batch": lambda: 8,
    "cached_tokens": lambda: 256, "cache_bytes": lambda: 2e9, "n_requests": lambda: 20,
    "duration_s": lambda: 60.0, "rate_per_s": lambda: 2.0, "requests_per_s": lambda: 2.0,
    "peak_rps": lambda: 2.0, "arrival_rate_per_s": lambda: 1.0, "service_rate_per_s": lambda: 2.0,
    "servers": lambda: 2, "offered_load": lambda: 1.0, "wait_s": lambda: 1.0,
    "alpha": lambda: 0.7, "gamma": lambda: 4, "draft_cost_ratio": lambda: 0.1,
    "ttft_target_s": lambda: 2.0, "tpot_target_s": lambda: 0.1, "slo": _slo,
    "values": lambda: [0.1, 0.5, 0.2, 0.9, 0.3] * 20, "q": lambda: 90.0,
    "groups": lambda: [[0.1, 0.2, 0.3], [0.4, 0.5]], "day": lambda: "normal",
    "result": Fx.sim_result, "trace": Fx.prompt_trace, "policy": lambda: "reactive",
    "network_s": lambda: 0.15, "prefill_s": lambda: 0.3, "steps": lambda: 10,
    "nbytes": lambda: 1e6, "tokens": lambda: 512, "microbatches": lambda: 4,
    "path": lambda: out_path(), "arrival_s": lambda: np.linspace(0.0, 60.0, 30),
}


def value_for(name: str, annotation) -> object:
    """The base value of a required parameter, by annotation then by name (``LookupError`` when
    neither convention knows it: give the callable a :data:`BASE` entry)."""
    ann = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    if ann in BY_ANNOTATION:
        return BY_ANNOTATION[ann]()
    if name in BY_NAME:
        return BY_NAME[name]()
    raise LookupError(f"no base value for parameter {name!r} ({ann})")


def _mod(name: str):
    return importlib.import_module(f"vidya_lab.{name}")


def _reactive():
    return _mod("autoscaling").Reactive()


def _drafter():
    return _mod("caching").AssumedCostDraft(0.7, 0.1)


def _upload_result():
    from vidya_lab import admission

    w = admission.upload_workload(1.0, 20.0, seed=0, upload_at_s=5.0, upload_tokens=4000,
                                  prompt_tokens=256, output_tokens=32)
    return admission.simulate(Fx.replica(), w)


def _toy_simulate(rate):
    toy = _mod("toyserver")
    return toy.simulate(toy.tutor_workload(rate, 20.0, seed=0), toy.ToyServer())


def _calibrate_doc() -> dict:
    """The keys of a ``vidya-lab calibrate`` document that bench.recovery_rows reads."""
    truth = _mod("bench").STAGING_TRUTH
    return {"published": {"parameters": {k: 0.9 * x for k, x in truth.items()}},
            "parameters": dict(truth), "pinned_by_data": list(truth)[:1]}


_SEARCH = dict(model="llama-3.1-8b", gpu="h100-sxm", peak_rps=2.0, isl=512, osl=64,
               ttft_target_s=2.0, tpot_target_s=0.1)
_DAY_S = np.sort(np.random.default_rng(0).uniform(0.0, 86_400.0, 2_000))

#: Base calls that the conventions cannot build (arguments given here win over them). A value
#: may be a callable (called afresh for each call) so that no call sees another's objects.
BASE: dict[str, dict] = {
    "admission.upload_workload": dict(upload_at_s=10.0, prompt_tokens=256, output_tokens=32),
    "admission.poisson_workload": dict(prompt_tokens=256, output_tokens=32),
    "admission.window_summary": dict(start_s=0.0, end_s=20.0),
    "admission.upload_report": dict(result=_upload_result),
    "admission.chunked_prefill_time_s": dict(chunk_tokens=256),
    "autoscaling.mitigated": dict(mitigations=("slim_image",)),
    "autoscaling.pool_start_s": dict(pool="warm"),
    "autoscaling.prefix_warm_up_s": dict(syllabus_tokens=3000, subjects=6, subject_tokens=400),
    "autoscaling.day_workload": dict(duration_s=600.0),
    "autoscaling.Scheduled": dict(replicas_by_hour=(1,) * 24),
    "autoscaling.Predictive": dict(replicas_by_bin=(1,) * 144),
    "autoscaling.predictive_from": dict(yesterday_arrival_s=_DAY_S),
    "autoscaling.utilisation": dict(replicas=2.0),
    "autoscaling.simulate_fleet": dict(policy=_reactive),
    "autoscaling.simulate_day": dict(day="normal", duration_s=600.0, max_replicas=4),
    "autoscaling.simulate_fluid": dict(policy=_reactive, horizon_s=3600.0),
    "autoscaling.compare_fidelities": dict(utilisations=(0.5,), duration_s=600.0),
    "caching.PrefixCache": dict(capacity_blocks=100),
    "caching.block_hashes": dict(tokens=lambda: list(range(64))),
    "caching.sweep_cache_bytes": dict(cache_bytes=lambda: [1e8, 1e9]),
    "caching.cliff_sweep": dict(cache_bytes=lambda: [1e7, 1e8, 1e9, 1e11]),
    "caching.best_case_token_hit_rate": dict(shared_prefix_tokens=3000, unique_tokens=150),
    "caching.spec_decode_at_batch": dict(r=lambda: Fx.replica("llama-3.1-70b", 4)),
    "caching.spec_break_even_batch": dict(r=lambda: Fx.replica("llama-3.1-70b", 4)),
    "caching.speculative_at_batch": dict(drafter=_drafter),
    "caching.speculative_break_even_batch": dict(drafter=_drafter),
    "caching.PromptLookup": dict(quote_fraction=0.3, mean_quote_tokens=20.0),
    "caching.quantisation_table": dict(model="llama-3.1-8b", tp=1, isl=512, osl=64, batch=8),
    "calibration.calibration_from": dict(values=lambda: {"memory_efficiency": 0.8}),
    "calibration.closed_batch": dict(n_requests=8),
    "calibration.light_load": dict(qps=1.0),
    "calibration.static_batch_throughput_per_gpu": dict(batch=8),
    "calibration.summarise": dict(errors=lambda: [0.1, -0.2, 0.05]),
    "calibration.load_rows": dict(path=lambda: Fx.files()["rows"]),
    "calibration.fit_gpu": dict(gpu_id="h100-sxm"),
    "catalog.GPU": lambda: fields_of(_mod("catalog").get_gpu("h100-sxm")),
    "catalog.Link": lambda: fields_of(_mod("catalog").get_link("nvlink4")),
    "catalog.Model": lambda: fields_of(_mod("catalog").get_model("llama-3.1-8b")),
    "catalog.Precision": lambda: fields_of(_mod("catalog").get_precision("fp8")),
    "catalog.get_link": dict(link="nvlink4"),
    "catalog.gpu_id_for": dict(csv_name="H100-SXM-80GB"),
    "catalog.model_id_for": dict(csv_name="Llama-2-7B"),
    "layouts.cheapest_layout": _SEARCH,
    "layouts.search_layouts": _SEARCH,
    "layouts.evaluate_layout": dict(_SEARCH, tp=1),
    "layouts.cost_vs_tpot_target": dict({k: v for k, v in _SEARCH.items() if k != "tpot_target_s"},
                                        tpot_targets=lambda: [0.05, 0.1]),
    "layouts.pareto_frontier": dict(layouts=lambda: [Fx.layout()]),
    "layouts.rank": dict(found=lambda: [Fx.layout()]),
    "layouts.pipeline_schedule": dict(
        r=lambda: _mod("sizing").replica("llama-3.1-8b", "h100-sxm", pp=2)),
    "layouts.tpot_breakdown": dict(tps=(1, 2)),
    "parallelism.p2p_time_s": dict(link_bytes_per_s=450e9, latency_s=1e-5),
    "parallelism.ring_allreduce_time_s": dict(n=4, bus_bytes_per_s=450e9, hop_latency_s=1e-6),
    "parallelism.pipeline_bubble_fraction": dict(pp=2),
    "parallelism.pp_comm_time_s": dict(pp=2),
    "parallelism.tp_comm_time_s": dict(tp=2),
    "plan.Candidate": dict(layout=Fx.layout),
    "plan.candidates": dict(scenario=Fx.scenario),
    "plan.day_curve": dict(day="exam"),
    "plan.peak_rps": dict(day="exam"),
    "plan.plan": dict(scenario=Fx.scenario, precisions=("fp8",), day="normal", risks=False,
                      dt_s=60.0),
    "plan.simulate": dict(utilisation=0.6, headroom=0),
    "plan.what_if": dict(normal_peak_rps=3.0),
    "procurement.buy": dict(replicas_by_hour=lambda: [1] * 24, gpus_per_replica=1),
    "procurement.price_ratio": dict(kind="reserved"),
    "procurement.buy_year": dict(exam_replicas_by_hour=lambda: [1] * 12 + [3] * 12,
                                 normal_replicas_by_hour=lambda: [1] * 24, exam_days=42,
                                 normal_days=323, gpus_per_replica=1),
    "procurement.instance_gpus_for": dict(gpus_per_replica=1),
    "queueing.mg1_mean_wait_s": dict(mean_service_s=0.3),
    "queueing.md1_mean_wait_s": dict(service_s=0.3),
    "queueing.servers_needed": dict(max_mean_wait_s=1.0),
    "report.plan_figure": dict(result=Fx.plan_result, path=lambda: out_path(".png")),
    "report.plan_table": dict(result=Fx.plan_result),
    "report.check_figure_path": dict(name="path", path=lambda: out_path(".png")),
    "sizing.iteration_breakdown": dict(prefill=lambda: [(256, 0)], decode_contexts=lambda: [512] * 4),
    "sizing.iteration_time_s": dict(prefill=lambda: [(256, 0)], decode_contexts=lambda: [512] * 4),
    "sizing.prefill_work": dict(chunks=lambda: [(256, 0), (128, 256)]),
    "sizing.load_calibration_file": dict(path=lambda: Fx.files()["calibration"]),
    "sizing.slo_batch": dict(tpot_target_s=0.1),
    "sizing.throughput_latency_curve": dict(batches=lambda: [1, 8, 32]),
    "slo.RequestTimeline": dict(request_id=1, arrival_s=0.0, first_token_s=0.5, finish_s=2.0,
                                output_tokens=10),
    "slo.bootstrap_percentile_ci": dict(n_boot=200),
    "slo.student_t_quantile": dict(p=0.975, dof=10),
    "slo.chi_square_quantile": dict(p=0.9, dof=9),
    "slo.max_rate_meeting_slo": dict(simulate=lambda: _toy_simulate, rate_lo_per_s=0.5,
                                     rate_hi_per_s=8.0, max_evals=6),
    "slo.latency_budget": dict(ttft_target_s=2.0),
    "slo.tpot_for_reading_speed": dict(words_per_min=250.0, tokens_per_word=1.3),
    "slo.read_trace_csv": dict(path=lambda: Fx.files()["csv"]),
    "slo.write_trace_csv": dict(path=lambda: out_path(".csv")),
    "slo.Timelines.from_arrays": dict(arrival_s=lambda: [0.0, 1.0], first_token_s=lambda: [0.5, 1.2],
                                      finish_s=lambda: [2.0, 3.0], output_tokens=lambda: [10, 20]),
    "toyserver.simulate": dict(workload=lambda: _mod("toyserver").tutor_workload(2.0, 20.0, seed=0)),
    "traces.detect_format": dict(path=lambda: Fx.files()["vllm"]),
    "traces.read_trace": dict(path=lambda: Fx.files()["genai-perf"]),
    "traces.read_vllm": dict(path=lambda: Fx.files()["vllm"]),
    "traces.read_genai_perf": dict(path=lambda: Fx.files()["genai-perf"]),
    "traces.read_llmperf": dict(path=lambda: Fx.files()["llmperf"]),
    "traces.read_stream_log": dict(path=lambda: Fx.files()["stream-log"]),
    "traces.read_aiperf": dict(path=lambda: Fx.files()["aiperf"]),
    "workload.Request": dict(request_id=0, arrival_s=0.0, prompt_tokens=10, output_tokens=5),
    "workload.Workload.from_arrays": dict(arrival_s=lambda: [0.0, 1.0, 2.5],
                                          prompt_tokens=lambda: [100, 200, 50],
                                          output_tokens=lambda: [10, 20, 5]),
    "workload.FixedLength": dict(tokens=100),
    "workload.LognormalLength": dict(mean_tokens=300.0, p50_tokens=200.0),
    "workload.EmpiricalLength": dict(values=(10, 20, 30)),
    "workload.DiurnalProfile": dict(hours=(0.0, 12.0), relative=(0.5, 1.0), peak_rate_per_s=2.0),
    "workload.mmpp_arrivals": dict(rates_per_s=lambda: [1.0, 5.0], mean_dwell_s=lambda: [10.0, 5.0]),
    "workload.on_off_arrivals": dict(rate_on_per_s=5.0, mean_on_s=10.0, mean_off_s=20.0),
    "workload.nonhomogeneous_arrivals": dict(rate_fn=lambda: (lambda t: 1.0 + 0.0 * t),
                                             rate_max_per_s=1.0),
    "workload.student_day_profile": dict(peak_rate_per_s=2.0),
    "workload.make_workload": dict(prompt_tokens=lambda: _mod("workload").FixedLength(100),
                                   output_tokens=lambda: _mod("workload").FixedLength(10)),
    "workload.check_arrival_count": dict(expected=100.0, what="arrivals"),
    "autoscaling.region_profile": dict(share=0.5),
    "autoscaling.route": dict(replicas=2, tpot_s=0.05),
    "autoscaling.replay_routed": dict(replicas=2),
    "autoscaling.routed_capacity": dict(routed=lambda: Fx.routed(), answer_tokens=64),
    "caching.assign_tenants": dict(tenants=3),
    "caching.tenant_prefix_bytes": dict(tenants=3),
    "caching.salt_keys": dict(keys=lambda: [1, 2, 3], salt=7),
    "caching.probe_signal": dict(known_tokens=256, guessed_tokens=64),
    "caching.simulate_isolated": dict(
        tenant=lambda: _mod("caching").assign_tenants(Fx.prompt_trace(), 3)),
    "caching.restore_or_recompute": dict(gpu_cached_tokens=128, offloaded_tokens=256),
    "caching.break_even_link_bytes_per_s": dict(gpu_cached_tokens=128, offloaded_tokens=256),
    "caching.simulate_offload": dict(gpu_cache_bytes=1e8, cpu_cache_bytes=1e10),
    "caching.offload_sweep": dict(gpu_cache_bytes=lambda: [1e8, 1e9], cpu_cache_bytes=1e10),
    "experts.expert_layout": dict(model="mixtral-8x7b", n=2),
    "experts.experts_touched_per_gpu": dict(model="mixtral-8x7b", tokens=16, n=2),
    "experts.ep_layouts": dict(model="mixtral-8x7b", batch=16, context_tokens=1024),
    "experts.explain_ep_winner": dict(
        ranked=lambda: _mod("experts").ep_layouts("mixtral-8x7b", "h100-sxm", batch=16,
                                                   context_tokens=1024)),
    "experts.moe_exchange": dict(model="mixtral-8x7b", n=2),
    "experts.all_to_all_time_s": dict(nbytes_per_gpu=1e6, link="nvlink4"),
    "experts.lora_adapter_params": dict(rank=16),
    "experts.adapter_budget": dict(adapters=4, rank=16),
    "admission.kv_transfer_s": dict(link="infiniband-ndr"),
    "admission.queueing_check": dict(utilisation=0.5, service="exponential", requests=2000),
    "admission.tpot_sweep": dict(tpot_targets_s=lambda: [0.05, 0.1]),
    "bench.closed_loop": dict(users=4, duration_s=20.0),
    "bench.compare_open_closed": dict(users=(2, 4), duration_s=20.0),
    "bench.duration_for_precision": dict(pilot_duration_s=60.0, half_width_s=0.05, estimate_s=1.0,
                                         rel_half_width=0.02, batches=10),
    "bench.p99_over_runs": dict(seeds=lambda: [0, 1, 2], duration_s=20.0),
    "bench.recovery_rows": dict(doc=lambda: _calibrate_doc()),
    "bench.sweep": dict(run=lambda: _toy_simulate, target=_slo, rates=lambda: [1.0, 2.0]),
    "bench.write_staging_runs": dict(folder=lambda: out_path("")),
    "procurement.hours_in_service": dict(replicas_by_hour=lambda: [1] * 12 + [3] * 12),
    "procurement.reserved_replicas": dict(replicas_by_hour=lambda: [1] * 12 + [3] * 12,
                                          ratio=0.5),
    "procurement.monthly_cost_with": dict(replicas_by_hour=lambda: [1] * 12 + [3] * 12,
                                          reserved=1, gpus_per_replica=1),
}

#: Entry points that are not module attributes: the documented builders of classes whose raw
#: constructor is excluded below.
EXTRA = {
    "slo.Timelines.from_arrays": lambda: _mod("slo").Timelines.from_arrays,
    "slo.Timelines.from_records": lambda: _mod("slo").Timelines.from_records,
    "workload.Workload.from_arrays": lambda: _mod("workload").Workload.from_arrays,
    "workload.Workload.from_requests": lambda: _mod("workload").Workload.from_requests,
}
BASE["slo.Timelines.from_records"] = dict(records=lambda: Fx.timelines().records()[:5])
BASE["workload.Workload.from_requests"] = dict(requests=lambda: list(Fx.workload().requests())[:5])

_INTERNAL = ("the fleet simulator's internal state ({}), exported for its tests; simulate_fleet "
             "(driven) builds it from checked inputs")
_RESULT = "a result record the package builds from a driven call ({}); its fields are outputs"
#: Public callables deliberately NOT driven, with the reason. Keep it short and true.
EXCLUDED = {
    "admission.IterationLog": _RESULT.format("admission.simulate"),
    "admission.SimResult": _RESULT.format("admission.simulate"),
    "admission.StepLimitExceeded": "an exception class (raised by admission.simulate, tested there)",
    "autoscaling.FleetRun": _RESULT.format("autoscaling.simulate_fleet"),
    "autoscaling.FluidRun": _RESULT.format("autoscaling.simulate_fluid"),
    "autoscaling.ReplicaModel": _RESULT.format("autoscaling.replica_model: its tables"),
    "autoscaling.RoutedCache": _RESULT.format("autoscaling.replay_routed"),
    "bench.RunIntervals": _RESULT.format("bench.one_run_intervals"),
    "bench.LoadRun": _RESULT.format("bench.closed_loop and bench.open_loop"),
    "caching.CacheResult": _RESULT.format("caching.simulate"),
    "caching.PromptTrace": _RESULT.format("caching.tutor_trace: token ids and segments"),
    "layouts.Layout": _RESULT.format("layouts.evaluate_layout"),
    "parallelism.LayoutLinks": _RESULT.format("parallelism.layout_links"),
    "procurement.PurchasePlan": _RESULT.format("procurement.buy"),
    "procurement.YearPlan": _RESULT.format("procurement.buy_year"),
    "queueing.Staffing": _RESULT.format("queueing.servers_needed"),
    "slo.BatchMeansCI": _RESULT.format("slo.batch_means_ci"),
    "slo.GoodputSearch": _RESULT.format("slo.max_rate_meeting_slo"),
    "slo.LatencyBudget": _RESULT.format("slo.latency_budget"),
    "traces.Trace": _RESULT.format("traces.read_trace"),
    "slo.Timelines": "raw columns, trusted; its checked builders Timelines.from_arrays and "
                     "from_records are driven instead",
    "workload.Workload": "raw columns, trusted; its checked builders Workload.from_arrays and "
                         "from_requests are driven instead",
    "autoscaling.Autoscaler": _INTERNAL.format("the policy's tick rule"),
    "autoscaling.Signals": _INTERNAL.format("what the tick rule sees"),
    "autoscaling.Router": _INTERNAL.format("the router"),
    "autoscaling.WaitingRoom": _INTERNAL.format("the queues"),
    "calibration.Row": "a parsed measurement row: load_rows (driven) builds it from a CSV it checks",
    "sizing.EngineDefaults": _RESULT.format("sizing.engine_defaults"),
    "sizing.Parameter": "a documentation record of sizing.PARAMETERS (name, unit, range, source)",
}

#: Other names a message may use for a parameter (``r`` is "replica" in every message).
ALIASES = {
    "r": ("replica",), "cal": ("calibration",), "cands": ("candidate",), "found": ("layout",),
    "chunks": ("prefill",), "layouts": ("layout",), "mitigations": ("mitigation",),
    "records": ("record", "timeline"), "requests": ("request",),
    "csv_name": ("csv gpu name", "csv model name"), "gpu_id": ("gpu",),
    "expected": ("arrivals needs",),  # check_arrival_count: "<what> needs N arrivals; the limit..."
}


# ----------------------------------------------------------------------------- base calls

@functools.cache
def driven() -> dict[str, object]:
    """Every callable this module drives: the public ones not excluded, and :data:`EXTRA`."""
    out = {n: f for n, f in public_callables().items() if n not in EXCLUDED}
    out.update({n: make() for n, make in EXTRA.items()})
    return dict(sorted(out.items()))


def _fresh(value):
    return value() if callable(value) else value


def base_kwargs(name: str) -> dict:
    """The arguments of ``name``'s base call (required ones, and any :data:`BASE` gives)."""
    given = BASE.get(name, {})
    given = dict(given() if callable(given) else given)
    kwargs = {}
    for p in inspect.signature(driven()[name]).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            continue
        if p.name in given:
            kwargs[p.name] = _fresh(given.pop(p.name))
        elif p.kind is p.VAR_POSITIONAL:
            kwargs[p.name] = ()
        elif p.default is p.empty:
            kwargs[p.name] = value_for(p.name, p.annotation)
    kwargs.update({k: _fresh(v) for k, v in given.items()})  # through **kwargs
    return kwargs


def fuzzable(name: str) -> list[str]:
    """The parameters hypothesis may replace: every named one, and the base's ``**kwargs``."""
    params = [p.name for p in inspect.signature(driven()[name]).parameters.values()
              if p.kind is not p.VAR_KEYWORD]
    extra = BASE.get(name, {})
    extra = extra() if callable(extra) else extra
    return params + [k for k in extra if k not in params]


def invoke(fn, kwargs: dict):
    """Call ``fn`` with ``kwargs``; the parameters up to a ``*args`` go by position."""
    params = list(inspect.signature(fn).parameters.values())
    star = next((i for i, p in enumerate(params) if p.kind is p.VAR_POSITIONAL), None)
    if star is None:
        return fn(**kwargs)
    kwargs = dict(kwargs)
    args = [kwargs.pop(p.name) for p in params[:star] if p.name in kwargs]
    rest = kwargs.pop(params[star].name)
    return fn(*args, *rest, **kwargs)


# ----------------------------------------------------------------------------- bounds

class CallTimeout(BaseException):
    """A call ran past :data:`CALL_TIME_LIMIT_S` (a BaseException: no ``except Exception`` of the
    code under test swallows it)."""


def time_limit_s(name: str) -> float:
    """The wall-clock bound of one call of ``name`` (a command: its name), seconds."""
    return max(CALL_TIME_LIMIT_S, 3.0 * HEAVY.get(name, 0), 3.0 * CLI_SECONDS.get(name, 0))


def _address_space_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def bounded(seconds: float = CALL_TIME_LIMIT_S, extra_bytes: int = CALL_MEMORY_LIMIT_BYTES):
    """Run the body under a wall-clock alarm and an address-space limit ``extra_bytes`` above
    what the process holds now (``MemoryError`` beyond it); both restored afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space_bytes() + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    def alarm(signum, frame):
        raise CallTimeout(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@dataclasses.dataclass
class Outcome:
    result: object = None
    error: BaseException | None = None
    warnings: tuple = ()


def bounded_call(fn, kwargs: dict, seconds: float = CALL_TIME_LIMIT_S) -> Outcome:
    """``fn(**kwargs)`` within the time and memory bounds, its result or error, and the numpy
    RuntimeWarnings it raised (overflow, invalid value: a NaN in the making)."""
    out = Outcome()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            with np.errstate(all="warn"), bounded(seconds):
                out.result = invoke(fn, kwargs)
        except (Exception, CallTimeout) as exc:  # noqa: BLE001 - classified by the caller
            out.error = exc
    out.warnings = tuple(str(w.message) for w in caught if issubclass(w.category, RuntimeWarning))
    return out


# ----------------------------------------------------------------------------- physical checks

#: Keys whose value may be negative by definition (a slack, an error, a difference).
SIGNED_KEYS = {"queueing_s", "error", "errors", "signed_error", "bias", "delta", "slack_s",
               "margin", "log_error", "start_hour",
               "saving_per_hour_usd"}  # admission.when_it_pays: negative where it does not pay
_FRACTION_WORDS = ("attainment", "fraction", "probability", "hit_rate")
_NONNEGATIVE_WORDS = ("bytes", "tokens", "per_s", "cost", "usd", "price", "gpus", "replicas",
                      "flops", "requests", "batch", "rps", "hours", "count")


def _rule(key: str) -> str | None:
    key = key.lower()
    if key in SIGNED_KEYS or key.startswith(("delta", "error", "change")):
        return None
    if "fraction_of" in key:  # a ratio to something (may exceed 1)
        return "nonnegative"
    if any(w in key for w in _FRACTION_WORDS):
        return "fraction"
    if key.endswith("_s") or key == "s" or any(w in key for w in _NONNEGATIVE_WORDS):
        return "nonnegative"
    return None


#: Fields that are points on a clock, not durations: any origin is allowed (``a <= s <= f <= c``
#: is what the records check), so they may be negative.
CLOCK_FIELDS = {f"{owner}.{f}" for owner in ("RequestTimeline", "Timelines")
                for f in ("arrival_s", "admitted_s", "first_token_s", "finish_s", "token_times_s")}
#: Documented sentinels in result fields: ``Owner.field -> value`` meaning "not known".
SENTINELS = {"Trace.prompt_tokens": -1}
#: Result keys that may be NaN or infinite by a callable's contract: ``name -> (keys, reason)``.
NOT_FINITE_OK = {
    "calibration.loss": ({"loss"}, "inf when a prediction fails (documented; the fit steps past)"),
    "caching.cliff_sweep": ({"needed_bytes", "edge_bytes", "needed_fraction_of_kv_budget",
                             "proportional"}, "NaN: no swept size reaches `near` (or `far`)"),
}


def physical_problems(value, key: str = "result", path: str = "result", depth: int = 0,
                      owner: str = "", not_finite_ok=frozenset()) -> list:
    """What in ``value`` breaks the physical checks: a NaN or infinite scalar, a negative time,
    bytes, tokens, cost or throughput, a fraction (attainment, hit rate, probability) outside
    [0, 1]. Walks dicts, sequences and dataclasses; arrays may hold NaN ("not recorded")."""
    if depth > 6 or value is None or isinstance(value, (bool, np.bool_, str, bytes)):
        return []
    rule = None if f"{owner}.{key}" in CLOCK_FIELDS else _rule(key)
    if isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value)
        if not math.isfinite(x):
            return [] if key in not_finite_ok else [f"{path} = {x}"]
        if rule == "nonnegative" and x < 0:
            return [f"{path} = {x} < 0"]
        if rule == "fraction" and not 0.0 <= x <= 1.0 + 1e-12:
            return [f"{path} = {x} outside [0, 1]"]
        return []
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iuf" or value.size == 0:
            return []
        arr = value.astype(float, copy=False)
        sentinel = SENTINELS.get(f"{owner}.{key}")
        if sentinel is not None:
            arr = np.where(arr == sentinel, np.nan, arr)
        if key in not_finite_ok:
            arr = np.where(np.isfinite(arr), arr, np.nan)
        if np.isinf(arr).any():
            return [f"{path} holds inf"]
        low = np.nanmin(arr) if not np.isnan(arr).all() else 0.0
        high = np.nanmax(arr) if not np.isnan(arr).all() else 0.0
        if rule == "nonnegative" and low < 0:
            return [f"{path} holds {low} < 0"]
        if rule == "fraction" and (low < 0 or high > 1 + 1e-12):
            return [f"{path} holds values outside [0, 1] ({low}, {high})"]
        return []
    if isinstance(value, dict):
        items = list(value.items())[:2000]
        return [p for k, v in items for p in physical_problems(
            v, str(k), f"{path}[{k!r}]", depth + 1, owner, not_finite_ok)]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value[:2000]) for p in physical_problems(
            v, key, f"{path}[{i}]", depth + 1, owner, not_finite_ok)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [p for f in dataclasses.fields(value) for p in physical_problems(
            getattr(value, f.name), f.name, f"{path}.{f.name}", depth + 1, type(value).__name__,
            not_finite_ok)]
    return []


def _physical(r):
    from vidya_lab import sizing

    return r.with_calibration(sizing.PHYSICAL)


def _throughputs(value) -> list[float]:
    """Every ``output_tokens_per_s`` (or ``max_output_tokens_per_s``) in a result, in order."""
    if isinstance(value, dict):
        return [float(v) for k, v in value.items() if k in ("output_tokens_per_s",
                "max_output_tokens_per_s") and v is not None]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _throughputs(v)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    return []


#: Callables whose throughput the roofline bounds: the same call on the same replica at
#: ``sizing.PHYSICAL`` efficiencies (the parameter holding the replica is named) is never slower.
ROOFLINE = {"sizing.saturated_throughput": "r", "sizing.cycle": "r", "sizing.capacity_rps": "r",
            "sizing.throughput_latency_curve": "r", "caching.saturated_throughput_with_cache": "r",
            "calibration.static_batch_throughput_per_gpu": "r", "layouts.dp_scaling": "r"}


def roofline_problems(name: str, kwargs: dict, result) -> list[str]:
    if name == "sizing.estimate" and isinstance(result, dict) and result.get("fits"):
        got, bound = result["max_output_tokens_per_s"], result["roofline_output_tokens_per_s"]
        return [] if got <= bound * (1 + 1e-9) else [f"{got} tokens/s above the roofline {bound}"]
    if name not in ROOFLINE:
        return []
    from vidya_lab import sizing

    r = kwargs.get(ROOFLINE[name])
    if not isinstance(r, sizing.Replica):
        return []
    out = bounded_call(driven()[name], {**kwargs, ROOFLINE[name]: _physical(r)}, time_limit_s(name))
    if out.error is not None:
        return [f"the same call at the roofline failed: {type(out.error).__name__}: {out.error}"]
    bound = out.result
    got, top = _throughputs(result), _throughputs(bound)
    return [f"throughput {g} above the roofline {b}" for g, b in zip(got, top, strict=False)
            if g > b * (1 + 1e-9)]


# ----------------------------------------------------------------------------- adversarial values

class Stranger:
    """An object of no type any parameter expects."""

    def __repr__(self) -> str:
        return "Stranger()"


NAN, INF = float("nan"), float("inf")
#: Values tried in every parameter: wrong signs, non-finite, beyond float range, bools where
#: numbers go, strings, None, wrong objects, empty, nested and huge sequences. Callables are
#: factories (a fresh object for each call).
GENERIC = [
    -1, 0, 1, 3, -2.5, 0.5, 1e-9, NAN, INF, -INF, 10**400, -(10**400), 2**63, 10**9, 1e15,
    1e300, -1e300, 5e-324, True, False, None, "", "1", "nope", "nan", "x" * 20_000, b"1",
    Stranger(), list, tuple, dict, set, lambda: [1.0], lambda: [NAN], lambda: [-1.0],
    lambda: [[1, 2], [3, 4]], lambda: ["a", "b"], lambda: range(10**12), lambda: (0.5,) * 100_000,
    np.float64(NAN), np.int64(-1), np.bool_(True), lambda: np.array([]), lambda: np.zeros((2, 2)),
    lambda: np.array([1.0, INF]), Fx.replica, Fx.timelines, Fx.workload, Fx.scenario,
    lambda: {"a": 1},
]
#: Values refused everywhere (nothing accepts them), the only ones tried on :data:`HEAVY`
#: callables in the fast profile, so that they stay cheap there.
REFUSED = [NAN, -INF, 10**400, -(10**400), Stranger(), b"1", lambda: np.zeros((2, 2))]
#: Callables whose base call takes seconds, with about how many: the fast profile skips their
#: base call and draws only :data:`REFUSED` values (refused before the work starts); ``make fuzz``
#: runs them with :data:`HEAVY_EXAMPLES` examples under a time limit scaled to the base call.
HEAVY = {"calibration.fit": 10, "calibration.build_document": 12,
         "calibration.write_calibration": 14, "calibration.sensitivity": 120}
HEAVY_EXAMPLES = 10


def derived(base) -> list:
    """Adversarial neighbours of a valid value: scaled, negated, off-integer, emptied, reversed,
    poisoned with NaN."""
    if isinstance(base, (bool, np.bool_)):
        return [int(base), str(base), not base]
    if isinstance(base, (int, np.integer)):
        b = int(base)
        return [-b, b + 1, b * 10**6, b * 10**12, b + 0.5, float(b), str(b), b - 1]
    if isinstance(base, (float, np.floating)):
        b = float(base)
        return [-b, b * 1e6, b * 1e12, b * 1e-12, b + 1e-9, str(b), int(b)]
    if isinstance(base, str):
        return [base.upper(), f" {base}", base * 3, base[:-1], base + "\x00"]
    if isinstance(base, (list, tuple, np.ndarray)):
        seq = list(base)
        out = [type(base)([]) if not isinstance(base, np.ndarray) else np.array([]), seq[::-1],
               seq + [NAN], seq * 1000, [seq]]
        if seq and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in seq):
            out += [[-x for x in seq], [x * 1e12 for x in seq]]
        return out
    return []


def adversarial(base, heavy: bool):
    if heavy and not LONG:
        return st.sampled_from(REFUSED)
    values = st.sampled_from(GENERIC + derived(base))
    return st.one_of(values, st.floats(), st.integers(min_value=-(2**80), max_value=2**80),
                     st.text(max_size=4))


# ----------------------------------------------------------------------------- the judgement

#: Parameters that take a file path: an ``OSError`` (e.g. FileNotFoundError) names the file.
PATH_PARAMS = {"path", "out", "figure"}


def _names(param: str) -> tuple[str, ...]:
    base = (param, param.replace("_", " "), param.replace("_", "-"))
    return base + ALIASES.get(param, ())


def verdict(name: str, param: str | None, value, kwargs: dict, out: Outcome) -> str | None:
    """``None`` if the outcome is acceptable, else what is wrong (module docstring)."""
    shown = f"{name}({param}={value!r:.80})" if param else f"{name}(<base call>)"
    exc = out.error
    if isinstance(exc, CallTimeout):
        return f"{shown}: {exc}"
    if isinstance(exc, MemoryError):
        return f"{shown}: needs more than {CALL_MEMORY_LIMIT_BYTES / 2**30:g} GiB"
    if exc is not None:
        clear = (ValueError, TypeError, KeyError) + ((OSError,) if param in PATH_PARAMS else ())
        if not isinstance(exc, clear) or type(exc).__module__.startswith("numpy"):
            return f"{shown}: {type(exc).__name__} from inside: {exc}"
        if param is None:
            return f"{shown}: the base call failed: {type(exc).__name__}: {exc}"
        message = str(exc).lower()
        names = _names(param)
        if isinstance(exc, OSError) and (exc.filename is not None or (
                isinstance(value, str | os.PathLike) and os.fspath(value) in str(exc))):
            return None  # an OSError names its file
        if not any(str(n).lower() in message for n in names):
            return f"{shown}: {type(exc).__name__} does not name {param!r}: {exc}"
        return None
    ok = NOT_FINITE_OK.get(name, ((),))[0]
    problems = physical_problems(out.result, name.rsplit(".", 1)[-1], not_finite_ok=frozenset(ok))
    problems += roofline_problems(name, kwargs, out.result)
    if out.warnings:
        problems.append(f"numpy warned: {out.warnings[0]}")
    return f"{shown} returned a result that fails the physical checks: {problems[:3]}" if problems \
        else None


@pytest.fixture(autouse=True)
def _in_a_scratch_dir(tmp_path, monkeypatch):
    """A relative path a fuzzed argument names lands in a temp dir, never in the checkout."""
    monkeypatch.chdir(tmp_path)


def test_every_public_callable_is_driven_or_excluded():
    """The maintained tables match the package: each public callable is driven or excluded with
    a reason, no entry is stale, and every driven one has a base call."""
    public = set(public_callables())
    assert set(EXCLUDED) <= public, f"stale EXCLUDED entries: {set(EXCLUDED) - public}"
    assert set(BASE) <= set(driven()), f"stale BASE entries: {set(BASE) - set(driven())}"
    assert all(reason.strip() for reason in EXCLUDED.values())
    assert len(public) > 200  # the discovery itself works (it found the package)
    for name in driven():
        base_kwargs(name)  # LookupError names the parameter that has no base value


@pytest.mark.parametrize("name", sorted(driven()))
def test_base_call_passes_the_physical_checks(name):
    """Each base call works and passes the physical checks: the fuzzing starts from a valid call,
    so a refusal it provokes is about the value it changed."""
    if name in HEAVY and not LONG:
        pytest.skip(f"{name}'s base call takes ~{HEAVY[name]} s: `make fuzz` runs it")
    kwargs = base_kwargs(name)
    out = bounded_call(driven()[name], kwargs, time_limit_s(name))
    problem = verdict(name, None, None, kwargs, out)
    assert problem is None, problem


@pytest.mark.parametrize("name", sorted(driven()))
def test_adversarial_argument_is_refused_by_name_or_physical(name):
    """One argument replaced by an adversarial value: a clear error naming it, or a physical
    result, within the time and memory bounds."""
    fn, params = driven()[name], fuzzable(name)
    if not params:
        pytest.skip(f"{name} takes no arguments (its base call is the test)")

    @settings(SETTINGS, max_examples=HEAVY_EXAMPLES if name in HEAVY and LONG else
              SETTINGS.max_examples)
    @given(data=st.data())
    def run(data):
        kwargs = base_kwargs(name)
        param = data.draw(st.sampled_from(params), label="parameter")
        value = _fresh(data.draw(adversarial(kwargs.get(param), name in HEAVY), label="value"))
        if param in PATH_PARAMS and isinstance(value, str) and value.strip():
            value = Path.cwd() / Path(value).name if "\x00" not in value else value
        kwargs[param] = (value,) if _is_star(fn, param) else value
        problem = verdict(name, param, value, kwargs, bounded_call(fn, kwargs, time_limit_s(name)))
        assert problem is None, problem

    run()


def _is_star(fn, param: str) -> bool:
    p = inspect.signature(fn).parameters.get(param)
    return p is not None and p.kind is p.VAR_POSITIONAL


# ----------------------------------------------------------------------------- the command line

def cli_parsers() -> dict:
    """``name -> argparse parser`` of every ``vidya-lab`` sub-command."""
    import argparse

    from vidya_lab import cli

    sub = next(a for a in cli.build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


#: Sub-commands deliberately not driven here, with the reason.
CLI_EXCLUDED = {
    "grade": "runs each notebook in its own Jupyter kernel (processes) through vidya_lab.exercises, "
             "another engineer's; tests/test_grader.py drives its bad inputs",
    "release": "writes the student notebooks through vidya_lab.exercises (another engineer's); "
               "tests/test_release.py drives its bad inputs",
}
_M8 = ["--model", "llama-3.1-8b"]


@functools.cache
def _calibrate_runs() -> tuple[str, ...]:
    from test_calibrate import write_runs  # the calibrate tests' synthetic benchmark runs

    folder = Fx.files()["dir"] / "runs"
    folder.mkdir(exist_ok=True)
    return tuple(str(p) for p in write_runs("vllm", folder))


def cli_base(name: str) -> tuple[list[str], dict]:
    """``(positionals, {option: value or None for a flag})`` of a quick, valid run of ``name``
    that prints JSON."""
    files = Fx.files()
    bases = {
        "models": ([], {}), "gpus": ([], {}),
        "estimate": ([], {"--model": "llama-3.1-8b", "--gpu": "h100-sxm"}),
        "layouts": ([], {"--model": "llama-3.1-8b", "--peak-rps": "2", "--isl": "512",
                         "--osl": "64"}),
        "simulate": ([], {"--model": "llama-3.1-8b", "--gpu": "h100-sxm", "--rate": "1",
                          "--isl": "256", "--osl": "32", "--duration": "20"}),
        "cache": ([], {"--requests": "50"}),
        "autoscale": ([], {"--model": "llama-3.1-8b", "--day": "normal", "--max": "4"}),
        "slo": ([str(files["csv"])], {"--ttft": "2"}),
        "calibrate": (list(_calibrate_runs()), {"--model": "llama-3.1-8b", "--gpu": "h100-sxm",
                                                "--tp": "1", "--out": str(out_path())}),
        "plan": ([], {"--gpus": "h200", "--precisions": "fp8", "--day": "normal",
                      "--peak-rps": "0.5", "--exam-multiplier": "2", "--no-risks": None}),
    }
    positionals, options = bases[name]
    return list(positionals), {**options, "--json": None}


#: Commands whose base run takes seconds (a simulated day, a plan): the fast profile gives them
#: only values refused before the work.
CLI_SECONDS = {"autoscale": 5, "plan": 4, "calibrate": 1}  # about how long the base run takes
CLI_HEAVY = set(CLI_SECONDS)
#: What a command-line value can be: numbers out of range, not finite, beyond float range, with
#: 400 digits, words, empty, huge, option-like, and paths that are a directory, a device or absent.
CLI_VALUES = ["-1", "0", "1", "0.5", "-0.5", "nan", "inf", "-inf", "1e400", "1" + "0" * 400,
              "1e9", "1e15", "2147483648", "9" * 30, "", " ", "abc", "True", "None", "x" * 5000,
              "--json", "1,2", ",", "/dev/full", "/nonexistent/dir/f.json", ".", "-"]
CLI_REFUSED = ["nan", "-inf", "1e400", "1" + "0" * 400, "abc", ""]


def _cli_options(parser) -> list:
    """The actions hypothesis may change: options with a value, flags (toggled), positionals."""
    return [a for a in parser._actions if a.dest not in ("help", "version")]


def cli_argv(name: str, positionals: list, options: dict) -> list[str]:
    argv = [name, *positionals]
    for opt, value in options.items():
        argv += [opt] if value is None else [opt, value]
    return argv


def run_cli(argv: list[str], seconds: float = CALL_TIME_LIMIT_S, stdout=None) -> tuple:
    """``(exit status, stdout, stderr, escaped exception)`` of ``vidya-lab ARGV`` in-process,
    within the time and memory bounds (``stdout``: a file to print into instead)."""
    import io

    from vidya_lab import cli

    out, err, status, escaped = io.StringIO(), io.StringIO(), None, None
    try:
        with contextlib.redirect_stdout(out if stdout is None else stdout), \
                contextlib.redirect_stderr(err), bounded(seconds):
            status = cli.main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code
    except (Exception, CallTimeout) as exc:  # noqa: BLE001 - judged by the caller
        escaped = exc
    return status, out.getvalue(), err.getvalue(), escaped


def cli_verdict(name: str, action, value, argv, status, out, err, escaped) -> str | None:
    """``None`` if the run ended as the CLI frame promises (module docstring), else what not."""
    import json

    shown = f"vidya-lab {' '.join(a if len(a) < 60 else a[:57] + '...' for a in argv[:12])}"
    if escaped is not None:
        return f"{shown}: {type(escaped).__name__} escaped the CLI: {escaped}"
    if "Traceback" in err or "Exception ignored" in err:
        return f"{shown}: a traceback without --debug: {err[-300:]}"
    lines = err.strip().splitlines()
    if status == 0:
        if "--json" not in argv:
            return None if out.strip() else f"{shown}: exit 0 but nothing printed"
        try:
            doc = json.loads(out)
        except ValueError:
            return f"{shown}: exit 0 but its output is not JSON: {out[:200]!r}"
        problems = physical_problems(doc, name)
        return f"{shown}: its JSON fails the physical checks: {problems[:3]}" if problems else None
    if status == 1:
        ok = len(lines) == 1 and lines[0].startswith(f"vidya-lab {name}: failed: ")
        return None if ok else f"{shown}: exit 1 without a one-line 'failed:' message: {err[:300]}"
    if status != 2:
        return f"{shown}: exit status {status!r}: {err[:300]}"
    frame = len(lines) == 1 and lines[0].startswith(f"vidya-lab {name}: error: ")
    usage = bool(lines) and lines[0].startswith("usage:") and \
        lines[-1].startswith(f"vidya-lab {name}: error: ")
    if not (frame or usage):
        return f"{shown}: exit 2 without one error line: {err[:300]}"
    if action is None:
        return None
    message = lines[-1].lower()
    names = [*action.option_strings, action.dest, action.dest.replace("_", "-"),
             *CLI_ALIASES.get((name, action.dest), ())]
    if value is not None and (len(value) > 3 or not action.option_strings) and value.strip():
        names.append(value)  # a path or an id the message quotes
    if not any(n.lower() in message for n in names if n):
        return f"{shown}: the error does not name {action.option_strings or action.dest}: {lines[-1]}"
    return None


#: Other words an error may name an option by: ``(command, dest) -> names``.
CLI_ALIASES = {
    ("cache", "block"): ("block_tokens",), ("cache", "shared_prefix"): ("syllabus_tokens",),
    ("cache", "unique"): ("question_tokens",), ("cache", "answer"): ("answer_tokens",),
    ("cache", "rate"): ("rate_per_s",), ("cache", "requests"): ("n_requests",),
    ("simulate", "rate"): ("rate_per_s",), ("simulate", "duration"): ("duration_s",),
    ("layouts", "ttft"): ("ttft_target_s",), ("layouts", "tpot"): ("tpot_target_s",),
    ("plan", "ttft"): ("ttft_target_s",), ("plan", "tpot"): ("tpot_target_s",),
    ("plan", "attainment"): ("attainment_target",), ("plan", "peak_rps"): ("normal_peak_rps",),
    ("plan", "itl"): ("itl_target_s",), ("plan", "exam_weeks"): ("exam_weeks_per_year",),
    ("slo", "max_mib"): ("max_bytes",), ("autoscale", "min_replicas"): ("--min",),
    ("autoscale", "max_replicas"): ("--max",),
}


def test_every_sub_command_is_driven_or_excluded():
    parsers = cli_parsers()
    assert set(CLI_EXCLUDED) <= set(parsers), f"stale CLI_EXCLUDED: {set(CLI_EXCLUDED) - set(parsers)}"
    for name in parsers:
        if name not in CLI_EXCLUDED:
            cli_base(name)  # KeyError: give the new command a base run


_COMMANDS = sorted(set(cli_parsers()) - set(CLI_EXCLUDED))


@pytest.mark.parametrize("name", _COMMANDS)
def test_sub_command_base_run_prints_physical_json(name):
    if name in CLI_HEAVY and not LONG:
        pytest.skip(f"vidya-lab {name}'s base run takes seconds: `make fuzz` runs it")
    argv = cli_argv(name, *cli_base(name))
    problem = cli_verdict(name, None, None, argv, *run_cli(argv))
    assert problem is None, problem


@pytest.mark.parametrize("name", _COMMANDS)
def test_sub_command_with_an_adversarial_value(name):
    """One option (or positional) replaced by an adversarial string, or a flag toggled: exit 0
    with physical JSON, 1 with one 'failed:' line, or 2 with one error line naming the option."""
    actions = _cli_options(cli_parsers()[name])
    heavy = name in CLI_HEAVY and not LONG
    if heavy:
        actions = [a for a in actions if a.nargs != 0]

    @settings(SETTINGS, max_examples=HEAVY_EXAMPLES if name in CLI_HEAVY and LONG else
              SETTINGS.max_examples)
    @given(data=st.data())
    def run(data):
        positionals, options = cli_base(name)
        action = data.draw(st.sampled_from(actions), label="option")
        if action.nargs == 0:  # a flag: toggle it
            opt = action.option_strings[-1]
            options.pop(opt) if opt in options else options.update({opt: None})
            value = None
        else:
            pool = CLI_REFUSED if heavy else CLI_VALUES
            value = data.draw(st.sampled_from(pool) if heavy else
                              st.one_of(st.sampled_from(pool), st.text(max_size=6),
                                        st.floats().map(repr), st.integers().map(str)),
                              label="value")
            if action.option_strings:
                options[action.option_strings[-1]] = value
            else:
                positionals = [value]
        argv = cli_argv(name, positionals, options)
        problem = cli_verdict(name, action, value, argv, *run_cli(argv, time_limit_s(name)))
        assert problem is None, problem

    run()


# ----------------------------------------------------------------------------- what it found
#: Each failure the fuzzing found, pinned: ``(callable, arguments replacing the base call's,
#: exception, pattern its message must match)``. The fix is at the public boundary (git log).
FOUND = [
    ("admission.saturation_rate_per_s", dict(prompt_tokens=-1), ValueError, "prompt_tokens"),
    ("autoscaling.make_policy", dict(utilisation=-1), ValueError, "utilisation"),
    ("autoscaling.prefix_warm_up_s", dict(syllabus_tokens=-1), ValueError, "syllabus_tokens"),
    ("autoscaling.prefix_warm_up_s", dict(subjects=10**9), ValueError, "subjects"),  # was a hang
    ("autoscaling.summary", dict(hours=-1), TypeError, "hours"),
    ("autoscaling.summary", dict(hours=lambda: [1, 2]), TypeError, r"hours\[0\]"),
    ("calibration.gpu_of", dict(row=-1), TypeError, "row must be a calibration.Row"),
    ("calibration.predict_row", dict(row=None), TypeError, "row must be a calibration.Row"),
    ("calibration.reference_rows", dict(rows=-1), TypeError, "rows must be a list"),
    ("calibration.timing_rows", dict(rows=lambda: [1]), TypeError, r"rows\[0\]"),
    ("calibration.fit", dict(rows=NAN), TypeError, "rows must be a list"),
    ("calibration.fit", dict(rounds=10**9), ValueError, "rounds"),
    ("calibration.sensitivity", dict(fit_rows=NAN), TypeError, "fit_rows"),
    ("calibration.summarise", dict(errors=lambda: []), ValueError, "errors must not be empty"),
    ("calibration.calibration_from", dict(values=-1), TypeError, "values"),
    ("calibration.fit_gpu", dict(gpu_id=-1), TypeError, "gpu_id"),
    ("calibration.build_document", dict(with_sensitivity=NAN), TypeError, "with_sensitivity"),
    ("calibration.write_calibration", dict(with_sensitivity="False"), TypeError,
     "with_sensitivity"),  # a truthy string ran the two-minute sensitivity refits
    ("catalog.Precision", dict(id=NAN), TypeError, "id must be a string"),
    ("catalog.Precision", dict(bytes_per_element=-1), ValueError, "bytes_per_element"),
    ("catalog.Link", dict(name=None), TypeError, "name must be a string"),
    ("sizing.Replica", dict(kv_precision=-1), TypeError, "kv_precision must be a precision id"),
    ("sizing.estimate", dict(kv_precision="fp9"), KeyError, "unknown precision 'fp9' for kv_prec"),
    ("sizing.kv_bytes_per_token", dict(kv_precision=-1), TypeError, "kv_precision"),
    ("parallelism.layout_links", dict(interconnect=-1), TypeError, "interconnect must be a link"),
    ("parallelism.comm_coefficients", dict(inter_node="x"), KeyError, "unknown link 'x' for inter_"),
    ("sizing.gpus_for_peak_load", dict(tpot_slo_s=-1), ValueError, "tpot_slo_s"),
    ("sizing.StepCost", dict(r=-1), TypeError, "r must be a sizing.Replica"),
    ("sizing.engine_defaults", dict(gpu=-1), TypeError, "gpu must be an id string"),
    ("sizing.engine_defaults", dict(memory_rule="x"), ValueError, "memory_rule"),
    ("sizing.prefill_work", dict(chunks=-1), TypeError, "prefill must be a list"),
    ("sizing.iteration_time_s", dict(decode_contexts=lambda: range(10**12)), TypeError,
     "decode_contexts must be a list"),  # list(range(10**12)) exhausted memory
    ("sizing.iteration_time_s", dict(decode_contexts=lambda: [1] * 1_000_001), ValueError,
     "at most 1,000,000"),
    ("layouts.rank", dict(found=-1), TypeError, "found must be a list of Layout"),
    ("layouts.rank", dict(tolerance=NAN), ValueError, "tolerance"),
    ("layouts.pareto_frontier", dict(layouts=lambda: [{"fits": True}]), TypeError, r"layouts\[0\]"),
    ("layouts.cost_vs_tpot_target", dict(tpot_targets=-1), TypeError, "tpot_targets"),
    ("layouts.cost_vs_tpot_target", dict(tpot_targets=lambda: [0.1, NAN]), ValueError,
     r"tpot_targets\[1\]"),
    ("plan.candidates", dict(scenario=-1), TypeError, "scenario must be a scenario.Scenario"),
    ("plan.candidates", dict(precisions=lambda: [None]), TypeError, r"precisions\[0\]"),
    ("plan.peak_rps", dict(day="monday"), ValueError, "day must be one of"),  # was the normal peak
    ("plan.peak_rps", dict(traffic_factor=-1), ValueError, "traffic_factor"),
    ("plan.day_curve", dict(scenario=None), TypeError, "scenario"),
    ("plan.target", dict(scenario=-1), TypeError, "scenario"),
    ("plan.prefix_tokens", dict(scenario=-1), TypeError, "scenario"),
    ("plan.what_if", dict(scenario=-1), TypeError, "scenario"),
    ("plan.cheapest_per_gpu", dict(cands=-1), TypeError, "cands"),
    ("plan.simulate", dict(candidate=-1), TypeError, "candidate must be a plan.Candidate"),
    ("plan.simulate", dict(opts=lambda: {}), TypeError, "opts must be a plan.Options"),
    ("plan.Options", dict(day=NAN), ValueError, "day must be one of"),
    ("plan.Options", dict(traffic_margin=5.0), ValueError, "traffic_margin"),
    ("plan.Candidate", dict(gpu=NAN), TypeError, "gpu must be a string"),
    ("plan.Candidate", dict(layout=lambda: {}), TypeError, "layout must be a layouts.Layout"),
    ("slo.RequestTimeline", dict(request_id=NAN), TypeError, "request_id must be an int or a str"),
    ("slo.Timelines.from_records", dict(records=-1), TypeError, "records must be an iterable"),
    ("slo.Timelines.from_records", dict(records=lambda: range(10**12)), TypeError,
     r"records\[0\]"),  # list(range(10**12)) exhausted memory
    ("slo.pooled_percentile", dict(groups=-1), TypeError, "groups must be a sequence"),
    ("slo.mean_of_percentiles", dict(groups=None), TypeError, "groups must be a sequence"),
    ("slo.read_trace_csv", dict(path=""), ValueError, "path must be a non-empty path"),
    ("traces.read_trace", dict(path=""), ValueError, "path must be a non-empty path"),
    ("traces.detect_format", dict(path=" "), ValueError, "path must be a non-empty path"),
    ("report.plan_table", dict(result=-1), TypeError, "result must be a dict"),
    ("report.plan_figure", dict(result=lambda: {"gpu": "h200"}), ValueError, "result is not a plan"),
    ("workload.poisson_arrivals", dict(rate_per_s=1e6), ValueError,
     r"rate_per_s x duration_s needs 6e\+07 arrivals; the limit is 1e\+07"),
    ("workload.mmpp_arrivals", dict(duration_s=1e7), ValueError, "duration_s needs"),
    ("workload.nonhomogeneous_arrivals", dict(rate_max_per_s=1e6), ValueError, "rate_max_per_s x"),
    ("workload.on_off_arrivals", dict(rate_on_per_s=-1), ValueError, "rate_on_per_s must be"),
    ("workload.on_off_arrivals", dict(mean_off_s=-1), ValueError, "mean_off_s must be > 0"),
    ("toyserver.tutor_workload", dict(rate_per_s=509323.0), ValueError,  # needed over 2 GiB
     "rate_per_s x duration_s needs"),
    ("report.plan_figure", dict(path=lambda: out_path(".pdf")), ValueError, "path .the figure. must"),
    ("traces.read_genai_perf", dict(experiment=0.5), TypeError, "experiment must be an integer"),
    ("workload.check_arrival_count", dict(expected=10**400), ValueError, "arrivals needs an unbounded"),
    ("workload.check_arrival_count", dict(expected=NAN), ValueError, "expected must be finite"),
    ("sizing.cycle", dict(isl=-53203), ValueError, "isl must be"),  # ZeroDivisionError before
    ("sizing.cycle", dict(r=-1), TypeError, "replica must be a sizing.Replica"),
    ("sizing.cycle", dict(cached_tokens=512), ValueError, "cached_tokens must be an integer <="),
    ("slo.RequestTimeline", dict(token_times_s=-1), TypeError, "token_times_s must be a sequence"),
    ("slo.RequestTimeline", dict(token_times_s=lambda: range(10**12)), TypeError, "token_times_s"),
    ("caching.host_to_device_bytes_per_s", dict(gpu=-1), TypeError,
     "gpu must be a catalog gpu id or catalog.GPU"),  # AttributeError: 'int' has no 'id' before
    ("caching.salt_keys", dict(keys=-1), TypeError, "keys must be a list of block key"),
    ("caching.salt_keys", dict(keys=lambda: ["a"]), TypeError, r"keys\[0\] must be a block key"),
    ("autoscaling.region_profile", dict(day=lambda: np.array([])), ValueError,
     "day must be one of"),  # check_choice: an array's elementwise == was "truth value ambiguous"
    ("autoscaling.route", dict(policy=lambda: np.array([])), ValueError, "policy must be one of"),
    ("procurement.price_ratio", dict(kind=lambda: np.array([])), ValueError, "kind must be one of"),
    ("procurement.hours_in_service", dict(replicas_by_hour=lambda: [1e12] * 24), ValueError,
     "replicas_by_hour"),  # was a hang: a loop over 10**12 replicas
    ("procurement.buy", dict(replicas_by_hour=lambda: [1e12] * 24), ValueError, "replicas_by_hour"),
    ("caching.simulate_offload", dict(kinds=-1), TypeError, "kinds must be a list"),
    ("caching.restore_or_recompute", dict(prompt_tokens=1), ValueError,
     "gpu_cached_tokens .below prompt_tokens. must be"),
    ("caching.break_even_link_bytes_per_s", dict(prompt_tokens=1), ValueError, "prompt_tokens"),
    ("autoscaling.failover_workload", dict(duration_s=477744.0), ValueError, "duration_s must be"),
    ("caching.spec_break_even_batch", dict(draft_model=-1), TypeError,
     "draft_model must be a model id string"),
    ("bench.compare_open_closed", dict(users=-1), TypeError, "users must be a list"),
    ("bench.p99_over_runs", dict(seeds=-1), TypeError, "seeds must be a list"),
    ("bench.recovery_rows", dict(doc=-1), TypeError, "doc must be a vidya-lab calibrate document"),
    ("bench.recovery_rows", dict(doc=lambda: {}), ValueError, "doc is not a vidya-lab calibrate"),
    ("bench.staging_workloads", dict(seed=-1), ValueError, "seed must be"),  # numpy's message before
    # the long profile: a refusal that named only the other parameter, or a phrase, not the name
    ("caching.break_even_cache_bytes", dict(isl=1), ValueError,
     r"cached_tokens must be an integer <= isl - 1 = 0"),
    ("autoscaling.routed_capacity", dict(tpot_target_s=1e-6), ValueError,
     r"tpot_target_s = 1e-06 s is below the batch-1 step time"),
    ("bench.compare_open_closed", dict(duration_s=1e6), ValueError,
     r"closed loops \(users\) of duration_s = 1e\+06 needs .* decode steps; the limit is 2e\+06"),
]


@pytest.mark.parametrize(("name", "change", "exc", "match"), FOUND,
                         ids=[f"{f[0]}-{'-'.join(f[1])}" for f in FOUND])
def test_what_the_fuzzing_found_stays_fixed(name, change, exc, match):
    kwargs = {**base_kwargs(name), **{k: _fresh(v) for k, v in change.items()}}
    out = bounded_call(driven()[name], kwargs, time_limit_s(name))
    assert isinstance(out.error, exc), f"{name}({change}): {out.error!r}"
    assert re.search(match, str(out.error)), f"{name}({change}): {out.error}"


def test_check_instances_names_the_parameter_or_its_entry():
    from vidya_lab import _validate as v

    assert v.check_instances("xs", (1, 2), int) == [1, 2]
    with pytest.raises(TypeError, match="xs must be a list of int, got int"):
        v.check_instances("xs", 3, int)
    with pytest.raises(TypeError, match=r"xs\[1\] must be a int, got str"):
        v.check_instances("xs", [1, "a"], int)
    with pytest.raises(ValueError, match="xs may hold at most 2 entries, got 3"):
        v.check_instances("xs", [0] * 3, int, max_length=2)


# ----------------------------------------------------------------------------- the issue's cases
# Each case issue 16 lists, as it reads there (most were fixed by the modules' own engineers;
# they are checked here once more, through the same bounds). ``None``: it must return a physical
# result within the bounds; an exception class: it must raise it, matching the pattern.

def _m8():
    return _mod("catalog").get_model("llama-3.1-8b")


ISSUE_CASES = [
    ("write_calibration('') keeps the package file", lambda: _mod("calibration").write_calibration(""),
     ValueError, "path must be a non-empty path"),
    ("catalog.Model with a negative size", lambda: dataclasses.replace(_m8(), d_model=-1),
     ValueError, "d_model"),
    ("catalog.GPU with no memory", lambda: dataclasses.replace(
        _mod("catalog").get_gpu("h100-sxm"), hbm_bytes=0), ValueError, "hbm_bytes"),
    ("p2p_time_s(-1e9, ...)", lambda: _mod("parallelism").p2p_time_s(-1e9, 450e9, 1e-5),
     ValueError, "nbytes"),
    ("p2p_time_s(NaN, ...)", lambda: _mod("parallelism").p2p_time_s(NAN, 450e9, 1e-5),
     ValueError, "nbytes"),
    ("ring_allreduce_time_s(1e6, 4, -1, -1)",
     lambda: _mod("parallelism").ring_allreduce_time_s(1e6, 4, -1.0, -1.0), ValueError, "bytes_per_s"),
    ("layer_params_per_gpu(model, -1)", lambda: _mod("parallelism").layer_params_per_gpu(_m8(), -1),
     ValueError, "tp"),
    ("light_load(osl=-1)", lambda: _mod("calibration").light_load(Fx.replica(), 1.0, 512, -1),
     ValueError, "osl"),
    ("closed_batch(osl=-1)", lambda: _mod("calibration").closed_batch(Fx.replica(), 8, 512, -1),
     ValueError, "osl"),
    ("sweep_cache_bytes(kinds=['nope'])", lambda: _mod("caching").sweep_cache_bytes(
        Fx.prompt_trace(), [1e9], kinds=["nope"]), ValueError, "kinds"),
    ("percentile_summary([1e308, -1e308])",
     lambda: _mod("slo").percentile_summary([1e308, -1e308]), None, None),
    ("write_trace_csv(tl, 1) (a file descriptor)",
     lambda: _mod("slo").write_trace_csv(Fx.timelines(), 1), TypeError, "path"),
    ("simulate(drain='False')", lambda: _mod("admission").simulate(
        Fx.replica(), Fx.workload(), drain="False"), TypeError, "drain"),
    ("mm1_mean_wait_s(10**400, 2.0)", lambda: _mod("queueing").mm1_mean_wait_s(10**400, 2.0),
     ValueError, "arrival_rate_per_s"),
    ("kv_heads_per_gpu(m, 0)", lambda: _mod("parallelism").kv_heads_per_gpu(_m8(), 0),
     ValueError, "tp"),
    ("rush_attainment(run, hours=())", lambda: _mod("autoscaling").rush_attainment(
        Fx.fleet_run(), hours=()), TypeError, "hours must be a .start, end. pair"),
    ("make_workload(True, ...)", lambda: _mod("workload").make_workload(
        True, prompt_tokens=_mod("workload").FixedLength(1),
        output_tokens=_mod("workload").FixedLength(1), seed=0), TypeError, "arrival_s"),
    ("simulate_day(queue_timeout_s=3e7) (5.8 GiB before)", lambda: _mod("autoscaling").simulate_day(
        Fx.replica(), day="normal", duration_s=3600.0, queue_timeout_s=3e7), None, None),
    ("day_profile('normal').expected_count(1e9)",
     lambda: _mod("autoscaling").day_profile("normal").expected_count(1e9), None, None),
    ("day_workload(duration_s=1e15)", lambda: _mod("autoscaling").day_workload(
        "normal", seed=0, duration_s=1e15), ValueError, "the limit is"),
    ("mmpp_arrivals with zero rates", lambda: _mod("workload").mmpp_arrivals(
        [0.0, 0.0], [1.0, 1.0], 1e9, seed=0), ValueError, "duration_s"),
    ("max_rate_between(0, 1e12)",
     lambda: _mod("autoscaling").day_profile("normal").max_rate_between(0, 1e12), None, None),
    ("max_rate_between(nan, nan)",
     lambda: _mod("autoscaling").day_profile("normal").max_rate_between(NAN, NAN), ValueError, "t0_s"),
    ("simulate_fleet(horizon_s=1e9)", lambda: _mod("autoscaling").simulate_fleet(
        Fx.workload(), Fx.fleet(), _reactive(), horizon_s=1e9), ValueError, "horizon_s"),
    ("tutor_trace(100, subjects=10**7)", lambda: _mod("caching").tutor_trace(
        100, seed=0, subjects=10**7), ValueError, "subjects"),
    ("plan(cold_start_s=1e6)", lambda: _mod("plan").plan(cold_start_s=1e6), ValueError, "cold_start_s"),
    ("pipeline_schedule(r, 9906478990, 70000)", lambda: _mod("layouts").pipeline_schedule(
        _mod("sizing").replica("llama-3.1-8b", "h100-sxm", pp=2), 9906478990, 70000),
     ValueError, "batch"),
    ("Fleet(max_replicas=2**31)", lambda: _mod("autoscaling").Fleet(
        Fx.replica_model(), max_replicas=2**31), ValueError, "max_replicas"),
    ("candidate_degrees(tps=True)", lambda: _mod("layouts").candidate_degrees(_m8(), tps=True),
     TypeError, "tps"),
    ("block_hashes(nan)", lambda: _mod("caching").block_hashes(NAN), TypeError, "tokens"),
]


@pytest.mark.parametrize(("case", "call", "exc", "match"), ISSUE_CASES,
                         ids=[c[0] for c in ISSUE_CASES])
def test_the_issues_cases(case, call, exc, match):
    out = bounded_call(call, {})
    if exc is None:
        assert out.error is None, f"{case}: {out.error!r}"
        assert not physical_problems(out.result), physical_problems(out.result)
    else:
        assert isinstance(out.error, exc), f"{case}: {out.error!r}"
        assert re.search(match, str(out.error)), f"{case}: {out.error}"


CLI_ISSUE_CASES = [
    (["plan", "--peak-rps", "1e4"], "peak of 100000 requests/s .* needs .* the limit is 1e\\+07 .*peak"),
    (["autoscale", "--max", "1000000"], "max_replicas must be an integer <= 4096"),
    (["estimate", *_M8, "--gpu", "h100-sxm", "--isl", "1" + "0" * 400],
     "isl must be an integer <= .*, got an integer of 401 digits"),
    (["cache", "--requests", "200001"], "requests"),
    (["plan", "--precisions", ""], "--precisions must name at least one"),
    (["plan", "--figure", "plan.pdf"], "--figure .the figure. must end in .png or .svg"),
]


@pytest.mark.parametrize(("argv", "match"), CLI_ISSUE_CASES, ids=[" ".join(c[0])[:40]
                                                                  for c in CLI_ISSUE_CASES])
def test_the_issues_command_lines(argv, match):
    """Refused before the work: exit 2 and one line that names the option and the limit."""
    status, out, err, escaped = run_cli(argv)
    assert escaped is None and status == 2, (status, err, escaped)
    assert err.count("\n") == 1 and re.search(match, err), err


def _quick_commands():
    return [n for n in _COMMANDS if LONG or n not in CLI_HEAVY]


@pytest.mark.parametrize("name", _quick_commands())
def test_sub_command_on_a_full_device_is_one_line_exit_2(name):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        status, _, err, escaped = run_cli(cli_argv(name, *cli_base(name)), stdout=full)
    assert escaped is None and status == 2, (status, err, escaped)
    assert err.count("\n") == 1 and "No space left on device" in err, err


@pytest.mark.parametrize("name", _quick_commands())
def test_sub_command_into_a_closed_pipe_ends_quietly(name):
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as pipe:
        status, _, err, escaped = run_cli(cli_argv(name, *cli_base(name)), stdout=pipe)
    assert escaped is None and status == 0 and err == "", (status, err, escaped)


def test_a_traceback_only_with_debug():
    """A user error is one line; with --debug it escapes with its traceback (in a real process,
    where the interpreter prints it)."""
    import subprocess
    import sys

    argv = ["estimate", *_M8, "--gpu", "h100-sxm", "--isl", "0"]
    status, _, err, escaped = run_cli(argv)
    assert status == 2 and escaped is None and err.count("\n") == 1, err
    assert "isl must be an integer >= 1" in err and "Traceback" not in err
    status, _, err, escaped = run_cli(["--debug", *argv])
    assert isinstance(escaped, ValueError) and "isl" in str(escaped)
    debug = subprocess.run([sys.executable, "-m", "vidya_lab", "--debug", *argv],
                           capture_output=True, text=True, timeout=120)
    assert debug.returncode == 1 and "Traceback" in debug.stderr, debug.stderr
    assert debug.stderr.strip().splitlines()[-1].startswith("ValueError: isl must be")
