"""The autoscaler's tick: a policy's answer turned into the replica count the fleet is asked for.

One rule for both fleet models (:func:`~vidya_lab.autoscaling.simulate.simulate_fleet` and
:func:`~vidya_lab.autoscaling.fluid.simulate_fluid`), so a difference between them is never a
difference of control. Every ``Fleet.interval_s`` (HPA's sync period, 15 s) the autoscaler:

1. asks the policy: a :class:`~vidya_lab.autoscaling.policies.Reactive` metric's raw count, a
   :class:`~vidya_lab.autoscaling.policies.Scheduled` hour's count, or a
   :class:`~vidya_lab.autoscaling.policies.Predictive` forecast *and* its live floor;
2. adds the fleet's ``headroom`` (N+k) and clips to ``[min_replicas, max_replicas]``;
3. for a reactive rule, holds a scale-up until ``scale_up_cooldown_s`` has passed since the last,
   and scales down only to the highest count wanted over ``scale_down_window_s`` (HPA's
   stabilisation window); a predictive policy takes the larger of its forecast and that rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vidya_lab.autoscaling.policies import Predictive, Reactive


@dataclass(frozen=True)
class Signals:
    """What a reactive rule can see at a tick: ``serving`` replicas, ``active`` sequences in their
    batches, ``queued`` requests waiting, ``kv_tokens`` in use and the arrival ``rate_per_s`` over
    the rule's window."""

    serving: int
    active: int = 0
    queued: int = 0
    kv_tokens: float = 0.0
    rate_per_s: float = 0.0


class _ReactiveRule:
    """A :class:`Reactive` policy's memory: when it last scaled up, and what it wanted lately."""

    def __init__(self, policy: Reactive, init: int) -> None:
        self.policy = policy
        self.last_up = -math.inf
        self.window: list[tuple[float, int]] = [(0.0, init)]  # the starting fleet counts as wanted

    def want(self, t0: float, current: int, seen: Signals, model, clip) -> int:
        p = self.policy
        raw = p.raw_desired(seen.serving, seen.active, seen.queued, seen.kv_tokens,
                            seen.rate_per_s, model)
        window = self.window
        window.append((t0, raw))
        while window and window[0][0] < t0 - p.scale_down_window_s:
            window.pop(0)
        want = clip(raw)
        if want > current:
            if t0 - self.last_up < p.scale_up_cooldown_s:
                want = current
            else:
                self.last_up = t0
        elif want < current:
            want = max(want, clip(max(x for _, x in window)))
        return want


class Autoscaler:
    """The tick rule for ``fleet`` under ``policy`` (module docstring); ``init`` is the starting
    fleet, which the scale-down window remembers as wanted."""

    def __init__(self, fleet, policy, init: int) -> None:
        self.fleet, self.policy = fleet, policy
        live = policy if isinstance(policy, Reactive) else getattr(policy, "live", None)
        self.rule = None if live is None else _ReactiveRule(live, init)

    @property
    def watches_live_load(self) -> bool:
        """Does the policy read the fleet's live signals (a reactive rule, or a predictive floor)?"""
        return self.rule is not None

    @property
    def live_policy(self) -> Reactive | None:
        """The reactive rule whose signals the fleet must measure, if any."""
        return None if self.rule is None else self.rule.policy

    def clip(self, x: int) -> int:
        """The policy's count plus the headroom, within the fleet's bounds."""
        return int(min(max(x + self.fleet.headroom, self.fleet.min_replicas),
                       self.fleet.max_replicas))

    def want(self, t0: float, current: int, seen: Signals) -> int:
        """Replicas (serving + starting) wanted at ``t0``; ``current`` is serving + starting now."""
        if isinstance(self.policy, Reactive):
            return self.rule.want(t0, current, seen, self.fleet.model, self.clip)
        forecast = self.clip(self.policy.desired_at(t0))
        if self.rule is None:
            return forecast
        return max(forecast, self.rule.want(t0, current, seen, self.fleet.model, self.clip))


def starting_fleet(fleet, policy, given: int | None) -> int:
    """Replicas serving at the start: ``given`` within the fleet's bounds, or else the policy's
    count at t = 0 plus the headroom (``min_replicas`` for a reactive policy)."""
    from vidya_lab import _validate as v

    lo, hi = fleet.min_replicas, fleet.max_replicas
    if given is not None:
        return int(min(max(v.check_int("initial_replicas", given, minimum=0), lo), hi))
    start = lo if isinstance(policy, Reactive) else policy.desired_at(0.0)
    return int(min(max(start + fleet.headroom, lo), hi))


def check_policy(policy):
    """``policy`` if it is one of the three policy types, else a ``TypeError`` naming them."""
    from vidya_lab.autoscaling.policies import Scheduled

    if not isinstance(policy, Reactive | Scheduled | Predictive):
        raise TypeError(f"policy must be Reactive, Scheduled or Predictive, got "
                        f"{type(policy).__name__}")
    return policy
