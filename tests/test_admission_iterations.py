"""The iteration log's prompt chunks: what each step carried, request by request."""

from __future__ import annotations

import numpy as np

from vidya_lab import admission as ad
from vidya_lab import sizing
from vidya_lab.scenario import TANVI

R = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)


def test_every_prompt_token_is_in_exactly_one_logged_chunk():
    w = ad.upload_workload(1.0, 20.0, seed=3, upload_at_s=5.0)
    res = ad.simulate(R, w, ad.SchedulerConfig(chunk_tokens=2048))
    log = res.iterations
    step_of_chunk = np.repeat(np.arange(len(log)), np.diff(log.chunk_offsets))
    per_step = np.bincount(step_of_chunk, weights=log.chunk_tokens, minlength=len(log))
    assert np.array_equal(per_step, log.prefill_tokens)
    assert np.array_equal(np.diff(log.chunk_offsets), log.prefill_seqs)
    # nothing is preempted here, so each request's chunks add up to its prompt
    assert res.preemptions == 0
    totals = np.bincount(log.chunk_request, weights=log.chunk_tokens, minlength=len(w))
    assert np.array_equal(totals, w.prompt_tokens)
    # the upload is cut into chunks of at most the budget minus the decodes
    up = int(np.flatnonzero(w.klass == ad.UPLOAD)[0])
    steps = [j for j in range(len(log)) if any(i == up for i, _ in log.step_chunks(j))]
    assert len(steps) >= TANVI.upload_tokens // 2048
    for j in steps:
        assert log.prefill_tokens[j] + log.decode_count[j] <= 2048


def test_the_default_budget_is_the_replicas():
    small = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4, max_batched_tokens=1024)
    w = ad.upload_workload(0.5, 10.0, seed=1, upload_at_s=2.0, upload_tokens=10_000)
    log = ad.simulate(small, w).iterations
    assert int((log.prefill_tokens + log.decode_count).max()) <= 1024
