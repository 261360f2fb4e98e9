"""KV memory: the block pool, and the decoding set that draws a new block every ``B`` tokens.

The pool has ``r.kv_blocks`` blocks of ``B = r.block_tokens`` tokens (the sizing memory model,
:class:`vidya_lab.sizing.Replica`). Two rules decide what a request holds
(:data:`~vidya_lab.admission.KV_POLICIES`):

``"preempt"`` (vLLM's paged allocation)
    Admission takes the blocks of the whole prompt, with a watermark of 1 % of the pool left free;
    a decoding sequence takes one more block each time its context crosses a block boundary. When a
    decode round needs more blocks than are free, the engine preempts the newest request.
``"reserve"`` (TensorRT-LLM's "guaranteed no evict")
    Admission takes the blocks of the prompt **and** every output token up front; nothing is ever
    preempted, at the price of admitting fewer requests.

The decoding set is kept as aggregates, so a step costs the same whether 2 or 200 sequences decode:
a count, the sum of their context offsets (``context of i at round k = off[i] + k``), a histogram of
offsets modulo ``B`` (the sequences whose context crosses a block boundary at round ``k`` are those
with ``off ≡ 1 − k (mod B)``, :meth:`DecodeSet.blocks_needed`), and, per decode round, the sequences
that emit their last token in it (:meth:`DecodeSet.finishing`), with a heap of those rounds so the
engine knows how many rounds it may run before the next finish (:meth:`DecodeSet.next_due`).
"""

from __future__ import annotations

import heapq
import math
from array import array

from vidya_lab import sizing


def blocks_for(tokens: int, block_tokens: int) -> int:
    """Blocks that hold ``tokens`` tokens: ``ceil(tokens / B)``."""
    return -(-tokens // block_tokens)


class KVPool:
    """The replica's KV blocks: how many are free, and the rule for taking them.

    Attributes
    ----------
    total, free : blocks in the pool and blocks free now.
    block_tokens : ``B``, tokens per block.
    reserve : True under ``"reserve"`` (whole requests reserved up front).
    watermark : blocks admission leaves free (1 % of the pool under ``"preempt"``, 0 otherwise).
    """

    def __init__(self, r: sizing.Replica, kv_policy: str, watermark_fraction: float) -> None:
        self.total = self.free = r.kv_blocks
        self.block_tokens = r.block_tokens
        self.reserve = kv_policy == "reserve"
        self.watermark = 0 if self.reserve else int(math.ceil(watermark_fraction * self.total))

    @property
    def used(self) -> int:
        """Blocks held now."""
        return self.total - self.free

    def max_request_tokens(self) -> int:
        """The most prompt + output tokens one request may have and still ever fit: a request of
        ``n`` tokens holds ``ceil((n − 1) / B)`` blocks at its last step (its last token is
        emitted, never stored)."""
        return (self.total - self.watermark) * self.block_tokens + 1

    def admission_blocks(self, prefill_tokens: int, remaining_output: int) -> int:
        """Blocks a request takes when admitted: its prompt (``"preempt"``), or its prompt and
        every output token but the last (``"reserve"``)."""
        if self.reserve:
            return blocks_for(prefill_tokens + remaining_output - 1, self.block_tokens)
        return blocks_for(prefill_tokens, self.block_tokens)

    def try_take(self, blocks: int) -> bool:
        """Take ``blocks`` for an admission if that leaves the watermark free; False otherwise."""
        if blocks + self.watermark > self.free:
            return False
        self.free -= blocks
        return True


class DecodeSet:
    """The decoding sequences as aggregates (see the module docstring), and the decode rounds.

    Attributes
    ----------
    n : sequences decoding now.
    off_sum : Σ of their offsets (context at round ``k`` = offset + ``k``).
    phase : ``phase[x]`` = decoders with offset ≡ ``x`` (mod B).
    off : each request's offset while it decodes.
    buckets : decode round → ``[(request, epoch)]`` that emit their last token in it.
    due : a heap of the rounds that have a bucket (entries of emptied buckets are dropped lazily).
    rounds : the end time of every decode round so far, seconds (a compact ``array('d')``: 8 bytes
        a round; every decode token's emit time is one of these).
    """

    def __init__(self, n_requests: int, block_tokens: int) -> None:
        self.n = 0
        self.off_sum = 0
        self.block_tokens = block_tokens
        self.phase = [0] * block_tokens
        self.off = [0] * n_requests
        self.buckets: dict[int, list[tuple[int, int]]] = {}
        self.due: list[int] = []
        self.rounds = array("d")

    def join(self, i: int, offset: int, last_round: int, epoch: int) -> None:
        """Request ``i`` starts decoding with context ``offset + k`` at round ``k``, and emits its
        last token in round ``last_round``."""
        self.off[i] = offset
        self.n += 1
        self.off_sum += offset
        self.phase[offset % self.block_tokens] += 1
        bucket = self.buckets.get(last_round)
        if bucket is None:
            self.buckets[last_round] = [(i, epoch)]
            heapq.heappush(self.due, last_round)
        else:
            bucket.append((i, epoch))

    def leave(self, i: int) -> None:
        """Request ``i`` stops decoding (finished or preempted)."""
        o = self.off[i]
        self.n -= 1
        self.off_sum -= o
        self.phase[o % self.block_tokens] -= 1

    def blocks_needed(self, k: int) -> int:
        """New blocks decode round ``k`` needs: one per sequence crossing a block boundary."""
        return self.phase[(1 - k) % self.block_tokens]

    def context_sum(self, k: int) -> int:
        """Σ of the decoders' contexts at round ``k``, tokens (what attention reads)."""
        return self.off_sum + self.n * k

    def finishing(self, k: int) -> list[tuple[int, int]]:
        """The ``(request, epoch)`` entries whose last token is due in round ``k`` (removed)."""
        return self.buckets.pop(k, ())

    def next_due(self, k: int) -> int | None:
        """The first round ``≥ k`` in which some entry emits its last token (it may be a stale
        entry of a preempted request), ``None`` if there is none."""
        due, buckets = self.due, self.buckets
        while due and (due[0] < k or due[0] not in buckets):
            heapq.heappop(due)
        return due[0] if due else None
