"""The coarse fleet model of one replica: the cost model turned into tables, once.

A day of exam traffic is about two million requests on tens of replicas: too many for the
iteration-level simulator of chapter 5 (:mod:`vidya_lab.admission`). The fleet uses a coarser
model of one replica, built once from THE cost model (:mod:`vidya_lab.sizing`) as tables
(:func:`replica_model`):

* a replica has ``slots`` batch slots (the sequences of mean length whose KV cache fits, capped by the
  engine's ``max_num_seqs``); a request waits in its replica's FIFO queue for a free slot;
* a *prefill server* runs the admitted prompts one at a time (Lindley's recurrence: a prompt starts
  when it is ready and the previous one is done); each prefill takes the cost model's iterations
  of that prompt (chunked at ``max_batched_tokens``) with the batch decoding alongside;
* in the time prefills leave, the engine runs decode-only iterations of the batch
  (``decode_s[n]`` with ``n`` in the batch); every iteration of either kind gives each sequence one
  token;
* the first token comes when the prompt's prefill ends (plus the calibration's request overhead
  and half a decode iteration for the one under way when it arrives).

**The prefix cache.** ``cached_prefix_tokens`` is the part of every prompt already in the replica's
prefix cache (Tanvi's syllabus and subject prompt, which a replica warms before its readiness
check, :class:`~vidya_lab.autoscaling.cold_start.ColdStart`). Its prefill then computes only the
uncached suffix, whose attention still reads the cached context: the chunk of ``c`` tokens after
``k`` cached ones costs :func:`vidya_lab.sizing.iteration_time_s` ``(r, prefill=[(c, k)])``. The
cached blocks are shared by every sequence (as vLLM's automatic prefix caching shares them), so a
sequence's own KV is only its uncached tokens, and ``resident_prefix_tokens`` (default: one
prefix) are held once. The default, 0, counts no cache: today's numbers exactly.

**The inter-token tail.** A mean TPOT hides the gap behind one long iteration. The model states a
tail (:meth:`ReplicaModel.stall_s`): a step of the fleet's clock in which the replica prefills
prompts runs, at its longest, one iteration carrying the largest uncached prompt it admitted (as
many of its tokens as the token budget ``max_batched_tokens`` leaves beside the decodes, the
engine's chunk), timed between a decode-only iteration and a full budget's
(``mixed_full_s[n]``); a request's longest gap is the longest such iteration while it decoded.
``tests/test_autoscaling_replica.py`` checks it against the iteration-level simulator on a window.

:meth:`ReplicaModel.steady_state` is the model's fixed point at a steady rate, and
:meth:`ReplicaModel.capacity_rps` the one definition of a replica's capacity that every policy's
utilisation divides by (:func:`vidya_lab.autoscaling.policies.utilisation`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from vidya_lab import _cache, sizing
from vidya_lab import _validate as v
from vidya_lab.autoscaling.cold_start import as_replica
from vidya_lab.scenario import TANVI

#: The most batch slots one coarse replica may have: its tables cost (slots + 1) × 40 cost-model
#: calls per chunk to build, about a second at this bound (vLLM's default max_num_seqs is 256).
MAX_SLOTS = 4096
_GRID_POINTS = 40


@dataclass(frozen=True, eq=False)
class ReplicaModel:
    """The fleet's coarse model of one replica: tables computed once from the cost model.

    A replica is two things sharing one engine (module docstring): ``slots`` batch slots that
    decoding sequences hold, and a *prefill server* that runs one prompt at a time. Each prefill is
    ``prefill_table_s[n, prompt]`` seconds (the cost model's iterations of that prompt, chunked at
    ``max_batched_tokens``, with the ``n`` decodes riding along); between prefills the engine runs
    decode-only iterations of ``decode_s[n]`` seconds. Every iteration of either kind gives every
    decoding sequence one token, so a replica that spends a fraction ``u`` of its time in prefills
    gives each sequence ``λ·chunks + (1 − u) / decode_s[n]`` tokens per second.

    Attributes
    ----------
    replica : the :class:`vidya_lab.sizing.Replica` it describes.
    prompt_tokens_mean, output_tokens_mean : the workload's mean lengths, tokens.
    slots : batch slots (sequences of mean length whose KV fits, at most ``max_num_seqs``).
    decode_s : ``decode_s[n]``: a decode-only iteration of ``n`` sequences of mean context
        (prompt + half the answer), seconds (``decode_s[0] = 0``).
    prompt_grid : prompt lengths of the prefill table's columns, tokens.
    prefill_table_s : ``[n, j]``: seconds to prefill a ``prompt_grid[j]``-token prompt while ``n``
        sequences decode alongside (only its part beyond ``cached_prefix_tokens`` is computed).
    prefill_iterations : ``[j]``: iterations (chunks) that prefill takes.
    overhead_s : time outside the engine before the first token (the calibration's
        ``request_overhead_s``), seconds.
    tpot_target_s, ttft_target_s : the targets :meth:`capacity_rps` is computed for, seconds.
    kv_capacity_tokens : tokens the replica's KV cache holds.
    cached_prefix_tokens : tokens of every prompt found in the prefix cache (0: none counted).
    mixed_full_s : ``mixed_full_s[n]``: an iteration of ``n`` decodes whose prompt chunk fills the
        rest of the token budget (``budget_tokens − n`` tokens after the cached prefix), seconds:
        the longest iteration the engine runs (:meth:`stall_s`).
    budget_tokens : the token budget of one iteration (the replica's ``max_batched_tokens``).

    With pipeline parallelism (pp > 1) prompts are prefilled one after another, not pipelined
    across stages: pessimistic for pp layouts.
    """

    replica: sizing.Replica
    prompt_tokens_mean: float
    output_tokens_mean: float
    slots: int
    decode_s: np.ndarray
    prompt_grid: np.ndarray
    prefill_table_s: np.ndarray
    prefill_iterations: np.ndarray
    overhead_s: float
    tpot_target_s: float
    ttft_target_s: float
    kv_capacity_tokens: int
    cached_prefix_tokens: int = 0
    mixed_full_s: np.ndarray | None = None
    budget_tokens: int = 0

    def stall_s(self, batch, prompt_tokens) -> np.ndarray:
        """The longest iteration while ``batch`` sequences decode and a prompt of
        ``prompt_tokens`` (0: none) is prefilled, seconds (vectorised): its uncached tokens, at
        most the budget beside the decodes, timed linearly between ``decode_s[n]`` and
        ``mixed_full_s[n]`` (an upper bound: a step time is convex in its tokens)."""
        n = np.minimum(np.maximum(np.asarray(batch, dtype=np.int64), 0), self.slots)
        dec = self.decode_s[n]
        room, span = self._stall_tables
        room = room[n]
        own = np.maximum(np.asarray(prompt_tokens, dtype=float) - self.cached_prefix_tokens, 0.0)
        if np.shape(own) == dec.shape and not own.any():  # no prompt prefilled: decodes only
            return dec
        share = np.minimum(own, room) / room
        return np.where(own > 0, dec + share * span[n], dec)

    @functools.cached_property
    def _stall_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Per batch size ``n``: the budget's room beside the decodes, ``max(budget - n, 1)``
        tokens (as floats), and ``mixed_full_s[n] - decode_s[n]``, seconds (computed once: the
        fleet asks :meth:`stall_s` every step)."""
        n = np.arange(self.slots + 1)
        full = self.decode_s[n] if self.mixed_full_s is None else self.mixed_full_s[n]
        return (np.maximum(self.budget_tokens - n, 1).astype(float),
                full - self.decode_s[n])

    @functools.cached_property
    def _grid_gaps(self) -> np.ndarray:
        """``prompt_grid[j + 1] - prompt_grid[j]``, computed once (the fleet calls _col each step)."""
        return np.diff(self.prompt_grid)

    def _col(self, prompt_tokens):
        """Each prompt's grid column ``j`` and its fraction of the way to column ``j + 1``."""
        p = np.asarray(prompt_tokens, dtype=float)
        g = self.prompt_grid
        j = g.searchsorted(p, side="right")
        j -= 1  # clipped to [0, columns - 2] (in place: np.clip's wrapper costs more than the work)
        np.maximum(j, 0, out=j)
        np.minimum(j, g.size - 2, out=j)
        return j, (p - g[j]) / self._grid_gaps[j]

    def _prefill_at(self, batch, j, frac) -> np.ndarray:
        n = np.minimum(np.maximum(np.asarray(batch, dtype=np.int64), 0), self.slots)
        flat = self.prefill_table_s.ravel()
        idx = n * self.prompt_grid.size + j
        lo = flat[idx]
        return lo + frac * (flat[idx + 1] - lo)

    def prefill_s(self, batch, prompt_tokens) -> np.ndarray:
        """Seconds to prefill each prompt with ``batch`` sequences decoding alongside (vectorised;
        linear in the prompt between grid points)."""
        j, frac = self._col(prompt_tokens)
        return self._prefill_at(batch, j, frac)

    def chunks(self, prompt_tokens) -> np.ndarray:
        """Iterations each prompt's prefill takes (the nearer grid column's)."""
        j, frac = self._col(prompt_tokens)
        return self.prefill_iterations[j + (frac > 0.5)]

    def prefill(self, batch, prompt_tokens) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`prefill_s` and :meth:`chunks` (as floats) of the same prompts, looked up once."""
        j, frac = self._col(prompt_tokens)
        return self._prefill_at(batch, j, frac), self._iterations_f[j + (frac > 0.5)]

    @functools.cached_property
    def _iterations_f(self) -> np.ndarray:
        """``prefill_iterations`` as floats, for booking into the prefill servers' float rows."""
        return self.prefill_iterations.astype(float)

    def steady_state(self, rate_per_s: float) -> dict | None:
        """The replica's mean behaviour at a steady arrival rate (the coarse model's fixed point).

        With ``n`` sequences in the batch, a mean prompt's prefill ``t_p(n)`` and a decode
        iteration ``t_d(n)``: prefill utilisation ``u = λ·t_p``; TPOT = 1 / (λ·chunks + (1 − u) /
        t_d); TTFT = overhead + M/D/1 wait ``u·t_p / (2(1 − u))`` + half a decode iteration +
        ``t_p``; and Little's law ``n = λ·(TTFT + (osl − 1)·TPOT)``, iterated to a fixed point.

        Returns ``batch``, ``tpot_s``, ``ttft_s``, ``prefill_utilisation``; ``None`` when the
        replica cannot keep up (prefill utilisation ≥ 1 or more sequences than slots).
        """
        lam = v.check_real("rate_per_s", rate_per_s, minimum=0.0)
        isl, osl = self.prompt_tokens_mean, self.output_tokens_mean
        chunks = float(self.chunks(np.array([isl]))[0])
        grid_n = np.arange(self.slots + 1, dtype=float)
        tp_col = self.prefill_s(np.arange(self.slots + 1), np.full(self.slots + 1, isl))
        n = 1.0
        for _ in range(200):
            nn = min(max(n, 1.0), float(self.slots))
            tp = float(np.interp(nn, grid_n, tp_col))
            td = float(np.interp(nn, grid_n, self.decode_s))
            u = lam * tp
            if u >= 1.0:
                return None
            tpot = 1.0 / (lam * chunks + (1.0 - u) / td)
            ttft = self.overhead_s + u * tp / (2.0 * (1.0 - u)) + 0.5 * td * (1.0 - u) + tp
            new = lam * (ttft + (osl - 1.0) * tpot)
            if new > self.slots:
                return None
            if abs(new - n) < 1e-6:
                n = new
                break
            n = 0.5 * n + 0.5 * new
        return {"batch": n, "tpot_s": tpot, "ttft_s": ttft, "prefill_utilisation": u}

    @functools.cached_property
    def _capacity(self) -> float:
        def ok(lam: float) -> bool:
            st = self.steady_state(lam)
            return st is not None and st["tpot_s"] <= self.tpot_target_s \
                and st["ttft_s"] <= self.ttft_target_s
        lo, hi = 0.0, 1.0
        while ok(hi):
            lo, hi = hi, hi * 2.0
            if hi > 1e6:
                break
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        return lo

    def capacity_rps(self) -> float:
        """Requests/s one replica sustains with its mean TPOT and TTFT within the targets.

        The largest steady rate (:meth:`steady_state`) whose mean TPOT ≤ ``tpot_target_s`` and mean
        TTFT ≤ ``ttft_target_s``: the denominator of the package's one utilisation (offered
        requests/s ÷ capacity_rps, :func:`vidya_lab.autoscaling.policies.utilisation`), the "100 %"
        every policy sizes against.
        """
        return self._capacity

    @functools.cached_property
    def slo_batch(self) -> int:
        """Sequences in a replica's batch at :meth:`capacity_rps` (at least 1)."""
        st = self.steady_state(self.capacity_rps())
        return max(1, int(round(st["batch"]))) if st else 1


def _slots(r: sizing.Replica, ctx_total: int, cached: int, resident: int) -> int:
    """KV-limited sequences of ``ctx_total`` tokens whose first ``cached`` tokens are shared blocks,
    with ``resident`` prefix tokens held once (``cached = 0``: :func:`sizing.max_concurrent_sequences`)."""
    if not r.weights_fit:
        return 0
    if cached == 0:
        return sizing.max_concurrent_sequences(r, ctx_total)
    own_blocks = math.ceil(ctx_total / r.block_tokens) - cached // r.block_tokens
    free_blocks = r.kv_blocks - math.ceil(resident / r.block_tokens)
    return max(free_blocks, 0) // own_blocks


def _prefill_tables(r: sizing.Replica, slots: int, ctx: float, cached: int):
    """The prompt grid, the prefill table [n, j] and the iterations per prompt (module docstring)."""
    cap = min(r.model.max_context_tokens, 32768)
    grid = np.geomspace(16, cap, _GRID_POINTS)
    if cached:  # resolve the kink where prompts start to go beyond the cache
        grid = np.concatenate((grid, [cached, cached + 1]))
    grid = np.unique(np.round(grid)).astype(float)
    table = np.zeros((slots + 1, grid.size))
    iters = np.zeros(grid.size, dtype=np.int64)
    chunk = r.max_batched_tokens
    for j, p in enumerate(grid):
        pi = int(p)
        done = min(cached, pi - 1)  # a fully cached prompt still computes its last token
        while done < pi:
            c = min(chunk, pi - done)
            pairs = c * done + c * (c + 1) / 2.0
            for n in range(slots + 1):
                micro = n / r.pp
                table[n, j] += r.step_time_s(c, pairs, done + c, 1, micro, micro * ctx)
            done += c
            iters[j] += 1
    return grid, table, iters


def replica_model(replica: sizing.Replica, *, prompt_tokens_mean: float = TANVI.prompt_tokens_mean,
                  output_tokens_mean: float = TANVI.answer_tokens_mean,
                  tpot_target_s: float = TANVI.tpot_target_s,
                  ttft_target_s: float = TANVI.ttft_target_s,
                  slots: int | None = None, cached_prefix_tokens: int = 0,
                  resident_prefix_tokens: int | None = None) -> ReplicaModel:
    """Build the coarse model of ``replica`` from the cost model (see the module docstring).

    Parameters
    ----------
    replica : the replica (model, GPU, layout, precision, engine limits).
    prompt_tokens_mean, output_tokens_mean : the workload's mean lengths, tokens.
    tpot_target_s, ttft_target_s : the targets that define one replica's capacity, seconds.
    slots : batch slots; ``None`` → KV-limited sequences of mean length, at most ``max_num_seqs``
        (and at most :data:`MAX_SLOTS`).
    cached_prefix_tokens : tokens at the start of every prompt that a warm replica finds in its
        prefix cache (0 ≤ cached < the mean prompt; default 0: no cache counted, the cold-cache case).
        For Tanvi, the syllabus and one subject prompt.
    resident_prefix_tokens : prefix tokens the cache holds once for everyone (default
        ``cached_prefix_tokens``; Tanvi's warm-up leaves the syllabus and every subject resident).

    Raises ``ValueError`` when not one sequence of mean length fits in the KV cache.

    Read back from ``VIDYA_LAB_CACHE`` when set and this very call is there
    (:mod:`vidya_lab._cache`)."""
    return _cache.call("replica_model", _replica_model, dict(locals()))


def _replica_model(replica, prompt_tokens_mean, output_tokens_mean, tpot_target_s, ttft_target_s,
                   slots, cached_prefix_tokens, resident_prefix_tokens):
    """:func:`replica_model`, computed."""
    r = as_replica(replica)
    isl = v.check_real("prompt_tokens_mean", prompt_tokens_mean, minimum=1.0)
    osl = v.check_real("output_tokens_mean", output_tokens_mean, minimum=1.0)
    tpot = v.check_real("tpot_target_s", tpot_target_s, minimum=0.0, min_inclusive=False)
    ttft = v.check_real("ttft_target_s", ttft_target_s, minimum=0.0, min_inclusive=False)
    cached = v.check_int("cached_prefix_tokens", cached_prefix_tokens, minimum=0)
    if cached >= isl:
        raise ValueError(f"cached_prefix_tokens must be < prompt_tokens_mean ({isl:g}): part of "
                         f"every prompt is the student's own, got {cached}")
    resident = cached if resident_prefix_tokens is None else v.check_int(
        "resident_prefix_tokens", resident_prefix_tokens, minimum=cached,
        maximum=max(int(r.kv_capacity_tokens), cached))
    ctx_total = int(math.ceil(isl + osl))
    if slots is None:
        b = min(_slots(r, ctx_total, cached, resident), r.max_num_seqs)
        if b < 1:
            raise ValueError(f"{r.model.id} on {r.n_gpus} x {r.gpu.id} (tp={r.tp}, pp={r.pp}, "
                             f"{r.precision}) holds no {ctx_total}-token sequence in its KV cache; "
                             f"use more GPUs per replica (tp) or a smaller precision")
        v.check_work("a coarse replica of that many batch slots", b, MAX_SLOTS, unit="slots",
                     hint="set max_num_seqs on the replica, or slots=")
    else:
        b = v.check_int("slots", slots, minimum=1, maximum=MAX_SLOTS)
    # decode_s[n]: n decodes of mean context (with pp stages, a micro-batch of n/pp in flight per
    # stage, as in sizing.saturated_throughput)
    ctx = isl + osl / 2.0
    decode = np.zeros(b + 1)
    for n in range(1, b + 1):
        micro = n / r.pp
        decode[n] = r.step_time_s(0, 0, 0, 0, micro, micro * ctx)
    grid, table, iters = _prefill_tables(r, b, ctx, cached)
    return ReplicaModel(r, float(isl), float(osl), b, decode, grid, table, iters,
                        float(r.calibration.request_overhead_s), tpot, ttft,
                        int(r.kv_capacity_tokens), cached, _mixed_full(r, b, ctx, cached),
                        int(r.max_batched_tokens))


def _mixed_full(r: sizing.Replica, slots: int, ctx: float, cached: int) -> np.ndarray:
    """``[n]``: n decodes of mean context and a prompt chunk filling the rest of the budget."""
    out = np.zeros(slots + 1)
    budget = r.max_batched_tokens
    for n in range(slots + 1):
        c = max(budget - n, 1)
        micro = n / r.pp
        out[n] = r.step_time_s(c, c * cached + c * (c + 1) / 2.0, cached + c, 1, micro,
                               micro * ctx)
    return out


def smallest_tp(model: str, gpu: str, *, precision: str = "bf16",
                prompt_tokens: float = TANVI.prompt_tokens_mean,
                output_tokens: float = TANVI.answer_tokens_mean) -> int:
    """The smallest tensor-parallel degree (1, 2, 4, 8) at which one sequence of mean length fits."""
    v.check_real("prompt_tokens", prompt_tokens, minimum=1.0, maximum=1e7)
    v.check_real("output_tokens", output_tokens, minimum=1.0, maximum=1e7)
    ctx = int(math.ceil(prompt_tokens + output_tokens))
    for tp in (1, 2, 4, 8):
        try:
            r = sizing.Replica(model, gpu, tp=tp, precision=precision)
        except ValueError:
            continue
        if r.weights_fit and sizing.max_concurrent_sequences(r, ctx) >= 1:
            return tp
    raise ValueError(f"{model} does not fit on up to 8 x {gpu} in {precision} with {ctx}-token "
                     f"sequences")
