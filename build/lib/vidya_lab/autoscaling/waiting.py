"""The waiting room and the router: requests that have arrived and wait for a batch slot.

The router's view of the fleet is the :class:`WaitingRoom`: each waiting request is either
*unrouted* (it has just arrived, or its replica failed or began to drain) or in one replica's FIFO
queue, in the order it became ready (its arrival, or the failure it retries from). Each step:

1. the router (:class:`Router`) sends every unrouted request, earliest first, to a serving
   replica, ``round_robin`` or ``least_loaded`` (fewest requests in batch plus queue);
2. each replica takes the heads of its queue into its free slots (:meth:`WaitingRoom.heads`);
3. a request that has waited longer than its patience (``queue_timeout_s`` since it arrived) is
   turned away (:meth:`WaitingRoom.turn_away`).

The queues are one array sorted by (replica, ready time), so every step costs a few passes over the
requests waiting, not a sort (``ready_key`` orders ready times as exact integers; see
:class:`~vidya_lab.autoscaling.simulate.Requests`).
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.empty(0, dtype=np.int64)


class Router:
    """Sends requests to serving replicas: ``"round_robin"`` (a counter over the serving list) or
    ``"least_loaded"`` (fewest requests in batch and queue)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.rr = 0  # round robin's counter

    def send(self, new_n: int, loads: np.ndarray, serving: np.ndarray) -> np.ndarray:
        """A serving replica for each of ``new_n`` requests (in the order given).

        Least-loaded: how many of the step's requests each replica gets is the greedy "each to
        the replica with the fewest outstanding requests" (ties to the lowest index), found at once
        as the ``new_n`` smallest keys (load + m, replica) over m = 0, 1, …; the requests a replica
        gets are then spread evenly over the step (interleaved) rather than given in a burst,
        because a real router also sees requests finish between arrivals, which a step-start
        snapshot does not.
        """
        s = serving.size
        if self.kind == "round_robin":
            idx = (self.rr + np.arange(new_n)) % s
            self.rr = (self.rr + new_n) % s
            return serving[idx]
        # no replica can get more than ceil(new_n / s) + (max load - min load) of them
        m_max = min(new_n, -(-new_n // s) + int(loads.max() - loads.min()) + 1)
        keys = ((loads[:, None] + np.arange(m_max)[None, :]) * s + np.arange(s)[:, None]).ravel()
        if new_n < keys.size:
            part = np.argpartition(keys, new_n - 1)[:new_n]
        else:
            part = np.arange(keys.size)
        counts = np.bincount(part // m_max, minlength=s)
        who = np.arange(s).repeat(counts)
        first_of = (counts.cumsum() - counts).repeat(counts)
        i = np.arange(new_n) - first_of
        pos = (i + 0.5) / counts[who]
        order = np.lexsort((who, pos))
        return serving[who[order]]


class WaitingRoom:
    """Requests waiting for a batch slot: ``unrouted`` ones, and each replica's queue.

    ``queue`` (request ids) and ``queue_key`` (replica × ``span`` + ready key) are sorted by key: the
    replica's queues one after another, each in ready order. ``span`` exceeds every ready key.
    """

    def __init__(self, rows: int, span: int) -> None:
        self.span = span
        self.unrouted = _EMPTY
        self.queue = _EMPTY
        self.queue_key = _EMPTY
        self._new: list[np.ndarray] = []
        self._n_new = 0
        self._dropped = np.zeros(rows, dtype=bool)
        self._any_dropped = False

    def grow(self, rows: int) -> None:
        grown = np.zeros(rows, dtype=bool)
        grown[:self._dropped.size] = self._dropped
        self._dropped = grown

    def __len__(self) -> int:
        return self.unrouted.size + self.queue.size + self._n_new

    def add(self, reqs: np.ndarray) -> None:
        """Requests that arrived (or are retried) wait for the router."""
        if reqs.size:
            self._new.append(reqs)
            self._n_new += reqs.size

    def give_back(self, rows) -> None:
        """The queues of these replicas (failed, or draining) go back to the router."""
        self._dropped[rows] = True
        self._any_dropped = True

    def queue_rows(self) -> np.ndarray:
        return self.queue_key // self.span

    def _gather(self) -> np.ndarray:
        """The requests for the router, in the order they joined: the ones left unrouted, the
        ones of queues given back, then the new ones."""
        parts = [self.unrouted]
        if self._any_dropped:
            drop = self._dropped[self.queue_rows()]
            if drop.any():
                parts.append(self.queue[drop])
                self.queue, self.queue_key = self.queue[~drop], self.queue_key[~drop]
            self._dropped[:] = False
            self._any_dropped = False
        parts.extend(self._new)
        self._new, self._n_new = [], 0
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def route(self, router: Router, serving: np.ndarray, batch_size: np.ndarray, ready_s,
              ready_key) -> None:
        """Send every unrouted request, earliest ready first, to a serving replica (none serving:
        they stay unrouted, earliest first). ``batch_size``: sequences per replica row."""
        un = self._gather()
        if not un.size:
            return
        un = un[ready_s[un].argsort(kind="stable")]
        if not serving.size:
            self.unrouted = un
            return
        queued = np.bincount(self.queue_rows(), minlength=batch_size.size)
        rows = router.send(un.size, batch_size[serving] + queued[serving], serving)
        keys = rows * self.span + ready_key[un]
        order = keys.argsort(kind="stable")
        merged = np.concatenate((self.queue_key, keys[order])).argsort(kind="stable")
        self.queue = np.concatenate((self.queue, un[order]))[merged]
        self.queue_key = np.concatenate((self.queue_key, keys[order]))[merged]
        self.unrouted = _EMPTY

    def heads(self, free: np.ndarray):
        """Take the first ``free[r]`` requests of each replica ``r``'s queue (they are admitted).

        Returns ``(requests, rows, ranks, urows, upos)`` in queue order (by row, then rank in its
        queue): ``urows`` the rows that admit any, lowest first, and ``upos[i]`` the place of
        ``rows[i]`` in ``urows``.
        """
        if not self.queue.size:
            return None
        rows = self.queue_rows()
        change = (rows[1:] != rows[:-1]).nonzero()[0] + 1
        edges = np.empty(change.size + 2, dtype=np.int64)  # where each row's queue starts, + the end
        edges[0], edges[1:-1], edges[-1] = 0, change, rows.size
        starts = edges[:-1]
        urows, sizes = rows[starts], edges[1:] - starts
        take = np.minimum(sizes, np.maximum(free[urows], 0))
        if not take.any():
            return None
        first = starts.repeat(take)
        ranks = np.arange(first.size) - (take.cumsum() - take).repeat(take)
        idx = first + ranks
        keep = np.ones(rows.size, dtype=bool)
        keep[idx] = False
        got = take > 0
        out = (self.queue[idx], rows[idx], ranks, urows[got], (got.cumsum() - 1).repeat(take))
        self.queue, self.queue_key = self.queue[keep], self.queue_key[keep]
        return out

    def turn_away(self, t1: float, timeout_s: float, arrival_s: np.ndarray) -> np.ndarray:
        """Remove and return the requests that, by ``t1``, have waited longer than ``timeout_s``
        since they arrived."""
        gone = []
        if self.unrouted.size:
            late = (t1 - arrival_s[self.unrouted]) > timeout_s
            if late.any():
                gone.append(self.unrouted[late])
                self.unrouted = self.unrouted[~late]
        if self.queue.size:
            late = (t1 - arrival_s[self.queue]) > timeout_s
            if late.any():
                gone.append(self.queue[late])
                self.queue, self.queue_key = self.queue[~late], self.queue_key[~late]
        return gone[0] if len(gone) == 1 else (np.concatenate(gone) if gone else _EMPTY)
