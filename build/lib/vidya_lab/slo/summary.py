"""One summary: the JSON object every vidya-lab report prints for a trace.

:func:`summarize` counts outcomes, takes :func:`~vidya_lab.slo.percentile_summary` of TTFT, TPOT and
end-to-end latency over finished requests, and adds attainment when an SLO is given. The same
function judges a simulation, a synthetic trace and a recorded trace (``vidya-lab slo``).
"""

from __future__ import annotations

import numpy as np

from vidya_lab._validate import check_instance
from vidya_lab.slo.attainment import SLO, attainment
from vidya_lab.slo.metrics import e2e_s, tpot_s, ttft_s
from vidya_lab.slo.percentiles import percentile_summary
from vidya_lab.slo.timelines import as_timelines


def summarize(timelines, slo: SLO | None = None) -> dict:
    """The summary every vidya-lab report prints, as a JSON-ready dict.

    Keys: ``count`` (all requests), ``finished``, ``rejected``, ``timed_out``, ``ttft_s``,
    ``tpot_s``, ``e2e_s`` (each a :func:`~vidya_lab.slo.percentile_summary` over finished
    requests, seconds), ``tpot_undefined`` (finished one-token answers, left out of ``tpot_s``), and
    ``attainment`` (0..1, over all requests) when ``slo`` has any target.
    """
    if slo is not None:
        check_instance("slo", slo, SLO)
    t = as_timelines(timelines)
    counts = t.counts()
    tp = tpot_s(t)
    out: dict = {"count": counts["count"], "finished": counts["finished"],
                 "rejected": counts["rejected"], "timed_out": counts["timed_out"],
                 "ttft_s": percentile_summary(ttft_s(t)),
                 "tpot_s": percentile_summary(tp),
                 "e2e_s": percentile_summary(e2e_s(t)),
                 "tpot_undefined": int(np.count_nonzero(np.isnan(tp)))}
    if slo is not None and not slo.empty:
        out["attainment"] = attainment(t, slo) if len(t) else None
    return out
