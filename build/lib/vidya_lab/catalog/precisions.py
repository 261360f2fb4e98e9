"""Number formats for weights, activations and the KV cache, and the tensor-core rate each runs at."""

from __future__ import annotations

from dataclasses import dataclass

from vidya_lab import _validate as v

#: Tensor-core rates a matrix multiply can run at (the GPU's ``<compute>_flops_per_s`` fields).
COMPUTE_KINDS = ("bf16", "fp8", "int8", "fp4")


@dataclass(frozen=True)
class Precision:
    """A number format for weights, activations or the KV cache.

    Attributes
    ----------
    id : "bf16", "fp8", ...
    bytes_per_element : storage size of one value, bytes (block scales of fp4 formats included).
    compute : which tensor-core rate a matrix multiply with weights in this format runs at:
        ``"bf16"`` (16-bit math; also int4 weight-only, W4A16), ``"fp8"``, ``"int8"`` (W8A8) or
        ``"fp4"`` (NVFP4 on Blackwell); a GPU without that rate falls back (see
        :meth:`vidya_lab.catalog.GPU.flops_per_s`).
    source : where the convention comes from.
    """

    id: str
    bytes_per_element: float
    compute: str
    source: str

    def __post_init__(self) -> None:
        v.check_str("id", self.id)
        v.check_real("bytes_per_element", self.bytes_per_element, minimum=0.0, maximum=8.0,
                     min_inclusive=False)
        v.check_choice("compute", self.compute, COMPUTE_KINDS)
        v.check_str("source", self.source)


PRECISIONS: dict[str, Precision] = {
    p.id: p
    for p in (
        Precision("fp16", 2.0, "bf16", "IEEE 754 half precision: 16 bits; same tensor-core rate as bf16"),
        Precision("bf16", 2.0, "bf16", "bfloat16: 16 bits"),
        Precision("fp8", 1.0, "fp8",
                  "FP8 (E4M3) weights and activations, as TensorRT-LLM's FP8 rows "
                  "(perf-overview.md); on a GPU without FP8 units the math runs in bf16"),
        Precision("int8", 1.0, "int8", "INT8 weights and activations (W8A8, SmoothQuant-style)"),
        Precision("int4", 0.5, "bf16",
                  "INT4 weight-only (W4A16, AWQ/GPTQ-style): 4 bits stored, 16-bit math"),
        Precision("fp4", 0.5625, "fp4",
                  "NVFP4 (E2M1 values with one FP8 E4M3 scale per 16 values: 4 + 8/16 = 4.5 bits "
                  "per value); Blackwell tensor cores run it natively, older GPUs fall back to fp8 "
                  "or bf16 math"),
    )
}
