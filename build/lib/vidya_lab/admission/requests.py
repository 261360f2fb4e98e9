"""What the engine knows about each request: where it is in its life, and what it has left to do.

A request moves through four states, and never back except by preemption::

    WAIT ──admit──► PREFILL ──last prompt chunk──► DECODE ──last token──► DONE
      ▲                │                              │
      └──── preempted (recompute: its prompt and the tokens it already emitted) ◄┘

(and ``WAIT → DONE`` when it is rejected). :class:`RequestBook` keeps that state for every request of
a run as plain lists indexed by workload row (the fastest thing for Python to read one value at a
time), plus its outcome, the times an :class:`~vidya_lab.slo.Timelines` needs, and the bookkeeping
that lets the engine rebuild every token's emit time at the end without storing them as they happen:
a request's decode tokens are emitted at the ends of consecutive decode rounds, so "first round
``r0`` and ``jrem`` tokens" says it all (:mod:`vidya_lab.admission.results`).
"""

from __future__ import annotations

import math

from vidya_lab.slo import FINISHED, REJECTED
from vidya_lab.workload import Workload

WAIT, PREFILL, DECODE, DONE = 0, 1, 2, 3


class RequestBook:
    """Per-request state of one run, as parallel lists (index ``i`` = workload row ``i``).

    Attributes
    ----------
    arrival_s, prompt_tokens, output_tokens : the workload's columns (unchanged).
    peff : tokens to prefill: the prompt, plus the tokens already emitted after a preemption.
    pdone : tokens of ``peff`` prefilled so far.
    rem : tokens still to emit.
    state : ``WAIT``, ``PREFILL``, ``DECODE`` or ``DONE``.
    blocks : KV blocks held while prefilling (or reserved up front under ``"reserve"``).
    admit_t, first_t, fin_t : first admission, first token and finish (or rejection) times, s.
    outcome, reason : outcome code (-1 = in flight) and reject reason (``""`` if none).
    r0, jrem, emit0 : the current decode segment: its first decode round, the tokens its rounds
        emit, and when its prefill emitted a token.
    pre : emit times of tokens streamed before a preemption (``None`` if never preempted).
    epoch : bumped at each preemption, so a stale "finishes at round k" entry is ignored.
    ever_admitted : whether it was ever admitted (a deadline sheds only never-admitted requests).
    """

    def __init__(self, w: Workload) -> None:
        n = self.n = len(w)
        self.arrival_s = w.arrival_s.tolist()
        self.prompt_tokens = w.prompt_tokens.tolist()
        self.output_tokens = w.output_tokens.tolist()
        self.peff = list(self.prompt_tokens)
        self.pdone = [0] * n
        self.rem = list(self.output_tokens)
        self.state = [WAIT] * n
        self.blocks = [0] * n
        self.admit_t = [math.nan] * n
        self.first_t = [math.nan] * n
        self.fin_t = [math.nan] * n
        self.outcome = [-1] * n
        self.reason = [""] * n
        self.r0 = [0] * n
        self.jrem = [0] * n
        self.emit0 = [math.nan] * n
        self.pre: list[list[float] | None] = [None] * n
        self.epoch = [0] * n
        self.ever_admitted = [False] * n

    def size(self, i: int) -> int:
        """Prompt + output tokens of request ``i`` (what it may hold in KV memory at its end)."""
        return self.prompt_tokens[i] + self.output_tokens[i]

    def reject(self, i: int, t: float, reason: str) -> None:
        """Request ``i`` is turned away (or shed) at ``t`` for ``reason``."""
        self.state[i] = DONE
        self.outcome[i] = REJECTED
        self.fin_t[i] = t
        self.reason[i] = reason

    def finish(self, i: int, t: float) -> None:
        """Request ``i`` emitted its last token at ``t``."""
        self.state[i] = DONE
        self.outcome[i] = FINISHED
        self.fin_t[i] = t

    def back_to_waiting(self, i: int, emitted: list[float] | None) -> None:
        """Preempted: ``i`` waits again and will prefill its prompt plus everything it emitted
        (``emitted``: the emit times so far, or ``None`` if it was still prefilling)."""
        if emitted is not None:
            self.pre[i] = emitted
            self.peff[i] = self.prompt_tokens[i] + len(emitted)
            self.epoch[i] += 1
        self.blocks[i] = 0
        self.pdone[i] = 0
        self.state[i] = WAIT
