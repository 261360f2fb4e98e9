"""Choosing a step's prompt work: whole prompts first-come-first-served, chunks, or by priority.

Each policy is one function ``(engine, now[, budget]) -> [(request, tokens), ...]``: the prompt
chunks the next step processes. The engine (:mod:`vidya_lab.admission.engine`) has already put every
decoding sequence in the step; a policy only decides which prompts get the rest.

``"fcfs"`` — :func:`fcfs_prefills`
    vLLM's original (V0) scheduler: prompts are prefilled **whole**, in arrival order, in
    prefill-only steps of up to ``max_batched_tokens`` tokens (a longer prompt is taken alone);
    whenever a waiting prompt can be admitted, the next step is a prefill step and every running
    decode waits for it. A 40,000-token upload is one step of several seconds: **the freeze**.
``"chunked"`` — :func:`chunked_prefills`
    Sarathi-Serve's stall-free batching (Agrawal et al., OSDI 2024), as vLLM runs it: every step
    carries all running decodes (one token each) and fills the rest of a token budget of
    ``chunk_tokens`` with prompt chunks: prompts already started first (vLLM schedules its running
    queue before its waiting queue), then waiting prompts in arrival order. No decode ever waits for
    a whole long prefill; the price is that a long prompt is split into many steps, each paying the
    step's fixed costs again. With vLLM's default of one partial prefill, a long prompt that takes
    the whole budget holds every prompt behind it until it is done.
``"chunked"`` with ``max_num_partial_prefills > 1`` — :func:`partial_prefills`
    vLLM's concurrent partial prefills (PR #10235): the prompt budget is split evenly among up to
    ``max_num_partial_prefills`` prompts, of which at most ``max_long_partial_prefills`` are long;
    a long waiting prompt beyond that cap keeps its place and shorter prompts behind it go first. A
    student's question that arrives during a teacher's upload gets its first token within a step
    or two instead of after the whole upload.
``"priority"`` — :func:`priority_prefills`
    ``"chunked"`` with the prompt work ordered by class (``class_priority``: lower number first;
    students ahead of uploads by default) instead of by arrival: at each step the admitted partial
    prefills and the head of each class's queue compete by (rank − waited/``aging_s``, arrival). A
    low class can starve while the high class keeps the budget busy; ``aging_s`` lifts a waiting
    request by one class per ``aging_s`` seconds waited (anti-starvation).

In every policy a waiting request that cannot be admitted (batch full, KV pool short) stops the
walk: the head of the line waits, nobody jumps it (the one exception is a long prompt held back by
``max_long_partial_prefills``, which vLLM lets shorter prompts pass).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vidya_lab import _validate as v
from vidya_lab import sizing

if TYPE_CHECKING:  # pragma: no cover
    from vidya_lab.admission.engine import Engine

Picked = list[tuple[int, int]]


def fcfs_prefills(eng: Engine, now: float) -> Picked:
    """Whole prompts in arrival order, up to ``max_batched_tokens`` in all (at least one)."""
    q = eng.intake.queues[0]
    peff, pdone = eng.book.peff, eng.book.pdone
    picked: Picked = []
    tokens = 0
    while q:
        i = q[0]
        c = peff[i] - pdone[i]
        if picked and tokens + c > eng.fcfs_budget:
            break
        if not eng.admit(i, now):
            break
        q.popleft()
        picked.append((i, c))
        tokens += c
    eng.prefilling.clear()                        # whole prompts: done within the step
    return picked


def chunked_prefills(eng: Engine, now: float, budget: int) -> Picked:
    """Started prompts first (admission order), then waiting ones in arrival order, within
    ``budget`` tokens."""
    peff, pdone = eng.book.peff, eng.book.pdone
    picked: Picked = []
    for i in eng.prefilling:
        if budget <= 0:
            return picked
        c = min(budget, peff[i] - pdone[i])
        picked.append((i, c))
        budget -= c
    q = eng.intake.queues[0]
    while budget > 0 and q:
        i = q[0]
        if not eng.admit(i, now):
            break
        q.popleft()
        c = min(budget, peff[i] - pdone[i])
        picked.append((i, c))
        budget -= c
    return picked


def partial_prefills(eng: Engine, now: float, budget: int) -> Picked:
    """vLLM's concurrent partial prefills: up to ``max_num_partial_prefills`` prompts share the
    budget evenly (``chunk_tokens // prompts``), at most ``max_long_partial_prefills`` of them long.

    As vLLM V0's scheduler: count the prompts that can take part this step (started ones, then
    waiting ones, skipping long ones beyond the cap), give each started prompt its share, then
    admit waiting prompts in arrival order; a long one beyond the cap keeps its place.
    """
    most, most_long, long_tokens = eng.partial
    peff, pdone = eng.book.peff, eng.book.pdone
    q = eng.intake.queues[0]
    started = eng.prefilling
    n_long = sum(1 for i in started if peff[i] - pdone[i] > long_tokens)
    share = eng.chunk // _prompts_this_step(started, q, peff, n_long, most, most_long, long_tokens)
    picked: Picked = []
    for i in started:
        if budget <= 0:
            return picked
        c = min(budget, share, peff[i] - pdone[i])
        picked.append((i, c))
        budget -= c
    j = 0
    while budget > 0 and j < len(q) and len(started) < most:
        i = q[j]
        is_long = peff[i] > long_tokens
        if is_long and n_long >= most_long:
            j += 1                                 # held back: shorter prompts may pass it
            continue
        if not eng.admit(i, now):                  # appends i to eng.prefilling (= started)
            break
        del q[j]
        n_long += is_long
        c = min(budget, share, peff[i] - pdone[i])
        picked.append((i, c))
        budget -= c
    return picked


def _prompts_this_step(started, queue, peff, n_long, most, most_long, long_tokens) -> int:
    """How many prompts can share this step's budget (vLLM V0 ``PartialPrefillMetadata``): the
    started ones plus the waiting ones that may start, at most ``most``; at least 1."""
    count, waiting_long = len(started), 0
    for i in queue:
        if count >= most:
            break
        if peff[i] > long_tokens:
            if n_long + waiting_long >= most_long:
                continue
            waiting_long += 1
        count += 1
    return max(1, min(count, most))


def _aging_key(eng: Engine, i: int, rank: int, now: float) -> tuple[float, float]:
    """Priority of request ``i`` of ``rank`` at ``now``: (rank − waited / aging_s, arrival)."""
    aging = eng.cfg.aging_s
    a = eng.book.arrival_s[i]
    return (rank - (now - a) / aging if aging is not None else rank, a)


def priority_prefills(eng: Engine, now: float, budget: int) -> Picked:
    """Started prompts and the head of each class queue compete by :func:`_aging_key`; the lowest
    goes first, until ``budget`` tokens are used or the head of the line cannot be admitted."""
    peff, pdone = eng.book.peff, eng.book.pdone
    queues, rank_of_queue, queue_of = eng.intake.queues, eng.intake.queue_rank, eng.intake.queue_of
    partial = sorted(eng.prefilling, key=lambda i: _aging_key(eng, i, rank_of_queue[queue_of[i]],
                                                               now))
    picked: Picked = []
    pi = 0
    while budget > 0:
        best, src = None, -2
        if pi < len(partial):
            best, src = _aging_key(eng, partial[pi], rank_of_queue[queue_of[partial[pi]]], now), -1
        for j, q in enumerate(queues):
            if q:
                key = _aging_key(eng, q[0], rank_of_queue[j], now)
                if best is None or key < best:
                    best, src = key, j
        if best is None:
            break
        if src == -1:
            i = partial[pi]
            pi += 1
            c = min(budget, peff[i] - pdone[i])
        else:
            i = queues[src][0]
            if not eng.admit(i, now):
                break
            queues[src].popleft()
            c = min(budget, peff[i] - pdone[i])
        picked.append((i, c))
        budget -= c
    return picked


def chunked_prefill_time_s(replica: sizing.Replica, prompt_tokens: int, chunk_tokens: int) -> float:
    """Time to prefill one prompt alone, in chunks of ``chunk_tokens``, seconds.

    Σ over chunks of :func:`vidya_lab.sizing.iteration_time_s` with ``prefill=[(c, k)]`` (chunk ``c``
    after ``k`` tokens already cached): what the prompt costs when no other work shares its steps.
    Smaller chunks take more steps; each pays the step overhead and, when it is memory-bound, a
    full read of the weights; the attention work is the same.
    """
    v.check_instance("replica", replica, sizing.Replica, "vidya_lab.sizing.Replica")
    p = v.check_int("prompt_tokens", prompt_tokens, minimum=1)
    c = v.check_int("chunk_tokens", chunk_tokens, minimum=1)
    v.check_work("prompt_tokens / chunk_tokens", -(-p // c), 10_000_000, unit="chunks",
                 hint="use a larger chunk")
    total, done = 0.0, 0
    while done < p:
        step = min(c, p - done)
        total += sizing.iteration_time_s(replica, prefill=[(step, done)])
        done += step
    return total
