"""The calibration: what fraction of the hardware's ceilings an engine reaches, and its fixed costs.

The cost model is a roofline. Its ceilings are measured or datasheet numbers of the catalog (peak
FLOP/s, achievable HBM bandwidth, all-reduce bus bandwidth and latency). What an engine adds on top
is described by a few parameters, each with a physical meaning and a plausible range
(:data:`PARAMETERS`): the fractions of the ceilings it reaches and the fixed costs it pays per
iteration, per layer and per request. The collective figures are *not* fitted: they come from
nccl-tests-style measurements (:mod:`vidya_lab.catalog.links`); the calibration keeps a scale on
their latency only so that a sensitivity study can move it.

:data:`PHYSICAL` is the bound no measurement may beat (efficiencies 1 against the PEAK bandwidth,
no overheads). :func:`fitted_calibration` is the set fitted on published measurements by
:mod:`vidya_lab.calibration` (``vidya_lab/data/calibration.json``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, fields
from importlib import resources

from vidya_lab import _validate as v
from vidya_lab.catalog import get_precision

CALIBRATION_FILE = "calibration.json"
MEMORY_CEILINGS = ("achievable", "peak")


@dataclass(frozen=True)
class Parameter:
    """One calibration parameter: its unit, the range an expert would accept, and why."""

    name: str
    unit: str
    low: float
    high: float
    fitted: bool
    meaning: str
    source: str


#: Every parameter of :class:`Calibration`, with its plausible range and the reason for it.
PARAMETERS: dict[str, Parameter] = {p.name: p for p in (
    Parameter("compute_efficiency_16bit", "fraction of dense peak", 0.35, 0.85, True,
              "share of the bf16/fp16 tensor-core peak the matrix multiplies of an iteration reach",
              "large bf16 GEMMs reach 0.7-0.8 of dense peak (an 8192^3 bf16 product ran at "
              "769-798 of 989 TFLOP/s on an H200); a whole prefill (attention, norms, smaller "
              "GEMMs) reaches less"),
    Parameter("compute_efficiency_8bit", "fraction of dense peak", 0.30, 0.85, True,
              "the same for fp8/int8 math",
              "fp8 GEMMs reach a lower share of their doubled peak than bf16 GEMMs of theirs "
              "(scaling and conversion work, smaller effective tiles)"),
    Parameter("memory_efficiency", "fraction of achievable bandwidth", 0.80, 1.0, True,
              "share of the GPU's measured achievable HBM bandwidth that weight and KV reads reach",
              "the catalog's achievable bandwidth is what a streaming copy reaches "
              "(device_measurements.csv); decode kernels (GEMV, paged attention) come close to it "
              "but not above"),
    Parameter("step_overhead_s", "s per iteration", 0.0002, 0.008, True,
              "fixed cost of one engine iteration: scheduling, input preparation, sampling, "
              "detokenisation hand-off",
              "vLLM's 2024 profile: API server, scheduling and GPU execution shares of a step "
              "(facts.md 'Where engine time goes'); a few ms per step before multi-step scheduling"),
    Parameter("layer_overhead_s", "s per layer per iteration", 0.0, 8e-5, True,
              "fixed cost per transformer layer of an iteration: kernel launches and "
              "synchronisation not hidden behind the math",
              "a layer runs 6-15 kernels; an un-graphed launch costs a few microseconds, a CUDA "
              "graph replay much less"),
    Parameter("sequence_overhead_s", "s per sequence per iteration", 0.0, 1e-4, True,
              "host-side cost per sequence of an iteration: scheduling, input preparation, "
              "sampling and detokenisation grow with the batch",
              "a Python scheduler and sampler spend tens of microseconds per sequence per step; "
              "a C++ runtime (TensorRT-LLM) a few (facts.md 'Where engine time goes')"),
    Parameter("request_overhead_s", "s per request", 0.0, 0.05, True,
              "time a request spends outside the iterations before its first token (HTTP front "
              "end, tokenisation, hand-off to the scheduler); added to TTFT only",
              "front ends add milliseconds (facts.md 'Where engine time goes')"),
    Parameter("collective_latency_scale", "x measured latency", 0.5, 2.0, False,
              "multiplier on the measured all-reduce and send latencies of the catalog's links "
              "(pinned at 1; moved only by the sensitivity study)",
              "small all-reduces differ about 2x between NCCL and engines' custom all-reduce "
              "kernels (device_measurements.csv)"),
)}


@dataclass(frozen=True)
class Calibration:
    """Achieved fractions of the hardware's ceilings, and fixed costs (see :data:`PARAMETERS`).

    Attributes
    ----------
    compute_efficiency_16bit, compute_efficiency_8bit : fractions of the dense tensor-core peak.
    memory_efficiency : fraction of the memory ceiling (``memory_ceiling``) reads reach.
    step_overhead_s : fixed time per engine iteration, seconds.
    layer_overhead_s : fixed time per transformer layer per iteration, seconds.
    sequence_overhead_s : time per sequence in an iteration (host-side scheduling and sampling),
        seconds.
    collective_latency_scale : multiplier on the links' measured collective latencies.
    request_overhead_s : time before the first iteration of a request (added to TTFT), seconds.
    memory_ceiling : "achievable" (the GPU's measured copy bandwidth) or "peak" (its datasheet).
    gpu_scale : per-GPU factors on both efficiencies, as ``((gpu_id, factor), ...)``: fitted on a
        GPU's own timing rows where they exist (another generation or vendor), 1 elsewhere.
    gpu_sequence_overhead_s : per-GPU ``sequence_overhead_s`` fitted on the same rows (their
        engine's host-side cost), as ``((gpu_id, seconds), ...)``.
    name : where the numbers come from.
    """

    compute_efficiency_16bit: float = 1.0
    compute_efficiency_8bit: float = 1.0
    memory_efficiency: float = 1.0
    step_overhead_s: float = 0.0
    layer_overhead_s: float = 0.0
    sequence_overhead_s: float = 0.0
    collective_latency_scale: float = 1.0
    request_overhead_s: float = 0.0
    memory_ceiling: str = "peak"
    gpu_scale: tuple[tuple[str, float], ...] = ()
    gpu_sequence_overhead_s: tuple[tuple[str, float], ...] = ()
    name: str = "physical bound (efficiencies 1 against peak, no overheads)"

    def __post_init__(self) -> None:
        for f in ("compute_efficiency_16bit", "compute_efficiency_8bit", "memory_efficiency"):
            v.check_fraction(f, getattr(self, f), allow_zero=False)
        for f in ("step_overhead_s", "layer_overhead_s", "sequence_overhead_s",
                  "request_overhead_s"):
            v.check_real(f, getattr(self, f), minimum=0.0, maximum=10.0)
        v.check_real("collective_latency_scale", self.collective_latency_scale, minimum=0.0,
                     min_inclusive=False, maximum=100.0)
        v.check_choice("memory_ceiling", self.memory_ceiling, MEMORY_CEILINGS)
        v.check_str("name", self.name)
        for name, top in (("gpu_scale", 1.5), ("gpu_sequence_overhead_s", 10.0)):
            pairs = getattr(self, name)
            if not isinstance(pairs, tuple):
                raise TypeError(f"{name} must be a tuple of (gpu_id, value) pairs")
            for pair in pairs:
                if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                    raise TypeError(f"{name} entries must be (gpu_id, value) pairs, got {pair!r}")
                v.check_real(f"{name}[{pair[0]}]", pair[1], minimum=0.0,
                             min_inclusive=name != "gpu_scale", maximum=top)

    def compute_efficiency(self, precision: str, gpu_id: str = "") -> float:
        """η for the math ``precision``'s matrix multiplies run in (times the GPU's factor)."""
        compute = get_precision(precision).compute
        eta = self.compute_efficiency_16bit if compute == "bf16" else self.compute_efficiency_8bit
        return min(1.0, eta * self.scale_for(gpu_id))

    def memory_fraction_of_peak(self, gpu) -> float:
        """The fraction of the GPU's PEAK bandwidth reads reach under this calibration."""
        ceiling = (gpu.hbm_achievable_bytes_per_s if self.memory_ceiling == "achievable"
                   else gpu.hbm_bytes_per_s)
        return min(1.0, self.memory_efficiency * self.scale_for(gpu.id) * ceiling
                   / gpu.hbm_bytes_per_s)

    def scale_for(self, gpu_id: str) -> float:
        """The per-GPU factor (1 when none was fitted)."""
        return dict(self.gpu_scale).get(gpu_id, 1.0)

    def sequence_overhead_for(self, gpu_id: str) -> float:
        """The per-sequence cost on ``gpu_id`` (its own fitted value, else the shared one)."""
        return dict(self.gpu_sequence_overhead_s).get(gpu_id, self.sequence_overhead_s)

    def parameters(self) -> dict:
        """The numeric parameters as a dict (JSON-ready; per-GPU pairs as mappings)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}
        out["gpu_scale"] = dict(self.gpu_scale)
        out["gpu_sequence_overhead_s"] = dict(self.gpu_sequence_overhead_s)
        return out

    @classmethod
    def from_parameters(cls, params: dict, name: str) -> Calibration:
        """Build from :meth:`parameters`' dict (as stored in a calibration JSON file); unknown
        keys are refused by name."""
        if not isinstance(params, dict):
            raise TypeError(f"parameters must be a mapping, got {type(params).__name__}")
        known = {f.name for f in fields(cls)} - {"name"}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"unknown calibration parameter(s) {unknown}; known: {sorted(known)}")
        kw = dict(params)
        for key in ("gpu_scale", "gpu_sequence_overhead_s"):
            if key in kw:
                if not isinstance(kw[key], dict):
                    raise TypeError(f"{key} must be a mapping of gpu id to value")
                kw[key] = tuple(sorted(kw[key].items()))
        return cls(**kw, name=name)


#: The roofline itself: no measurement may beat it.
PHYSICAL = Calibration()


def _stored() -> dict:
    return json.loads(resources.files("vidya_lab").joinpath("data", CALIBRATION_FILE).read_text())


@functools.lru_cache(maxsize=1)
def fitted_calibration() -> Calibration:
    """The calibration fitted on the published measurements (vidya_lab/data/calibration.json)."""
    doc = _stored()
    return Calibration.from_parameters(doc["parameters"], doc.get("name", "fitted"))


@functools.lru_cache(maxsize=1)
def timed_gpus() -> dict[str, int]:
    """GPU id → number of published timing rows the stored calibration was checked against. A GPU
    absent here has no timing measurement: its predictions are extrapolations."""
    return dict(_stored().get("timing_rows_per_gpu", {}))


def is_extrapolated(gpu_id: str) -> bool:
    """True when no published timing row of ``gpu_id`` backs the calibration."""
    return timed_gpus().get(gpu_id, 0) == 0


#: Largest calibration file read, bytes (a document with its profiles is tens of kB).
MAX_CALIBRATION_FILE_BYTES = 10_000_000
#: Numeric keys every calibration file's ``parameters`` must hold (the rest default to empty).
REQUIRED_KEYS = (*PARAMETERS, "memory_ceiling")


def load_calibration_file(path) -> Calibration:
    """A calibration from a JSON file: ``{"name": ..., "parameters": {...}}`` as written by
    ``vidya-lab calibrate`` (or ``vidya_lab/data/calibration.json``).

    Every parameter of :data:`PARAMETERS` and ``memory_ceiling`` must be there, each inside its
    plausible range; ``gpu_scale`` and ``gpu_sequence_overhead_s`` are optional. Raises
    ``FileNotFoundError``/``ValueError``/``TypeError`` with one line naming the file and the
    problem (missing, not JSON, no parameters, a missing, unknown or out-of-range parameter).
    """
    p = v.check_input_file("calibration", path, max_bytes=MAX_CALIBRATION_FILE_BYTES)
    try:
        doc = json.loads(p.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ValueError(f"calibration {p}: not a UTF-8 text file") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"calibration {p}: not JSON ({exc.msg} at line {exc.lineno}, column "
                         f"{exc.colno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("parameters"), dict):
        raise ValueError(f"calibration {p}: missing the \"parameters\" object (expected "
                         f"{{\"name\": ..., \"parameters\": {{...}}}})")
    params = doc["parameters"]
    missing = [k for k in REQUIRED_KEYS if k not in params]
    if missing:
        raise ValueError(f"calibration {p}: parameters lack {', '.join(missing)}")
    for name, spec in PARAMETERS.items():
        x = params[name]
        if isinstance(x, bool) or not isinstance(x, int | float):
            raise ValueError(f"calibration {p}: {name} must be a number, got {x!r}")
        if not spec.low - 1e-12 * abs(spec.high) <= x <= spec.high * (1 + 1e-12):
            raise ValueError(f"calibration {p}: {name} = {x:g} is outside its plausible range "
                             f"[{spec.low:g}, {spec.high:g}] ({spec.unit})")
    name = doc.get("name", p.name)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"calibration {p}: \"name\" must be a non-empty string")
    try:
        return Calibration.from_parameters(params, name)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"calibration {p}: {exc}") from None
