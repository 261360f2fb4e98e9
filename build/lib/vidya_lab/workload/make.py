"""From arrival times to a workload: sample each request's lengths, class and shared prefix.

:func:`make_workload` attaches sampled lengths (and optionally priority classes and a shared
document) to arrival times; :func:`tutor_requests` is the one place Tanvi's requests get their
lengths (the syllabus and a subject prompt, a question, an answer), for the toy server of chapter 1
and the fleet of chapter 6.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from vidya_lab._validate import check_fraction, check_instance, check_int, check_real, check_reals
from vidya_lab.workload.arrivals import sorted_copy
from vidya_lab.workload.lengths import LognormalLength, _LengthDist
from vidya_lab.workload.requests import Workload
from vidya_lab.workload.seeding import MAX_ARRIVALS, as_rng


def _sample_classes(classes: Mapping[str, float], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` labels drawn with the probabilities of ``classes`` (which must sum to 1)."""
    check_instance("classes", classes, Mapping, "mapping of {label: probability}")
    labels = list(classes)
    if not labels:
        raise ValueError("classes must name at least one class")
    probs = np.asarray([check_real(f"classes[{k!r}]", classes[k], minimum=0.0) for k in labels])
    if not math.isclose(float(probs.sum()), 1.0, rel_tol=1e-9, abs_tol=1e-12):
        raise ValueError(f"class probabilities must sum to 1, got {float(probs.sum())}")
    return np.asarray(labels, dtype=str)[rng.choice(len(labels), size=n, p=probs / probs.sum())]


def make_workload(arrival_s, *, prompt_tokens: _LengthDist, output_tokens: _LengthDist,
                  seed: int | np.random.Generator,
                  classes: Mapping[str, float] | None = None,
                  shared_prefix_tokens: int = 0, shared_prefix_fraction: float = 0.0,
                  shared_prefix_id: int = 0) -> Workload:
    """Attach sampled lengths (and optionally classes and a shared prefix) to arrival times.

    Parameters
    ----------
    arrival_s : arrival times, seconds (a 1-D sequence of finite numbers ≥ 0, at most
        ``MAX_ARRIVALS``; e.g. from :func:`poisson_arrivals`).
    prompt_tokens : distribution of each request's own prompt tokens.
    output_tokens : distribution of output tokens.
    seed : int or Generator.
    classes : ``{label: probability}``; each request gets a label drawn with these probabilities
        (they must sum to 1). ``None``: no classes (label ``""``).
    shared_prefix_tokens : length of a shared document, tokens (e.g. one uploaded textbook chapter).
    shared_prefix_fraction : fraction of requests whose prompt begins with that document; for them
        ``prompt_tokens = shared_prefix_tokens + own prompt`` and ``prefix_id = shared_prefix_id``.
    shared_prefix_id : the id given to that document.

    Returns
    -------
    Workload, sorted by arrival.
    """
    if not isinstance(prompt_tokens, _LengthDist) or not isinstance(output_tokens, _LengthDist):
        raise TypeError("prompt_tokens and output_tokens must be length distributions "
                        "(FixedLength, LognormalLength or EmpiricalLength)")
    arr = sorted_copy(check_reals("arrival_s", arrival_s, minimum=0.0, max_length=MAX_ARRIVALS))
    n = arr.size
    rng = as_rng(seed)
    prefix_len = check_int("shared_prefix_tokens", shared_prefix_tokens, minimum=0)
    frac = check_fraction("shared_prefix_fraction", shared_prefix_fraction)
    pid_value = check_int("shared_prefix_id", shared_prefix_id, minimum=0)
    if frac > 0 and prefix_len == 0:
        raise ValueError("shared_prefix_fraction > 0 needs shared_prefix_tokens > 0")
    prompt = prompt_tokens.sample(n, rng)
    out = output_tokens.sample(n, rng)
    has_prefix = rng.uniform(size=n) < frac if frac > 0 else np.zeros(n, dtype=bool)
    pid = np.where(has_prefix, pid_value, -1).astype(np.int64)
    ptok = np.where(has_prefix, prefix_len, 0).astype(np.int64)
    prompt = prompt + ptok
    kl = None if classes is None else _sample_classes(classes, n, rng)
    return Workload.from_arrays(arr, prompt, out, prefix_id=pid, prefix_tokens=ptok, klass=kl)


def tutor_requests(arrival_s, *, seed: int | np.random.Generator, scenario=None) -> Workload:
    """Tanvi's requests at the given arrival times: the story's prompt and answer lengths.

    Every prompt starts with the syllabus and a subject prompt (shared prefix id 0), followed by the
    student's question (lognormal: the scenario's mean and median); answers are lognormal (mean and
    median from the scenario, at most ``answer_tokens_max``). ``scenario`` defaults to the book's
    (:data:`vidya_lab.scenario.TANVI`). The one place the tutor's lengths become a workload: the toy
    server of chapter 1 and the fleet of chapter 6 both call it.
    """
    from vidya_lab.scenario import TANVI, Scenario

    scenario = TANVI if scenario is None else check_instance("scenario", scenario, Scenario)
    return make_workload(
        arrival_s,
        prompt_tokens=LognormalLength(scenario.question_tokens_mean, scenario.question_tokens_p50),
        output_tokens=LognormalLength(scenario.answer_tokens_mean, scenario.answer_tokens_p50,
                                      max_tokens=scenario.answer_tokens_max),
        seed=seed,
        shared_prefix_tokens=scenario.syllabus_prompt_tokens + scenario.subject_prompt_tokens,
        shared_prefix_fraction=1.0, shared_prefix_id=0)
