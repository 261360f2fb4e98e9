"""Chapter 5 exercises: right answers pass, the common wrong ones get their hint."""

from __future__ import annotations

import math

from vidya_lab import admission, queueing, sizing
from vidya_lab.exercises import ch05, get_exercise, judge, solve
from vidya_lab.exercises.key import ch05 as key5
from vidya_lab.scenario import TANVI


def test_answers_by_hand():
    r = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    step = sizing.iteration_time_s(r, prefill=[(TANVI.upload_tokens, 0)])
    assert judge(get_exercise("5.1"), step).right
    # 40,000 tokens at 512 − 32 = 480 per step: 83 full steps and one partial
    assert judge(get_exercise("5.2"), 84).right
    assert not judge(get_exercise("5.2"), 83).right
    total, done = 0.0, 0
    while done < TANVI.upload_tokens:
        c = min(512, TANVI.upload_tokens - done)
        total += sizing.iteration_time_s(r, prefill=[(c, done)])
        done += c
    assert judge(get_exercise("5.3"), total - step).right
    rho = 0.1 * step
    assert judge(get_exercise("5.4"), rho * step / (2 * (1 - rho))).right
    c = solve(get_exercise("5.5"))
    a = 1.0 * step
    assert queueing.erlang_c(c, a) <= 0.1 < queueing.erlang_c(c - 1, a)


def test_the_simulator_agrees_with_exercise_5_2():
    # 32 students decoding long answers, then the upload: its first token comes on step 84
    import numpy as np

    from vidya_lab.workload import Workload

    n = ch05.DECODING_STUDENTS
    w = Workload.from_arrays(np.append(np.zeros(n), 3.0), np.append(np.full(n, 100),
                                                                  TANVI.upload_tokens),
                             np.append(np.full(n, 1000), 1))
    res = admission.simulate(ch05.replica(), w,
                             admission.SchedulerConfig(policy="chunked", chunk_tokens=512))
    log = res.iterations
    up_steps = np.flatnonzero((log.start_s >= 3.0) & (log.prefill_tokens > 0))
    # the students decode when the upload arrives; every step gives it 512 − 32 = 480 tokens
    assert up_steps.size == math.ceil(TANVI.upload_tokens / (512 - n)) == 84
    assert np.all(log.decode_count[up_steps] == n)
    assert log.prefill_tokens[up_steps].sum() == TANVI.upload_tokens


def test_units_slip_is_caught():
    assert "1000" in judge(get_exercise("5.1"), key5.upload_step_s() * 1000).message
