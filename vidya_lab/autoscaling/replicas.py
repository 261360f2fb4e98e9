"""The fleet simulation's state, one named object per thing the chapter describes.

Each object holds one kind of state for every replica at once (a row per replica, numpy arrays, so
a step of a fleet of tens of replicas costs a few vectorised operations, not a Python loop):

* :class:`Lifecycle` — each replica's state, ``off → starting → serving → draining → off``, and
  when a starting one will be ready;
* :class:`Batches` — each replica's batch: ``slots`` places, each empty or holding one decoding
  sequence (its request, the tokens it still owes, the time from which they are counted);
* :class:`PrefillServers` — each replica's prefill server: when it is next free, and the prefill
  seconds and iterations booked into the coming steps (which slow that step's decodes);
* :class:`Pool` — warm or sleeping nodes kept ready (and billed), and the ones being refilled.

The waiting room and the router are in :mod:`vidya_lab.autoscaling.waiting`; the loop that drives
them all is :func:`vidya_lab.autoscaling.simulate.simulate_fleet`. Rows are added as the fleet
grows (never sized by ``max_replicas``), and a replica takes the lowest free row, so rows
``[:hi]`` hold every batch.
"""

from __future__ import annotations

import numpy as np

from vidya_lab.autoscaling.fleet import DRAINING, OFF, SERVING, STARTING


def _grown(arr: np.ndarray, rows: int, fill) -> np.ndarray:
    out = np.full((rows,) + arr.shape[1:], fill, dtype=arr.dtype)
    out[:arr.shape[0]] = arr
    return out


class Lifecycle:
    """Each replica's state (``OFF``, ``STARTING``, ``SERVING``, ``DRAINING``) and ``ready_at``,
    the time a starting replica will serve (seconds)."""

    def __init__(self, rows: int) -> None:
        self.state = np.zeros(rows, dtype=np.int8)
        self.ready_at = np.full(rows, np.inf)

    def grow(self, rows: int) -> None:
        self.state = _grown(self.state, rows, OFF)
        self.ready_at = _grown(self.ready_at, rows, np.inf)

    def rows(self, state: int) -> np.ndarray:
        """Rows in ``state``, lowest first."""
        return (self.state == state).nonzero()[0]

    def count(self, state: int) -> int:
        return int(np.count_nonzero(self.state == state))

    def now_ready(self, t0: float) -> np.ndarray:
        """Starting replicas whose cold start is over by ``t0``: they serve from now on."""
        rows = ((self.state == STARTING) & (self.ready_at <= t0)).nonzero()[0]
        self.state[rows] = SERVING
        return rows

    def drained(self, batch_size: np.ndarray) -> np.ndarray:
        """Draining replicas whose batch has emptied: they are released (off)."""
        rows = ((self.state == DRAINING) & (batch_size == 0)).nonzero()[0]
        self.state[rows] = OFF
        return rows


class Batches:
    """Each replica's batch of decoding sequences, slot by slot.

    ``request[r, s]`` (-1: empty), ``tokens_left[r, s]`` (tokens still to come after the first),
    ``counting_from[r, s]`` (the time from which its tokens are counted: its first token, then each
    step's end), ``freed_at[r, s]`` (when an empty slot became free), ``longest_gap[r, s]`` (the
    longest gap between two of its tokens so far, the replica model's stated tail, seconds),
    ``size[r]`` (sequences).
    """

    def __init__(self, rows: int, slots: int) -> None:
        self.slots = slots
        self.request = np.full((rows, slots), -1, dtype=np.int64)
        self.tokens_left = np.zeros((rows, slots))
        self.counting_from = np.zeros((rows, slots))
        self.freed_at = np.zeros((rows, slots))
        self.longest_gap = np.zeros((rows, slots))
        self.size = np.zeros(rows, dtype=np.int64)

    def grow(self, rows: int) -> None:
        self.request = _grown(self.request, rows, -1)
        self.tokens_left = _grown(self.tokens_left, rows, 0.0)
        self.counting_from = _grown(self.counting_from, rows, 0.0)
        self.freed_at = _grown(self.freed_at, rows, 0.0)
        self.longest_gap = _grown(self.longest_gap, rows, 0.0)
        self.size = _grown(self.size, rows, 0)

    def stall(self, hi: int, longest_s: np.ndarray) -> None:
        """Every sequence of rows ``[:hi]`` waits, in this step, at most ``longest_s[r]`` for a token
        (:meth:`~vidya_lab.autoscaling.ReplicaModel.stall_s`): its longest gap is at least that."""
        np.maximum(self.longest_gap[:hi], longest_s[:, None], out=self.longest_gap[:hi])

    def evict(self, r: int) -> np.ndarray:
        """Empty replica ``r``'s batch (it failed); returns the requests that were in it."""
        reqs = self.request[r][self.request[r] >= 0]
        self.request[r] = -1
        self.size[r] = 0
        return reqs

    def decode(self, hi: int, tau: np.ndarray, t1: float):
        """Every sequence of rows ``[:hi]`` gains one token per ``tau[r]`` seconds until ``t1``.

        Returns the requests, the times (their last token) and the longest gaps of the sequences
        that finished; their slots are freed at those times.
        """
        sub, sf, sr = self.request[:hi], self.counting_from[:hi], self.tokens_left[:hi]
        tok = t1 - sf  # the tokens each gains: max(t1 - sf, 0) / tau, in place
        np.maximum(tok, 0.0, out=tok)
        tok /= tau
        done = sr <= tok
        done &= sf <= t1
        done &= sub >= 0
        out = None
        idx = np.flatnonzero(done)  # flat indices: rows [:hi] are the arrays' first hi * slots
        if idx.size:
            ri = idx // self.slots
            ft = sf.reshape(-1)[idx] + np.maximum(sr.reshape(-1)[idx], 0.0) * tau.reshape(-1)[ri]
            flat_req = self.request.reshape(-1)
            reqs = flat_req[idx]
            flat_req[idx] = -1
            self.freed_at.reshape(-1)[idx] = ft
            self.size[:hi] -= np.bincount(ri, minlength=hi)
            out = (reqs, ft, self.longest_gap.reshape(-1)[idx])
        sr -= tok
        np.maximum(sf, t1, out=sf)
        return out

    def free_slots(self, urows: np.ndarray, upos: np.ndarray, ranks: np.ndarray):
        """For the ``ranks[i]``-th request admitted to row ``urows[upos[i]]``: a free slot of that
        row and the time its ``ranks[i]``-th slot to free became free. (Which free slot a request
        takes does not matter: free times count only within the step they fall in.)"""
        freemask = self.request[urows] < 0
        ftimes = np.where(freemask, self.freed_at[urows], np.inf)
        ftimes.sort(axis=1)
        fc = np.flatnonzero(freemask) % self.slots  # each free slot's column, row by row
        n_free = freemask.sum(axis=1)
        row_start = n_free.cumsum() - n_free
        return fc[row_start[upos] + ranks], ftimes[upos, ranks]

    def place(self, rows, slots, reqs, tokens_left, first_token_s, nrows: int,
              gap_s=0.0) -> None:
        """Put each admitted request in its slot; its tokens count from its first token, and its
        longest gap starts at ``gap_s`` (a retried request's wait since its replica failed)."""
        self.request[rows, slots] = reqs
        self.tokens_left[rows, slots] = tokens_left
        self.counting_from[rows, slots] = first_token_s
        self.longest_gap[rows, slots] = gap_s
        self.size += np.bincount(rows, minlength=nrows)


class PrefillServers:
    """Each replica's prefill server: prompts one at a time, in the order they were admitted.

    ``free_at[r]``: when it is next free (seconds). ``busy_s[r, b]`` and ``iterations[r, b]``: the
    prefill seconds and prefill iterations booked into step ``b`` (a ring of ``ring`` steps);
    a decode iteration runs only in the time the step's prefills leave. ``biggest[r, b]``: the
    longest prompt (tokens) whose prefill starts in step ``b`` (the stall it may cause).
    """

    def __init__(self, rows: int, ring: int) -> None:
        self.ring = ring
        self.free_at = np.zeros(rows)
        self.busy_s = np.zeros((rows, ring))
        self.iterations = np.zeros((rows, ring))
        self.biggest = np.zeros((rows, ring))

    def grow(self, rows: int) -> None:
        self.free_at = _grown(self.free_at, rows, 0.0)
        self.busy_s = _grown(self.busy_s, rows, 0.0)
        self.iterations = _grown(self.iterations, rows, 0.0)
        self.biggest = _grown(self.biggest, rows, 0.0)

    def clear(self, r: int) -> None:
        self.busy_s[r] = 0.0
        self.iterations[r] = 0.0
        self.biggest[r] = 0.0

    def next_step(self, k: int, dt: float) -> None:
        """Step ``k`` is spent: its prefill seconds beyond ``dt`` carry over to step ``k + 1``."""
        kb = k % self.ring
        self.busy_s[:, (k + 1) % self.ring] += np.maximum(self.busy_s[:, kb] - dt, 0.0)
        self.busy_s[:, kb] = 0.0
        self.iterations[:, kb] = 0.0
        self.biggest[:, kb] = 0.0

    def run(self, rows, upos, ranks, ready, dur, chunks, k: int, dt: float,
            tokens=None) -> tuple:
        """Prefill each admitted prompt (grouped by row, in admission order, ``ranks[i]`` its place
        in its row's group, ``upos[i]`` its group's) on its row's server.

        Lindley's recurrence, ``start_i = max(ready_i, end_{i-1})``, ``end_i = start_i + dur_i``,
        for all rows at once with a group-wise running maximum; each prefill's seconds and
        iterations are booked into the steps it spans (from step ``k + 1``: this step's batch
        speeds are already spent); ``tokens`` (each prompt's length) marks the step its prefill
        starts in with its longest prompt. Returns ``(start, end)``, seconds.
        """
        csum = dur.cumsum()
        first_idx = np.arange(dur.size) - ranks  # where each prompt's row group begins
        base = np.where(first_idx > 0, csum[first_idx - 1], 0.0)
        c_in = csum - base  # inclusive cumulative duration within the row
        x = ready - (c_in - dur)
        head = ranks == 0
        x[head] = np.maximum(x[head], self.free_at[rows[head]])
        big = 4.0 * (float(np.abs(x).max()) + float(csum[-1]) + 1.0)
        grp = upos.astype(float) * big
        end = c_in + (np.maximum.accumulate(x + grp) - grp)
        start = end - dur
        self.free_at[rows] = end  # the last of each row wins (sorted by row)
        self._book(rows, start, end, dur, chunks, k, dt, tokens)
        return start, end

    def _book(self, rows, start, end, dur, chunks, k: int, dt: float, tokens) -> None:
        ring = self.ring
        b0 = np.maximum(np.floor(start / dt).astype(np.int64), k + 1)
        b1 = np.maximum(np.floor(end / dt).astype(np.int64), k + 1)
        lim = k + ring - 1
        b0c, b1c = np.minimum(b0, lim), np.minimum(b1, lim)
        same = b0c == b1c
        cut = np.minimum(np.maximum((b0 + 1) * dt, start), end)  # np.clip, without its wrapper
        np.add.at(self.busy_s, (rows, b0c % ring), np.where(same, dur, cut - start))
        spill = ~same
        if spill.any():
            np.add.at(self.busy_s, (rows[spill], b1c[spill] % ring),
                      np.minimum(end[spill] - cut[spill], dt))
        np.add.at(self.iterations, (rows, b1c % ring), chunks)
        if tokens is not None:
            np.maximum.at(self.biggest, (rows, b0c % ring), tokens)


class Pool:
    """Nodes kept ready for a fast start (``"warm"``: image and weights on NVMe; ``"sleep"``: an
    engine asleep), billed while they wait. ``ready`` nodes now; ``refills``: when each node taken
    from the pool will be replaced."""

    def __init__(self, size: int, refill_s: float) -> None:
        self.size, self.refill_s = size, refill_s
        self.ready = size
        self.refills: list[float] = []

    def take(self, t0: float) -> bool:
        """A node for a scale-up, if one is ready (its replacement is ordered)."""
        if self.ready <= 0:
            return False
        self.ready -= 1
        self.refills.append(t0 + self.refill_s)
        return True

    def give_back(self) -> None:
        """A released replica's node goes back to the pool, if the pool has room."""
        if self.size and self.ready + len(self.refills) < self.size:
            self.ready += 1

    def refill(self, t0: float) -> None:
        """Replacement nodes that are ready by ``t0`` join the pool."""
        if self.refills:
            done = [x for x in self.refills if x <= t0]
            if done:
                self.ready += len(done)
                self.refills = [x for x in self.refills if x > t0]

    @property
    def billed(self) -> int:
        """Nodes of the pool being paid for: ready ones and refills under way."""
        return self.ready + len(self.refills)
