"""What happens when a request arrives: admission control, and the queues it waits in.

Every request is counted: it finishes, is rejected, or is still in flight at the end. Each arrival
is checked in this order at its arrival time; a refused request gets outcome ``"rejected"`` with a
reason (:data:`~vidya_lab.admission.REJECT_REASONS`), what a client sees as HTTP 413 (too long) or
429 (too many requests):

* ``"too_long"`` — its prompt plus output could never fit in the whole KV pool;
* ``"queue_full"`` — ``max_queue`` requests are already waiting;
* ``"tokens_in_flight"`` — its prompt + output tokens would push the tokens of all accepted,
  unfinished requests above ``max_tokens_in_flight``;
* ``"deadline"`` — shed later: it was still waiting (never admitted) ``queue_deadline_s`` after it
  arrived; its ``finish_s`` is that moment.

An accepted request joins a queue: one FIFO, or under ``"priority"`` one queue per rank (lower rank
first). A preempted request goes back to the *front* of its queue.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from vidya_lab.admission.config import SchedulerConfig
from vidya_lab.admission.memory import KVPool, blocks_for
from vidya_lab.admission.requests import RequestBook
from vidya_lab.workload import Workload


class Intake:
    """Arrivals, admission control and the waiting queues of one run.

    Attributes
    ----------
    queues : one deque of request indices per rank (a single FIFO unless policy ``"priority"``).
    queue_of : the queue of each request; ``queue_rank`` the rank of each queue.
    n_waiting : requests waiting for admission (in any queue).
    tokens_in_flight : prompt + output tokens of accepted, unfinished requests.
    next_arrival : index of the next request to arrive.
    """

    def __init__(self, w: Workload, cfg: SchedulerConfig, book: RequestBook, pool: KVPool) -> None:
        self.cfg, self.book, self.pool = cfg, book, pool
        n = len(w)
        if cfg.policy == "priority":
            labels, inverse = np.unique(w.klass, return_inverse=True)
            label_rank = [cfg.rank_of(str(k)) for k in labels]
            ranks = sorted(set(label_rank)) or [0]
            index = {rk: q for q, rk in enumerate(ranks)}
            self.queue_of = [index[label_rank[j]] for j in inverse.tolist()]
            self.queue_rank = ranks
        else:
            self.queue_of = [0] * n
            self.queue_rank = [0]
        self.queues: list[deque[int]] = [deque() for _ in self.queue_rank]
        self.n_waiting = 0
        self.tokens_in_flight = 0
        self.next_arrival = 0

    def take_arrivals(self, t: float) -> None:
        """Check every request that arrived by ``t``, at its arrival time, and queue or reject it;
        then shed requests whose deadline has passed."""
        book, cfg, deadline = self.book, self.cfg, self.cfg.queue_deadline_s
        arrival, n = book.arrival_s, book.n
        max_blocks = self.pool.total - self.pool.watermark
        while self.next_arrival < n and arrival[self.next_arrival] <= t:
            i = self.next_arrival
            self.next_arrival += 1
            a = arrival[i]
            if deadline is not None:
                self.shed(a)
            size = book.size(i)
            if blocks_for(size - 1, self.pool.block_tokens) > max_blocks:
                book.reject(i, a, "too_long")
            elif cfg.max_queue is not None and self.n_waiting >= cfg.max_queue:
                book.reject(i, a, "queue_full")
            elif (cfg.max_tokens_in_flight is not None
                  and self.tokens_in_flight + size > cfg.max_tokens_in_flight):
                book.reject(i, a, "tokens_in_flight")
            else:
                self.tokens_in_flight += size
                self.n_waiting += 1
                self.queues[self.queue_of[i]].append(i)
        if deadline is not None:
            self.shed(t)

    def shed(self, t: float) -> None:
        """Shed never-admitted waiting requests whose deadline is at or before ``t``."""
        book, d = self.book, self.cfg.queue_deadline_s
        for q in self.queues:
            j = 0
            while j < len(q):
                i = q[j]
                if book.ever_admitted[i]:
                    j += 1
                    continue
                if book.arrival_s[i] + d > t:
                    break
                del q[j]
                self.n_waiting -= 1
                self.release(i)
                book.reject(i, book.arrival_s[i] + d, "deadline")

    def release(self, i: int) -> None:
        """An accepted request ``i`` left (finished or shed): its tokens no longer count."""
        self.tokens_in_flight -= self.book.size(i)

    def requeue_front(self, i: int) -> None:
        """A preempted request waits again, at the front of its queue."""
        self.queues[self.queue_of[i]].appendleft(i)
        self.n_waiting += 1

    def waiting(self) -> bool:
        """Whether any request is waiting."""
        return self.n_waiting > 0
