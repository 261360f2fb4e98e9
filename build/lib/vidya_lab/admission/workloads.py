"""The chapter's traffic: students asking questions, and one teacher's long upload.

:func:`poisson_workload` and :func:`upload_workload` build :class:`vidya_lab.workload.Workload`
objects from the scenario's lengths (:data:`vidya_lab.scenario.TANVI`); any other workload from
:mod:`vidya_lab.workload` runs the same way. :func:`saturation_rate_per_s` says which rate keeps a
replica how busy, from the cost model's steady state.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.admission.config import STUDENT, UPLOAD
from vidya_lab.scenario import TANVI
from vidya_lab.workload import FixedLength, Workload, _LengthDist, as_rng, poisson_arrivals

#: Most requests a workload built here may be expected to hold (``rate × duration``): the
#: simulator's own limit (:data:`vidya_lab.admission.MAX_REQUESTS`), checked before drawing any.
MAX_EXPECTED_REQUESTS = 1_000_000


#: Longest prompt or answer a fixed length may ask for, tokens (no model's context is longer).
MAX_REQUEST_TOKENS = 1_000_000_000


def _length(name: str, value) -> _LengthDist:
    if isinstance(value, _LengthDist):
        return value
    return FixedLength(v.check_int(name, value, minimum=1, maximum=MAX_REQUEST_TOKENS))


def poisson_workload(rate_per_s: float, duration_s: float, *, seed: int | np.random.Generator,
                     prompt_tokens=TANVI.prompt_tokens_mean,
                     output_tokens=TANVI.answer_tokens_mean, klass: str = STUDENT) -> Workload:
    """Students asking questions: Poisson arrivals with the given lengths.

    Parameters
    ----------
    rate_per_s : requests per second.
    duration_s : window, seconds.
    seed : int or Generator (same seed, same workload).
    prompt_tokens, output_tokens : an int (every request the same) or a length distribution from
        :mod:`vidya_lab.workload`; defaults: the scenario's mean prompt and answer lengths.
    klass : the class label of every request.
    """
    rate = v.check_real("rate_per_s", rate_per_s, minimum=0.0)
    dur = v.check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    v.check_work("rate_per_s x duration_s", rate * dur, MAX_EXPECTED_REQUESTS,
                 unit="expected requests", hint="simulate a shorter window or a lower rate")
    klass = v.check_str("klass", klass, allow_empty=True, max_length=200)
    rng = as_rng(seed)
    pdist = _length("prompt_tokens", prompt_tokens)
    odist = _length("output_tokens", output_tokens)
    arr = poisson_arrivals(rate_per_s, duration_s, seed=rng)
    n = arr.size
    p = np.maximum(pdist.sample(n, rng), 1)
    o = np.maximum(odist.sample(n, rng), 1)
    return Workload.from_arrays(arr, p, o, klass=np.full(n, klass))


def upload_workload(rate_per_s: float, duration_s: float, *, seed: int | np.random.Generator,
                    upload_at_s: float, upload_tokens: int = TANVI.upload_tokens,
                    upload_output_tokens: int = TANVI.answer_tokens_mean,
                    prompt_tokens=TANVI.prompt_tokens_mean,
                    output_tokens=TANVI.answer_tokens_mean) -> Workload:
    """The chapter's scenario: students (class ``"student"``) plus ONE long upload (``"upload"``).

    The upload is a teacher's document of ``upload_tokens`` tokens (default the scenario's 50-page
    upload) arriving at ``upload_at_s`` seconds and asking for ``upload_output_tokens`` tokens.
    Students are :func:`poisson_workload` at ``rate_per_s``.
    """
    at = v.check_real("upload_at_s", upload_at_s, minimum=0.0)
    dur = v.check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    if at >= dur:
        raise ValueError(f"upload_at_s ({at}) must be inside the window [0, duration_s = {dur})")
    up = v.check_int("upload_tokens", upload_tokens, minimum=1, maximum=MAX_REQUEST_TOKENS)
    upo = v.check_int("upload_output_tokens", upload_output_tokens, minimum=1,
                      maximum=MAX_REQUEST_TOKENS)
    s = poisson_workload(rate_per_s, dur, seed=seed, prompt_tokens=prompt_tokens,
                         output_tokens=output_tokens)
    return Workload.from_arrays(np.append(s.arrival_s, at), np.append(s.prompt_tokens, up),
                                np.append(s.output_tokens, upo),
                                klass=np.append(s.klass, UPLOAD).astype(str))


def saturation_rate_per_s(replica: sizing.Replica, prompt_tokens: int, output_tokens: int) -> float:
    """Requests/s one replica sustains when saturated: output tokens/s ÷ output tokens per request.

    From :func:`vidya_lab.sizing.saturated_throughput` (the cost model's steady state); a load of
    ``u × this`` keeps the replica about ``u`` busy.
    """
    v.check_instance("replica", replica, sizing.Replica, "vidya_lab.sizing.Replica")
    isl = v.check_int("prompt_tokens", prompt_tokens, minimum=1)
    osl = v.check_int("output_tokens", output_tokens, minimum=1)
    sat = sizing.saturated_throughput(replica, isl, osl)
    return sat["output_tokens_per_s"] / osl

