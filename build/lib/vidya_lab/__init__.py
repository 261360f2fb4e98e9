"""vidya-lab: the arithmetic and simulation behind the book on serving LLMs and planning capacity.

Modules (one idea each): ``catalog``, ``parallelism``, ``sizing``, ``slo``, ``workload``,
``queueing``, ``layouts``, ``caching``, ``admission``, ``autoscaling``, ``plan``; front ends in
``widgets``; exercises in ``exercises``; the command line in ``cli``.
"""

__version__ = "0.1.0"
