"""The fleet over a day: cold-start arithmetic, the coarse replica against its own steady state and
against the iteration-level simulator, conservation, determinism, policies, headroom, failures,
and the Erlang C counterpart."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from vidya_lab import autoscaling as a
from vidya_lab import queueing, sizing, slo
from vidya_lab.scenario import TANVI
from vidya_lab.workload import DiurnalProfile

H = a.SECONDS_PER_HOUR


@cache
def rep() -> sizing.Replica:
    return sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)


@cache
def model() -> a.ReplicaModel:
    return a.replica_model(rep())


def flat_workload(rate_per_s: float, duration_s: float, seed: int):
    prof = DiurnalProfile(hours=(0.0, 12.0), relative=(1.0, 1.0), peak_rate_per_s=rate_per_s)
    return a.day_workload(prof, seed=seed, duration_s=duration_s)


def exam_morning(**kw):
    """The exam-day rush window (04:30-08:00), coarse step: a few hundred thousand requests."""
    args = dict(day="exam", seed=0, dt_s=15.0, start_s=4.5 * H, duration_s=3.5 * H, model=model())
    args.update(kw)
    return a.simulate_day(rep(), **args)


# ----------------------------------------------------------------------------- cold start

def test_cold_start_parts_by_hand():
    cold = a.ColdStart()
    parts = cold.parts_s(rep())
    w = sizing.weights_bytes(TANVI.model_id, "bf16")  # 70.6e9 parameters x 2 bytes
    assert w == pytest.approx(141.2e9, rel=1e-3)
    # Anyscale's naive path moved Llama-2-70B (138 GB) in 265 s: about 0.52 GB/s
    assert a.NAIVE_STORAGE_BYTES_PER_S == pytest.approx(138e9 / 265.0, rel=0.01)
    assert parts["weights_load_s"] == pytest.approx(w / a.NAIVE_STORAGE_BYTES_PER_S)
    assert parts["image_pull_s"] == pytest.approx(12.64e9 / 130e6)
    assert parts["first_request_s"] == pytest.approx(3.72 - 0.92)
    assert cold.total_s(rep()) == pytest.approx(sum(parts.values()))
    assert list(parts) == ["provision_s", "image_pull_s", "weights_load_s", "engine_start_s",
                           "first_request_s", "readiness_s"]


def test_derived_cold_start_lands_near_the_observed_eight_minutes():
    # the story's 8 minutes are never read by the module: they come out of the parts
    derived = a.ColdStart().total_s(rep())
    assert derived == pytest.approx(TANVI.observed_scale_up_s, rel=0.10)
    # and the weights are the biggest part of it
    parts = a.ColdStart().parts_s(rep())
    assert max(parts, key=parts.get) == "weights_load_s"


def test_mitigations_change_the_right_parts():
    cold = a.ColdStart()
    nvme = a.mitigated(cold, "local_nvme")
    assert nvme.parts_s(rep())["weights_load_s"] == pytest.approx(
        sizing.weights_bytes(TANVI.model_id, "bf16") / 5e9)
    slim = a.mitigated(cold, "slim_image")
    assert slim.parts_s(rep())["image_pull_s"] == pytest.approx(7.07e9 / 130e6)
    assert slim.parts_s(rep())["weights_load_s"] == cold.parts_s(rep())["weights_load_s"]
    both = a.mitigated(cold, "local_nvme", "slim_image")
    assert both.total_s(rep()) < min(nvme.total_s(rep()), slim.total_s(rep()))
    warm = a.pool_start_s(cold, rep(), "warm")
    p = nvme.parts_s(rep())
    assert warm == pytest.approx(p["weights_load_s"] + p["engine_start_s"] + p["first_request_s"]
                                 + p["readiness_s"])
    assert a.pool_start_s(cold, rep(), "sleep") == cold.wake_s < warm < cold.total_s(rep())
    with pytest.raises(ValueError, match="mitigation"):
        a.mitigated(cold, "warm_pool")
    with pytest.raises(ValueError, match="registry_bytes_per_s"):
        a.ColdStart(registry_bytes_per_s=0)


# ----------------------------------------------------------------------------- the coarse replica

def test_replica_model_tables_come_from_the_cost_model():
    m = model()
    r = rep()
    assert m.slots == min(sizing.max_concurrent_sequences(r, 3900), r.max_num_seqs)
    ctx = TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean / 2
    assert m.decode_s[10] == pytest.approx(r.step_time_s(0, 0, 0, 0, 10, 10 * ctx))
    # one prompt on an idle replica: its prefill time is the cost model's
    g = int(m.prompt_grid[20])
    assert float(m.prefill_s([0], [g])[0]) == pytest.approx(sizing.prefill_time_s(r, g), rel=1e-9)
    assert float(m.prefill_s([0], [2048])[0]) == pytest.approx(sizing.prefill_time_s(r, 2048),
                                                                rel=1e-3)
    assert np.all(np.diff(m.decode_s[1:]) > 0)  # a bigger batch is a slower iteration
    with pytest.raises(ValueError, match="no 3900-token sequence"):
        a.replica_model(sizing.Replica(TANVI.model_id, "l40s", tp=1, precision="fp8"))


def test_steady_state_is_a_fixed_point_of_littles_law():
    m = model()
    st = m.steady_state(1.0)
    lam = 1.0
    assert st["batch"] == pytest.approx(lam * (st["ttft_s"] + (m.output_tokens_mean - 1)
                                               * st["tpot_s"]), rel=1e-4)
    # light load: TPOT is about one decode iteration at that batch
    light = m.steady_state(0.05)
    assert light["tpot_s"] == pytest.approx(m.decode_s[1], rel=0.2)
    # heavier load: slower tokens, more prefill time
    heavy = m.steady_state(0.9 * m.capacity_rps())
    assert heavy["tpot_s"] > st["tpot_s"] > light["tpot_s"]
    assert heavy["prefill_utilisation"] > st["prefill_utilisation"]
    cap = m.capacity_rps()
    assert m.steady_state(cap)["tpot_s"] == pytest.approx(TANVI.tpot_target_s, rel=1e-3)
    assert m.steady_state(3 * cap) is None  # cannot keep up


def test_simulated_tpot_matches_the_steady_state():
    # one replica at a fixed load: the simulation's mean TPOT is the model's fixed point
    m = model()
    rate = 0.7 * m.capacity_rps()
    run = a.simulate_fleet(flat_workload(rate, 1800, 4), a.Fleet(m, min_replicas=1, max_replicas=1),
                           a.Scheduled((1,) * 24), initial_replicas=1)
    # (the fixed point works with the mean batch; the simulation's batch varies, and a step time
    # convex in the batch makes the simulated mean a little slower)
    assert float(np.mean(slo.tpot_s(run.timelines))) == pytest.approx(
        m.steady_state(rate)["tpot_s"], rel=0.15)


def test_target_utilisation_keeps_tanvis_attainment():
    # TARGET_UTILISATION is where a steady load keeps 99 % within the targets
    m = model()
    w = flat_workload(a.TARGET_UTILISATION * m.capacity_rps(), 1800, 5)
    run = a.simulate_fleet(w, a.Fleet(m, min_replicas=1, max_replicas=1), a.Scheduled((1,) * 24),
                           initial_replicas=1)
    assert slo.attainment(run.timelines, a.tutor_slo()) >= TANVI.attainment_target
    w = flat_workload(0.95 * m.capacity_rps(), 1800, 5)
    run = a.simulate_fleet(w, a.Fleet(m, min_replicas=1, max_replicas=1), a.Scheduled((1,) * 24),
                           initial_replicas=1)
    assert slo.attainment(run.timelines, a.tutor_slo()) < TANVI.attainment_target


def test_coarse_model_against_the_iteration_level_simulator():
    # two fidelities, one hour, one replica, the same requests (chapter 6 prints these numbers)
    rows = a.compare_fidelities(rep(), (0.5, 0.8), duration_s=3600.0, seed=3, dt_s=1.0)
    half, busy = rows
    for row in rows:
        c, it = row["coarse"], row["iteration"]
        assert c["tpot_mean_s"] == pytest.approx(it["tpot_mean_s"], rel=0.10)
        assert c["ttft_p50_s"] == pytest.approx(it["ttft_p50_s"], rel=0.10)
        assert c["ttft_p99_s"] == pytest.approx(it["ttft_p99_s"], rel=0.25)
    assert half["coarse"]["attainment"] == pytest.approx(half["iteration"]["attainment"], abs=0.005)
    assert busy["coarse"]["attainment"] == pytest.approx(busy["iteration"]["attainment"], abs=0.03)


def test_time_step_barely_moves_the_answer():
    m = model()
    w = flat_workload(0.7 * m.capacity_rps() * 3, 1800, 6)
    att = []
    for dt in (1.0, 5.0):
        run = a.simulate_fleet(w, a.Fleet(m, min_replicas=3, max_replicas=3),
                               a.Scheduled((3,) * 24), dt_s=dt, initial_replicas=3)
        att.append(slo.attainment(run.timelines, a.tutor_slo()))
    assert att[0] == pytest.approx(att[1], abs=0.01)


# ----------------------------------------------------------------------------- the fleet

def test_nothing_is_lost_over_a_day_with_failures_retries_and_timeouts():
    # an overloaded hour with failures: some requests finish, some are turned away, none vanish
    m = model()
    w = flat_workload(4 * m.capacity_rps(), 1800, 7)
    fleet = a.Fleet(m, min_replicas=1, max_replicas=3, mtbf_s=600.0, failures_at_s=(300.0,),
                    queue_timeout_s=30.0, max_retries=1)
    run = a.simulate_fleet(w, fleet, a.Reactive(), seed=2, initial_replicas=2, drain_limit_s=60.0)
    c = run.counts()
    assert c["arrived"] == len(w) == c["finished"] + c["rejected"] + c["in_flight"]
    assert c["rejected"] > 0 and c["failures"] >= 1 and c["retried"] > 0
    assert len(run.timelines) == c["finished"] + c["rejected"]
    # every finished request is consistent: a <= admitted <= first token <= finish
    t = run.timelines
    fin = t.finished
    assert np.all(t.arrival_s[fin] <= t.admitted_s[fin])
    assert np.all(t.admitted_s[fin] <= t.first_token_s[fin])
    assert np.all(t.first_token_s[fin] <= t.finish_s[fin])


def test_conservation_over_a_whole_day():
    d = a.simulate_day(rep(), day="normal", policy="reactive", seed=11, dt_s=30.0, model=model(),
                       mtbf_s=6 * H)
    s = d["summary"]
    assert s["arrived"] == s["finished"] + s["rejected"] + s["in_flight"]
    assert s["arrived"] == pytest.approx(a.day_profile("normal").expected_count(), rel=0.02)
    assert len(s["per_hour_attainment"]) == 24 and len(d["replicas_by_hour"]) == 24
    assert sum(h["arrived"] for h in d["hours"]) == s["arrived"]
    assert sum(h["gpu_hours"] for h in d["hours"]) == pytest.approx(s["gpu_hours"])
    assert s["per_hour_attainment"][3] > 0.9 and max(d["replicas_by_hour"]) <= s["max_replicas"]


def test_same_seed_same_day_and_another_seed_another():
    one = exam_morning(seed=3, mtbf_s=2 * H)["run"]
    two = exam_morning(seed=3, mtbf_s=2 * H)["run"]
    other = exam_morning(seed=4, mtbf_s=2 * H)["run"]
    assert np.array_equal(one.timelines.first_token_s, two.timelines.first_token_s,
                          equal_nan=True)
    assert np.array_equal(one.outcome_codes, two.outcome_codes)
    assert one.gpu_hours == two.gpu_hours and one.events == two.events
    assert len(one.timelines) != len(other.timelines)


def test_scheduled_beats_reactive_in_the_rush_only_when_the_cold_start_is_long():
    def rush(policy, cold):
        return a.rush_attainment(exam_morning(policy=policy, cold_start=cold)["run"])

    eight_r, eight_s = rush("reactive", None), rush("scheduled", None)  # derived: ~8 min
    long_r, long_s = rush("reactive", 1200.0), rush("scheduled", 1200.0)
    zero_r, zero_s = rush("reactive", 0.0), rush("scheduled", 0.0)
    assert eight_s > eight_r                 # eight minutes late costs the reactive fleet
    assert long_s - long_r >= 0.03           # twenty minutes late costs it a lot
    assert eight_s >= TANVI.attainment_target and long_s >= TANVI.attainment_target
    assert zero_r >= zero_s - 0.001          # instant starts: reactive loses nothing
    assert zero_r >= TANVI.attainment_target


def test_more_headroom_never_lowers_attainment():
    # without failures the property holds exactly on these seeds
    for seed in (0, 1):
        att = [exam_morning(policy="reactive", seed=seed, headroom=k, start_s=5 * H,
                            duration_s=3 * H)["summary"]["attainment"] for k in range(3)]
        assert att == sorted(att), (seed, att)
        assert att[-1] > att[0]


def test_headroom_with_a_failure_at_peak():
    # With a replica lost at 7 am, which requests are in flight on it depends on the fleet, so a
    # bigger fleet can retry a different (not smaller) set: attainment rises, up to that noise.
    fail = (7 * H, 7 * H + 60)
    att = [exam_morning(policy="reactive", seed=1, headroom=k, start_s=5 * H, duration_s=3 * H,
                        failures_at_s=fail)["summary"]["attainment"] for k in range(4)]
    assert all(b >= x - 1e-4 for x, b in zip(att, att[1:], strict=False))
    assert att[-1] > att[0] + 0.01


def test_losing_a_replica_at_peak_hurts_the_tail():
    base = exam_morning(policy="scheduled", start_s=6.5 * H, duration_s=1 * H)
    hit = exam_morning(policy="scheduled", start_s=6.5 * H, duration_s=1 * H,
                       failures_at_s=(7 * H,))
    b, h = base["summary"], hit["summary"]
    assert h["failures"] == 1 and b["failures"] == 0
    assert h["retried"] > 0 and h["arrived"] == h["finished"] + h["rejected"] + h["in_flight"]
    assert h["attainment"] < b["attainment"]
    assert h["ttft_s"]["p99"] > b["ttft_s"]["p99"] or h["tpot_s"]["p99"] > b["tpot_s"]["p99"]


def test_warm_pool_starts_faster_and_is_billed():
    cold = exam_morning(policy="reactive", start_s=5 * H, duration_s=3 * H)
    pool = exam_morning(policy="reactive", start_s=5 * H, duration_s=3 * H, pool="warm",
                        pool_size=2)
    ups = [e for e in pool["run"].events if e[1] == "scale_up"]
    assert any(e[3] == "from pool" for e in ups)
    assert pool["run"].series["pool"].max() <= 2
    assert pool["summary"]["rush_attainment"] >= cold["summary"]["rush_attainment"]
    assert pool["gpu_hours"] > 0 and np.all(pool["run"].series["billed"]
                                            >= pool["run"].series["serving"])


def test_routers_and_reactive_metrics():
    m = model()
    w = flat_workload(0.85 * m.capacity_rps() * 4, 1200, 8)
    p99 = {}
    for router in a.ROUTERS:
        run = a.simulate_fleet(w, a.Fleet(m, min_replicas=4, max_replicas=4, router=router),
                               a.Scheduled((4,) * 24), initial_replicas=4)
        p99[router] = slo.percentile(slo.ttft_s(run.timelines), 99)
        assert run.counts()["arrived"] == len(w)
    # a request's cost is front-loaded (its prefill): least-loaded hands the emptiest replica a
    # burst of prefills to queue, round robin spreads them (the Fleet docstring)
    assert p99["round_robin"] < p99["least_loaded"]
    for metric in a.METRICS:
        run = a.simulate_fleet(w, a.Fleet(m, max_replicas=8), a.Reactive(metric=metric),
                               initial_replicas=1)
        assert run.counts()["arrived"] == len(w)
        assert run.series["serving"].max() > 1  # every metric asked for more replicas


def test_policy_builders():
    m = model()
    sched = a.scheduled_for("exam", m, lead_s=480.0)
    assert len(sched.replicas_by_hour) == 24
    assert sched.replicas_by_hour[TANVI.rush_hour] > sched.replicas_by_hour[3]
    peak = a.day_profile("exam").max_rate_between(20 * H, 21 * H)
    assert sched.replicas_by_hour[20] == a.replicas_for_rate(peak, m, margin=0.1)
    assert sched.desired_at(7 * H - 480.0) == sched.replicas_by_hour[7]  # acts one cold start early
    yesterday = np.array([100.0, 200.0, 7 * H + 1.0])
    pred = a.predictive_from(yesterday, m, bin_s=600.0)
    assert len(pred.replicas_by_bin) == 144 and min(pred.replicas_by_bin) >= 1
    # a forecast from a normal day under-provisions the first exam day
    normal = a.make_policy("predictive", m, day="exam", yesterday="normal")
    exam = a.make_policy("predictive", m, day="exam")
    assert sum(normal.replicas_by_bin) < sum(exam.replicas_by_bin)


def test_summary_keys_and_bill():
    d = exam_morning(policy="scheduled", start_s=6 * H, duration_s=1 * H)
    s = d["summary"]
    for key in ("arrived", "finished", "rejected", "attainment", "ttft_s", "tpot_s", "gpu_hours",
                "cost", "max_replicas", "cold_start_s", "per_hour_attainment"):
        assert key in s
    assert set(s["ttft_s"]) == {"p50", "p90", "p95", "p99", "mean"}
    r = rep()
    assert s["cost"] == pytest.approx(s["gpu_hours"] / r.n_gpus * sizing.cost_per_hour_usd(r))
    billed = d["run"].series["billed"]
    assert s["gpu_hours"] == pytest.approx(billed.sum() * 15.0 / H * r.n_gpus)


# ----------------------------------------------------------------------------- Erlang C

def test_erlang_c_against_published_values():
    # Erlang C's published examples (test_queueing holds the Erlang B table and closed forms):
    # 120 customers/h, 3 min each, 10 servers: "from the Erlang C curve ... about 0.10";
    assert queueing.erlang_c(10, 6.0) == pytest.approx(0.10, abs=0.005)
    # two 1 Mbps lines, 150 packets/s of 10 kb: P(wait) = 9/14 (Wolfram ErlangC example);
    assert queueing.erlang_c(2, 1.5) == pytest.approx(9 / 14)
    # 30 calls/h of 5 min, 90 % answered without delay: 6 agents
    assert queueing.servers_needed(30 / 3600, 1 / 300, max_wait_probability=0.1).servers == 6


def test_erlang_replicas_is_optimistic_against_the_simulation():
    m = model()
    e = a.erlang_replicas(TANVI.exam_peak_rps, m)
    st = queueing.servers_needed(TANVI.exam_peak_rps, m.capacity_rps() / m.slo_batch,
                                 wait_s=TANVI.ttft_target_s,
                                 max_wait_exceeds_probability=1 - TANVI.attainment_target)
    assert e["slots"] == st.servers and e["replicas"] == math.ceil(st.servers / m.slo_batch)
    assert e["replicas"] >= math.ceil(TANVI.exam_peak_rps / m.capacity_rps())
    # batching is not M/M/c: a fleet sized by Erlang C runs each replica near capacity, where the
    # coarse model (and the iteration-level simulator) misses the SLO
    assert e["utilisation"] > a.TARGET_UTILISATION
    assert a.replicas_for_rate(TANVI.exam_peak_rps, m) > e["replicas"]


# ----------------------------------------------------------------------------- errors

def test_an_empty_day_is_not_an_error():
    from vidya_lab.workload import Workload

    w = Workload.from_arrays(np.array([]), np.array([], dtype=int), np.array([], dtype=int))
    run = a.simulate_fleet(w, a.Fleet(model()), a.Reactive())
    assert run.counts()["arrived"] == 0 and a.summary(run)["attainment"] is None


def test_errors_name_the_parameter():
    m = model()
    with pytest.raises(ValueError, match="router"):
        a.Fleet(m, router="random")
    with pytest.raises(ValueError, match="max_replicas"):
        a.Fleet(m, min_replicas=5, max_replicas=2)
    with pytest.raises(TypeError, match="model must be a ReplicaModel"):
        a.Fleet("h100")
    with pytest.raises(ValueError, match="metric"):
        a.Reactive(metric="cpu")
    with pytest.raises(ValueError, match="replicas_by_hour"):
        a.Scheduled((1, 2, 3))
    with pytest.raises(TypeError, match="policy must be"):
        a.simulate_fleet(flat_workload(1.0, 60, 0), a.Fleet(m), "reactive")
    with pytest.raises(ValueError, match="day"):
        a.day_profile("holiday")
    with pytest.raises(ValueError, match="dt_s"):
        a.simulate_fleet(flat_workload(1.0, 60, 0), a.Fleet(m), a.Reactive(), dt_s=0.0)
    with pytest.raises(ValueError, match="policy"):
        a.make_policy("psychic", m)


# ----------------------------------------------------------------------------- the fluid fleet

@cache
def whole_day(day: str, policy: str, fidelity: str, cold_start=None) -> dict:
    return a.simulate_day(rep(), day=day, policy=policy, seed=6, dt_s=15.0, model=model(),
                          fidelity=fidelity, cold_start=cold_start)


@pytest.mark.slow
@pytest.mark.parametrize("day", a.DAYS)
@pytest.mark.parametrize("policy", a.POLICIES)
def test_fluid_fleet_lands_near_the_simulated_day(day, policy):
    """The widget's fluid fleet against simulate_fleet on whole days (seed 6, 15 s step).
    Measured (2026-11-30): replicas by hour within 0.7 (normal) and 1.05 (exam) replicas; GPU-hours
    -6.9 % (normal) and -2.7 % (exam) for reactive (the simulation's noisy 60 s rate scales up more
    often), within 0.1 % for scheduled and predictive; attainment and rush attainment within 0.35
    points. The bounds below leave a little room above those."""
    fluid = whole_day(day, policy, "fluid")
    sim = whole_day(day, policy, "fleet")
    f, s = fluid["summary"], sim["summary"]
    diff = np.abs(np.array(fluid["replicas_by_hour"]) - np.array(sim["replicas_by_hour"]))
    assert diff.max() <= 1.25
    assert f["gpu_hours"] == pytest.approx(s["gpu_hours"], rel=0.08 if policy == "reactive" else 0.01)
    assert f["rush_attainment"] == pytest.approx(s["rush_attainment"], abs=0.005)
    assert f["attainment"] == pytest.approx(s["attainment"], abs=0.005)
    assert abs(f["max_replicas"] - s["max_replicas"]) <= 2
    assert f["arrived"] == pytest.approx(s["arrived"], rel=0.01)  # the curve's integral vs Poisson


@pytest.mark.slow
def test_fluid_fleet_sees_a_late_rush():
    # a 20-minute cold start: the reactive fleet is late for the exam rush in both models; the
    # fluid one is a little more pessimistic (measured 0.899 vs 0.922)
    fluid = whole_day("exam", "reactive", "fluid", 1200.0)["summary"]
    sim = whole_day("exam", "reactive", "fleet", 1200.0)["summary"]
    assert fluid["rush_attainment"] < TANVI.attainment_target - 0.05
    assert fluid["rush_attainment"] == pytest.approx(sim["rush_attainment"], abs=0.03)
    assert fluid["rush_attainment"] < whole_day("exam", "reactive", "fluid")["summary"][
        "rush_attainment"]


def test_fluid_fleet_by_hand():
    # a flat load of 10 x capacity, 10 replicas scheduled: nothing waits, the served load is 1 per
    # replica, attainment is the curve's value at 1.0, and the bill is 10 replicas all day
    m = model()
    cap = m.capacity_rps()
    prof = DiurnalProfile(hours=(0.0, 12.0), relative=(1.0, 1.0), peak_rate_per_s=10 * cap)
    fleet = a.Fleet(m, min_replicas=1, max_replicas=20)
    run = a.simulate_fluid(prof, fleet, a.Scheduled((10,) * 24), horizon_s=2 * H)
    s = run.series
    curve = a.fluid_curve(m)
    assert np.all(s["serving"] == 10) and s["waiting"].max() == 0.0
    assert s["arrivals"].sum() == pytest.approx(10 * cap * 2 * H, rel=1e-9)
    assert s["utilisation"][1:] == pytest.approx(1.0)
    at_one = curve["attainment"][list(curve["utilisation"]).index(1.0)]
    assert run.summary()["attainment"] == pytest.approx(at_one, rel=1e-3)
    assert run.gpu_hours == pytest.approx(10 * 2 * m.replica.n_gpus)
    # overloaded at 3 x what 2 replicas keep up with: the queue grows until the timeout turns
    # requests away, and attainment falls to 0 once the wait passes the TTFT target
    heavy = a.simulate_fluid(replace_rate(prof, 3 * 2 * curve["max_rate_per_s"]), fleet,
                             a.Scheduled((2,) * 24), horizon_s=H)
    hs = heavy.series
    assert hs["rejected"].sum() > 0 and hs["attainment"][-1] == 0.0
    assert hs["waiting"].max() <= 2 * curve["max_rate_per_s"] * fleet.queue_timeout_s + 1e-6
    served = (hs["arrivals"].sum() - hs["rejected"].sum() - hs["waiting"][-1])
    assert served == pytest.approx(2 * curve["max_rate_per_s"] * H, rel=1e-6)  # conservation


def replace_rate(prof, rate):
    from dataclasses import replace

    return replace(prof, peak_rate_per_s=rate)


def test_fluid_fleet_refuses_failures_and_the_curve_is_monotone():
    m = model()
    with pytest.raises(ValueError, match="mtbf_s"):
        a.simulate_fluid("normal", a.Fleet(m, mtbf_s=3600.0), a.Reactive())
    with pytest.raises(ValueError, match="fidelity"):
        a.simulate_day(rep(), day="normal", model=m, fidelity="exact")
    c = a.fluid_curve(m)
    assert c["attainment"][0] == 1.0 and c["attainment"][-1] < 0.1
    assert c["max_rate_per_s"] > m.capacity_rps()
    at_target = float(np.interp(a.TARGET_UTILISATION, c["utilisation"], c["attainment"]))
    assert at_target >= TANVI.attainment_target  # the same fact as the simulation's test above
