"""GPUs: memory as the device reports it, bandwidth peak and achievable, tensor-core rates, link, price.

Memory is the total the device itself reports (``nvidia-smi --query-gpu=memory.total`` in MiB,
``rocm-smi --showmeminfo vram`` in bytes), which is what serving engines budget from, not the
datasheet's decimal "80 GB": an "80 GB" H100 reports 81,559 MiB = 85.5e9 bytes. Both are kept
(``hbm_bytes`` and ``hbm_marketing_bytes``). Bandwidth is kept twice too: the datasheet peak and the
bandwidth a copy benchmark achieves, which bounds what any kernel can reach.
"""

from __future__ import annotations

from dataclasses import dataclass

from vidya_lab import _validate as v
from vidya_lab.catalog.links import LINKS, Link
from vidya_lab.catalog.precisions import PRECISIONS, Precision

GB = 1e9
MiB = 2**20
TB = 1e12
TERA = 1e12


@dataclass(frozen=True)
class GPU:
    """One accelerator. Rates are dense (no sparsity), per GPU.

    Attributes
    ----------
    hbm_bytes : device memory as the device reports it (nvidia-smi / rocm-smi total), bytes.
    hbm_marketing_bytes : the datasheet's figure ("80 GB" = 80e9 bytes), bytes; for display only.
    hbm_bytes_per_s : peak memory bandwidth (datasheet), bytes/s.
    hbm_achievable_bytes_per_s : bandwidth a streaming copy achieves (measured), bytes/s: the
        ceiling of any kernel; the cost model's memory efficiency is a fraction of THIS.
    bf16_flops_per_s, fp8_flops_per_s, int8_ops_per_s, fp4_flops_per_s : dense tensor-core peaks
        (fp8/fp4 are None where the GPU has no such units).
    link : id of the intra-node link in :data:`vidya_lab.catalog.LINKS`.
    price_per_hour_usd : on-demand rental price of one GPU for one hour, USD (an assumption; see
        price_source; reserved and spot prices are in the procurement data).
    spec_source, memory_source, bandwidth_source, price_source : where each number comes from.
    """

    id: str
    name: str
    hbm_bytes: float
    hbm_marketing_bytes: float
    hbm_bytes_per_s: float
    hbm_achievable_bytes_per_s: float
    bf16_flops_per_s: float
    fp8_flops_per_s: float | None
    int8_ops_per_s: float
    link: str
    price_per_hour_usd: float
    spec_source: str
    memory_source: str
    bandwidth_source: str
    price_source: str
    fp4_flops_per_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("id", "name", "spec_source", "memory_source", "bandwidth_source",
                     "price_source"):
            v.check_str(name, getattr(self, name))
        for name in ("hbm_bytes", "hbm_marketing_bytes", "hbm_bytes_per_s",
                     "hbm_achievable_bytes_per_s", "bf16_flops_per_s", "int8_ops_per_s",
                     "price_per_hour_usd"):
            v.check_real(name, getattr(self, name), minimum=0.0, min_inclusive=False)
        for name in ("fp8_flops_per_s", "fp4_flops_per_s"):
            if getattr(self, name) is not None:
                v.check_real(name, getattr(self, name), minimum=0.0, min_inclusive=False)
        if self.hbm_achievable_bytes_per_s > self.hbm_bytes_per_s:
            raise ValueError(f"hbm_achievable_bytes_per_s ({self.hbm_achievable_bytes_per_s:.3g}) "
                             f"cannot exceed the peak hbm_bytes_per_s ({self.hbm_bytes_per_s:.3g})")
        if self.link not in LINKS:
            raise KeyError(f"unknown link {self.link!r}; known: {', '.join(LINKS)}")

    def flops_per_s(self, precision: str | Precision) -> float:
        """Dense peak for matrix multiplies with weights in ``precision``, FLOP/s.

        A format the GPU has no units for falls back: fp4 → fp8 → bf16 (FP8 on an A100 runs at the
        bf16 rate); int4 weight-only runs at the bf16 rate.
        """
        p = precision if isinstance(precision, Precision) else _precision(precision)
        if p.compute == "fp4" and self.fp4_flops_per_s is not None:
            return self.fp4_flops_per_s
        if p.compute in ("fp4", "fp8"):
            return self.fp8_flops_per_s if self.fp8_flops_per_s is not None else self.bf16_flops_per_s
        if p.compute == "int8":
            return self.int8_ops_per_s
        return self.bf16_flops_per_s

    def critical_intensity(self, precision: str | Precision = "bf16") -> float:
        """Peak FLOP/s ÷ peak bytes/s: the arithmetic intensity (FLOP/byte) at the roofline's ridge."""
        return self.flops_per_s(precision) / self.hbm_bytes_per_s

    # the GPU's own link, for readers and older code -----------------------------------------
    @property
    def intra_link(self) -> Link:
        return LINKS[self.link]

    @property
    def interconnect_kind(self) -> str:
        return self.intra_link.name

    @property
    def interconnect_bytes_per_s(self) -> float:
        """Per-direction bandwidth of the GPU's own link, bytes/s."""
        return self.intra_link.bytes_per_s

    @property
    def collective_latency_s(self) -> float:
        """Small-message all-reduce time over 2 GPUs of this link, seconds."""
        return self.intra_link.allreduce_latency_s(2)

    @property
    def interconnect_source(self) -> str:
        return self.intra_link.source


def _precision(pid: str) -> Precision:
    try:
        return PRECISIONS[pid.strip().lower()]
    except (KeyError, AttributeError):
        raise KeyError(f"unknown precision {pid!r}; known: {', '.join(PRECISIONS)}") from None


_KLOCKWOOD = "https://glennklockwood.com/garden/processors/"
_SCALING_GPUS = "github:jax-ml/scaling-book gpus.md (facts.md)"
_PRICE = ("assumption: a round on-demand cloud price per GPU-hour in 2024-25, not a quote; "
          "change it for your provider (procurement.csv has cited prices by purchase kind)")
_MODAL = ("nvidia-smi memory.total, collected in github:modal-labs/modal-client pull request #2797 "
          "(facts.md)")
_MEASURED = "device_measurements.csv"
_BABEL = ("the best BabelStream kernel (read + written bytes; " + _MEASURED + ", Azure "
          "AI-benchmarking-guide): ")

GPUS: dict[str, GPU] = {
    g.id: g
    for g in (
        GPU("a100-80gb", "NVIDIA A100 80GB SXM4", 81_920 * MiB, 80 * GB, 2.039 * TB, 1.75 * TB,
            312 * TERA, None, 624 * TERA, "nvlink3", 1.80,
            _KLOCKWOOD + "A100 (facts.md): 80 GB HBM2e, 2.039 TB/s, bf16 312 TFLOPS dense, no FP8, "
            "INT8 624 dense",
            "81,920 MiB: " + _MODAL,
            _BABEL + "1.75 TB/s (Dot; copy 1.61) on Azure ND A100 v4", _PRICE),
        GPU("h100-sxm", "NVIDIA H100 SXM5 80GB", 81_559 * MiB, 80 * GB, 3.35 * TB, 3.18 * TB,
            989.4 * TERA, 1978.9 * TERA, 1978.9 * TERA, "nvlink4", 3.00,
            _KLOCKWOOD + "h100 (facts.md): 80 GB HBM3, 3.35 TB/s, bf16 989.4 / fp8 1978.9 TFLOPS "
            "dense; INT8 dense taken equal to FP8 dense (NVIDIA datasheet: 3,958 TOPS with sparsity)",
            "81,559 MiB: " + _MODAL + "; vLLM logs 'total_gpu_memory (79.11GiB)' on it",
            _BABEL + "3.18 TB/s (Dot; copy 2.90, triad 2.97) on Azure ND H100 v5", _PRICE),
        GPU("h200", "NVIDIA H200 SXM 141GB", 143_771 * MiB, 141 * GB, 4.8 * TB, 4.48 * TB,
            989.4 * TERA, 1978.9 * TERA, 1978.9 * TERA, "nvlink4", 3.70,
            "github:NVIDIA/TensorRT-LLM docs/source/blogs/H200launch.md: 141 GB HBM3e at 4.8 TB/s; "
            "compute equal to H100 (" + _SCALING_GPUS + "; MI300X-vs-H200 METHODOLOGY.md)",
            "143,771 MiB: nvidia-smi memory.total in many published captures (" + _MEASURED
            + "); vLLM logs 'total_gpu_memory (139.81GiB)'",
            _BABEL + "4.48 TB/s (Dot; copy 4.01, triad 4.15) on Azure ND H200 v5", _PRICE),
        GPU("l40s", "NVIDIA L40S 48GB", 46_068 * MiB, 48 * GB, 0.864 * TB, 0.795 * TB,
            362.05 * TERA, 733 * TERA, 733 * TERA, "pcie4", 1.00,
            "reseller copy of NVIDIA's L40S datasheet (mullet.se; itcreations.com) [secondary "
            "source]: 48 GB GDDR6, 864 GB/s, bf16 362.05 / fp8 733 TFLOPS dense; INT8 733 TOPS dense",
            "46,068 MiB: " + _MODAL,
            "no L40S stream measurement was found: assumed 0.92 of peak, the median share the "
            "best BabelStream kernel reaches on the measured GPUs (" + _MEASURED + ")", _PRICE),
        GPU("b200", "NVIDIA B200 (HGX, 1000 W)", 183_359 * MiB, 192 * GB, 8.0 * TB, 7.35 * TB,
            2250 * TERA, 4500 * TERA, 4500 * TERA, "nvlink5", 5.00,
            _KLOCKWOOD + "B200 (facts.md): 192 GB HBM3e (DGX B200: 180 GB per GPU), 8 TB/s, "
            "bf16 2250 / fp8 4500 / fp4 9000 TFLOPS dense; INT8 taken equal to FP8",
            "183,359 MiB: nvidia-smi memory.total in published 8 x B200 captures (" + _MEASURED + ")",
            "7.35 TB/s (92 %) measured on GB200, the same Blackwell GPU and HBM3e spec (Azure ND "
            "GB200 v6 blog; " + _MEASURED + "); no HGX B200 figure was found", _PRICE,
            fp4_flops_per_s=9000 * TERA),
        GPU("mi300x", "AMD Instinct MI300X 192GB", 206_141_652_992, 192 * GB, 5.3 * TB, 4.26 * TB,
            1307.4 * TERA, 2614.9 * TERA, 2614.9 * TERA, "xgmi-mi300x", 2.50,
            "github:alpharomercoma/MI300X-vs-H200 METHODOLOGY.md; jaredwatkins.com MI300 page "
            "[third-party]: 192 GB HBM3, 5.3 TB/s, bf16 1307.4 / fp8 2614.9 TFLOPS dense; INT8 "
            "taken equal to FP8",
            "206,141,652,992 bytes: rocm-smi 'VRAM Total Memory (B)' and rocminfo's GPU pool "
            "(" + _MEASURED + "); vLLM logs 'total_gpu_memory (191.45GiB)'",
            _BABEL + "4.26 TB/s (Mul; copy 4.11, dot 3.87) on Azure ND MI300X v5", _PRICE),
    )
}
