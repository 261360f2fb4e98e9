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


def _token_list(tokens) -> list[int]:
    """``tokens`` as a list of Python ints ≥ 0, or a TypeError/ValueError naming ``tokens``."""
    if isinstance(tokens, np.ndarray):
        if tokens.ndim != 1 or (tokens.size and tokens.dtype.kind not in "iu"):
            raise TypeError(f"tokens must be a 1-D array of integer token ids, got shape "
                            f"{tokens.shape} and dtype {tokens.dtype}")
        toks = tokens.tolist()
    elif isinstance(tokens, (list, tuple)):
        toks = tokens if isinstance(tokens, list) else list(tokens)
        if not all(type(t) is int for t in toks):
            bad = next(t for t in toks if type(t) is not int)
            if isinstance(bad, (bool, np.bool_)) or not isinstance(bad, (int, np.integer)):
                raise TypeError(f"tokens must hold integer token ids, got {v._show(bad)} "
                                f"({type(bad).__name__})")
            toks = [int(t) for t in toks]
    else:
        raise TypeError(f"tokens must be a sequence or 1-D array of integer token ids, got "
                        f"{v._show(tokens)} ({type(tokens).__name__})")
    if toks and min(toks) < 0:
        raise ValueError(f"tokens must be token ids >= 0, got {min(toks)}")
    return toks


def chain(parent: int, tokens: list[int], block_tokens: int) -> list[int]:
    """Keys of the full blocks of ``tokens``, chained from ``parent`` (no validation: internal)."""
    out: list[int] = []
    h = parent
    b = block_tokens
    for start in range(0, (len(tokens) // b) * b, b):
        h = hash((h, tuple(tokens[start:start + b])))
        out.append(h)
    return out


def block_hashes(tokens, block_tokens: int = 16, *, parent: int = ROOT_HASH) -> list[int]:
    """Chained keys of the full blocks of ``tokens``: key_i = hash((key_{i-1}, block_i tokens)).

    Parameters
    ----------
    tokens : token ids (a list, tuple or 1-D integer array; each ≥ 0).
    block_tokens : tokens per block (≥ 1).
    parent : key the chain starts from (:data:`ROOT_HASH` for a sequence's first block).

    Returns
    -------
    list of int, one key per full block (``len(tokens) // block_tokens`` of them).
    """
    b = v.check_int("block_tokens", block_tokens, minimum=1)
    p = v.check_int("parent", parent)
    return chain(p, _token_list(tokens), b)
