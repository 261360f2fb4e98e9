"""Requests with their token ids, stored the way they share: a tree of token segments.

In Tanvi's traffic almost every prompt begins with the same syllabus, and a follow-up's prompt is its
conversation's previous prompt and answer plus a new question. Storing each prompt in full would hold
the syllabus once per request (a 200,000-request replay: gigabytes). A :class:`PromptTrace` stores each
*segment* of tokens once — the syllabus, each subject prompt, each question, each answer — and each
request as the path of segments from the root to its question (its prompt) and on to its answer.
``trace.prompts[i]`` rebuilds request i's prompt on demand.

The same tree makes hashing cheap: a segment's block keys continue its parent's chain
(:func:`vidya_lab.caching.hashing.chain`), so the syllabus is hashed once, not once per request, and
:meth:`PromptTrace.sequence_hashes` gives request i's keys by joining the keys of its path.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from vidya_lab import _validate as v
from vidya_lab.caching.hashing import ROOT_HASH, _token_tuple, chain
from vidya_lab.workload import Workload

KINDS = ("new", "follow-up", "upload")


def _path(parent: np.ndarray, seg: int) -> list[int]:
    """Segments from the root to ``seg``, root first."""
    out = []
    while seg >= 0:
        out.append(seg)
        seg = int(parent[seg])
    out.reverse()
    return out


class _PathTokens(Sequence):
    """``[i]``: the tokens of the path to segment ``ends[i]`` (an int32 array), built on demand."""

    def __init__(self, trace: PromptTrace, ends: np.ndarray, whole_path: bool) -> None:
        self._t, self._ends, self._whole = trace, ends, whole_path

    def __len__(self) -> int:
        return int(self._ends.size)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        seg = int(self._ends[i])
        t = self._t
        segs = _path(t.seg_parent, seg) if self._whole else [seg]
        return np.concatenate([t.tokens[t.seg_start[s]:t.seg_start[s] + t.seg_len[s]] for s in segs])


class _PathKeys(Sequence):
    """``[i]``: request i's chained block keys (a list of int), joined from its path's segments."""

    def __init__(self, trace: PromptTrace, keys: np.ndarray, key_start: np.ndarray) -> None:
        self._t, self._keys, self._start = trace, keys, key_start

    def __len__(self) -> int:
        return len(self._t)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        t, start, keys = self._t, self._start, self._keys
        segs = _path(t.seg_parent, int(t.answer_seg[i]))
        return np.concatenate([keys[start[s]:start[s + 1]] for s in segs]).tolist()


@dataclass(frozen=True, eq=False)
class PromptTrace:
    """Requests with their actual token ids, for replaying through a prefix cache.

    Attributes (one entry per request, in arrival order)
    ----------------------------------------------------
    arrival_s : float64, seconds, sorted.
    prompt_tokens, answer_tokens : int64, lengths in tokens.
    kind : "new" (first turn of a conversation), "follow-up" or "upload".
    conversation : the conversation each request belongs to.
    subject : the subject prompt it uses (-1: none).
    shared_tokens : leading tokens shared by design (syllabus + subject prompt), per request.
    prompts, answers : read-only sequences: ``prompts[i]`` is request i's prompt as an int32 array of
        token ids (rebuilt from the segment tree), ``answers[i]`` its answer (what a follow-up turn
        carries in its history).

    The token store: ``tokens`` (int32, every segment once), ``seg_start``/``seg_len`` (where each
    segment lies in it), ``seg_parent`` (the segment it continues, -1 for a root; parents come
    first), and per request ``prompt_seg`` (the last segment of its prompt) and ``answer_seg`` (its
    answer, whose parent is ``prompt_seg``). Build one with :func:`vidya_lab.caching.tutor_trace` or
    :meth:`from_prompts`.
    """

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    answer_tokens: np.ndarray
    kind: np.ndarray
    conversation: np.ndarray
    subject: np.ndarray
    shared_tokens: np.ndarray
    tokens: np.ndarray
    seg_start: np.ndarray
    seg_len: np.ndarray
    seg_parent: np.ndarray
    prompt_seg: np.ndarray
    answer_seg: np.ndarray
    _keys: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @property
    def prompts(self) -> Sequence:
        """Each request's prompt, token ids (int32 arrays, built on access)."""
        return _PathTokens(self, self.prompt_seg, whole_path=True)

    @property
    def answers(self) -> Sequence:
        """Each request's answer, token ids (int32 arrays)."""
        return _PathTokens(self, self.answer_seg, whole_path=False)

    def _segment_keys(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Every segment's own block keys (int64, concatenated) and where each segment's begin."""
        parent, start, length, toks = self.seg_parent, self.seg_start, self.seg_len, self.tokens
        n_seg = int(length.size)
        path_len = np.zeros(n_seg, dtype=np.int64)
        last_key = np.zeros(n_seg, dtype=np.int64)
        keys = array("q")
        key_start = np.zeros(n_seg + 1, dtype=np.int64)
        for s in range(n_seg):
            p = int(parent[s])
            before = int(path_len[p]) if p >= 0 else 0
            tail = self._tail(p, before % b) if p >= 0 else []
            own = toks[start[s]:start[s] + length[s]].tolist()
            new = chain(int(last_key[p]) if p >= 0 else ROOT_HASH, tail + own, b)
            keys.extend(new)
            key_start[s + 1] = len(keys)
            path_len[s] = before + int(length[s])
            last_key[s] = new[-1] if new else (last_key[p] if p >= 0 else ROOT_HASH)
        return np.frombuffer(keys, dtype=np.int64), key_start

    def _tail(self, seg: int, r: int) -> list[int]:
        """The last ``r`` tokens of the path ending at ``seg`` (the partial block a child continues)."""
        parts = []
        while r > 0 and seg >= 0:
            n = int(self.seg_len[seg])
            take = min(r, n)
            end = int(self.seg_start[seg]) + n
            parts.append(self.tokens[end - take:end].tolist())
            r -= take
            seg = int(self.seg_parent[seg])
        return [t for part in reversed(parts) for t in part]

    def sequence_hashes(self, block_tokens: int) -> Sequence:
        """Chained block keys of each request's prompt + answer: ``[i]`` is a list of int.

        The segment keys are computed once per block size (each segment hashed once, continuing
        its parent's chain) and joined per request on access, so memory holds one key per distinct
        block, not one per request and block. Equal to ``block_hashes(prompt + answer, block_tokens)``.
        """
        b = v.check_int("block_tokens", block_tokens, minimum=1)
        if b not in self._keys:
            self._keys[b] = self._segment_keys(b)
        return _PathKeys(self, *self._keys[b])

    def to_workload(self) -> Workload:
        """The same requests as a :class:`vidya_lab.workload.Workload` (lengths only): prefix id = the
        subject (syllabus-only requests get the subject count as id), prefix tokens = shared tokens."""
        pid = np.where(self.shared_tokens > 0, np.where(self.subject >= 0, self.subject,
                                                         int(self.subject.max(initial=0)) + 1), -1)
        return Workload.from_arrays(self.arrival_s, self.prompt_tokens, self.answer_tokens,
                                    prefix_id=pid, prefix_tokens=self.shared_tokens, klass=self.kind)

    @classmethod
    def from_prompts(cls, arrival_s, prompts, answers, *, kind=None, max_tokens: int = 200_000_000
                     ) -> PromptTrace:
        """A trace of your own requests: token ids of each prompt and answer (no shared structure is
        assumed; the cache finds whatever prefixes the prompts share).

        Parameters
        ----------
        arrival_s : arrival times, seconds (sorted here).
        prompts, answers : one sequence of token ids per request (each ≥ 0; prompts non-empty).
        kind : one label of :data:`KINDS` per request (default all "new").
        max_tokens : most tokens held in all (a bound on memory: 4 bytes each).
        """
        arr = v.check_reals("arrival_s", arrival_s, minimum=0.0, max_length=10_000_000)
        n = arr.size
        if len(prompts) != n or len(answers) != n:
            raise ValueError(f"prompts and answers need one entry per arrival ({n}), got "
                             f"{len(prompts)} and {len(answers)}")
        kinds = v.check_labels("kind", "new" if kind is None else kind, n)
        for k in set(kinds.tolist()):
            v.check_choice("kind", k, KINDS)
        segs = [np.asarray(_token_tuple(s), dtype=np.int64) for pair in zip(prompts, answers, strict=True)
                for s in pair]
        total = sum(s.size for s in segs)
        v.check_work("PromptTrace.from_prompts", total, max_tokens, unit="tokens")
        if any(s.size == 0 for s in segs[::2]):
            raise ValueError("every prompt needs at least one token")
        if total and (max(int(s.max(initial=0)) for s in segs) >= 2**31
                      or min(int(s.min(initial=0)) for s in segs) < 0):
            raise ValueError("token ids must lie in [0, 2**31)")
        order = np.argsort(arr, kind="stable")
        lens = np.asarray([s.size for s in segs], dtype=np.int64)
        ids = np.arange(2 * n, dtype=np.int64)
        parent = np.where(ids % 2 == 1, ids - 1, -1)
        return cls(arrival_s=arr[order], prompt_tokens=lens[0::2][order],
                   answer_tokens=lens[1::2][order], kind=kinds[order],
                   conversation=np.arange(n, dtype=np.int64)[order],
                   subject=np.full(n, -1, dtype=np.int64), shared_tokens=np.zeros(n, dtype=np.int64),
                   tokens=(np.concatenate(segs) if segs else np.empty(0)).astype(np.int32),
                   seg_start=np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64),
                   seg_len=lens, seg_parent=parent, prompt_seg=ids[0::2][order],
                   answer_seg=ids[1::2][order])
