"""What a serving engine sets before any request arrives: its memory rule and its batch limits.

Two engines, two memory rules (the difference matters on a memory-tight layout):

* ``"vllm"`` — ``gpu_memory_utilization`` (default 0.9) is a fraction of the WHOLE device memory for
  weights, activations and KV together: KV = f · total − weights − activations − runtime.
* ``"trtllm"`` — ``kv_cache_free_gpu_mem_fraction`` (0.95 in TensorRT-LLM's published benchmarks) is
  a fraction of what weights and activations LEAVE: KV = f · (total − weights − activations − runtime).

"total" is the memory the device reports (:attr:`vidya_lab.catalog.GPU.hbm_bytes`), not the
datasheet's decimal figure.

Batch limits (:func:`engine_defaults`): vLLM's API server picks ``max_num_seqs`` and
``max_num_batched_tokens`` by device memory (vllm-project/vllm ``vllm/engine/arg_utils.py``
@99d7eb5d, ``EngineArgs`` batch defaults, v0.11 era): on a GPU of at least 70 GiB that is not an
A100, 1024 sequences and 8192 tokens per iteration; otherwise 256 and 2048 (an A100 is kept low
because a larger budget lowered its throughput, vLLM PR #17885). Older vLLM (V0) used 256 and a
whole-prompt budget. TensorRT-LLM's builder defaults: ``max_num_tokens`` 8192, ``max_batch_size``
2048.
"""

from __future__ import annotations

from dataclasses import dataclass

from vidya_lab import _validate as v
from vidya_lab.catalog import GPU, GiB, get_gpu

MEMORY_RULES = ("vllm", "trtllm")
#: Default memory fraction of each rule: vLLM ``gpu_memory_utilization`` and TensorRT-LLM
#: ``kv_cache_free_gpu_mem_fraction`` as its published benchmarks set it (facts.md).
DEFAULT_MEMORY_FRACTION = {"vllm": 0.90, "trtllm": 0.95}
#: Per GPU, bytes: CUDA context, library workspaces, communication buffers, CUDA graphs, and the
#: driver's own reservation (nvidia-smi's total is about 0.5 GiB above what CUDA reports: 81,559 MiB
#: against vLLM's "total_gpu_memory (79.11GiB)" on an H100). An assumption, not a measurement.
RUNTIME_RESERVE_BYTES = 2.0e9
#: vLLM's block size (tokens per KV block) by default.
VLLM_BLOCK_TOKENS = 16
#: TensorRT-LLM builder defaults (trtllm-build ``max_num_tokens`` and ``max_batch_size``).
TRTLLM_MAX_NUM_TOKENS = 8192
TRTLLM_MAX_BATCH = 2048
ENGINE_DEFAULTS_SOURCE = ("vllm-project/vllm vllm/engine/arg_utils.py @99d7eb5d (EngineArgs batch "
                          "defaults for the OpenAI API server); TensorRT-LLM trtllm-build defaults")


@dataclass(frozen=True)
class EngineDefaults:
    """An engine's batch limits on one GPU type: sequences per batch, tokens per iteration."""

    engine: str
    max_num_seqs: int
    max_batched_tokens: int
    source: str = ENGINE_DEFAULTS_SOURCE


def engine_defaults(gpu: GPU, memory_rule: str = "vllm") -> EngineDefaults:
    """The batch limits the engine of ``memory_rule`` picks on ``gpu`` (module docstring)."""
    gpu = get_gpu(gpu)
    v.check_choice("memory_rule", memory_rule, MEMORY_RULES)
    if memory_rule == "trtllm":
        return EngineDefaults("TensorRT-LLM", TRTLLM_MAX_BATCH, TRTLLM_MAX_NUM_TOKENS)
    big = gpu.hbm_bytes >= 70 * GiB and not gpu.id.startswith("a100")
    return EngineDefaults("vLLM (API server)", 1024 if big else 256, 8192 if big else 2048)
