"""Prefix caching, speculative decoding and quantisation: the speedups of chapter 4, with their costs.

Every tutor request starts with the same 3,000-token syllabus. Without a prefix cache the replica
prefills it again for every request; with one, the KV of the syllabus is kept and reused.

The prefix cache (as vLLM's automatic prefix caching and SGLang's RadixAttention do it)
-------------------------------------------------------------------------------------
* A sequence is cut into fixed-size blocks of ``block_tokens`` tokens (vLLM's default 16). Only full
  blocks are cached; the partial last block is not.
* Each block's key is a hash *chained* over every block before it:
  ``key_i = hash((key_{i-1}, tokens of block i))`` (:func:`block_hashes`). Two requests share block i
  only when their first ``(i+1)·block_tokens`` tokens are identical, so a one-token change in block k
  makes blocks k, k+1, … miss even if their own tokens match.
* A request looks up its blocks in order and reuses the longest cached run (at most
  ``prompt_tokens − 1`` tokens: the last prompt token is always computed, its logits give the first
  output token, as vLLM does). Its blocks are *pinned* (reference counted) while it runs and are never
  evicted then. Its new full blocks are inserted at admission, those its answer fills at its finish.
* The cache holds at most ``capacity_blocks`` blocks: ``cache_bytes // (block_tokens × KV bytes per
  token per GPU)``, with the KV bytes from :mod:`vidya_lab.sizing` (so ``cache_bytes`` is per GPU,
  like ``Replica.kv_budget_bytes``; each GPU of a TP group holds its share of every block).
* When full, it evicts the least recently used unpinned block. ``policy="lru-leaf"`` (default)
  evicts only leaves (blocks no cached block extends), as SGLang's radix tree does: a prefix is never
  dropped before its extensions, which would be unreachable without it. ``policy="lru"`` evicts any
  unpinned block (vLLM's free-block queue; ties go to the deepest block first).
  If every block is pinned, new blocks are simply not stored (``blocks_not_stored``).
  Here every request pins (touches) its chain from the first block, so an ancestor is never less
  recently used than its descendants and the two policies evict the same blocks; they differ for
  caches used out of chain order.

Python's tuple hash is deterministic for integers, 64 bits wide; a collision would merge two blocks
(vLLM offers SHA-256 keys for that reason). With the token counts of this book the chance is
negligible.

:func:`simulate` replays a :class:`PromptTrace` (from :func:`tutor_trace`: the shared syllabus,
per-subject prompts, multi-turn conversations that extend their own history, unique uploads; seeded)
through a :class:`PrefixCache` and reports token- and request-level hit rates, prefill tokens and
FLOPs saved, the cache's memory, and TTFT with and without the cache through the cost model
(prefill of only the uncached suffix, the cached prefix as prior context:
``sizing.iteration_time_s(r, prefill=[(uncached, cached)])``). :func:`concurrency_with_cache` and
:func:`saturated_throughput_with_cache` say what a dedicated cache costs the running batch.

Other speedups
--------------
* Speculative decoding: :func:`spec_expected_tokens` (1 − α^(γ+1)) / (1 − α) tokens per target step,
  :func:`spec_walltime_speedup` (Leviathan et al. Theorem 3.8) and :func:`spec_decode_at_batch`, the
  same through the cost model, where the verify step processes γ+1 tokens per sequence (why it loses
  at high load).
* Quantisation: :func:`quantisation_table` (memory, concurrency, TTFT, TPOT, throughput per
  weight/KV precision, all from :mod:`vidya_lab.sizing`).
* Disaggregation: :func:`prefill_interference` (how much one prefill stretches a decode step).

References: Kwon et al., *PagedAttention* (arXiv:2309.06180); Zheng et al., *SGLang* (arXiv:2312.07104);
Leviathan et al., *Fast Inference from Transformers via Speculative Decoding* (arXiv:2211.17192);
Zhong et al., *DistServe* (arXiv:2401.09670); Patel et al., *Splitwise* (ISCA 2024).
"""

from __future__ import annotations

import functools
import heapq
import math
from dataclasses import dataclass, field, replace

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing, slo
from vidya_lab.scenario import TANVI
from vidya_lab.workload import FixedLength, Workload, _LengthDist, as_rng, poisson_arrivals

__all__ = [
    "POLICIES",
    "PrefixCache",
    "PromptTrace",
    "CacheResult",
    "block_hashes",
    "default_replica",
    "cache_capacity_blocks",
    "tutor_trace",
    "simulate",
    "sweep_cache_bytes",
    "cliff_sweep",
    "break_even_cache_bytes",
    "best_case_token_hit_rate",
    "prefill_time_with_cache_s",
    "ttft_with_cache_s",
    "prefill_flops",
    "concurrency_with_cache",
    "saturated_throughput_with_cache",
    "spec_expected_tokens",
    "spec_walltime_speedup",
    "spec_decode_at_batch",
    "spec_break_even_batch",
    "quantisation_table",
    "prefill_interference",
]

POLICIES = ("lru-leaf", "lru")
#: Chain seed of the first block of every sequence (any fixed integer).
ROOT_HASH = 0x5EED_CAC4E
#: Token ids are drawn uniformly below this (Llama-3's vocabulary has 128,256 entries).
VOCAB_TOKENS = 128_000
#: Assumption of the story: a student reads the answer and types the next question in about a minute
#: (350 tokens ≈ 260 words ≈ 66 s at 238 words/min), with a spread of about 30% (lognormal).
THINK_S_MEAN = 60.0
THINK_S_CV = 0.3


# ----------------------------------------------------------------------------- hashing

def block_hashes(tokens, block_tokens: int = 16, *, parent: int = ROOT_HASH) -> list[int]:
    """Chained keys of the full blocks of ``tokens``: key_i = hash((key_{i-1}, block_i tokens)).

    Parameters
    ----------
    tokens : token ids (a sequence or a 1-D integer array).
    block_tokens : tokens per block (≥ 1).
    parent : key the chain starts from (:data:`ROOT_HASH` for a sequence's first block).

    Returns
    -------
    list of int, one key per full block (``len(tokens) // block_tokens`` of them).
    """
    b = v.check_int("block_tokens", block_tokens, minimum=1)
    toks = np.asarray(tokens).tolist() if not isinstance(tokens, list) else tokens
    out: list[int] = []
    h = parent
    for start in range(0, (len(toks) // b) * b, b):
        h = hash((h, tuple(toks[start:start + b])))
        out.append(h)
    return out


# ----------------------------------------------------------------------------- the cache

class PrefixCache:
    """A block-level prefix cache with reference counts and LRU eviction.

    Parameters
    ----------
    capacity_blocks : most blocks held at once (0: nothing is ever cached).
    block_tokens : tokens per block.
    policy : ``"lru-leaf"`` (evict the least recently used unpinned *leaf*, as SGLang) or ``"lru"``
        (any unpinned block, deepest first among equals, as vLLM's free-block queue).

    Use :meth:`admit` when a request starts (returns the blocks it reuses and a handle) and
    :meth:`release` when it finishes. Counters: ``evictions``, ``blocks_not_stored`` (no unpinned
    block to evict), ``peak_blocks``.
    """

    __slots__ = ("capacity_blocks", "block_tokens", "policy", "_blocks", "_heap", "_clock",
                 "evictions", "blocks_not_stored", "peak_blocks", "_leaf")

    # entry layout: [refcount, last_use_tick, depth, parent_key, cached_children]
    def __init__(self, capacity_blocks: int, block_tokens: int = 16, policy: str = "lru-leaf") -> None:
        self.capacity_blocks = v.check_int("capacity_blocks", capacity_blocks, minimum=0)
        self.block_tokens = v.check_int("block_tokens", block_tokens, minimum=1)
        self.policy = v.check_choice("policy", policy, POLICIES)
        self._leaf = policy == "lru-leaf"
        self._blocks: dict[int, list] = {}
        self._heap: list[tuple[int, int, int]] = []
        self._clock = 0
        self.evictions = 0
        self.blocks_not_stored = 0
        self.peak_blocks = 0

    # ------------------------------------------------------------------ inspection
    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, key: int) -> bool:
        return key in self._blocks

    def refcount(self, key: int) -> int:
        """References held on a cached block by running requests (0 if evictable or absent)."""
        e = self._blocks.get(key)
        return 0 if e is None else e[0]

    def pinned_blocks(self) -> int:
        """Blocks referenced by at least one running request."""
        return sum(1 for e in self._blocks.values() if e[0] > 0)

    def cached_prefix_blocks(self, hashes, max_blocks: int | None = None) -> int:
        """Length of the longest run of ``hashes`` cached from the start (no side effects)."""
        limit = len(hashes) if max_blocks is None else min(max_blocks, len(hashes))
        n = 0
        while n < limit and hashes[n] in self._blocks:
            n += 1
        return n

    # ------------------------------------------------------------------ internals
    def _evictable(self, e: list) -> bool:
        return e[0] == 0 and (not self._leaf or e[4] == 0)

    def _make_room(self) -> bool:
        blocks = self._blocks
        if len(blocks) < self.capacity_blocks:
            return True
        heap = self._heap
        while heap:
            tick, _, key = heapq.heappop(heap)
            e = blocks.get(key)
            if e is None or e[1] != tick or not self._evictable(e):
                continue  # stale entry
            del blocks[key]
            self.evictions += 1
            parent = blocks.get(e[3])
            if parent is not None:
                parent[4] -= 1
                if self._leaf and parent[4] == 0 and parent[0] == 0:
                    heapq.heappush(heap, (parent[1], -parent[2], e[3]))
            return True
        return False

    def _insert_or_pin(self, hashes, start: int, stop: int, pinned: list) -> bool:
        """Pin or insert hashes[start:stop] in order; False if storage ran out on the way."""
        blocks, clock = self._blocks, self._clock
        for i in range(start, stop):
            key = hashes[i]
            e = blocks.get(key)
            if e is None:
                if self.capacity_blocks == 0 or not self._make_room():
                    self.blocks_not_stored += stop - i
                    self.peak_blocks = max(self.peak_blocks, len(blocks))
                    return False
                parent_key = hashes[i - 1] if i else ROOT_HASH
                blocks[key] = [1, clock, i, parent_key, 0]
                parent = blocks.get(parent_key)
                if parent is not None:
                    parent[4] += 1
            else:
                e[0] += 1
                e[1] = clock
            pinned.append(key)
        if len(blocks) > self.peak_blocks:
            self.peak_blocks = len(blocks)
        return True

    # ------------------------------------------------------------------ the API
    def admit(self, hashes, lookup_blocks: int, insert_blocks: int | None = None):
        """A request starts: reuse its longest cached prefix, pin it, store its new full blocks.

        Parameters
        ----------
        hashes : chained keys of the request's full prompt blocks (:func:`block_hashes`).
        lookup_blocks : how many leading blocks may be reused (``(prompt_tokens − 1) // block``).
        insert_blocks : how many leading blocks to store (default ``len(hashes)``).

        Returns
        -------
        (hit_blocks, handle): blocks reused from the cache, and the handle for :meth:`release`.
        """
        lookup_blocks = v.check_int("lookup_blocks", lookup_blocks, minimum=0)
        stop = len(hashes) if insert_blocks is None else min(
            v.check_int("insert_blocks", insert_blocks, minimum=0), len(hashes))
        self._clock += 1
        clock, blocks = self._clock, self._blocks
        n = self.cached_prefix_blocks(hashes, stop)  # cached run: pin it in one pass
        for key in hashes[:n]:
            e = blocks[key]
            e[0] += 1
            e[1] = clock
        pinned = list(hashes[:n])
        complete = self._insert_or_pin(hashes, n, stop, pinned)
        return min(n, lookup_blocks), _Handle(pinned, complete, stop)

    def release(self, handle: _Handle, extra_hashes=()) -> None:
        """A request finishes: store the blocks its answer filled (if its prompt chain is whole),
        then unpin all its blocks, deepest first, so they become evictable."""
        if handle.released:
            raise ValueError("this request's blocks were already released (release each handle once)")
        handle.released = True
        self._clock += 1
        if handle.complete and len(extra_hashes) > handle.stored:
            self._insert_or_pin(extra_hashes, handle.stored, len(extra_hashes), handle.pinned)
        blocks, clock, heap, leaf = self._blocks, self._clock, self._heap, self._leaf
        push = heapq.heappush
        for key in reversed(handle.pinned):
            e = blocks[key]
            refs = e[0] - 1
            e[0] = refs
            e[1] = clock
            if refs == 0 and (not leaf or e[4] == 0):
                push(heap, (clock, -e[2], key))
        handle.pinned = []


@dataclass
class _Handle:
    pinned: list
    complete: bool
    stored: int
    released: bool = False


# ----------------------------------------------------------------------------- deployments

@functools.lru_cache(maxsize=64)
def default_replica(model: str = TANVI.model_id, gpu: str = TANVI.candidate_gpu_ids[0],
                    precision: str = "bf16") -> sizing.Replica:
    """The smallest tensor-parallel replica (tp = 1, 2, 4, 8) of ``model`` on ``gpu`` whose weights fit
    and that has room for a KV cache (Llama-3.3-70B in bf16 on H100: tp = 4)."""
    for tp in (1, 2, 4, 8):
        try:
            r = sizing.Replica(model, gpu, tp=tp, precision=precision)
        except ValueError:
            continue
        if r.weights_fit and r.kv_blocks > 0:
            return r
    raise ValueError(f"{model} does not fit on up to 8 x {gpu} in {precision}")


def _replica_with_block(r: sizing.Replica, block_tokens: int | None) -> sizing.Replica:
    if block_tokens is None or block_tokens == r.block_tokens:
        return r
    return replace(r, block_tokens=v.check_int("block_tokens", block_tokens, minimum=1))


def cache_capacity_blocks(r: sizing.Replica, cache_bytes: float, block_tokens: int | None = None) -> int:
    """Blocks a cache of ``cache_bytes`` per GPU holds: floor(bytes / (block × KV bytes/token/GPU))."""
    sizing._as_replica(r)
    c = v.check_real("cache_bytes", cache_bytes, minimum=0.0)
    b = r.block_tokens if block_tokens is None else v.check_int("block_tokens", block_tokens, minimum=1)
    return int(c // (b * r.kv_bytes_per_token_per_gpu))


# ----------------------------------------------------------------------------- workloads

@dataclass(frozen=True, eq=False)
class PromptTrace:
    """Requests with their actual token ids, for replaying through a prefix cache.

    Attributes
    ----------
    arrival_s : float64, seconds, sorted.
    prompts, answers : one int32 array of token ids per request (the answer's tokens are what a
        follow-up turn carries in its history).
    kind : "new" (first turn of a conversation), "follow-up" or "upload".
    conversation : the conversation each request belongs to.
    subject : the subject prompt it uses (-1: none).
    shared_tokens : leading tokens shared by design (syllabus + subject prompt), per request.
    """

    arrival_s: np.ndarray
    prompts: tuple
    answers: tuple
    kind: np.ndarray
    conversation: np.ndarray
    subject: np.ndarray
    shared_tokens: np.ndarray
    _hashes: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @property
    def prompt_tokens(self) -> np.ndarray:
        """Prompt lengths, tokens (int64)."""
        return np.fromiter((p.size for p in self.prompts), dtype=np.int64, count=len(self))

    @property
    def answer_tokens(self) -> np.ndarray:
        """Answer lengths, tokens (int64)."""
        return np.fromiter((a.size for a in self.answers), dtype=np.int64, count=len(self))

    def sequence_hashes(self, block_tokens: int) -> list[list[int]]:
        """Chained block keys of each request's prompt + answer (computed once per block size)."""
        b = v.check_int("block_tokens", block_tokens, minimum=1)
        if b not in self._hashes:
            self._hashes[b] = [block_hashes(np.concatenate([p, a]).tolist(), b)
                               for p, a in zip(self.prompts, self.answers, strict=True)]
        return self._hashes[b]

    def to_workload(self) -> Workload:
        """The same requests as a :class:`vidya_lab.workload.Workload` (lengths only): prefix id = the
        subject (syllabus-only requests get the subject count as id), prefix tokens = shared tokens."""
        pid = np.where(self.shared_tokens > 0, np.where(self.subject >= 0, self.subject,
                                                         int(self.subject.max(initial=0)) + 1), -1)
        return Workload.from_arrays(self.arrival_s, self.prompt_tokens, self.answer_tokens,
                                    prefix_id=pid, prefix_tokens=self.shared_tokens, klass=self.kind)


def tutor_trace(n_requests: int, *, seed, rate_per_s: float = TANVI.normal_peak_rps,
                syllabus_tokens: int = TANVI.syllabus_prompt_tokens, subjects: int = TANVI.subjects,
                subject_tokens: int = TANVI.subject_prompt_tokens,
                question_tokens: int | _LengthDist = TANVI.question_tokens_mean,
                answer_tokens: int | _LengthDist = TANVI.answer_tokens_mean,
                turns_mean: float = 1.0, think_s_mean: float = THINK_S_MEAN,
                think_s_cv: float = THINK_S_CV, upload_fraction: float = 0.0,
                upload_tokens: int = TANVI.upload_tokens) -> PromptTrace:
    """Tanvi's traffic with token ids: who shares which prefix, generated by code with a seed.

    Conversations start as a Poisson process (:func:`vidya_lab.workload.poisson_arrivals`) at
    ``rate_per_s / turns_mean``; each has a geometric number of turns with mean ``turns_mean``, spaced
    by a think time (lognormal, mean ``think_s_mean``, coefficient of variation ``think_s_cv``). So
    requests arrive at about ``rate_per_s`` once conversations are under way.

    * Turn 1 of a conversation: syllabus (``syllabus_tokens``, the same for everyone) + one of
      ``subjects`` subject prompts (``subject_tokens`` each, chosen uniformly) + a question.
    * Turn k > 1 ("follow-up"): turn k−1's prompt and answer (its own history) + a new question.
    * With probability ``upload_fraction`` a conversation is an "upload": syllabus + a teacher's
      document of ``upload_tokens`` tokens seen nowhere else + a question (no subject prompt).

    Question and answer lengths are fixed token counts or distributions of :mod:`vidya_lab.workload`; token
    ids are uniform below :data:`VOCAB_TOKENS`. Returns the first ``n_requests`` requests in arrival
    order.
    """
    n = v.check_int("n_requests", n_requests, minimum=1)
    rate = v.check_real("rate_per_s", rate_per_s, minimum=0.0, min_inclusive=False)
    syl = v.check_int("syllabus_tokens", syllabus_tokens, minimum=0)
    k_sub = v.check_int("subjects", subjects, minimum=1)
    sub_tok = v.check_int("subject_tokens", subject_tokens, minimum=0)
    turns = v.check_real("turns_mean", turns_mean, minimum=1.0)
    think = v.check_real("think_s_mean", think_s_mean, minimum=0.0, min_inclusive=False)
    cv = v.check_real("think_s_cv", think_s_cv, minimum=0.0)
    up_frac = v.check_fraction("upload_fraction", upload_fraction)
    up_tok = v.check_int("upload_tokens", upload_tokens, minimum=1)
    dists = []
    for name, dist in (("question_tokens", question_tokens), ("answer_tokens", answer_tokens)):
        if not isinstance(dist, _LengthDist):
            if isinstance(dist, bool) or not isinstance(dist, int):
                raise TypeError(f"{name} must be a number of tokens or a length distribution "
                                f"(FixedLength, LognormalLength, EmpiricalLength), got "
                                f"{type(dist).__name__}")
            dist = FixedLength(v.check_int(name, dist, minimum=0))
        dists.append(dist)
    question_tokens, answer_tokens = dists
    if syl + sub_tok == 0 and isinstance(question_tokens, FixedLength) and question_tokens.tokens == 0:
        raise ValueError("every prompt would be empty: give syllabus_tokens, subject_tokens or "
                         "question_tokens > 0")
    rng = as_rng(seed)
    syllabus = rng.integers(0, VOCAB_TOKENS, size=syl, dtype=np.int32)
    subject_prompts = [rng.integers(0, VOCAB_TOKENS, size=sub_tok, dtype=np.int32)
                       for _ in range(k_sub)]
    # conversation starts: enough that the first n turns are all generated
    duration = 1.5 * n / rate + 5.0 * think * (turns - 1.0) + 1.0
    while True:
        starts = poisson_arrivals(rate / turns, duration, seed=rng)
        n_turns = rng.geometric(1.0 / turns, size=starts.size)
        if n_turns.sum() >= n:
            break
        duration *= 2.0
    sigma = math.sqrt(math.log1p(cv * cv))
    mu = math.log(think) - sigma * sigma / 2.0
    conv_of = np.repeat(np.arange(starts.size), n_turns)
    turn_of = np.concatenate([np.arange(k) for k in n_turns])
    gaps = np.where(turn_of > 0, rng.lognormal(mu, sigma, size=conv_of.size), 0.0)
    # arrival of turn k = start + the k think times before it (turn 0 has gap 0)
    total = np.cumsum(gaps)
    offset = total - np.repeat(total[np.cumsum(n_turns) - n_turns], n_turns)
    arrival = starts[conv_of] + offset
    order = np.argsort(arrival, kind="stable")[:n]
    order = order[np.lexsort((turn_of[order], conv_of[order]))]  # build each conversation in order
    q_len = question_tokens.sample(order.size, rng)
    a_len = answer_tokens.sample(order.size, rng)
    is_upload = rng.uniform(size=starts.size) < up_frac
    subject_of = rng.integers(0, k_sub, size=starts.size)
    history: dict[int, np.ndarray] = {}
    prompts, answers, kinds, convs, subj, shared, arr = [], [], [], [], [], [], []
    for j, idx in enumerate(order):
        c = int(conv_of[idx])
        question = rng.integers(0, VOCAB_TOKENS, size=int(q_len[j]), dtype=np.int32)
        answer = rng.integers(0, VOCAB_TOKENS, size=int(a_len[j]), dtype=np.int32)
        if c in history:
            kind = "follow-up"
            head = history[c]
        elif is_upload[c]:
            kind = "upload"
            head = np.concatenate([syllabus, rng.integers(0, VOCAB_TOKENS, size=up_tok, dtype=np.int32)])
        else:
            kind = "new"
            head = np.concatenate([syllabus, subject_prompts[int(subject_of[c])]])
        prompt = np.concatenate([head, question])
        if prompt.size == 0:  # an empty question after an empty prefix: one token to answer
            prompt = rng.integers(0, VOCAB_TOKENS, size=1, dtype=np.int32)
        history[c] = np.concatenate([prompt, answer])
        prompts.append(prompt)
        answers.append(answer)
        kinds.append(kind)
        convs.append(c)
        subj.append(-1 if is_upload[c] else int(subject_of[c]))
        shared.append(syl if is_upload[c] else syl + sub_tok)
        arr.append(float(arrival[idx]))
    sort = np.argsort(np.asarray(arr), kind="stable")
    pick = [int(i) for i in sort]
    return PromptTrace(arrival_s=np.asarray(arr)[sort], prompts=tuple(prompts[i] for i in pick),
                       answers=tuple(answers[i] for i in pick),
                       kind=np.asarray(kinds, dtype=str)[sort],
                       conversation=np.asarray(convs, dtype=np.int64)[sort],
                       subject=np.asarray(subj, dtype=np.int64)[sort],
                       shared_tokens=np.minimum(np.asarray(shared, dtype=np.int64)[sort],
                                                np.fromiter((prompts[i].size for i in pick),
                                                            dtype=np.int64, count=len(pick))))


# ----------------------------------------------------------------------------- cost-model effects

def prefill_time_with_cache_s(r: sizing.Replica, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """Prefill time of a prompt whose first ``cached_tokens`` are in the cache (TTFT at idle), seconds.

    Only the uncached suffix is computed, in chunks of ``max_batched_tokens``, each attending to
    everything before it: Σ ``sizing.iteration_time_s(r, prefill=[(chunk, prior)])``. With
    ``cached_tokens = 0`` this is :func:`vidya_lab.sizing.prefill_time_s`.
    """
    sizing._as_replica(r)
    n = v.check_int("prompt_tokens", prompt_tokens, minimum=1)
    k = v.check_int("cached_tokens", cached_tokens, minimum=0, maximum=n - 1)
    return _prefill_time(r, n, k)


def ttft_with_cache_s(r: sizing.Replica, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """Time to first token on an idle replica when ``cached_tokens`` are cached, seconds.

    Formula: the calibration's ``request_overhead_s`` + :func:`prefill_time_with_cache_s`; with
    nothing cached it is :func:`vidya_lab.sizing.ttft_s`.
    """
    return r.calibration.request_overhead_s + prefill_time_with_cache_s(r, prompt_tokens, cached_tokens)


@functools.lru_cache(maxsize=65536)
def _prefill_time(r: sizing.Replica, n: int, k: int) -> float:
    total, done = 0.0, k
    while done < n:
        c = min(r.max_batched_tokens, n - done)
        total += sizing.iteration_time_s(r, prefill=[(c, done)])
        done += c
    return total


def prefill_flops(model, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """FLOPs to prefill the uncached part of a prompt, whole model (all GPUs together).

    Formula: 2·L·P_layer·u + 4·h·hd·L·(u·k + u(u+1)/2), with u = prompt − cached new tokens,
    k = cached tokens, P_layer the parameters of one block a token multiplies (top-k experts for an
    MoE), h query heads of dimension hd: the matrix-multiply and attention terms of the cost model.
    The output head runs once per request either way and is left out.
    """
    m = sizing.get_model(model)
    n = v.check_int("prompt_tokens", prompt_tokens, minimum=0)
    k = v.check_int("cached_tokens", cached_tokens, minimum=0, maximum=max(n, 0))
    u = n - k
    pairs = u * k + u * (u + 1) / 2
    return 2.0 * m.n_layers * m.layer_params(active=True) * u \
        + 4.0 * m.n_heads * m.head_dim * m.n_layers * pairs


def _in_flight_tpot_s(r: sizing.Replica, rate_per_s: float, prompt_mean: float,
                      answer_mean: float) -> float:
    """Decode step time at the batch Little's law gives: B = λ·(TTFT + answer·TPOT(B))."""
    ttft = r.calibration.request_overhead_s + _prefill_time(r, max(1, int(round(prompt_mean))), 0)
    ctx = max(1, int(round(prompt_mean + answer_mean / 2)))
    batch = 1
    for _ in range(50):
        tpot = sizing.decode_step_time_s(r, batch, ctx)
        nxt = min(r.max_num_seqs, max(1, math.ceil(rate_per_s * (ttft + answer_mean * tpot))))
        if nxt == batch:
            break
        batch = nxt
    return sizing.decode_step_time_s(r, batch, ctx)


@dataclass(frozen=True, eq=False)
class CacheResult:
    """Per-request outcome of replaying a trace through a prefix cache.

    Arrays (one entry per request, in arrival order): ``prompt_tokens``, ``hit_tokens`` (tokens
    reused from the cache), ``ttft_without_s`` and ``ttft_with_s`` (:func:`ttft_with_cache_s`: request
    overhead + prefill of the uncached suffix on an idle replica, through the cost model, seconds), ``flops_saved``; ``kind`` as in the trace. ``summary`` holds the totals.
    """

    prompt_tokens: np.ndarray
    hit_tokens: np.ndarray
    ttft_without_s: np.ndarray
    ttft_with_s: np.ndarray
    flops_saved: np.ndarray
    kind: np.ndarray
    summary: dict


def simulate(trace: PromptTrace, r: sizing.Replica | None = None, *, cache_bytes: float | None = None,
             block_tokens: int | None = None, policy: str = "lru-leaf",
             tpot_s: float | None = None) -> CacheResult:
    """Replay ``trace`` through a prefix cache of ``cache_bytes`` per GPU on replica ``r``.

    Each request is admitted at its arrival (reuses its longest cached prefix, pins its blocks, stores
    its new full prompt blocks), and finishes after TTFT (prefill of the uncached suffix) plus
    ``answer_tokens × tpot_s``; then the blocks its answer filled are stored and its blocks unpinned.
    ``tpot_s`` defaults to the decode step at the in-flight batch Little's law gives for the trace's
    rate. No queueing: TTFT here is the prefill on an idle replica (chapter 5 adds the waiting).

    Parameters
    ----------
    trace : from :func:`tutor_trace`.
    r : the replica (default :func:`default_replica`).
    cache_bytes : cache budget per GPU, bytes (default: the replica's whole KV budget, as vLLM's
        automatic prefix caching, which keeps finished requests' blocks in the free KV pool).
    block_tokens : tokens per block (default the replica's, 16).
    policy : "lru-leaf" or "lru" (see :class:`PrefixCache`).

    Returns
    -------
    :class:`CacheResult`; ``summary`` keys: ``requests``, ``token_hit_rate`` (hit tokens / prompt
    tokens), ``request_hit_rate`` (share of requests reusing at least one block),
    ``prefill_tokens_saved``, ``prefill_flops_saved``, ``cache_bytes_used`` (peak bytes per GPU the
    cached blocks occupied), ``cache_bytes_budget``, ``cache_blocks_capacity``, ``cache_blocks_peak``,
    ``sequences_displaced`` (running sequences of the trace's mean prompt + answer length that the
    peak cache blocks could have held instead: the concurrency the cache takes when it does not give
    way to running requests),
    ``block_tokens``, ``evictions``, ``blocks_not_stored``, ``ttft_s_p50_without``,
    ``ttft_s_p50_with``, ``ttft_s_mean_without``, ``ttft_s_mean_with``, ``tpot_s``, ``policy``.
    """
    if not isinstance(trace, PromptTrace):
        raise TypeError(f"trace must be a PromptTrace (see tutor_trace), got {type(trace).__name__}")
    r = default_replica() if r is None else sizing._as_replica(r)
    r = _replica_with_block(r, block_tokens)
    b = r.block_tokens
    budget = r.kv_budget_bytes if cache_bytes is None else v.check_real("cache_bytes", cache_bytes,
                                                                         minimum=0.0)
    capacity = cache_capacity_blocks(r, budget)
    cache = PrefixCache(capacity, b, policy)
    n = len(trace)
    prompt = trace.prompt_tokens
    answer = trace.answer_tokens
    if tpot_s is None:
        span = float(trace.arrival_s[-1] - trace.arrival_s[0]) if n > 1 else 0.0
        rate = (n - 1) / span if span > 0 else 1.0
        tpot = _in_flight_tpot_s(r, rate, float(prompt.mean()), float(answer.mean()))
    else:
        tpot = v.check_real("tpot_s", tpot_s, minimum=0.0)
    hashes = trace.sequence_hashes(b)
    overhead = r.calibration.request_overhead_s
    hit = np.zeros(n, dtype=np.int64)
    ttft_with = np.zeros(n)
    ttft_without = np.zeros(n)
    running: list[tuple[float, int, _Handle]] = []
    arrival = trace.arrival_s
    for i in range(n):
        t = float(arrival[i])
        while running and running[0][0] <= t:
            _, j, h = heapq.heappop(running)
            cache.release(h, hashes[j])
        p = int(prompt[i])
        hit_blocks, handle = cache.admit(hashes[i], (p - 1) // b, p // b)
        hit[i] = hit_blocks * b
        ttft_without[i] = overhead + _prefill_time(r, p, 0)
        ttft_with[i] = overhead + _prefill_time(r, p, int(hit[i]))
        heapq.heappush(running, (t + ttft_with[i] + int(answer[i]) * tpot, i, handle))
    while running:
        _, j, h = heapq.heappop(running)
        cache.release(h, hashes[j])
    m = r.model
    flops = np.array([prefill_flops(m, int(p), 0) - prefill_flops(m, int(p), int(k))
                      for p, k in zip(prompt, hit, strict=True)])
    block_bytes = b * r.kv_bytes_per_token_per_gpu
    per_seq_blocks = max(1, math.ceil((float(prompt.mean()) + float(answer.mean())) / b))
    summary = {
        "requests": n,
        "token_hit_rate": float(hit.sum() / prompt.sum()),
        "request_hit_rate": float(np.mean(hit > 0)),
        "prefill_tokens_saved": int(hit.sum()),
        "prefill_flops_saved": float(flops.sum()),
        "cache_bytes_used": cache.peak_blocks * block_bytes,
        "cache_bytes_budget": budget,
        "cache_blocks_capacity": capacity,
        "cache_blocks_peak": cache.peak_blocks,
        "sequences_displaced": cache.peak_blocks // per_seq_blocks,
        "block_tokens": b,
        "evictions": cache.evictions,
        "blocks_not_stored": cache.blocks_not_stored,
        "ttft_s_p50_without": slo.percentile(ttft_without, 50),
        "ttft_s_p50_with": slo.percentile(ttft_with, 50),
        "ttft_s_mean_without": float(ttft_without.mean()),
        "ttft_s_mean_with": float(ttft_with.mean()),
        "tpot_s": tpot,
        "policy": policy,
    }
    return CacheResult(prompt, hit, ttft_without, ttft_with, flops, trace.kind, summary)


def sweep_cache_bytes(trace: PromptTrace, cache_bytes, r: sizing.Replica | None = None, *,
                      policy: str = "lru-leaf", kinds=None) -> list[dict]:
    """:func:`simulate` at each cache size (bytes per GPU): one summary dict per size.

    ``kinds`` (e.g. ``("follow-up",)``) adds ``kind_token_hit_rate``: the hit rate of those requests.
    """
    out = []
    for c in cache_bytes:
        res = simulate(trace, r, cache_bytes=c, policy=policy)
        row = dict(res.summary)
        if kinds is not None:
            sel = np.isin(res.kind, list(kinds))
            row["kind_token_hit_rate"] = (float(res.hit_tokens[sel].sum() / res.prompt_tokens[sel].sum())
                                          if sel.any() else float("nan"))
        out.append(row)
    return out


def cliff_sweep(trace: PromptTrace, cache_bytes, r: sizing.Replica | None = None, *,
                kinds=("follow-up",), policy: str = "lru-leaf", near: float = 0.95,
                far: float = 0.2) -> dict:
    """How the hit rate of some requests (default: follow-up turns) falls as the cache shrinks.

    Runs :func:`simulate` at each size in ``cache_bytes`` (bytes per GPU) and once with an unlimited
    cache. For the selected requests:

    * ``floor`` — the hit rate if only their designed shared prefix (syllabus + subject, whole blocks)
      hit: Σ floor(shared / B)·B / Σ prompt tokens;
    * ``ceiling`` — the hit rate with an unlimited cache;
    * ``hit_rate`` — per size; ``gain_share`` = (hit_rate − floor) / (ceiling − floor), the share of
      what more cache can win that this size wins;
    * ``needed_bytes`` — the smallest swept size whose ``gain_share`` ≥ ``near``, and
      ``needed_fraction_of_kv_budget`` — that size over the replica's KV budget per GPU;
    * ``edge_bytes`` — the largest swept size whose ``gain_share`` < ``far`` (below it the histories
      win almost nothing); the cliff lies between ``edge_bytes`` and ``needed_bytes``;
    * ``proportional`` — min(1, size / needed_bytes): the share a policy that kept a fixed subset of
      histories would win (hits in proportion to the room). LRU below it is the cliff.

    Returns a dict of those (arrays per size) and ``token_hit_rate`` (all requests) per size.
    """
    r = default_replica() if r is None else sizing._as_replica(r)
    sizes = np.asarray([v.check_real("cache_bytes", c, minimum=0.0) for c in cache_bytes], dtype=float)
    b = r.block_tokens
    sel = np.isin(trace.kind, list(kinds))
    if not sel.any():
        raise ValueError(f"the trace has no requests of kinds {tuple(kinds)}")
    prompt = trace.prompt_tokens[sel]
    floor = float(((trace.shared_tokens[sel] // b) * b).sum() / prompt.sum())

    def rate(res: CacheResult) -> float:
        return float(res.hit_tokens[sel].sum() / prompt.sum())

    ceiling = rate(simulate(trace, r, cache_bytes=1e18, policy=policy))  # unlimited
    results = [simulate(trace, r, cache_bytes=c, policy=policy) for c in sizes]
    hit = np.asarray([rate(res) for res in results])
    span = ceiling - floor
    share = (hit - floor) / span if span > 0 else np.ones_like(hit)
    reached = np.flatnonzero(share >= near)
    needed = float(sizes[reached[0]]) if reached.size else math.nan
    prop = np.minimum(1.0, sizes / needed) if reached.size else np.full_like(sizes, np.nan)
    low = np.flatnonzero(share < far)
    edge = float(sizes[low[-1]]) if low.size else math.nan
    return {"cache_bytes": sizes, "hit_rate": hit, "floor": floor, "ceiling": ceiling,
            "gain_share": share, "needed_bytes": needed, "proportional": prop, "edge_bytes": edge,
            "needed_fraction_of_kv_budget": needed / r.kv_budget_bytes,
            "token_hit_rate": np.asarray([res.summary["token_hit_rate"] for res in results])}


def break_even_cache_bytes(r: sizing.Replica, isl: int, osl: int, cached_tokens: int,
                           tol_bytes: float = 1e6) -> float:
    """Largest dedicated cache (bytes per GPU) whose saturated throughput is still at least the
    no-cache throughput, by bisection on :func:`saturated_throughput_with_cache`.

    Beyond it the memory the cache holds costs more running sequences than its hits and sharing win.
    Returns ``r.kv_budget_bytes`` if even the whole budget does not fall below.
    """
    sizing._as_replica(r)
    base = saturated_throughput_with_cache(r, isl, osl)["output_tokens_per_s"]

    def ok(c: float) -> bool:
        return saturated_throughput_with_cache(r, isl, osl, c, cached_tokens)["output_tokens_per_s"] >= base

    lo, hi = 0.0, r.kv_budget_bytes
    if ok(hi):
        return hi
    while hi - lo > tol_bytes:
        mid = (lo + hi) / 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def best_case_token_hit_rate(n_requests: int, shared_prefix_tokens: int, unique_tokens: int,
                             block_tokens: int = 16) -> float:
    """Token hit rate of n identical-prefix requests with an unlimited cache.

    The first request misses everything; each later one reuses the shared prefix's full blocks:
    (n − 1)·floor(P / B)·B / (n·(P + U)) (with U ≥ 1, so the last-token rule never bites).
    """
    n = v.check_int("n_requests", n_requests, minimum=1)
    p = v.check_int("shared_prefix_tokens", shared_prefix_tokens, minimum=0)
    u = v.check_int("unique_tokens", unique_tokens, minimum=1)
    b = v.check_int("block_tokens", block_tokens, minimum=1)
    return (n - 1) * (p // b) * b / (n * (p + u))


# ----------------------------------------------------------------------------- what the cache costs

def concurrency_with_cache(r: sizing.Replica, cache_bytes: float, context_tokens: int,
                           shared_tokens: int = 0) -> dict:
    """Sequences that fit at once when ``cache_bytes`` per GPU are set aside for a prefix cache.

    Without a cache each sequence holds ceil(context / B) blocks of the KV pool. A dedicated cache
    takes ``cache_blocks`` from the pool; if it holds the ``shared_tokens`` every sequence starts with,
    running sequences *share* those full blocks instead of each holding a copy, so each needs only
    ceil(context / B) − shared blocks of its own. Returns ``sequences_without``, ``sequences_with``,
    ``cache_blocks``, ``shared_blocks`` and ``sequences_lost`` (negative: the cache *adds* room).
    """
    sizing._as_replica(r)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    s = v.check_int("shared_tokens", shared_tokens, minimum=0, maximum=ctx)
    cache_blocks = cache_capacity_blocks(r, cache_bytes)
    b = r.block_tokens
    per_seq = math.ceil(ctx / b)
    without = r.kv_blocks // per_seq
    pool = max(0, r.kv_blocks - cache_blocks)
    shared = min(s // b, cache_blocks)
    with_ = pool // max(1, per_seq - shared)
    return {"sequences_without": without, "sequences_with": with_, "cache_blocks": cache_blocks,
            "shared_blocks": shared, "sequences_lost": without - with_}


def saturated_throughput_with_cache(r: sizing.Replica, isl: int, osl: int, cache_bytes: float = 0.0,
                                    cached_tokens: int = 0, *, share_blocks: bool = True,
                                    skip_cached_prefill: bool = True) -> dict:
    """Saturated output tokens/s of a replica that sets ``cache_bytes`` per GPU aside for a prefix
    cache whose first ``cached_tokens`` of every prompt (shared by all) it holds.

    Batch = min(:func:`concurrency_with_cache` sequences of isl + osl tokens, ``max_num_seqs``). Each
    iteration every sequence gains a token and batch/osl new prompts are prefilled, each computing only
    its isl − cached uncached tokens with the cached ones as prior context; decoders attend to
    isl + osl/2 tokens: :func:`vidya_lab.sizing.saturated_throughput`'s average step through
    ``Replica.step_time_s``, with only the uncached prefill. With no cache it equals
    ``sizing.saturated_throughput``. Returns ``batch``, ``step_s``, ``output_tokens_per_s``,
    ``cache_blocks``, ``limited_by``.

    ``share_blocks=False`` (running sequences each hold their own copy of the prefix) and
    ``skip_cached_prefill=False`` (the prefix is prefilled anyway) switch one effect off at a time,
    to show what each is worth.
    """
    sizing._as_replica(r)
    isl = v.check_int("isl", isl, minimum=1)
    osl = v.check_int("osl", osl, minimum=1)
    k = v.check_int("cached_tokens", cached_tokens, minimum=0, maximum=isl - 1)
    conc = concurrency_with_cache(r, cache_bytes, isl + osl, k if share_blocks else 0)
    # the cache holds only whole blocks of the prefix it has room for
    k_held = min(k // r.block_tokens, cache_capacity_blocks(r, cache_bytes)) * r.block_tokens
    if not skip_cached_prefill:
        k_held = 0
    kv_limit = conc["sequences_with"]
    batch = min(kv_limit, r.max_num_seqs)
    if batch < 1 or not r.weights_fit:
        return {"batch": 0, "step_s": math.inf, "output_tokens_per_s": 0.0,
                "cache_blocks": conc["cache_blocks"], "limited_by": "memory"}
    micro = batch / r.pp
    new = micro / osl
    u = isl - k_held
    step = r.step_time_s(new * u, new * (u * k_held + u * (u + 1) / 2), new * isl, new, micro,
                         micro * (isl + osl / 2.0))
    return {"batch": batch, "step_s": step, "output_tokens_per_s": batch / step,
            "cache_blocks": conc["cache_blocks"],
            "limited_by": "memory" if kv_limit < r.max_num_seqs else "engine cap"}


# ----------------------------------------------------------------------------- speculative decoding

def spec_expected_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens per target-model step: (1 − α^(γ+1)) / (1 − α); γ + 1 at α = 1.

    α is the probability the target accepts a draft token (i.i.d.), γ the draft tokens per step.
    Leviathan et al. (arXiv:2211.17192) §3.1, Eq. 1. Limits: α → 0 gives 1 (only the target's own
    token), α → 1 gives γ + 1.
    """
    a = v.check_fraction("alpha", alpha)
    g = v.check_int("gamma", gamma, minimum=0)
    if a == 1.0:
        return float(g + 1)
    return (1.0 - a ** (g + 1)) / (1.0 - a)


def spec_walltime_speedup(alpha: float, gamma: int, draft_cost_ratio: float) -> float:
    """Expected wall-time improvement: (1 − α^(γ+1)) / ((1 − α)(γc + 1)).

    c = draft step time / target step time. Leviathan et al. Theorem 3.8; it assumes the target's
    step costs the same for γ + 1 tokens as for one (true at batch 1, memory-bound), which
    :func:`spec_decode_at_batch` does not assume.
    """
    c = v.check_real("draft_cost_ratio", draft_cost_ratio, minimum=0.0)
    return spec_expected_tokens(alpha, gamma) / (gamma * c + 1.0)


def spec_decode_at_batch(r: sizing.Replica, batch: int, context_tokens: int, alpha: float,
                         gamma: int, draft_cost_ratio: float = 0.05) -> dict:
    """Speculative decoding through the cost model at a given batch.

    Plain decoding: one step of ``batch`` sequences, one token each
    (:func:`vidya_lab.sizing.decode_step_time_s`). Speculative: the draft runs γ steps costing
    γ·c·(plain step), then the target verifies γ + 1 tokens per sequence in one iteration: a chunk of
    γ + 1 tokens per sequence attending to its context, with γ + 1 logit rows
    (``Replica.step_time_s``). Each sequence advances :func:`spec_expected_tokens` tokens.

    At batch 1 the verify step is memory-bound and costs about one plain step (the Theorem 3.8 gain);
    at large batch it is compute-bound and costs up to γ + 1 plain steps, and the gain turns into a
    loss. Returns ``plain_step_s``, ``verify_step_s``, ``draft_s``, ``expected_tokens``,
    ``plain_tokens_per_s``, ``spec_tokens_per_s``, ``speedup``.
    """
    sizing._as_replica(r)
    b = v.check_int("batch", batch, minimum=1)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    g = v.check_int("gamma", gamma, minimum=0)
    c = v.check_real("draft_cost_ratio", draft_cost_ratio, minimum=0.0)
    e = spec_expected_tokens(alpha, g)
    plain = sizing.decode_step_time_s(r, b, ctx)
    t = g + 1
    verify = r.step_time_s(b * t, b * (t * ctx + t * (t + 1) / 2), b * (ctx + t), b * t, 0, 0)
    draft = g * c * plain
    spec_tps = b * e / (verify + draft)
    return {"batch": b, "plain_step_s": plain, "verify_step_s": verify, "draft_s": draft,
            "expected_tokens": e, "plain_tokens_per_s": b / plain, "spec_tokens_per_s": spec_tps,
            "speedup": spec_tps / (b / plain)}


def spec_break_even_batch(r: sizing.Replica, context_tokens: int, alpha: float, gamma: int,
                          draft_cost_ratio: float = 0.05, max_batch: int = 4096) -> int | None:
    """Smallest batch at which speculative decoding is slower than plain decoding
    (:func:`spec_decode_at_batch` speedup < 1), or None if it never is up to ``max_batch``.

    The speedup falls with batch (the verify step turns compute-bound); found by bisection.
    """
    hi = v.check_int("max_batch", max_batch, minimum=1)

    def loses(b: int) -> bool:
        return spec_decode_at_batch(r, b, context_tokens, alpha, gamma, draft_cost_ratio)["speedup"] < 1.0

    if not loses(hi):
        return None
    lo = 1
    if loses(lo):
        return 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if loses(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ----------------------------------------------------------------------------- quantisation

QUANT_OPTIONS = (("bf16", "bf16"), ("fp8", "fp8"), ("bf16", "fp8"), ("int4", "bf16"))


def quantisation_table(model: str = TANVI.model_id, gpu: str = TANVI.candidate_gpu_ids[0],
                       tp: int | None = None,
                       isl: int = TANVI.prompt_tokens_mean, osl: int = TANVI.answer_tokens_mean,
                       batch: int = 32, options=QUANT_OPTIONS) -> list[dict]:
    """Memory, concurrency and speed of one layout at several (weight, KV) precisions.

    Each row (all from :mod:`vidya_lab.sizing`): ``precision``, ``kv_precision``,
    ``weights_bytes_per_gpu``, ``kv_bytes_per_token`` (whole model), ``kv_budget_bytes`` (per GPU),
    ``max_concurrent_sequences`` (isl + osl tokens each), ``ttft_s`` (isl tokens, idle), ``tpot_s``
    (``batch`` sequences, or as many as fit), ``output_tokens_per_s`` (saturated). Quality is not here:
    fewer bits can change answers, and only an evaluation on your own tasks says by how much.
    ``tp`` defaults to the bf16 layout of :func:`default_replica`, so every row is the same GPUs.
    """
    if tp is None:
        tp = default_replica(model, gpu, "bf16").tp
    rows = []
    for prec, kvp in options:
        r = sizing.Replica(model, gpu, tp=tp, precision=prec, kv_precision=kvp)
        fit = r.weights_fit and sizing.max_concurrent_sequences(r, isl + osl) >= 1
        b = min(batch, sizing.max_concurrent_sequences(r, isl + osl)) if fit else 0
        rows.append({
            "precision": r.precision, "kv_precision": r.kv_precision,
            "weights_bytes_per_gpu": r.weights_bytes_per_gpu,
            "kv_bytes_per_token": sizing.kv_bytes_per_token(r.model, r.kv_precision),
            "kv_budget_bytes": r.kv_budget_bytes,
            "max_concurrent_sequences": sizing.max_concurrent_sequences(r, isl + osl),
            "ttft_s": sizing.prefill_time_s(r, isl) if fit else None,
            "tpot_s": sizing.decode_step_time_s(r, b, isl + osl // 2) if fit else None,
            "output_tokens_per_s": sizing.saturated_throughput(r, isl, osl)["output_tokens_per_s"],
        })
    return rows


# ----------------------------------------------------------------------------- disaggregation

def prefill_interference(r: sizing.Replica, prompt_tokens: int, batch: int, context_tokens: int) -> dict:
    """How much one prefill stretches the decode step it shares (the case for disaggregation).

    Returns ``decode_step_s`` (``batch`` decoders alone), ``mixed_step_s`` (the same step with one
    ``prompt_tokens`` prefill in it, unchunked up to ``max_batched_tokens``) and ``stretch``
    (their ratio): every running student's next token waits that long.
    """
    sizing._as_replica(r)
    p = v.check_int("prompt_tokens", prompt_tokens, minimum=1)
    b = v.check_int("batch", batch, minimum=1)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    chunk = min(p, r.max_batched_tokens)
    alone = sizing.iteration_time_s(r, decode_contexts=[ctx] * b)
    mixed = sizing.iteration_time_s(r, prefill=[(chunk, 0)], decode_contexts=[ctx] * b)
    return {"decode_step_s": alone, "mixed_step_s": mixed, "stretch": mixed / alone}
