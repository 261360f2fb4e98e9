"""The prefix cache: blocks with reference counts, and LRU eviction (vLLM's and SGLang's rule).

* A request looks up its blocks in order and reuses the longest cached run (at most
  ``prompt_tokens − 1`` tokens: the last prompt token is always computed, its logits give the first
  output token, as vLLM does). Its blocks are *pinned* (reference counted) while it runs and are never
  evicted then. Its new full blocks are inserted at admission, those its answer fills at its finish.
* The cache holds at most ``capacity_blocks`` blocks (:func:`vidya_lab.caching.cache_capacity_blocks`
  turns bytes per GPU into blocks through the KV bytes of :mod:`vidya_lab.sizing`).
* When full, it evicts the least recently used unpinned block. ``policy="lru-leaf"`` (default)
  evicts only leaves (blocks no cached block extends), as SGLang's radix tree does: a prefix is never
  dropped before its extensions, which would be unreachable without it. ``policy="lru"`` evicts any
  unpinned block (vLLM's free-block queue; ties go to the deepest block first).
  If every block is pinned, new blocks are simply not stored (``blocks_not_stored``).
  A request that pins (touches) its chain from the first block makes an ancestor never less
  recently used than its descendants, so the two policies evict the same blocks; they differ for
  caches used out of chain order.

The idea is in :meth:`PrefixCache.admit` (reuse, pin, insert) and :meth:`PrefixCache.release`
(store the answer's blocks, unpin, make evictable); eviction is ``_make_room``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from vidya_lab import _validate as v
from vidya_lab.caching.hashing import ROOT_HASH

POLICIES = ("lru-leaf", "lru")


def _check_keys(name: str, hashes) -> None:
    if not isinstance(hashes, (list, tuple, np.ndarray)):
        raise TypeError(f"{name} must be a list of block keys (see block_hashes), got "
                        f"{type(hashes).__name__}")


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
        _check_keys("hashes", hashes)
        if max_blocks is not None:
            max_blocks = v.check_int("max_blocks", max_blocks, minimum=0)
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
        _check_keys("hashes", hashes)
        lookup_blocks = v.check_int("lookup_blocks", lookup_blocks, minimum=0)
        stop = len(hashes) if insert_blocks is None else min(
            v.check_int("insert_blocks", insert_blocks, minimum=0), len(hashes))
        self._clock += 1
        clock, get = self._clock, self._blocks.get
        n = 0
        for key in hashes[:stop]:  # the cached run: find and pin it in one pass
            e = get(key)
            if e is None:
                break
            e[0] += 1
            e[1] = clock
            n += 1
        pinned = list(hashes[:n])
        complete = self._insert_or_pin(hashes, n, stop, pinned)
        return min(n, lookup_blocks), _Handle(pinned, complete, stop, self)

    def release(self, handle: _Handle, extra_hashes=()) -> None:
        """A request finishes: store the blocks its answer filled (if its prompt chain is whole),
        then unpin all its blocks, deepest first, so they become evictable."""
        v.check_instance("handle", handle, _Handle, "handle returned by PrefixCache.admit")
        _check_keys("extra_hashes", extra_hashes)
        if handle.owner is not self:
            raise ValueError("handle belongs to another PrefixCache (release it where it was admitted)")
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
    owner: PrefixCache
    released: bool = False
