"""Blocks and their keys: how a prefix cache recognises a prefix it has seen.

A sequence is cut into fixed-size blocks of ``block_tokens`` tokens (vLLM's default 16). Only full
blocks are cached; the partial last block is not. Each block's key is a hash *chained* over every
block before it: ``key_i = hash((key_{i-1}, tokens of block i))``, starting from :data:`ROOT_HASH`.
Two requests share block i only when their first ``(i+1)·block_tokens`` tokens are identical, so a
one-token change in block k makes blocks k, k+1, … miss even if their own tokens match.

Python's tuple hash is deterministic for integers and 64 bits wide; a collision would merge two
blocks (vLLM offers SHA-256 keys for that reason). With the token counts of this book the chance is
negligible.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import _validate as v

#: Chain seed of the first block of every sequence (any fixed integer).
ROOT_HASH = 0x5EED_CAC4E


def _token_tuple(tokens) -> tuple[int, ...]:
    """``tokens`` as a tuple of Python ints, or a TypeError naming ``tokens``.

    One C-speed pass checks them: the sum of Python ints is an int, and a float, a NaN or a numpy
    scalar among them changes its type (then the slow path names the offending entry).
    """
    if isinstance(tokens, np.ndarray):
        if tokens.ndim != 1 or (tokens.size and tokens.dtype.kind not in "iu"):
            raise TypeError(f"tokens must be a 1-D array of integer token ids, got shape "
                            f"{tokens.shape} and dtype {tokens.dtype}")
        return tuple(tokens.tolist())
    if not isinstance(tokens, (list, tuple)):
        raise TypeError(f"tokens must be a sequence or 1-D array of integer token ids, got "
                        f"{v._show(tokens)} ({type(tokens).__name__})")
    toks = tuple(tokens)
    try:
        ok = type(sum(toks)) is int
    except TypeError:
        ok = False
    if ok:
        return toks
    for t in toks:  # slow path: name the entry, accept numpy integers
        if v._is_bool(t) or not isinstance(t, (int, np.integer)):
            raise TypeError(f"tokens must hold integer token ids, got {v._show(t)} "
                            f"({type(t).__name__})")
    return tuple(int(t) for t in toks)


def chain(parent: int, tokens, block_tokens: int) -> list[int]:
    """Keys of the full blocks of ``tokens`` (a tuple or list of ints), chained from ``parent``
    (no validation: internal)."""
    t = tokens if isinstance(tokens, tuple) else tuple(tokens)
    out: list[int] = []
    h = parent
    b = block_tokens
    for start in range(0, (len(t) // b) * b, b):
        h = hash((h, t[start:start + b]))
        out.append(h)
    return out


def block_hashes(tokens, block_tokens: int = 16, *, parent: int = ROOT_HASH) -> list[int]:
    """Chained keys of the full blocks of ``tokens``: key_i = hash((key_{i-1}, block_i tokens)).

    Parameters
    ----------
    tokens : token ids (a list, tuple or 1-D integer array of integers).
    block_tokens : tokens per block (≥ 1).
    parent : key the chain starts from (:data:`ROOT_HASH` for a sequence's first block).

    Returns
    -------
    list of int, one key per full block (``len(tokens) // block_tokens`` of them).
    """
    b = v.check_int("block_tokens", block_tokens, minimum=1)
    p = v.check_int("parent", parent)
    return chain(p, _token_tuple(tokens), b)
