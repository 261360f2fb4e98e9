"""The replica simulator as it was before issue 28: one simpy event per engine step, no fast path.

Kept verbatim (the engine loop of ``vidya_lab/admission/engine.py`` and its ``DecodeSet`` at commit
2a8b28e) so that ``tests/test_admission_fast.py`` can check the fast engine against it on fixed
seeds for every scheduler: same timelines, token times, iteration log and counts, bit for bit.
It shares with the package only what the fast path did not change (the request book, the intake,
the KV pool, the policies, the cost model and ``collect``), and it is slow on purpose: one simpy
timeout and one cost-model call per step.
"""

from __future__ import annotations

import math
import time

import simpy

from vidya_lab import sizing
from vidya_lab.admission import policies
from vidya_lab.admission.config import WATERMARK_FRACTION, SchedulerConfig
from vidya_lab.admission.engine import StepLimitExceeded
from vidya_lab.admission.intake import Intake
from vidya_lab.admission.memory import KVPool, blocks_for
from vidya_lab.admission.requests import DECODE, PREFILL, RequestBook
from vidya_lab.admission.results import collect
from vidya_lab.admission.simulation import MAX_STEPS
from vidya_lab.workload import Workload


class DecodeSet:
    """The decoding sequences as aggregates (see the module docstring), and the decode rounds.

    Attributes
    ----------
    n : sequences decoding now.
    off_sum : Σ of their offsets (context at round ``k`` = offset + ``k``).
    phase : ``phase[x]`` = decoders with offset ≡ ``x`` (mod B).
    off : each request's offset while it decodes.
    buckets : decode round → ``[(request, epoch)]`` that emit their last token in it.
    rounds : the end time of every decode round so far, seconds.
    """

    def __init__(self, n_requests: int, block_tokens: int) -> None:
        self.n = 0
        self.off_sum = 0
        self.block_tokens = block_tokens
        self.phase = [0] * block_tokens
        self.off = [0] * n_requests
        self.buckets: dict[int, list[tuple[int, int]]] = {}
        self.rounds: list[float] = []

    def join(self, i: int, offset: int, last_round: int, epoch: int) -> None:
        """Request ``i`` starts decoding with context ``offset + k`` at round ``k``, and emits its
        last token in round ``last_round``."""
        self.off[i] = offset
        self.n += 1
        self.off_sum += offset
        self.phase[offset % self.block_tokens] += 1
        self.buckets.setdefault(last_round, []).append((i, epoch))

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


class StepRecorder:
    """The iteration log as it is written: one entry per step in plain lists (fast appends)."""

    def __init__(self) -> None:
        self.start: list[float] = []
        self.duration: list[float] = []
        self.prefill_tokens: list[int] = []
        self.prefill_seqs: list[int] = []
        self.decode_count: list[int] = []
        self.kv_blocks_used: list[int] = []
        self.waiting: list[int] = []
        self.chunk_request: list[int] = []   # every prompt chunk: its request and its tokens
        self.chunk_tokens: list[int] = []

    def record(self, start: float, duration: float, picked, decode_count: int, blocks_used: int,
               waiting: int) -> None:
        """One step: its start and duration (s), its prompt chunks, decodes, blocks and queue."""
        self.start.append(start)
        self.duration.append(duration)
        tokens = 0
        for i, c in picked:
            tokens += c
            self.chunk_request.append(i)
            self.chunk_tokens.append(c)
        self.prefill_tokens.append(tokens)
        self.prefill_seqs.append(len(picked))
        self.decode_count.append(decode_count)
        self.kv_blocks_used.append(blocks_used)
        self.waiting.append(waiting)


class ReferenceEngine:
    """The state of one run and the loop that advances it (see the module docstring).

    Parts: ``book`` (:class:`~vidya_lab.admission.requests.RequestBook`, every request's state),
    ``pool`` and ``decoders`` (:mod:`~vidya_lab.admission.memory`), ``intake``
    (:class:`~vidya_lab.admission.intake.Intake`, arrivals and queues), ``running`` (admitted
    requests, oldest first) and ``prefilling`` (admitted, prompt not yet complete), ``log``.
    """

    def __init__(self, r: sizing.Replica, w: Workload, cfg: SchedulerConfig, horizon_s: float,
                 drain: bool, service: list[float] | None, max_steps: int) -> None:
        self.r, self.cfg, self.horizon, self.drain, self.service = r, cfg, horizon_s, drain, service
        self.max_steps = max_steps
        self.book = RequestBook(w)
        self.pool = KVPool(r, cfg.kv_policy, WATERMARK_FRACTION)
        self.decoders = DecodeSet(len(w), r.block_tokens)
        self.intake = Intake(w, cfg, self.book, self.pool)
        self.running: dict[int, None] = {}   # admitted, in admission order (newest last)
        self.prefilling: list[int] = []      # admitted, prompt not yet complete (admission order)
        self.log = StepRecorder()
        self.preemptions = 0
        self.end = 0.0
        self.max_batch = cfg.max_batch if cfg.max_batch is not None else r.max_num_seqs
        self.fcfs_budget = (cfg.max_batched_tokens if cfg.max_batched_tokens is not None
                            else r.max_batched_tokens)
        # the replica's token budget per iteration is vLLM's max_num_batched_tokens: chunk_tokens
        # overrides it; by default it is the replica's (the engine's default for the GPU)
        self.chunk = cfg.chunk_tokens if cfg.chunk_tokens is not None else r.max_batched_tokens
        self.partial = (cfg.max_num_partial_prefills, cfg.max_long_partial_prefills,
                        cfg.long_prefill_tokens(r.model))
        self.fcfs = cfg.policy == "fcfs"
        if cfg.policy == "priority":
            self.choose_prompts = policies.priority_prefills
        elif cfg.max_num_partial_prefills > 1:
            self.choose_prompts = policies.partial_prefills
        else:
            self.choose_prompts = policies.chunked_prefills

    # ------------------------------------------------------------------ the loop
    def run(self, env: simpy.Environment):
        """The simpy process: plan a step, run it for the cost model's time, end it; repeat."""
        rounds, log = self.decoders.rounds, self.log
        while True:
            now = env.now
            self.intake.take_arrivals(now)
            if not self.drain and now >= self.horizon:
                break
            k = len(rounds)
            picked, n_dec = self.plan_step(now, k)
            if not picked and not n_dec:
                wait = self.idle_wait(now)
                if wait is None:
                    break                                  # nothing left at all
                yield env.timeout(wait)
                continue
            if len(log.start) >= self.max_steps:
                raise StepLimitExceeded(
                    f"the run needs more than {self.max_steps:,} engine steps (the limit, about a "
                    f"minute and a GB); simulate a shorter window or a lower rate")
            dur = self.step_duration(picked, n_dec, k)
            log.record(now, dur, picked, n_dec, self.pool.used, self.intake.n_waiting)
            yield env.timeout(dur)
            self.end_step(env.now, picked, n_dec, k)
        self.end = env.now
        self.intake.take_arrivals(self.horizon if not self.drain else env.now)

    def plan_step(self, now: float, k: int) -> tuple[list[tuple[int, int]], int]:
        """The next step's prompt chunks and how many sequences decode in it (round ``k``).

        ``"fcfs"``: a prefill-only step whenever a waiting prompt can be admitted, else a decode
        step. Chunked policies: every decode, then prompt chunks in the rest of the budget.
        """
        dec = self.decoders
        if self.fcfs:
            if self.intake.n_waiting and len(self.running) < self.max_batch:
                picked = policies.fcfs_prefills(self, now)
                if picked:
                    return picked, 0
            if dec.n:
                self.reserve_decode_blocks(k)
            return [], dec.n
        if dec.n:
            self.reserve_decode_blocks(k)
        budget = self.chunk - dec.n
        if budget > 0 and (self.prefilling or self.intake.n_waiting):
            return self.choose_prompts(self, now, budget), dec.n
        return [], dec.n

    def reserve_decode_blocks(self, k: int) -> None:
        """Take the blocks decode round ``k`` needs; under ``"preempt"``, preempt the newest
        admitted request until they fit (under ``"reserve"`` they were taken at admission)."""
        pool, dec = self.pool, self.decoders
        if pool.reserve:
            return
        need = dec.blocks_needed(k)
        while need > pool.free:
            self.preempt_newest(k)
            need = dec.blocks_needed(k)
        pool.free -= need

    def step_duration(self, picked: list[tuple[int, int]], n_dec: int, k: int) -> float:
        """Seconds the step takes: THE cost model, or the given service times (queueing mode)."""
        if self.service is not None:
            return sum(self.service[i] for i, _ in picked)
        if picked:
            pdone = self.book.pdone
            pt, pairs, kvt, seqs = sizing.prefill_work([(c, pdone[i]) for i, c in picked])
        else:
            pt = pairs = kvt = seqs = 0.0
        ctx = self.decoders.context_sum(k) if n_dec else 0
        return self.r.step_time_s(pt, pairs, kvt, seqs, n_dec, ctx)

    def end_step(self, t: float, picked: list[tuple[int, int]], n_dec: int, k: int) -> None:
        """The step ended at ``t``: decoders emit (some finish), finished prompts emit a first token."""
        book, dec = self.book, self.decoders
        if n_dec:
            dec.rounds.append(t)
            state, epoch, peff, r0 = book.state, book.epoch, book.peff, book.r0
            for i, ep in dec.finishing(k):
                if ep == epoch[i] and state[i] == DECODE:
                    self.leave_decode(i, peff[i] + k - r0[i] + 1)
                    self.finish(i, t)
        next_round = len(dec.rounds)
        pdone, peff = book.pdone, book.peff
        completed = False
        for i, c in picked:
            pdone[i] += c
            if pdone[i] >= peff[i]:
                completed = True
                self.complete_prefill(i, t, next_round)
        if completed and not self.fcfs:
            state = book.state
            self.prefilling = [i for i in self.prefilling if state[i] == PREFILL]

    def idle_wait(self, now: float) -> float | None:
        """Nothing to run: seconds until the next arrival (or the stop), ``None`` if none is left."""
        intake = self.intake
        if intake.next_arrival >= self.book.n:
            return None
        nxt_t = self.book.arrival_s[intake.next_arrival]
        if not self.drain and nxt_t >= self.horizon:
            return self.horizon - now
        return nxt_t - now

    # ------------------------------------------------------------------ a request's life
    def admit(self, i: int, now: float) -> bool:
        """Admit request ``i`` (take its blocks) if the batch and the pool allow it."""
        if len(self.running) >= self.max_batch:
            return False
        book = self.book
        need = self.pool.admission_blocks(book.peff[i], book.rem[i])
        if not self.pool.try_take(need):
            return False
        book.blocks[i] = need
        book.state[i] = PREFILL
        self.running[i] = None
        self.prefilling.append(i)
        self.intake.n_waiting -= 1
        if not book.ever_admitted[i]:
            book.ever_admitted[i] = True
            book.admit_t[i] = now
        return True

    def complete_prefill(self, i: int, t: float, next_round: int) -> None:
        """Request ``i``'s prefill finished at ``t``: it emits a token and starts decoding in round
        ``next_round`` (or finishes, if that was its only token)."""
        book = self.book
        if math.isnan(book.first_t[i]):
            book.first_t[i] = t
        book.emit0[i] = t
        book.rem[i] -= 1
        book.r0[i] = next_round
        book.jrem[i] = book.rem[i]
        if book.rem[i] == 0:
            self.pool.free += book.blocks[i]
            book.blocks[i] = 0
            self.finish(i, t)
            return
        book.state[i] = DECODE
        # context at round k is offset + k: the prompt (and earlier tokens) plus this round's token
        self.decoders.join(i, book.peff[i] - next_round + 1, next_round + book.rem[i] - 1,
                           book.epoch[i])
        if not self.pool.reserve:                      # its prompt blocks join the decode count
            book.blocks[i] = 0

    def leave_decode(self, i: int, kv_tokens: int) -> None:
        """Take ``i`` out of the decode set, freeing its blocks (``kv_tokens`` of context)."""
        self.decoders.leave(i)
        pool = self.pool
        pool.free += self.book.blocks[i] if pool.reserve else blocks_for(kv_tokens,
                                                                         pool.block_tokens)

    def finish(self, i: int, t: float) -> None:
        """Request ``i`` emitted its last token at ``t``."""
        self.book.finish(i, t)
        del self.running[i]
        self.intake.release(i)

    def preempt_newest(self, k: int) -> None:
        """Preempt the newest admitted request at a boundary before decode round ``k``: free its
        blocks and send it to the front of its queue to recompute what it had."""
        book = self.book
        i, _ = self.running.popitem()
        self.preemptions += 1
        if book.state[i] == DECODE:
            done = k - book.r0[i]                      # decode rounds it ran in this segment
            self.leave_decode(i, book.peff[i] + done)
            emitted = (book.pre[i] or []) + [book.emit0[i]] + self.decoders.rounds[book.r0[i]:k]
            book.rem[i] = book.jrem[i] - done
            book.back_to_waiting(i, emitted)           # recompute prompt + generated tokens
        else:                                          # prefilling: its prompt blocks go back
            self.pool.free += book.blocks[i]
            self.prefilling.remove(i)
            book.back_to_waiting(i, None)
        self.intake.requeue_front(i)


def reference_simulate(replica, w: Workload, cfg: SchedulerConfig, horizon_s: float, drain: bool,
                       service: list[float] | None = None, max_steps: int = MAX_STEPS):
    """Run the reference engine on an already-checked workload ``w`` (what ``simulate`` passes to
    its engine: the rows before the horizon) and collect its result as ``simulate`` does."""
    start = time.perf_counter()
    eng = ReferenceEngine(replica, w, cfg, horizon_s, drain, service, max_steps)
    env = simpy.Environment()
    env.process(eng.run(env))
    env.run()
    return collect(eng, w, cfg, time.perf_counter() - start)
