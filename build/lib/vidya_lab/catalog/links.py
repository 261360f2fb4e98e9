"""Links between GPUs, and what one all-reduce or send over them costs, as nccl-tests measures it.

A collective over ``n`` GPUs (a ring, as NCCL's bandwidth-bound algorithm runs it) costs

    t(bytes, n) = base + 2·(n − 1)·hop + 2·(n − 1)/n · bytes / busbw

* ``busbw`` is the *bus bandwidth* nccl-tests reports for large all-reduces (its
  ``busbw = algbw · 2(n−1)/n`` convention, so the 2(n−1)/n factor above turns it back into time);
* ``base + 2(n−1)·hop`` is the small-message time: a fixed launch-and-synchronise cost plus one
  latency per step of the ring's reduce-scatter and all-gather (2(n−1) steps);
* a point-to-point send (a pipeline hand-off) costs ``p2p_latency + bytes / bytes_per_s``.

These are measured figures with their sources (``source``), not fitted parameters: the cost model
(:mod:`vidya_lab.sizing`) takes them as they are, and the calibration fits only what remains.
"""

from __future__ import annotations

from dataclasses import dataclass

from vidya_lab import _validate as v

GB = 1e9

#: GPUs in one server (HGX/DGX boards and 8-GPU PCIe servers hold 8); a layout of more GPUs spans
#: several nodes and its cross-node traffic goes over :data:`DEFAULT_INTER_NODE_LINK`.
GPUS_PER_NODE = 8
#: Link between nodes when a layout needs more than :data:`GPUS_PER_NODE` GPUs.
DEFAULT_INTER_NODE_LINK = "infiniband-ndr"
SCOPES = ("intra-node", "inter-node")


@dataclass(frozen=True)
class Link:
    """A GPU-to-GPU link that collectives and pipeline hand-offs run over.

    Attributes
    ----------
    id, name : "nvlink4", "NVLink 4 (H100, H200)", ...
    bytes_per_s : bandwidth one GPU can send over it, per direction, bytes/s (datasheet; for an
        inter-node link, the NIC bandwidth behind each GPU).
    allreduce_bus_bytes_per_s : measured all-reduce bus bandwidth at large messages, bytes/s.
    allreduce_base_s : fixed cost of one all-reduce (launch, synchronisation), seconds.
    allreduce_hop_s : latency of one ring step, seconds (an all-reduce over n GPUs takes 2(n−1)).
    p2p_latency_s : fixed cost of one point-to-point send, seconds.
    scope : "intra-node" or "inter-node".
    source : where each number comes from.
    """

    id: str
    name: str
    bytes_per_s: float
    allreduce_bus_bytes_per_s: float
    allreduce_base_s: float
    allreduce_hop_s: float
    p2p_latency_s: float
    scope: str
    source: str

    def __post_init__(self) -> None:
        for name in ("id", "name", "source"):
            v.check_str(name, getattr(self, name))
        for name in ("bytes_per_s", "allreduce_bus_bytes_per_s"):
            v.check_real(name, getattr(self, name), minimum=0.0, min_inclusive=False)
        for name in ("allreduce_base_s", "allreduce_hop_s", "p2p_latency_s"):
            v.check_real(name, getattr(self, name), minimum=0.0, maximum=1.0)
        v.check_choice("scope", self.scope, SCOPES)

    def allreduce_latency_s(self, n: int) -> float:
        """Small-message all-reduce time over ``n`` GPUs: base + 2(n−1)·hop, seconds (0 if n = 1)."""
        return 0.0 if n <= 1 else self.allreduce_base_s + 2 * (n - 1) * self.allreduce_hop_s

    def allreduce_time_s(self, nbytes: float, n: int) -> float:
        """One ring all-reduce of ``nbytes`` over ``n`` GPUs, seconds (module formula)."""
        if n <= 1:
            return 0.0
        return self.allreduce_latency_s(n) + 2 * (n - 1) / n * nbytes / self.allreduce_bus_bytes_per_s

    def p2p_time_s(self, nbytes: float) -> float:
        """One point-to-point send of ``nbytes``: latency + bytes / bandwidth, seconds."""
        return self.p2p_latency_s + nbytes / self.bytes_per_s


_SCALING_GPUS = "github:jax-ml/scaling-book gpus.md (facts.md)"
_CSV = "device_measurements.csv"
_CUSTOM_AR = ("small all-reduces with an engine's custom all-reduce kernel on 8 x H100 NVLink: 3.7-3.9 us "
              "at 2 GPUs, 3.7-4.8 us at 4, 5.7-5.9 us at 8 (sglang PR #2904, no CUDA graph; "
              + _CSV + "), fitted as base 3.5 us + 2(n-1) x 0.17 us")
_RING_H100 = ("ring bus bandwidth 365-370 GB/s on 2-8 H100 (NVIDIA/nccl issue #1455; 'effective NVLink "
              "bandwidth of 370GB/s', nccl-tests issue #212; NVLink SHARP reaches ~480 at 8 GPUs)")

LINKS: dict[str, Link] = {
    k.id: k
    for k in (
        Link("nvlink3", "NVLink 3 (A100)", 300 * GB, 231.58 * GB, 3.5e-6, 0.17e-6, 3.7e-6,
             "intra-node",
             "12 links x 25 GB/s per direction (" + _SCALING_GPUS + "); all-reduce bus bandwidth "
             "231.58 GB/s at 8 GB on 8 x A100 (Azure AI-benchmarking-guide ND A100 v4; " + _CSV
             + "); small-message latency assumed equal to H100's custom all-reduce (none measured "
             "on A100 was found; NCCL's own is ~45 us at 1 KB on 8 GPUs)"),
        Link("nvlink4", "NVLink 4 (H100, H200)", 450 * GB, 370 * GB, 3.5e-6, 0.17e-6, 3.7e-6,
             "intra-node",
             "18 links x 25 GB/s per direction (" + _SCALING_GPUS + "); " + _RING_H100 + "; "
             + _CUSTOM_AR + "; a send ~3.7 us (NVIDIA/nccl issue #1984)"),
        Link("nvlink5", "NVLink 5 (B200)", 900 * GB, 679.61 * GB, 3.5e-6, 0.17e-6, 3.7e-6,
             "intra-node",
             "18 links x 50 GB/s per direction (" + _SCALING_GPUS + "); ring all-reduce bus "
             "bandwidth 679.61 GB/s at 8 GB on GB200 (Azure ND GB200 v6; " + _CSV + "); latency "
             "assumed equal to H100's custom all-reduce"),
        Link("xgmi-mi300x", "Infinity Fabric (MI300X, 8-GPU board)", 448 * GB, 316.82 * GB, 3.5e-6,
             2.95e-6, 3.7e-6, "intra-node",
             "7 links x 64 GB/s per direction to the other GPUs of a board (an assumption: "
             "third-party figures conflict, facts.md); RCCL all-reduce on 8 x MI300X: bus "
             "bandwidth 316.82 GB/s at 8 GB and ~45 us at 1 KB (Azure ND MI300X v5, " + _CSV
             + "), which with base 3.5 us gives 2.95 us per ring step; an 8 MB all-reduce then "
             "takes 91 us, as measured (91.1 us, rccl-tests in crickett-hpe/hpc-ai-envs PR #30). "
             "No custom all-reduce figure for ROCm was found"),
        Link("pcie4", "PCIe Gen4 x16 (L40S)", 32 * GB, 20 * GB, 3.5e-6, 2.6e-6, 10e-6, "intra-node",
             "64 GB/s bidirectional = 32 GB/s per direction (L40S datasheet copy, facts.md; "
             "secondary source). No L40S all-reduce measurement was found; proxies: 8 x RTX 4090 "
             "over PCIe take 40 us for a small all-reduce (NVIDIA/nccl issue #1530, hence 2.6 us "
             "per ring step), 8 x RTX 5090 on PCIe Gen5 reach 28 GB/s bus bandwidth through the "
             "CPU (issue #1639). 20 GB/s is an assumption (0.62 of the Gen4 line rate, as through "
             "a PCIe switch); TensorRT-LLM's L40S TP4 prefill of 2,048 tokens in 673 ms "
             "(published_calibration.csv) needs at least ~17 GB/s (" + _CSV + ")"),
        Link("infiniband-ndr", "InfiniBand NDR, one 400 Gb/s NIC per GPU", 50 * GB, 47 * GB, 3.5e-6,
             1.48e-6, 10e-6, "inter-node",
             "400 Gb/s = 50 GB/s per NIC, one NIC per GPU (" + _SCALING_GPUS + "); ring all-reduce "
             "46-48 GB/s per NIC between H100 nodes (NVIDIA engineer, nccl-tests issue #290); a "
             "small all-reduce over 2 x 8 GPUs takes 46-49 us (NVIDIA/nccl issue #1244), i.e. "
             "1.48 us per step of a 16-GPU ring; a cross-node send ~10 us (a 2-GPU all-reduce "
             "over HDR takes 19-21 us, nccl-tests issue #150) (" + _CSV + ")"),
        Link("ethernet-100g", "100 Gb/s Ethernet, one NIC per node", 12.5 * GB, 10 * GB, 10e-6,
             10e-6, 50e-6, "inter-node",
             "an assumption, not a measurement: a node without InfiniBand, one 100 Gb/s NIC "
             "(12.5 GB/s per direction), NCCL over TCP sockets; for the 'without InfiniBand' "
             "comparison of facts.md"),
    )
}


def get_link(link: str | Link, *, name: str = "link") -> Link:
    """The :class:`Link` for an id such as ``"nvlink4"`` or ``"infiniband-ndr"`` (a Link passes
    through); an unknown id is a ``KeyError`` listing the known ones. ``name``: the parameter the
    messages name (e.g. ``"interconnect"``)."""
    if isinstance(link, Link):
        return link
    what = "an id string" if name == "link" else "a link id string"
    if not isinstance(link, str):
        raise TypeError(f"{name} must be {what}, got {v._show(link)} ({type(link).__name__})")
    try:
        return LINKS[link.strip().lower()]
    except KeyError:
        where = "" if name == "link" else f" for {name}"
        raise KeyError(f"unknown link {v._show(link)}{where}; known: {', '.join(LINKS)}") from None
