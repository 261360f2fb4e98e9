"""The engine loop: one iteration at a time, a run of decode-only iterations in one go.

At each iteration boundary (time ``t``) the engine, in this order (:meth:`Engine.run`):

1. takes in the requests that arrived since the last boundary, in arrival order, and applies
   admission control to each at its arrival time (:mod:`vidya_lab.admission.intake`); sheds waiting
   requests whose queue deadline has passed;
2. if decodes will run, makes sure the KV pool can hold this round's new tokens, preempting the
   newest request if it must (:meth:`Engine.reserve_decode_blocks`, :mod:`vidya_lab.admission.memory`);
3. lets the policy pick the step's prompt work (:mod:`vidya_lab.admission.policies`);
4. runs the step for THE cost model's time, :meth:`vidya_lab.sizing.Replica.step_time_s`, fed with
   :func:`vidya_lab.sizing.prefill_work` aggregates (nothing here re-derives a step time);
5. at the step's end every decoding sequence emits one token (all at the step's end time), a
   sequence whose prefill completed emits its first token, and a request that emitted its last token
   finishes and frees its blocks (:meth:`Engine.end_step`).

Arrivals during a step wait for the next boundary; an idle replica jumps to the next arrival.

A discrete-event loop without an event queue: the only sources of events are the workload's
arrivals (sorted) and the engine's own step ends, with no concurrent processes to interleave, so the
clock simply jumps from one step boundary to the next (simpy, which this loop once ran on, cost a
third of the time in its event machinery). Most steps are decode-only steps whose batch is the one
of the step before; :meth:`Engine.decode_run` runs them in one go, up to the next event that changes
the batch (a finish, a preemption, an arrival that may be admitted, the stop), and asks the cost
model only for batch shapes it has not seen (:meth:`Engine.step_time_s`). Every timeline, token
time and iteration-log entry is bit-identical to running the same steps one at a time
(``tests/test_admission_fast.py`` checks it against that reference, ``tests/admission_reference.py``,
for every scheduler).
"""

from __future__ import annotations

import math

from vidya_lab import sizing
from vidya_lab.admission import policies
from vidya_lab.admission.config import WATERMARK_FRACTION, SchedulerConfig
from vidya_lab.admission.intake import Intake
from vidya_lab.admission.memory import DecodeSet, KVPool, blocks_for
from vidya_lab.admission.requests import DECODE, PREFILL, RequestBook
from vidya_lab.admission.results import StepRecorder
from vidya_lab.workload import Workload

#: Most batch shapes whose step time the engine keeps in one cache (emptied past it: a few MB).
MAX_CACHED_SHAPES = 1 << 16


class StepLimitExceeded(ValueError):
    """A run needed more engine steps than :data:`~vidya_lab.admission.MAX_STEPS` allows."""


class Engine:
    """The state of one run and the loop that advances it (see the module docstring).

    Parts: ``book`` (:class:`~vidya_lab.admission.requests.RequestBook`, every request's state),
    ``pool`` and ``decoders`` (:mod:`~vidya_lab.admission.memory`), ``intake``
    (:class:`~vidya_lab.admission.intake.Intake`, arrivals and queues), ``running`` (admitted
    requests, oldest first) and ``prefilling`` (admitted, prompt not yet complete), ``log``, and
    ``step_times`` and ``decode_times`` (the cost model's answers by batch shape,
    :meth:`step_time_s`).
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
        self.step_times: dict = {}           # batch shape -> seconds (see step_time_s)
        self.decode_times: dict[int, dict[int, float]] = {}   # decodes -> context sum -> seconds
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
        # runs of chunk steps (chunk_run): one started prompt takes the whole budget, step after step
        self.chunk_runs = self.choose_prompts is policies.chunked_prefills and not self.fcfs
        self.cached = self._prefix_cache(cfg.cached_prefix_tokens)

    def _prefix_cache(self, k: int) -> list[int]:
        """Each request's cached prefix tokens (whole blocks, below its prompt's last token); the
        resident prefix is taken from the pool once. All zeros without a cache."""
        book, b = self.book, self.r.block_tokens
        if k == 0:
            return [0] * book.n
        blocks = k // b
        if blocks + self.pool.watermark >= self.pool.free:
            raise ValueError(f"cached_prefix_tokens = {k} does not fit in the KV pool of "
                             f"{self.pool.total} blocks of {b} tokens")
        self.pool.free -= blocks
        cached = [min(blocks * b, (p - 1) // b * b) for p in book.prompt_tokens]
        book.pdone[:] = cached
        return cached

    # ------------------------------------------------------------------ the loop
    def run(self) -> None:
        """Plan a step, run it for the cost model's time, end it; repeat. A plain event loop: the
        clock jumps from one step boundary to the next, and a run of decode-only steps goes in one
        go (:meth:`decode_run`) up to the next event that changes the batch."""
        intake, log, rounds = self.intake, self.log, self.decoders.rounds
        now = 0.0
        while True:
            intake.take_arrivals(now)
            if not self.drain and now >= self.horizon:
                break
            k = len(rounds)
            picked, n_dec = self.plan_step(now, k)
            if not picked and not n_dec:
                wait = self.idle_wait(now)
                if wait is None:
                    break                                  # nothing left at all
                now += wait
                continue
            if len(log.start) >= self.max_steps:
                raise StepLimitExceeded(
                    f"the run needs more than {self.max_steps:,} engine steps (the limit, about a "
                    f"minute and a GB); simulate a shorter window or a lower rate")
            if not picked:
                now = self.decode_run(now, k, n_dec)
                continue
            if self.chunk_runs and len(picked) == 1 and self.whole_budget(picked[0], n_dec):
                now = self.chunk_run(now, k, n_dec, *picked[0])
                continue
            dur = self.step_duration(picked, n_dec, k)
            log.record(now, dur, picked, n_dec, self.pool.used, intake.n_waiting)
            now += dur
            self.end_step(now, picked, n_dec, k)
        self.end = now
        intake.take_arrivals(self.horizon if not self.drain else now)
        self.step_times.clear()                        # the run is over: free the caches
        self.decode_times.clear()

    def decode_run(self, now: float, k: int, n: int) -> float:
        """Decode-only steps from round ``k`` (already planned, its blocks taken) in one go, up to
        the next event that changes the batch; returns the clock after the last one.

        A run ends after the round in which a sequence finishes (:meth:`end_step` ends that one),
        or at the first boundary where the next round's blocks do not fit (a preemption), an
        arrival finds its queue empty (it may be admitted, :meth:`arrivals_change_batch`), the run
        stops (``drain=False``) or the step limit is reached. Between those boundaries a decode
        step's plan is fixed: the same ``n`` sequences, a blocked head of the line stays blocked
        (the pool only shrinks), so each step's time is the cost model's for ``n`` decodes and a
        context sum that grows by ``n`` a round, and arrivals only join the queue behind it.
        """
        dec, pool, intake, log = self.decoders, self.pool, self.intake, self.log
        rounds, phase, bt = dec.rounds, dec.phase, dec.block_tokens
        last = dec.next_due(k)
        steps_left = self.max_steps - len(log.start) if self.run_decodes_ahead() else 1
        times = self.decode_times.get(n)
        if times is None or len(times) > MAX_CACHED_SHAPES:
            times = self.decode_times[n] = {}
        arrival, n_req = self.book.arrival_s, self.book.n
        stop_at = math.inf if self.drain else self.horizon
        nxt = arrival[intake.next_arrival] if intake.next_arrival < n_req else math.inf
        event = min(nxt, stop_at)                          # the next boundary that is checked
        add_dur, add_round = log.duration.append, rounds.append
        add_used, add_wait = log.kv_blocks_used.append, log.waiting.append
        if pool.reserve:
            phase = [0] * bt                               # blocks were reserved at admission
        total, free, nw = pool.total, pool.free, intake.n_waiting
        ctx, rnd, t, end_round = dec.context_sum(k), k, now, k + steps_left
        while True:                                        # step `rnd`, planned, starts at t
            d = times.get(ctx)
            if d is None:
                d = times[ctx] = self.step_time_s(0.0, 0.0, 0.0, 0.0, n, ctx)
            add_dur(d)
            add_used(total - free)
            add_wait(nw)
            t += d
            if rnd == last:                                # a sequence finishes: end_step does it
                pool.free = free
                self._close_run(now, k, rnd - k + 1, n)
                self.end_step(t, [], n, rnd)
                return t
            add_round(t)
            rnd += 1
            ctx += n
            if t >= event or rnd == end_round:
                if rnd == end_round or t >= stop_at or self.arrivals_change_batch(t):
                    break
                nxt = arrival[intake.next_arrival] if intake.next_arrival < n_req else math.inf
                event, nw = min(nxt, stop_at), intake.n_waiting
            need = phase[(1 - rnd) % bt]
            if need:
                if need > free:
                    break                                  # the plan of round rnd preempts
                free -= need
        pool.free = free
        self._close_run(now, k, rnd - k, n)
        return t

    def _close_run(self, now: float, k: int, steps: int, n: int) -> None:
        """The columns a decode run of ``steps`` steps from round ``k`` (at ``now``) shares: each
        step starts when the round before it ended."""
        log = self.log
        log.start.append(now)
        log.start.extend(self.decoders.rounds[k:k + steps - 1])
        log.decodes(steps, n)

    def whole_budget(self, chunk: tuple[int, int], n: int) -> bool:
        """Whether a step's one prompt chunk takes the whole budget and leaves more to prefill
        (so the next step's plan is the same: the decodes and that prompt's next chunk)."""
        i, c = chunk
        return c == self.chunk - n and self.book.peff[i] - self.book.pdone[i] > c

    def chunk_run(self, now: float, k: int, n: int, i: int, c: int) -> float:
        """Steps of ``n`` decodes and ``c`` tokens of request ``i``'s prompt (the whole budget), from
        round ``k`` (planned, its blocks taken) in one go; returns the clock after the last one.

        Under ``"chunked"`` with one partial prefill, a started prompt takes the budget before any
        waiting one, so while it has more than ``c`` tokens left and nothing else changes (the
        events of :meth:`decode_run`) every step is the same plan, one chunk further on. The step
        that completes the prompt goes through the ordinary path.
        """
        dec, pool, intake, log, book = self.decoders, self.pool, self.intake, self.log, self.book
        pdone, peff, times = book.pdone, book.peff, self.step_times
        last = dec.next_due(k) if n else None
        limit = self.max_steps - len(log.start) if self.run_decodes_ahead() else 1
        arrival, n_req = book.arrival_s, book.n
        nxt = arrival[intake.next_arrival] if intake.next_arrival < n_req else math.inf
        stop_at = math.inf if self.drain else self.horizon
        add_start, add_dur = log.start.append, log.duration.append
        add_used, add_wait = log.kv_blocks_used.append, log.waiting.append
        rnd, t, steps, ctx = k, now, 0, dec.context_sum(k) if n else 0
        while True:                                        # step: round rnd and chunk (i, c)
            pd = pdone[i]
            d = times.get((((c, pd),), n, ctx))
            if d is None:
                d = self.shape_time_s(((c, pd),), n, ctx)
            add_start(t)
            add_dur(d)
            add_used(pool.total - pool.free)
            add_wait(intake.n_waiting)
            steps += 1
            t += d
            if n and rnd == last:                          # a sequence finishes: end_step does it
                log.chunks(steps, n, i, c)
                self.end_step(t, [(i, c)], n, rnd)
                return t
            pdone[i] = pd + c
            if n:
                dec.rounds.append(t)
                rnd += 1
                ctx += n
            if steps >= limit or t >= stop_at or peff[i] - pdone[i] <= c:
                break
            if nxt <= t:
                if self.arrivals_change_batch(t):
                    break
                nxt = arrival[intake.next_arrival] if intake.next_arrival < n_req else math.inf
            need = 0 if pool.reserve or not n else dec.blocks_needed(rnd)
            if need > pool.free:
                break                                      # the plan of round rnd preempts
            pool.free -= need
        log.chunks(steps, n, i, c)
        return t

    def run_decodes_ahead(self) -> bool:
        """Whether a decode run may go past its first step: not while a queue deadline could shed
        a waiting request (the head of the line would change), nor under ``"priority"`` with aging
        while two classes wait (their order may change with time)."""
        intake, cfg = self.intake, self.cfg
        if cfg.queue_deadline_s is not None and intake.n_waiting:
            return False
        if cfg.aging_s is not None and sum(1 for q in intake.queues if q) > 1:
            return False
        return True

    def arrivals_change_batch(self, t: float) -> bool:
        """Take in the arrivals by ``t``; True if one became the head of its queue (the next plan
        may admit it), False if each joined behind a waiting request or was rejected."""
        queues = self.intake.queues
        heads = [q[0] if q else -1 for q in queues]
        self.intake.take_arrivals(t)
        return any((q[0] if q else -1) != h for q, h in zip(queues, heads, strict=True))

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
        pdone = self.book.pdone
        return self.shape_time_s(tuple([(c, pdone[i]) for i, c in picked]), n_dec,
                                 self.decoders.context_sum(k) if n_dec else 0)

    def shape_time_s(self, chunks: tuple, n_dec: int, ctx: int) -> float:
        """:meth:`step_time_s` of a step of prompt ``chunks`` (``(tokens, tokens before)`` each),
        ``n_dec`` decodes and a context sum ``ctx``, from ``step_times`` when it was seen."""
        key = (chunks, n_dec, ctx)
        d = self.step_times.get(key)
        if d is None:
            if len(self.step_times) > MAX_CACHED_SHAPES:
                self.step_times.clear()
            work = self.step_times.get(chunks)         # the chunks' aggregates, by chunks
            if work is None:
                work = self.step_times[chunks] = (sizing.prefill_work(chunks) if chunks
                                                  else (0.0, 0.0, 0.0, 0.0))
            d = self.step_times[key] = self.step_time_s(*work, n_dec, ctx)
        return d

    def step_time_s(self, prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs,
                    n_decode, decode_ctx_sum) -> float:
        """THE cost model's time of one step (:meth:`vidya_lab.sizing.Replica.step_time_s`), the
        engine's one call into it. A pure function of the batch's shape, so the engine keeps its
        answers (``step_times`` keyed by the chunks, decodes and context sum; ``decode_times`` by
        decodes, then context sum, for decode-only steps) and asks again only for a shape it has
        not seen: most decode steps repeat one seen before."""
        return self.r.step_time_s(prefill_tokens, prefill_pairs, prefill_kv_tokens, prefill_seqs,
                                  n_decode, decode_ctx_sum)

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
        need = self.pool.admission_blocks(book.peff[i] - self.cached[i], book.rem[i])
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
        pool.free += self.book.blocks[i] if pool.reserve else blocks_for(
            kv_tokens - self.cached[i], pool.block_tokens)

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
            emitted = ((book.pre[i] or []) + [book.emit0[i]]
                       + self.decoders.rounds[book.r0[i]:k].tolist())
            book.rem[i] = book.jrem[i] - done
            book.back_to_waiting(i, emitted)           # recompute prompt + generated tokens
        else:                                          # prefilling: its prompt blocks go back
            self.pool.free += book.blocks[i]
            self.prefilling.remove(i)
            book.back_to_waiting(i, None)
        book.pdone[i] = self.cached[i]                 # the prefix stays in the cache
        self.intake.requeue_front(i)
