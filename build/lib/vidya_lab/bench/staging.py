"""A staging deployment to benchmark: the runs ``vidya-lab calibrate`` needs, simulated, in a
tool's file format.

The book cannot rent a GPU, so a **stand-in for Tanvi's staging replica** plays the engine: the
replica simulator of chapter 5 (:func:`vidya_lab.admission.simulate`, whose step time is the cost
model) running Tanvi's model on four H100s with a calibration of its own,
:data:`STAGING_TRUTH`: an engine a little slower than the published fit, which the reader pretends
not to know and ``vidya-lab calibrate`` must find. Each token reaches the client after the engine's
front end (``request_overhead_s``) and a little network jitter, as a real client records it.

The runs are the ones ``vidya-lab calibrate --help`` asks for (:func:`staging_workloads`):

* ``light`` — a light open-loop load (``vllm bench serve --request-rate 0.5``) with prompts of
  several lengths and short answers, so most requests meet an idle replica (TTFT = one prefill);
* ``short`` and ``long`` — a burst of requests sent at once (``--request-rate inf
  --max-concurrency`` = the burst) at a short and at a long prompt, with answers of many lengths:
  as they finish, decode steps are seen at every batch size, at two contexts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vidya_lab import sizing, slo, traces
from vidya_lab._validate import (
    check_choice,
    check_instance,
    check_int,
    check_output_dir,
    check_real,
)
from vidya_lab.scenario import TANVI
from vidya_lab.workload import Workload

__all__ = ["EXTENSIONS", "STAGING_GPU", "STAGING_JITTER_S", "STAGING_TP", "STAGING_TRUTH",
           "client_view", "recovery_rows", "staging_calibration", "staging_replica",
           "staging_workloads", "write_staging_runs"]

#: The staging replica: Tanvi's model on this GPU at this tensor-parallel degree.
STAGING_GPU, STAGING_TP = "h100-sxm", 4
#: The staging engine's own parameters (an assumption of the demonstration, each inside its
#: plausible range, :data:`vidya_lab.sizing.PARAMETERS`); the others are the published fit's.
STAGING_TRUTH = {"compute_efficiency_16bit": 0.50, "memory_efficiency": 0.90,
                 "step_overhead_s": 0.0018, "sequence_overhead_s": 3.0e-5,
                 "request_overhead_s": 0.010}
#: Spread (one sigma, seconds) of the delay each token meets between the engine and the client.
STAGING_JITTER_S = 5e-4
#: File name extension of each format.
EXTENSIONS = {"vllm": "json", "genai-perf": "json", "llmperf": "json", "stream-log": "jsonl"}


def staging_calibration() -> sizing.Calibration:
    """The published calibration with :data:`STAGING_TRUTH` in place of its values."""
    return sizing.Calibration.from_parameters(
        {**sizing.fitted_calibration().parameters(), **STAGING_TRUTH},
        "the staging engine's own (hidden) calibration")


def staging_replica() -> sizing.Replica:
    """Tanvi's model on the staging GPUs, running as :func:`staging_calibration` says."""
    return sizing.Replica(TANVI.model_id, STAGING_GPU, tp=STAGING_TP,
                          calibration=staging_calibration())


def staging_workloads(seed: int = 1) -> dict[str, Workload]:
    """The three runs (module docstring), seeded: ``light`` (40 requests, Poisson at 0.5
    requests/s, prompts of 64, 512, 2048 or 6144 tokens, 24-token answers) and ``short`` /
    ``long`` (32 requests sent at once with 128- / 3000-token prompts, answers of 8 … 160 tokens)."""
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    n = 40
    light = Workload.from_arrays(np.cumsum(rng.exponential(2.0, n)),
                                 rng.choice([64, 512, 2048, 6144], n), np.full(n, 24))

    def burst(prompt: int, k: int = 32) -> Workload:
        return Workload.from_arrays(np.zeros(k), np.full(k, prompt),
                                    np.linspace(8, 160, k).astype(int))

    return {"light": light, "short": burst(128), "long": burst(3000)}


def client_view(t: slo.Timelines, request_overhead_s: float, jitter_s: float = 0.0,
                seed: int = 7) -> slo.Timelines:
    """The engine's timelines as the client records them: every token arrives
    ``request_overhead_s`` later (the front end) plus a Gaussian delay of spread ``jitter_s``
    (kept in order); the send time is the engine's arrival."""
    over = check_real("request_overhead_s", request_overhead_s, minimum=0.0)
    jit = check_real("jitter_s", jitter_s, minimum=0.0)
    rng = np.random.default_rng(seed)
    tokens = []
    for i in range(len(t)):
        own = t.token_times_s[t.token_offsets[i]:t.token_offsets[i + 1]] + over
        tokens.append(np.sort(own + rng.normal(0.0, jit, own.size)))
    done = t.finished
    return slo.Timelines.from_arrays(
        arrival_s=t.arrival_s, output_tokens=t.output_tokens, outcome=t.outcome,
        first_token_s=[x[0] if ok else np.nan for x, ok in zip(tokens, done, strict=True)],
        finish_s=[x[-1] if ok else np.nan for x, ok in zip(tokens, done, strict=True)],
        request_id=t.request_id, token_times_s=tokens)


def write_staging_runs(folder, fmt: str = "vllm", *, seed: int = 1) -> list[Path]:
    """Simulate the three runs on :func:`staging_replica` and write each as ``fmt`` would
    (``<folder>/<run>.<ext>``); returns the paths, in the order light, short, long."""
    from vidya_lab import admission

    f = check_choice("fmt", fmt, tuple(traces.WRITERS))
    check_int("seed", seed, minimum=0)  # before the folder is made
    out = check_output_dir("folder", folder)
    out.mkdir(parents=True, exist_ok=True)
    r = staging_replica()
    cfg = admission.SchedulerConfig(chunk_tokens=r.max_batched_tokens)
    paths = []
    for name, w in staging_workloads(seed).items():
        res = admission.simulate(r, w, cfg)
        seen = client_view(res.timelines, r.calibration.request_overhead_s, STAGING_JITTER_S)
        path = out / f"{name}.{EXTENSIONS[f]}"
        traces.WRITERS[f](seen, path, prompt_tokens=w.prompt_tokens[res.timelines.request_id])
        paths.append(path)
    return paths


def recovery_rows(doc: dict) -> list[dict]:
    """Each parameter of :data:`STAGING_TRUTH`: published, hidden (true) and fitted values, and
    whether the data pinned it, from a ``vidya-lab calibrate`` document."""
    check_instance("doc", doc, dict, "vidya-lab calibrate document (dict)")
    try:
        pub = doc["published"]["parameters"]
        return [{"parameter": name, "published": pub[name], "true": true,
                 "fitted": doc["parameters"][name], "pinned": name in doc["pinned_by_data"]}
                for name, true in STAGING_TRUTH.items()]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"doc is not a vidya-lab calibrate document (no {exc})") from None
