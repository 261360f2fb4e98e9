"""The cold start: why a replica the autoscaler asks for serves minutes later.

A new replica is not ready when the autoscaler decides to start it. It waits for, in order:

=====================  =========================================================================
``provision_s``        a GPU node: allocate and boot a VM, install the driver, join the cluster
``image_pull_s``       the serving image: image bytes ÷ registry bandwidth
``weights_load_s``     the weights: :func:`vidya_lab.sizing.weights_bytes` ÷ storage bandwidth
``compile_s``          torch.compile of the model's graph (no compile cache on a fresh node)
``engine_start_s``     the rest of the engine's start: KV allocation, CUDA-graph capture
``first_request_s``    the extra time of the first request (JIT), slower than the rest
``prefix_warm_up_s``   one warm-up request per subject, so the shared syllabus and subject
                       prefixes sit in the prefix cache before traffic arrives (cost model)
``readiness_s``        the load balancer's health check noticing the replica is ready
=====================  =========================================================================

Every default is a published figure with its source in :data:`COLD_START_SOURCES` (provisioning,
which varies most, is a value inside the published range :data:`PROVISION_RANGE_S`, whose ends are
cited), and the warm-up is computed from the cost model. The total is *computed*: for Tanvi's 70B
model it is about ten minutes; at the fast end of provisioning and with a compile cache it is the
eight minutes of her incident (``TANVI.observed_scale_up_s``, which is never read here).
:data:`MITIGATIONS` say what each fix changes: weights on local NVMe, a slimmer image, a compile
cache, a warm pool, sleep/wake.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.scenario import TANVI

GB = 1e9
#: The longest cold start, or any part of it (seconds): 30 days. Longer than any window
#: simulated, so a replica that slow never serves; the bound only keeps time arithmetic exact.
MAX_START_S = 30 * 86400.0
#: Largest warmed prefix (tokens) and number of subject prompts a warm-up may hold.
MAX_PREFIX_TOKENS = 1_000_000
MAX_WARM_SUBJECTS = 10_000

#: Llama-2-70B, downloaded and initialised from S3 in 4 min 25 s before Anyscale's optimisation
#: (facts.md, "Cold start and model loading" [SECONDARY]): the naive storage path's bandwidth.
ANYSCALE_NAIVE_LOAD_S = 4 * 60 + 25.0
#: Bytes per second of that naive path: Llama-2-70B's bf16 weights ÷ 265 s (computed, not typed).
NAIVE_STORAGE_BYTES_PER_S = sizing.weights_bytes("llama-2-70b", "bf16") / ANYSCALE_NAIVE_LOAD_S
#: A GPU node's provisioning, seconds: the published range (ends cited in COLD_START_SOURCES).
PROVISION_RANGE_S = (60.0, 900.0)
#: torch.compile of a 140 GB model on a node without a compile cache, and with one (seconds).
COMPILE_S, CACHED_COMPILE_S = 60.0, 6.0
SLIM_IMAGE_BYTES = 7.07 * GB

COLD_START_SOURCES: dict[str, str] = {
    "provision_s": "180 s, inside the published range of 60-900 s. Low end: a VM of up to 96 vCPUs "
                   "reaches SSH in under a minute on GCP (R. Aboukhalil, 'A benchmark of VM boot "
                   "times on the Google Cloud', 2018, ~5,000 VMs; a small EC2 VM in about 26 s, "
                   "brevdev/ec2-coldboot-research); GKE resumes a standby node in 30-35 s, "
                   "'faster than provisioning a new node' (GKE docs, startup latency reduction "
                   "strategies). High end: after a GPU node is Ready 'it can take up to 15 minutes "
                   "before it reports that GPU is allocatable' while drivers install "
                   "(kubernetes/autoscaler, cluster-autoscaler/utils/gpu). Practitioner guides "
                   "put a GPU node at 2-8 minutes [SECONDARY].",
    "image_bytes": "vLLM's vllm/vllm-openai image, about 12.6 GB (vllm-project/vllm issue #27154, "
                   "2025).",
    "registry_bytes_per_s": "130 MB/s: containerd pulling from a registry cache (containerd issue "
                            "#8160; about 25 MB/s per layer from an uncached registry).",
    "storage_bytes_per_s": "Llama-2-70B downloaded from S3 and initialised in 4 min 25 s before "
                           "Anyscale's loader (facts.md [SECONDARY]): its weights ÷ 265 s.",
    "compile_s": "60 s: torch.compile of a 140 GB model by the first Pod on a node, no cache "
                 "(AWS EKS user guide, 'Accelerate model loading': ~53 s for 60 GB, ~60 s for "
                 "140 GB, ~80 s for 640 GB); ~6 s from a cache (same table).",
    "engine_start_s": "48 s: a full vLLM restart of a small model (weights negligible) on a machine "
                      "whose compile cache is warm, i.e. engine start, KV allocation and CUDA-graph "
                      "capture (vLLM sleep-mode post, facts.md).",
    "first_request_s": "2.8 s: the first request after a cold start takes 3.72 s instead of 0.92 s "
                       "(same post: CUDA graphs and JIT compilation).",
    "prefix_warm_up_s": "computed: one request per subject, one after another, each the cost "
                        "model's TTFT of its uncached part (the first: syllabus + subject; the "
                        "others: their subject after the cached syllabus), sizing.iteration_time_s.",
    "readiness_s": "10 s: one period of a Kubernetes readiness probe (periodSeconds defaults "
                   "to 10).",
    "nvme_bytes_per_s": "5 GB/s: ServerlessLLM reads a 130 GB checkpoint in about 26 s "
                        "(facts.md [SECONDARY]); AWS quotes ~30 GB/s for P-family NVMe instance "
                        "store (EKS user guide).",
    "slim_image_bytes": "7.07 GB: vLLM on a python-slim base (vllm-project/vllm issue #13112).",
    "wake_s": "6 s: waking a large model from vLLM's sleep mode takes about 3-6 s (facts.md).",
}


def prefix_warm_up_s(replica: sizing.Replica, syllabus_tokens: int, subjects: int,
                     subject_tokens: int) -> float:
    """Seconds of the warm-up requests that fill the prefix cache: one per subject, in turn.

    The first computes the syllabus and its subject; each later one only its subject, with the
    syllabus already cached (its attention still reads it). Each request is the calibration's
    request overhead plus its chunks' iterations, :func:`vidya_lab.sizing.iteration_time_s`
    ``(r, prefill=[(chunk, cached)])``; one token of output is enough to fill the cache.
    """
    r = as_replica(replica)
    syllabus_tokens = v.check_int("syllabus_tokens", syllabus_tokens, minimum=0,
                                  maximum=MAX_PREFIX_TOKENS)
    subjects = v.check_int("subjects", subjects, minimum=0, maximum=MAX_WARM_SUBJECTS)
    subject_tokens = v.check_int("subject_tokens", subject_tokens, minimum=0,
                                 maximum=MAX_PREFIX_TOKENS)
    if subjects == 0 or syllabus_tokens + subject_tokens == 0:
        return 0.0
    total = 0.0
    for i in range(subjects):
        done = 0 if i == 0 else syllabus_tokens
        end = syllabus_tokens + subject_tokens
        if done >= end:
            continue
        total += r.calibration.request_overhead_s
        while done < end:
            c = min(r.max_batched_tokens, end - done)
            total += sizing.iteration_time_s(r, prefill=[(c, done)])
            done += c
    return total


@dataclass(frozen=True)
class ColdStart:
    """The parts of a replica's cold start; every default is in :data:`COLD_START_SOURCES`.

    Parameters
    ----------
    provision_s : a GPU node from the cloud until it can run containers, seconds.
    image_bytes : the serving image, bytes (GB = 1e9).
    registry_bytes_per_s : image pull bandwidth, bytes/s.
    storage_bytes_per_s : where the weights come from (object storage), bytes/s.
    compile_s : torch.compile of the model's graph on this node, seconds (:data:`CACHED_COMPILE_S`
        with a compile cache).
    engine_start_s : the rest of the engine's start (KV allocation, CUDA-graph capture), seconds.
    first_request_s : the extra time of the first request, seconds.
    readiness_s : the health check that puts the replica behind the load balancer, seconds.
    weights_on_nvme : the weights are already on the node's local NVMe (read at ``nvme_bytes_per_s``).
    nvme_bytes_per_s : local NVMe read bandwidth, bytes/s.
    wake_s : waking a sleeping engine (vLLM sleep mode), seconds.
    syllabus_tokens, subjects, subject_tokens : the prefixes warmed before readiness (default
        Tanvi's: the syllabus and each subject prompt); ``subjects=0`` warms nothing.
    """

    provision_s: float = 180.0
    image_bytes: float = 12.64 * GB
    registry_bytes_per_s: float = 130e6
    storage_bytes_per_s: float = NAIVE_STORAGE_BYTES_PER_S
    compile_s: float = COMPILE_S
    engine_start_s: float = 48.0
    first_request_s: float = 3.72 - 0.92
    readiness_s: float = 10.0
    weights_on_nvme: bool = False
    nvme_bytes_per_s: float = 5 * GB
    wake_s: float = 6.0
    syllabus_tokens: int = TANVI.syllabus_prompt_tokens
    subjects: int = TANVI.subjects
    subject_tokens: int = TANVI.subject_prompt_tokens

    def __post_init__(self) -> None:
        for name in ("provision_s", "compile_s", "engine_start_s", "first_request_s",
                     "readiness_s", "wake_s"):
            v.check_real(name, getattr(self, name), minimum=0.0, maximum=MAX_START_S)
        v.check_real("image_bytes", self.image_bytes, minimum=0.0, maximum=1e15)
        for name in ("registry_bytes_per_s", "storage_bytes_per_s", "nvme_bytes_per_s"):
            v.check_real(name, getattr(self, name), minimum=0.0, min_inclusive=False,
                         maximum=1e13)
        v.check_bool("weights_on_nvme", self.weights_on_nvme)
        v.check_int("syllabus_tokens", self.syllabus_tokens, minimum=0, maximum=MAX_PREFIX_TOKENS)
        v.check_int("subjects", self.subjects, minimum=0, maximum=MAX_WARM_SUBJECTS)
        v.check_int("subject_tokens", self.subject_tokens, minimum=0, maximum=MAX_PREFIX_TOKENS)

    def parts_s(self, replica: sizing.Replica) -> dict[str, float]:
        """Each part of a cold start of ``replica``, seconds, in the order they happen.

        ``weights_load_s = weights_bytes(model, precision) / bandwidth`` (whole model: the node
        downloads every shard over one link); ``prefix_warm_up_s``: :func:`prefix_warm_up_s`.
        """
        r = as_replica(replica)
        wbytes = sizing.weights_bytes(r.model, r.precision)
        bw = self.nvme_bytes_per_s if self.weights_on_nvme else self.storage_bytes_per_s
        return {"provision_s": self.provision_s,
                "image_pull_s": self.image_bytes / self.registry_bytes_per_s,
                "weights_load_s": wbytes / bw,
                "compile_s": self.compile_s,
                "engine_start_s": self.engine_start_s,
                "first_request_s": self.first_request_s,
                "prefix_warm_up_s": self.warm_up_s(r),
                "readiness_s": self.readiness_s}

    def warm_up_s(self, replica: sizing.Replica) -> float:
        """The prefix warm-up of ``replica``, seconds (:func:`prefix_warm_up_s`)."""
        return prefix_warm_up_s(replica, self.syllabus_tokens, self.subjects, self.subject_tokens)

    def total_s(self, replica: sizing.Replica) -> float:
        """The whole cold start, seconds: the sum of :meth:`parts_s`."""
        return float(sum(self.parts_s(replica).values()))


#: What each mitigation changes. ``warm_pool`` and ``sleep_wake`` are fleet settings (a pool of nodes
#: kept ready and billed, :class:`Fleet`); the others change the cold start itself.
MITIGATIONS: dict[str, str] = {
    "local_nvme": "weights read from the node's NVMe (baked into its disk image) instead of object "
                  "storage",
    "slim_image": "a slimmer serving image (python-slim base)",
    "compile_cache": "torch.compile artifacts cached (about 15 MB, fetched or baked in) instead of "
                     "compiled on the node",
    "warm_pool": "nodes kept provisioned with the image pulled and the weights on NVMe; a scale-up "
                 "starts only the engine. The pool is billed while it waits",
    "sleep_wake": "engines kept loaded but asleep (vLLM sleep mode); a scale-up is a wake-up and a "
                  "prefix warm-up. The sleeping GPUs are billed while they sleep",
}


def mitigated(cold: ColdStart, *mitigations: str) -> ColdStart:
    """The cold start with ``"local_nvme"``, ``"slim_image"`` and/or ``"compile_cache"`` applied.

    (``"warm_pool"`` and ``"sleep_wake"`` are pools of ready nodes: set them on :class:`Fleet`.)
    """
    out = v.check_instance("cold", cold, ColdStart)
    for m in mitigations:
        v.check_choice("mitigation", m, ("local_nvme", "slim_image", "compile_cache"))
        if m == "local_nvme":
            out = replace(out, weights_on_nvme=True)
        elif m == "slim_image":
            out = replace(out, image_bytes=min(out.image_bytes, SLIM_IMAGE_BYTES))
        else:
            out = replace(out, compile_s=min(out.compile_s, CACHED_COMPILE_S))
    return out


POOLS = ("none", "warm", "sleep")


def pool_start_s(cold: ColdStart, replica: sizing.Replica, pool: str) -> float:
    """Seconds from "scale up" to serving when the replica comes from a pool.

    ``"warm"``: a provisioned node with the image and the weights on NVMe, so weights from NVMe +
    the engine's parts (compile, start, first request, prefix warm-up) + readiness. ``"sleep"``: a
    loaded engine asleep: ``wake_s`` + the prefix warm-up (sleep discards the KV cache, and with it
    the cached prefixes). ``"none"``: the full cold start.
    """
    v.check_instance("cold", cold, ColdStart)
    v.check_choice("pool", pool, POOLS)
    if pool == "none":
        return cold.total_s(replica)
    if pool == "sleep":
        return cold.wake_s + cold.warm_up_s(replica)
    parts = replace(cold, weights_on_nvme=True).parts_s(replica)
    return sum(parts[k] for k in ("weights_load_s", "compile_s", "engine_start_s",
                                  "first_request_s", "prefix_warm_up_s", "readiness_s"))


def pool_refill_s(cold: ColdStart, replica: sizing.Replica, pool: str) -> float:
    """Seconds to put a fresh node into the pool (it is billed meanwhile)."""
    p = cold.parts_s(replica)
    if pool == "warm":  # provision, pull, download the weights to NVMe
        return p["provision_s"] + p["image_pull_s"] + p["weights_load_s"]
    return cold.total_s(replica)  # sleep: a full start, then put to sleep


def as_replica(r) -> sizing.Replica:
    return v.check_instance("replica", r, sizing.Replica, "sizing.Replica")
