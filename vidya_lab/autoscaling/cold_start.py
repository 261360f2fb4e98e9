"""The cold start: why a replica the autoscaler asks for serves minutes later.

A new replica is not ready when the autoscaler decides to start it. It waits for, in order:

============================  ==================================================================
``provision_s``               a GPU node: allocate and boot a VM, install drivers, join the cluster
``image_pull_s``              the serving image: image bytes ÷ registry bandwidth
``weights_load_s``            the weights: :func:`vidya_lab.sizing.weights_bytes` ÷ storage bandwidth
``engine_start_s``            the engine: start, allocate the KV cache, capture CUDA graphs
``first_request_s``           the first (warm-up) request, slower than the rest
``readiness_s``               the load balancer's health check noticing the replica is ready
============================  ==================================================================

Every default is a cited number or a stated assumption (see :data:`COLD_START_SOURCES`); the total
is *computed*. :data:`MITIGATIONS` say what each fix changes: weights on local NVMe, a slimmer
image, a warm pool, sleep/wake.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from vidya_lab import _validate as v
from vidya_lab import sizing

GB = 1e9

# ----------------------------------------------------------------------------- 1. the cold start

#: Llama-2-70B, downloaded and initialised from S3 in 4 min 25 s before Anyscale's optimisation
#: (facts.md, "Cold start and model loading" [SECONDARY]): the naive storage path's bandwidth.
ANYSCALE_NAIVE_LOAD_S = 4 * 60 + 25.0
#: Bytes per second of that naive path: Llama-2-70B's bf16 weights ÷ 265 s (computed, not typed).
NAIVE_STORAGE_BYTES_PER_S = sizing.weights_bytes("llama-2-70b", "bf16") / ANYSCALE_NAIVE_LOAD_S

COLD_START_SOURCES: dict[str, str] = {
    "provision_s": "assumption: 60 s for a GPU node. A plain EC2 VM reaches SSH in about 26 s "
                   "(brevdev/ec2-coldboot-research, measured); a GPU node also loads its driver, "
                   "starts the device plugin and joins the cluster.",
    "image_bytes": "vLLM's vllm/vllm-openai image, about 12.6 GB (vllm-project/vllm issue #27154, "
                   "2025).",
    "registry_bytes_per_s": "130 MB/s: containerd pulling from a registry cache (containerd issue "
                            "#8160; about 25 MB/s per layer from an uncached registry).",
    "storage_bytes_per_s": "Llama-2-70B downloaded from S3 and initialised in 4 min 25 s before "
                           "Anyscale's loader (facts.md [SECONDARY]): its weights ÷ 265 s.",
    "engine_start_s": "48 s: a full vLLM restart of a small model (weights negligible), i.e. engine "
                      "start, KV allocation and CUDA-graph capture (vLLM sleep-mode post, facts.md).",
    "first_request_s": "2.8 s: the first request after a cold start takes 3.72 s instead of 0.92 s "
                       "(same post: CUDA graphs and JIT compilation).",
    "readiness_s": "10 s: one period of a Kubernetes readiness probe (periodSeconds defaults "
                   "to 10).",
    "nvme_bytes_per_s": "5 GB/s: ServerlessLLM reads a 130 GB checkpoint in about 26 s "
                        "(facts.md [SECONDARY]).",
    "slim_image_bytes": "7.07 GB: vLLM on a python-slim base (vllm-project/vllm issue #13112).",
    "wake_s": "6 s: waking a large model from vLLM's sleep mode takes about 3-6 s (facts.md).",
}


@dataclass(frozen=True)
class ColdStart:
    """The parts of a replica's cold start; every default is in :data:`COLD_START_SOURCES`.

    Parameters
    ----------
    provision_s : a GPU node from the cloud until it can run containers, seconds.
    image_bytes : the serving image, bytes (GB = 1e9).
    registry_bytes_per_s : image pull bandwidth, bytes/s.
    storage_bytes_per_s : where the weights come from (object storage), bytes/s.
    engine_start_s : engine start, KV allocation and CUDA-graph capture, seconds.
    first_request_s : the extra time of the first (warm-up) request, seconds.
    readiness_s : the health check that puts the replica behind the load balancer, seconds.
    weights_on_nvme : the weights are already on the node's local NVMe (read at ``nvme_bytes_per_s``).
    nvme_bytes_per_s : local NVMe read bandwidth, bytes/s.
    wake_s : waking a sleeping engine (vLLM sleep mode), seconds.
    """

    provision_s: float = 60.0
    image_bytes: float = 12.64 * GB
    registry_bytes_per_s: float = 130e6
    storage_bytes_per_s: float = NAIVE_STORAGE_BYTES_PER_S
    engine_start_s: float = 48.0
    first_request_s: float = 3.72 - 0.92
    readiness_s: float = 10.0
    weights_on_nvme: bool = False
    nvme_bytes_per_s: float = 5 * GB
    wake_s: float = 6.0

    def __post_init__(self) -> None:
        for name in ("provision_s", "engine_start_s", "first_request_s", "readiness_s", "wake_s",
                     "image_bytes"):
            v.check_real(name, getattr(self, name), minimum=0.0)
        for name in ("registry_bytes_per_s", "storage_bytes_per_s", "nvme_bytes_per_s"):
            v.check_real(name, getattr(self, name), minimum=0.0, min_inclusive=False)
        if not isinstance(self.weights_on_nvme, bool):
            raise TypeError(f"weights_on_nvme must be True or False, got {self.weights_on_nvme!r}")

    def parts_s(self, replica: sizing.Replica) -> dict[str, float]:
        """Each part of a cold start of ``replica``, seconds, in the order they happen.

        ``weights_load_s = weights_bytes(model, precision) / bandwidth`` (whole model: the node
        downloads every shard over one link).
        """
        r = as_replica(replica)
        wbytes = sizing.weights_bytes(r.model, r.precision)
        bw = self.nvme_bytes_per_s if self.weights_on_nvme else self.storage_bytes_per_s
        return {"provision_s": self.provision_s,
                "image_pull_s": self.image_bytes / self.registry_bytes_per_s,
                "weights_load_s": wbytes / bw,
                "engine_start_s": self.engine_start_s,
                "first_request_s": self.first_request_s,
                "readiness_s": self.readiness_s}

    def total_s(self, replica: sizing.Replica) -> float:
        """The whole cold start, seconds: the sum of :meth:`parts_s`."""
        return float(sum(self.parts_s(replica).values()))


#: What each mitigation changes. ``warm_pool`` and ``sleep_wake`` are fleet settings (a pool of nodes
#: kept ready and billed, :class:`Fleet`); the others change the cold start itself.
MITIGATIONS: dict[str, str] = {
    "local_nvme": "weights read from the node's NVMe (baked into its disk image) instead of object "
                  "storage",
    "slim_image": "a slimmer serving image (python-slim base)",
    "warm_pool": "nodes kept provisioned with the image pulled and the weights on NVMe; a scale-up "
                 "starts only the engine. The pool is billed while it waits",
    "sleep_wake": "engines kept loaded but asleep (vLLM sleep mode); a scale-up is a wake-up. The "
                  "sleeping GPUs are billed while they sleep",
}

SLIM_IMAGE_BYTES = 7.07 * GB


def mitigated(cold: ColdStart, *mitigations: str) -> ColdStart:
    """The cold start with ``"local_nvme"`` and/or ``"slim_image"`` applied.

    (``"warm_pool"`` and ``"sleep_wake"`` are pools of ready nodes: set them on :class:`Fleet`.)
    """
    out = cold
    for m in mitigations:
        v.check_choice("mitigation", m, ("local_nvme", "slim_image"))
        if m == "local_nvme":
            out = replace(out, weights_on_nvme=True)
        else:
            out = replace(out, image_bytes=min(out.image_bytes, SLIM_IMAGE_BYTES))
    return out


def pool_start_s(cold: ColdStart, replica: sizing.Replica, pool: str) -> float:
    """Seconds from "scale up" to serving when the replica comes from a pool.

    ``"warm"``: a provisioned node with the image and the weights on NVMe, so weights from NVMe +
    engine start + first request + readiness. ``"sleep"``: a loaded engine asleep: ``wake_s``.
    ``"none"``: the full cold start.
    """
    v.check_choice("pool", pool, POOLS)
    if pool == "none":
        return cold.total_s(replica)
    if pool == "sleep":
        return cold.wake_s
    parts = replace(cold, weights_on_nvme=True).parts_s(replica)
    return parts["weights_load_s"] + parts["engine_start_s"] + parts["first_request_s"] \
        + parts["readiness_s"]


def pool_refill_s(cold: ColdStart, replica: sizing.Replica, pool: str) -> float:
    """Seconds to put a fresh node into the pool (it is billed meanwhile)."""
    p = cold.parts_s(replica)
    if pool == "warm":  # provision, pull, download the weights to NVMe
        return p["provision_s"] + p["image_pull_s"] + p["weights_load_s"]
    return cold.total_s(replica)  # sleep: a full start, then put to sleep


POOLS = ("none", "warm", "sleep")


def as_replica(r) -> sizing.Replica:
    if not isinstance(r, sizing.Replica):
        raise TypeError(f"replica must be a sizing.Replica, got {type(r).__name__}")
    return r

