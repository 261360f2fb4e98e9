"""How a replica schedules: the policy, its token budget, partial prefills, admission control.

Everything a run can be told lives in one frozen :class:`SchedulerConfig`. Its defaults are an
engine's defaults, not ours, each with its source:

* **the token budget of a chunked step** (``chunk_tokens``): vLLM V1 sets ``max_num_batched_tokens``
  by usage context and device: for its OpenAI-compatible server 8192 tokens on a GPU with at least
  70 GiB of device memory that is not an A100 (H100, H200, B200, MI300X), else 2048 (16384 / 8192
  for the offline ``LLM`` class); an A100 keeps the small budget because a large one lowered its
  throughput (vLLM PR #17885). Source: ``vllm/engine/arg_utils.py``,
  ``EngineArgs._set_default_args``, vLLM main at commit 99d7eb5 (0.11-era code: it announces
  removals for v0.12 and v0.13). See :func:`engine_default_chunk_tokens`.
* **partial prefills**: vLLM's ``max_num_partial_prefills`` (default 1), ``max_long_partial_prefills``
  (default 1) and ``long_prefill_token_threshold`` (default 0, which becomes 4 % of the model's
  context length once ``max_num_partial_prefills > 1``): ``vllm/config/scheduler.py``,
  ``SchedulerConfig`` (vLLM main at commit 01230b4). They came with the V0 scheduler ("Reduce
  TTFT with concurrent partial prefills", vLLM PR #10235, 2025; ``PartialPrefillMetadata`` in
  ``vllm/core/scheduler.py``), which this model follows. The V1 engine, as of commit 99d7eb5,
  refuses counts other than the defaults ("Concurrent Partial Prefill" is unsupported in
  ``EngineArgs._is_v1_supported_oracle``) and uses a non-zero threshold only to cap each request's
  chunk per step; so with vLLM's defaults both engines do what ``max_num_partial_prefills=1``
  does here.
* the KV watermark (1 % of the pool kept free at admission) and ``max_num_seqs`` come from the
  replica (:class:`vidya_lab.sizing.Replica`, vLLM's defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vidya_lab import _validate as v
from vidya_lab import catalog

POLICIES: tuple[str, ...] = ("fcfs", "chunked", "priority")
KV_POLICIES: tuple[str, ...] = ("preempt", "reserve")
REJECT_REASONS: tuple[str, ...] = ("too_long", "queue_full", "tokens_in_flight", "deadline")
#: Class labels of the upload scenario.
STUDENT, UPLOAD = "student", "upload"
#: Lower number = scheduled first. Classes not listed get 0 (interactive).
DEFAULT_CLASS_PRIORITY: tuple[tuple[str, int], ...] = ((STUDENT, 0), (UPLOAD, 1))
#: Fraction of the KV pool kept free when admitting under "preempt" (vLLM's default watermark).
WATERMARK_FRACTION = 0.01

#: vLLM's default ``long_prefill_token_threshold`` with concurrent partial prefills: 4 % of
#: ``max_model_len`` (``vllm/config/scheduler.py``).
VLLM_LONG_PREFILL_FRACTION = 0.04


def engine_default_chunk_tokens(gpu: str | catalog.GPU) -> int:
    """vLLM V1's default token budget per step (``max_num_batched_tokens``) for ``vllm serve`` on
    ``gpu``, tokens: 8192 with ≥ 70 GiB of device memory unless it is an A100, else 2048 — the
    engine defaults of :func:`vidya_lab.sizing.engine_defaults` (one fact in one place)."""
    from vidya_lab.sizing import engine_defaults

    return engine_defaults(catalog.get_gpu(gpu), "vllm").max_batched_tokens


@dataclass(frozen=True)
class SchedulerConfig:
    """How the replica schedules, what it admits, and what it does when memory runs out.

    Parameters
    ----------
    policy : ``"fcfs"``, ``"chunked"`` or ``"priority"`` (package docstring).
    chunk_tokens : token budget of one step under ``"chunked"``/``"priority"`` (decodes count one
        token each; the rest goes to prompt chunks), tokens (≥ 1). ``None`` (default): the
        replica's ``max_batched_tokens``, which is vLLM's ``max_num_batched_tokens`` and defaults
        to the engine's value for the GPU, :func:`engine_default_chunk_tokens` (8192 on an H100,
        2048 on an A100 or L40S). Sarathi-Serve studies 512–2048.
    max_num_partial_prefills : under ``"chunked"``, most prompts prefilled in one step (vLLM's
        setting; default 1). With 1 the budget alone decides, as in vLLM: started prompts first,
        then waiting ones in arrival order. With more, the prompt part of the budget is split
        evenly among up to this many prompts, so a short prompt need not wait behind a long one.
    max_long_partial_prefills : most of those prompts that are *long* (more than
        ``long_prefill_token_threshold`` tokens left to prefill) at once (vLLM default 1,
        ≤ ``max_num_partial_prefills``); a waiting long prompt beyond it keeps its place while
        shorter prompts behind it are admitted.
    long_prefill_token_threshold : tokens; ``None``: vLLM's default, 4 % of the model's context
        length (:data:`VLLM_LONG_PREFILL_FRACTION`).
    max_batch : most sequences admitted at once (prefilling + decoding); ``None`` → the replica's
        ``max_num_seqs``.
    max_batched_tokens : prompt tokens in one ``"fcfs"`` prefill step; ``None`` → the replica's
        ``max_batched_tokens`` (a single longer prompt is still taken, alone).
    kv_policy : ``"preempt"`` or ``"reserve"`` (package docstring).
    max_queue : most requests waiting for admission; an arrival finding this many is rejected
        (``"queue_full"``). ``None``: no cap.
    max_tokens_in_flight : most prompt + output tokens of accepted, unfinished requests; ``None``:
        no cap.
    queue_deadline_s : a request still waiting this long after arriving is shed (``"deadline"``),
        seconds (> 0); ``None``: never.
    class_priority : ``{class label: rank}``, lower first (``"priority"`` only); unlisted classes
        rank 0. Default: students 0, uploads 1.
    aging_s : under ``"priority"``, a waiting request moves up one rank per ``aging_s`` seconds
        waited (> 0); ``None``: strict priority (a low class can starve).
    cached_prefix_tokens : tokens at the start of every prompt that the replica's prefix cache holds
        (chapter 4: the syllabus and subject prompt a warm replica keeps), rounded down to whole KV
        blocks. They are held once for everyone (taken from the pool before the run), a prompt
        prefills only its tokens after them (its chunks still attend to them), and a sequence's
        own blocks exclude them; a prompt no longer than them still computes its last token.
        Default 0: no cache, every prompt prefilled in full.
    """

    policy: str = "chunked"
    chunk_tokens: int | None = None
    max_num_partial_prefills: int = 1
    max_long_partial_prefills: int = 1
    long_prefill_token_threshold: int | None = None
    max_batch: int | None = None
    max_batched_tokens: int | None = None
    kv_policy: str = "preempt"
    max_queue: int | None = None
    max_tokens_in_flight: int | None = None
    queue_deadline_s: float | None = None
    class_priority: Mapping[str, int] | tuple[tuple[str, int], ...] = DEFAULT_CLASS_PRIORITY
    aging_s: float | None = None
    cached_prefix_tokens: int = 0

    def __post_init__(self) -> None:
        v.check_int("cached_prefix_tokens", self.cached_prefix_tokens, minimum=0,
                    maximum=10_000_000)
        v.check_choice("policy", self.policy, POLICIES)
        v.check_choice("kv_policy", self.kv_policy, KV_POLICIES)
        for name in ("chunk_tokens", "max_batch", "max_batched_tokens", "max_queue",
                     "max_tokens_in_flight", "long_prefill_token_threshold"):
            if getattr(self, name) is not None:
                v.check_int(name, getattr(self, name), minimum=1)
        self._check_partial_prefills()
        for name in ("queue_deadline_s", "aging_s"):
            if getattr(self, name) is not None:
                v.check_real(name, getattr(self, name), minimum=0.0, min_inclusive=False)
        cp = self.class_priority
        items = tuple(cp.items()) if isinstance(cp, Mapping) else tuple(cp)
        for pair in items:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise TypeError(f"class_priority must map class labels (str) to ranks (int), "
                                f"got {pair!r}")
            v.check_int(f"class_priority[{pair[0]!r}]", pair[1])
        object.__setattr__(self, "class_priority", tuple(sorted(items)))

    def _check_partial_prefills(self) -> None:
        most = v.check_int("max_num_partial_prefills", self.max_num_partial_prefills, minimum=1)
        v.check_int("max_long_partial_prefills", self.max_long_partial_prefills, minimum=1,
                    maximum=most)
        if most > 1 and self.policy != "chunked":
            raise ValueError(f"max_num_partial_prefills > 1 applies to policy 'chunked' only, got "
                             f"policy {self.policy!r}")

    def rank_of(self, klass: str) -> int:
        """The rank of a class label (0 if unlisted)."""
        return dict(self.class_priority).get(klass, 0)

    def chunk_budget(self, gpu: str | catalog.GPU) -> int:
        """The token budget of one chunked step on a replica of ``gpu`` with the engine's default
        ``max_batched_tokens``: ``chunk_tokens``, or :func:`engine_default_chunk_tokens`."""
        if self.chunk_tokens is not None:
            return self.chunk_tokens
        return engine_default_chunk_tokens(gpu)

    def long_prefill_tokens(self, model: str | catalog.Model) -> int:
        """The threshold above which a prompt counts as long, tokens:
        ``long_prefill_token_threshold``, or 4 % of ``model``'s context length (vLLM)."""
        if self.long_prefill_token_threshold is not None:
            return self.long_prefill_token_threshold
        m = catalog.get_model(model)
        return max(1, int(m.max_context_tokens * VLLM_LONG_PREFILL_FRACTION))
