"""The fleet simulation's loop as it was before issue 28's speed-up (simulate, run_state, replicas,
waiting), kept unchanged as the reference of ``tests/test_autoscaling_fast.py``."""

from fleet_reference.simulate import simulate_fleet as reference_simulate_fleet

__all__ = ["reference_simulate_fleet"]
