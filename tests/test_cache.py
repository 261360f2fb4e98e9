"""The on-disk cache of long simulations (vidya_lab._cache): a cached day equals a computed one,
and any change to an argument or to the package's source is a new key."""

from __future__ import annotations

import numpy as np
import pytest

from vidya_lab import _cache, sizing
from vidya_lab import autoscaling as a
from vidya_lab.scenario import TANVI

H = a.SECONDS_PER_HOUR
REP = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
#: an hour of the exam morning at a coarse step: seconds of work, thousands of requests
KW = dict(day="exam", policy="reactive", seed=4, dt_s=15.0, start_s=6.0 * H, duration_s=1.0 * H)


def _same_day(x: dict, y: dict) -> None:
    assert x.keys() == y.keys()
    assert x["summary"] == y["summary"] and x["hours"] == y["hours"]
    assert x["replicas_by_hour"] == y["replicas_by_hour"]
    assert (x["gpu_hours"], x["cost_usd"], x["cold_start_s"]) \
        == (y["gpu_hours"], y["cost_usd"], y["cold_start_s"])
    assert x["policy"] == y["policy"]
    r, s = x["run"], y["run"]
    for name in ("outcome_codes", "retries", "arrival_s", "longest_gap_s"):
        assert np.array_equal(getattr(r, name), getattr(s, name), equal_nan=True), name
    for name in ("arrival_s", "admitted_s", "first_token_s", "finish_s", "output_tokens",
                 "outcome", "request_id"):
        assert np.array_equal(getattr(r.timelines, name), getattr(s.timelines, name),
                              equal_nan=True), name
    assert r.series.keys() == s.series.keys()
    assert all(np.array_equal(r.series[k], s.series[k]) for k in r.series)
    assert r.events == s.events


def test_a_cached_day_equals_a_computed_one(tmp_path, monkeypatch):
    monkeypatch.delenv(_cache.ENV, raising=False)
    plain = a.simulate_day(REP, **KW)
    assert plain["summary"]["arrived"] > 1000
    monkeypatch.setenv(_cache.ENV, str(tmp_path))
    stored = a.simulate_day(REP, **KW)  # computed, then written
    files = list(tmp_path.glob("*-simulate_day-*.pkl"))
    assert len(files) == 1
    _same_day(stored, plain)

    def no_compute(**kw):
        raise AssertionError("a stored day must be read back, not simulated again")

    monkeypatch.setattr(a.run_day, "_simulate_day", no_compute)
    _same_day(a.simulate_day(REP, **KW), plain)  # read back from the file
    with pytest.raises(AssertionError, match="read back"):
        a.simulate_day(REP, **dict(KW, seed=5))  # another seed: not in the cache


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(_cache.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert _cache.folder() is None
    a.simulate_day(REP, **dict(KW, duration_s=600.0))
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_file_is_simulated_again(tmp_path, monkeypatch):
    monkeypatch.setenv(_cache.ENV, str(tmp_path))
    kw = dict(KW, duration_s=900.0)
    first = a.simulate_day(REP, **kw)
    (f,) = tmp_path.glob("*-simulate_day-*.pkl")
    f.write_bytes(b"not a pickle")
    _same_day(a.simulate_day(REP, **kw), first)
    assert f.stat().st_size > 1000  # written again, whole


def test_every_argument_and_the_source_are_in_the_key(monkeypatch):
    base = {"replica": REP, "seed": 0, "dt_s": 5.0, "day": "exam", "w": np.arange(4.0)}
    k = _cache.key("simulate_day", base)
    assert k == _cache.key("simulate_day", dict(base))  # content, not identity
    assert k == _cache.key("simulate_day", dict(base, w=np.arange(4.0)))
    changed = [dict(base, seed=1), dict(base, dt_s=5.000000001), dict(base, day="normal"),
               dict(base, w=np.arange(4.0) + 1e-12), dict(base, w=np.arange(4)),
               dict(base, seed=0.0), dict(base, replica=sizing.Replica(TANVI.model_id, "h100-sxm",
                                                                       tp=8)),
               dict(base, replica=sizing.Replica(TANVI.model_id, "h100-sxm", tp=4,
                                                 memory_fraction=0.85))]
    keys = {_cache.key("simulate_day", c) for c in changed}
    assert k not in keys and len(keys) == len(changed)
    assert _cache.key("another_call", base) != k
    monkeypatch.setattr(_cache, "source_digest", lambda: "edited source")
    assert _cache.key("simulate_day", base) != k


def test_an_argument_without_content_means_no_caching(tmp_path, monkeypatch):
    assert _cache.key("f", {"fn": lambda t: t}) is None
    assert _cache.key("f", {"x": np.array([object()])}) is None
    monkeypatch.setenv(_cache.ENV, str(tmp_path))
    assert _cache.call("f", lambda fn: fn(2), {"fn": lambda t: t + 1}) == 3
    assert list(tmp_path.iterdir()) == []


def test_results_of_another_source_are_removed_when_one_is_stored(tmp_path, monkeypatch):
    monkeypatch.setenv(_cache.ENV, str(tmp_path))
    old = tmp_path / f"0123456789ab-simulate_day-{'f' * 40}.pkl"
    old.write_bytes(b"a result of an edited package")
    other = tmp_path / "someone_elses.pkl"
    other.write_bytes(b"not ours")
    assert _cache.call("f", lambda x: x + 1, {"x": 1}) == 2
    assert not old.exists() and other.exists()
    assert [p.name.split("-")[1] for p in tmp_path.glob("*-*.pkl")] == ["f"]
    assert _cache.call("f", lambda x: -1, {"x": 1}) == 2  # read back, not recomputed


def test_the_other_cached_calls_equal_their_computed_results(tmp_path, monkeypatch):
    from dataclasses import fields

    from vidya_lab.plan import tail

    monkeypatch.delenv(_cache.ENV, raising=False)
    plain_model = a.replica_model(REP, cached_prefix_tokens=1000)
    plain_window = tail.replica_window(REP, 2.0, duration_s=60.0, seed=3)
    monkeypatch.setenv(_cache.ENV, str(tmp_path))
    for _ in range(2):  # computed and stored, then read back
        m = a.replica_model(REP, cached_prefix_tokens=1000)
        for f in fields(m):
            x, y = getattr(m, f.name), getattr(plain_model, f.name)
            assert (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y), f.name
        assert tail.replica_window(REP, 2.0, duration_s=60.0, seed=3) == plain_window
    names = sorted(p.name.split("-")[1] for p in tmp_path.glob("*-*.pkl"))
    assert names == ["replica_model", "replica_window"]
