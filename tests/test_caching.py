"""Prefix cache, tutor traces, cost-model effects, speculative decoding and quantisation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import caching as C
from vidya_lab import sizing
from vidya_lab.scenario import TANVI

B = 4  # small blocks keep hand-made examples readable


def _admit_release(cache, tokens, block=B):
    h = C.block_hashes(tokens, block)
    hit, handle = cache.admit(h, (len(tokens) - 1) // block, len(tokens) // block)
    cache.release(handle)
    return hit


# ----------------------------------------------------------------------------- hashing

def test_chained_hash_depends_on_every_earlier_block():
    a = list(range(12))
    b = a.copy()
    b[1] = 999  # change block 0 only
    ha, hb = C.block_hashes(a, B), C.block_hashes(b, B)
    assert len(ha) == 3
    assert all(x != y for x, y in zip(ha, hb, strict=True))  # blocks 1, 2 identical but keys differ
    assert C.block_hashes(a[:11], B) == ha[:2]  # partial last block has no key
    assert C.block_hashes(np.asarray(a), B) == ha  # arrays and lists agree


# ----------------------------------------------------------------------------- the cache

def test_identical_prompts_hit_after_the_first():
    cache = C.PrefixCache(100, B)
    prompt = list(range(40))
    assert _admit_release(cache, prompt) == 0
    for _ in range(3):  # last token always recomputed: (40 - 1) // 4 = 9 blocks reused
        assert _admit_release(cache, prompt) == 9


@pytest.mark.parametrize("k", [0, 1, 5, 9])
def test_one_token_change_in_block_k_misses_from_block_k_on(k):
    cache = C.PrefixCache(100, B)
    base = list(range(41))
    _admit_release(cache, base)
    changed = base.copy()
    changed[k * B + 2] = 10_000
    assert _admit_release(cache, changed) == k
    assert _admit_release(cache, base) == 10  # the original is still cached


def test_zero_budget_never_hits():
    cache = C.PrefixCache(0, B)
    for _ in range(3):
        assert _admit_release(cache, list(range(20))) == 0
    assert len(cache) == 0 and cache.blocks_not_stored == 3 * 5


def test_blocks_in_use_are_never_evicted():
    cache = C.PrefixCache(4, B)
    a = C.block_hashes(list(range(16)), B)
    b = C.block_hashes(list(range(100, 116)), B)
    _, ha = cache.admit(a, 3, 4)  # A runs and pins its 4 blocks: the cache is full
    hit, hb = cache.admit(b, 3, 4)
    assert hit == 0 and all(k in cache for k in a) and not any(k in cache for k in b)
    assert cache.blocks_not_stored == 4 and cache.evictions == 0
    assert cache.peak_blocks == 4  # counted even when storing stopped early
    assert all(cache.refcount(k) == 1 for k in a)
    cache.release(hb)
    cache.release(ha)  # now A's blocks may go
    _, hb2 = cache.admit(b, 3, 4)
    assert all(k in cache for k in b) and cache.evictions == 4
    cache.release(hb2)
    with pytest.raises(ValueError, match="already released"):
        cache.release(hb2)
    with pytest.raises(ValueError, match="lookup_blocks"):
        cache.admit(a, -1)


def test_lru_evicts_the_least_recently_used_leaf_first():
    cache = C.PrefixCache(6, B)
    shared = list(range(8))  # 2 shared blocks
    x = shared + list(range(50, 54))
    y = shared + list(range(60, 64))
    _admit_release(cache, x + [0])
    _admit_release(cache, y + [0])  # 4 blocks: shared 2 + x 1 + y 1
    _admit_release(cache, x + [0])  # touch x: y's block is now the LRU leaf
    z = list(range(200, 212)) + [0]
    _admit_release(cache, z)  # needs 3 blocks: 2 free, evicts y's leaf only
    assert cache.cached_prefix_blocks(C.block_hashes(x, B)) == 3
    assert cache.cached_prefix_blocks(C.block_hashes(y, B)) == 2


def test_both_policies_evict_deepest_first_and_agree_on_whole_chains():
    # a chain of 3 blocks, then pressure of one new block: both policies drop the deepest block
    for policy in C.POLICIES:
        cache = C.PrefixCache(3, B, policy)
        chain = list(range(12)) + [0]
        _admit_release(cache, chain)
        _admit_release(cache, list(range(300, 304)) + [0])
        assert cache.cached_prefix_blocks(C.block_hashes(chain, B)) == 2
    # every request pins its chain from the root, so an ancestor is never older than its
    # descendants: plain LRU then evicts exactly what leaf-only LRU does
    trace = C.tutor_trace(150, seed=9, turns_mean=3, think_s_mean=10.0, upload_fraction=0.1,
                          upload_tokens=2000)
    for cache_bytes in (3e8, 2e9):
        a = C.simulate(trace, cache_bytes=cache_bytes, policy="lru-leaf")
        b = C.simulate(trace, cache_bytes=cache_bytes, policy="lru")
        assert np.array_equal(a.hit_tokens, b.hit_tokens)
        assert a.summary["evictions"] == b.summary["evictions"] > 0


def test_refcounts_return_to_zero():
    cache = C.PrefixCache(50, B)
    p = list(range(30))
    h = C.block_hashes(p, B)
    handles = [cache.admit(h, 7, 7)[1] for _ in range(3)]
    assert cache.refcount(h[0]) == 3 and cache.pinned_blocks() == 7
    for hd in handles:
        cache.release(hd)
    assert cache.pinned_blocks() == 0


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="capacity_blocks"):
        C.PrefixCache(-1, B)
    with pytest.raises(ValueError, match="policy"):
        C.PrefixCache(4, B, "fifo")
    with pytest.raises(ValueError, match="block_tokens"):
        C.block_hashes([1, 2], 0)
    with pytest.raises(TypeError, match="trace"):
        C.simulate([1, 2, 3])
    with pytest.raises(ValueError, match="n_requests"):
        C.tutor_trace(0, seed=1)
    with pytest.raises(TypeError, match="seed"):
        C.tutor_trace(5, seed=None)
    with pytest.raises(ValueError, match="cached_tokens"):
        C.prefill_time_with_cache_s(C.default_replica(), 100, 100)
    with pytest.raises(ValueError, match="alpha"):
        C.spec_expected_tokens(1.5, 3)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 40), st.lists(st.tuples(st.integers(0, 3), st.integers(1, 30)), min_size=1,
                                     max_size=25), st.integers(1, 3))
def test_random_traffic_keeps_the_invariants(capacity, requests, overlap):
    """Budget never exceeded, hit counts within [0, lookup], pins balanced, hits are real prefixes."""
    cache = C.PrefixCache(capacity, B)
    prefixes = [list(range(1000 * s, 1000 * s + 20)) for s in range(4)]
    running = []
    seen: set[tuple] = set()
    for i, (s, extra) in enumerate(requests):
        tokens = prefixes[s] + [50_000 + i] * extra
        h = C.block_hashes(tokens, B)
        lookup = (len(tokens) - 1) // B
        hit, handle = cache.admit(h, lookup, len(tokens) // B)
        assert 0 <= hit <= lookup
        assert all(tuple(tokens[: (j + 1) * B]) in seen for j in range(hit))  # only real reuse
        seen.update(tuple(tokens[: (j + 1) * B]) for j in range(len(tokens) // B))
        assert len(cache) <= capacity and cache.peak_blocks <= capacity
        running.append(handle)
        if len(running) > overlap:
            cache.release(running.pop(0))
    for handle in running:
        cache.release(handle)
    assert cache.pinned_blocks() == 0


# ----------------------------------------------------------------------------- traces and simulate

def test_tutor_trace_is_seeded_and_shaped_as_asked():
    a = C.tutor_trace(60, seed=3, turns_mean=3, upload_fraction=0.2, upload_tokens=500,
                      think_s_mean=2.0)
    b = C.tutor_trace(60, seed=3, turns_mean=3, upload_fraction=0.2, upload_tokens=500,
                      think_s_mean=2.0)
    assert len(a) == 60 and np.all(np.diff(a.arrival_s) >= 0)
    assert all(np.array_equal(x, y) for x, y in zip(a.prompts, b.prompts, strict=True))
    syl = TANVI.syllabus_prompt_tokens
    first = a.prompts[0][:syl]
    assert all(np.array_equal(p[:syl], first) for p in a.prompts)  # everyone starts with the syllabus
    assert set(a.kind) <= {"new", "follow-up", "upload"} and "follow-up" in set(a.kind)
    # a follow-up's prompt extends its conversation's previous prompt and answer exactly
    for i in np.flatnonzero(a.kind == "follow-up"):
        prev = [j for j in range(i) if a.conversation[j] == a.conversation[i]][-1]
        history = np.concatenate([a.prompts[prev], a.answers[prev]])
        assert np.array_equal(a.prompts[i][: history.size], history)
    new = a.kind == "new"
    assert np.all(a.prompt_tokens[new] == syl + TANVI.subject_prompt_tokens + TANVI.question_tokens_mean)
    w = a.to_workload()
    assert len(w) == 60 and np.array_equal(w.prompt_tokens, a.prompt_tokens)


def test_simulate_best_case_equals_the_hand_formula():
    n, p, u = 40, 3000, 150
    trace = C.tutor_trace(n, seed=1, syllabus_tokens=p, subjects=1, subject_tokens=0, question_tokens=u)
    res = C.simulate(trace)
    s = res.summary
    # (n - 1) * floor(3000 / 16) * 16 / (n * 3150)
    assert s["token_hit_rate"] == pytest.approx((n - 1) * 2992 / (n * 3150), rel=1e-12)
    assert s["token_hit_rate"] == pytest.approx(C.best_case_token_hit_rate(n, p, u), rel=1e-12)
    assert s["request_hit_rate"] == pytest.approx((n - 1) / n)
    assert s["prefill_tokens_saved"] == (n - 1) * 2992
    assert s["cache_bytes_used"] <= s["cache_bytes_budget"]
    assert s["ttft_s_p50_with"] < s["ttft_s_p50_without"]
    # 40 prompts of 3,150 tokens + 350-token answers: 2,992 shared tokens (187 blocks), then each
    # request's own 158 + 350 tokens hold 31 full blocks (its partial last block is not cached)
    assert s["cache_blocks_peak"] == 187 + 40 * 31
    assert s["sequences_displaced"] == (187 + 40 * 31) // 219  # ceil(3500 / 16) blocks a sequence
    r = C.default_replica()
    assert res.ttft_without_s[0] == pytest.approx(sizing.ttft_s(r, p + u))
    assert res.ttft_with_s[1] == pytest.approx(C.ttft_with_cache_s(r, p + u, 2992))


def test_simulate_zero_budget_and_budget_respected():
    trace = C.tutor_trace(80, seed=2, turns_mean=3)
    zero = C.simulate(trace, cache_bytes=0)
    assert zero.summary["token_hit_rate"] == 0 and zero.summary["request_hit_rate"] == 0
    assert np.allclose(zero.ttft_with_s, zero.ttft_without_s)
    r = C.default_replica()
    block_bytes = r.block_tokens * r.kv_bytes_per_token_per_gpu
    for blocks in (10, 200, 1000):
        s = C.simulate(trace, r, cache_bytes=blocks * block_bytes + 1).summary
        assert s["cache_blocks_capacity"] == blocks
        assert s["cache_bytes_used"] <= blocks * block_bytes
        if blocks <= 200:  # the syllabus alone fills these: the peak is the whole budget
            assert s["cache_bytes_used"] == blocks * block_bytes
        assert 0 <= s["token_hit_rate"] <= 1 and 0 <= s["request_hit_rate"] <= 1


def test_follow_ups_reuse_their_history_with_a_big_cache():
    trace = C.tutor_trace(150, seed=5, turns_mean=4, think_s_mean=20.0)
    res = C.simulate(trace)
    fu = res.kind == "follow-up"
    assert fu.sum() > 10
    shared = TANVI.syllabus_prompt_tokens + TANVI.subject_prompt_tokens
    # a follow-up reuses more than the syllabus + subject: its own earlier turns
    assert np.mean(res.hit_tokens[fu] > shared) > 0.8
    assert res.summary["prefill_flops_saved"] == pytest.approx(res.flops_saved.sum())


def test_block_size_option_changes_rounding():
    trace = C.tutor_trace(10, seed=1, syllabus_tokens=100, subjects=1, subject_tokens=0,
                          question_tokens=10)
    s32 = C.simulate(trace, block_tokens=32).summary
    assert s32["block_tokens"] == 32 and s32["prefill_tokens_saved"] == 9 * 96


# ----------------------------------------------------------------------------- cost-model effects

def test_prefill_with_cache_reduces_to_sizing_and_only_suffix_costs():
    r = C.default_replica()
    assert C.prefill_time_with_cache_s(r, 3550, 0) == pytest.approx(sizing.prefill_time_s(r, 3550))
    assert C.prefill_time_with_cache_s(r, 3550, 3392) == pytest.approx(
        sizing.iteration_time_s(r, prefill=[(158, 3392)]))
    long = r.max_batched_tokens * 2 + 10  # chunked: the chunks add up
    assert C.prefill_time_with_cache_s(r, long, 0) == pytest.approx(sizing.prefill_time_s(r, long))


def test_prefill_flops_by_hand():
    m = sizing.get_model("llama-3.1-8b")
    per_token = 2 * m.n_layers * m.layer_params(active=True)
    per_pair = 4 * m.n_heads * m.head_dim * m.n_layers
    assert C.prefill_flops(m, 10, 0) == pytest.approx(per_token * 10 + per_pair * 55)
    assert C.prefill_flops(m, 10, 6) == pytest.approx(per_token * 4 + per_pair * (24 + 10))
    assert C.prefill_flops(m, 10, 10) == 0


def test_concurrency_and_throughput_with_cache():
    r = C.default_replica()
    isl, osl = TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean
    none = C.saturated_throughput_with_cache(r, isl, osl)
    ref = sizing.saturated_throughput(r, isl, osl)
    assert none["batch"] == ref["batch"]
    assert none["output_tokens_per_s"] == pytest.approx(ref["output_tokens_per_s"])
    block_bytes = r.block_tokens * r.kv_bytes_per_token_per_gpu
    per_seq = math.ceil((isl + osl) / r.block_tokens)
    c = C.concurrency_with_cache(r, 1000 * block_bytes, isl + osl, 0)
    assert c["sequences_without"] == r.kv_blocks // per_seq
    assert c["sequences_with"] == (r.kv_blocks - 1000) // per_seq  # no sharing: pure loss
    shared = C.concurrency_with_cache(r, 1000 * block_bytes, isl + osl, TANVI.syllabus_prompt_tokens)
    assert shared["sequences_with"] == (r.kv_blocks - 1000) // (per_seq - 187)  # 3000 // 16
    # a small cache holding the shared syllabus helps; one that eats the pool hurts
    small = C.saturated_throughput_with_cache(r, isl, osl, 0.5e9, TANVI.syllabus_prompt_tokens)
    huge = C.saturated_throughput_with_cache(r, isl, osl, r.kv_budget_bytes * 0.97,
                                             TANVI.syllabus_prompt_tokens)
    assert small["output_tokens_per_s"] > none["output_tokens_per_s"] > huge["output_tokens_per_s"]
    off = C.saturated_throughput_with_cache(r, isl, osl, 0.5e9, TANVI.syllabus_prompt_tokens,
                                            share_blocks=False, skip_cached_prefill=False)
    assert off["batch"] < none["batch"] and off["output_tokens_per_s"] < none["output_tokens_per_s"]


# ----------------------------------------------------------------------------- speculative decoding

def test_speculative_formula_hand_values_and_limits():
    assert C.spec_expected_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2)  # 3.3616
    assert C.spec_expected_tokens(0.8, 4) == pytest.approx(3.3616)
    assert C.spec_expected_tokens(0.5, 1) == pytest.approx(1.5)
    assert C.spec_expected_tokens(0.6, 5) == pytest.approx(2.3834, abs=1e-4)
    assert C.spec_expected_tokens(0.0, 7) == 1.0
    assert C.spec_expected_tokens(1e-9, 7) == pytest.approx(1.0)
    assert C.spec_expected_tokens(1.0, 7) == 8.0
    assert C.spec_expected_tokens(1 - 1e-9, 7) == pytest.approx(8.0, rel=1e-6)
    assert C.spec_expected_tokens(0.9, 0) == 1.0
    # Theorem 3.8 at c = 0 is E; the bigram example of the paper: alpha 0.2, gamma 3 -> about 1.25x
    assert C.spec_walltime_speedup(0.8, 4, 0.0) == pytest.approx(3.3616)
    assert C.spec_walltime_speedup(0.2, 3, 0.0) == pytest.approx(1.248)  # (1 - 0.2**4) / 0.8
    assert C.spec_walltime_speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)


def test_speculative_decoding_wins_at_batch_one_loses_at_high_load():
    """The draft's cost from the cost model (an 8B draft on the target's GPUs), not an assumed c."""
    r = C.default_replica()
    one = C.spec_decode_at_batch(r, 1, 500, 0.8, 4)
    c = one["draft_cost_ratio"]
    # at batch 1 the verify step is memory-bound: Theorem 3.8 with the derived c, within 5 %
    assert one["speedup"] == pytest.approx(C.spec_walltime_speedup(0.8, 4, c), rel=0.05)
    big = C.spec_decode_at_batch(r, r.max_num_seqs, 500, 0.8, 4)
    assert big["speedup"] < 1.0 < one["speedup"]
    assert big["verify_step_s"] > 3 * big["plain_step_s"]  # compute-bound: γ + 1 tokens cost


def test_draft_model_costs_come_from_its_own_replica_with_the_overhead():
    """Issue 14: a draft step pays the calibrated per-iteration overhead, so c is not 0.05."""
    r = C.default_replica()
    draft = C.DraftModel(0.8)
    d = draft.replica(r)
    assert d.model.id == C.DEFAULT_DRAFT_MODEL and d.gpu == r.gpu and d.tp == r.tp
    assert d.calibration == r.calibration and d.precision == r.precision
    b, ctx, g = 8, 500, 4
    x = C.speculative_at_batch(r, b, ctx, draft, g)
    plain = sizing.decode_step_time_s(r, b, ctx)
    draft_s = sum(sizing.decode_step_time_s(d, b, ctx + j) for j in range(g))  # γ draft steps
    t = g + 1  # the verify step: γ + 1 tokens per sequence, γ + 1 logit rows
    verify = r.step_time_s(b * t, b * (t * ctx + t * (t + 1) / 2), b * (ctx + t), b * t, 0, 0)
    e = (1 - 0.8 ** 5) / 0.2
    assert x["plain_step_s"] == pytest.approx(plain)
    assert x["draft_s"] == pytest.approx(draft_s)
    assert x["verify_step_s"] == pytest.approx(verify)
    assert x["expected_tokens"] == pytest.approx(e)
    assert x["speedup"] == pytest.approx(e * plain / (verify + draft_s))
    assert x["draft_cost_ratio"] == pytest.approx(draft_s / (g * plain))
    overhead = r.calibration.step_overhead_s
    assert x["draft_cost_ratio"] >= overhead / plain  # each draft step pays the overhead
    assert x["draft_cost_ratio"] > 0.05  # the chapter's old assumption is below the model's floor
    assert x["draft_weights_bytes_per_gpu"] == pytest.approx(d.weights_bytes_per_gpu)
    # a draft on one GPU (vLLM's speculative_draft_tensor_parallel_size=1) is its own replica
    assert C.DraftModel(0.8, tp=1).replica(r).tp == 1


def test_speculative_speedup_falls_with_batch_like_vllm_measured():
    """vLLM: speed-ups at low request rates, slowdowns at high ones (facts.md)."""
    r = C.default_replica()
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    for drafter in (C.DraftModel(0.8), C.PromptLookup(0.5, 20.0)):
        ups = [C.speculative_at_batch(r, b, 500, drafter, 4)["speedup"] for b in batches]
        assert ups[0] > 1.2
        assert all(later <= earlier + 1e-9 for earlier, later in zip(ups, ups[1:], strict=False))
        assert ups[-1] < 0.9 * ups[0]
    # compute-bound verification: past the break-even batch both drafters lose
    assert C.speculative_at_batch(r, 256, 500, C.DraftModel(0.8), 4)["speedup"] < 1.0
    lookup = C.speculative_break_even_batch(r, 500, C.PromptLookup(0.5, 20.0), 4, max_batch=10**5)
    assert lookup is not None and C.speculative_at_batch(
        r, lookup, 500, C.PromptLookup(0.5, 20.0), 4)["speedup"] < 1.0


def test_prompt_lookup_by_hand():
    """q = 0.5 of the answer in quotes of mean 10 tokens, γ = 4: α = 0.9 inside a quote,
    E = (1 − 0.9^5)/0.1 = 4.0951, tokens per step 1/(0.5/E + 0.5) = 1.6075, drafts in 19.6 % of
    steps, and no draft model runs."""
    r = C.default_replica()
    pl = C.PromptLookup(quote_fraction=0.5, mean_quote_tokens=10.0)
    e = (1 - 0.9**5) / 0.1
    assert pl.alpha == pytest.approx(0.9)
    assert pl.expected_tokens(4) == pytest.approx(1 / (0.5 / e + 0.5)) == pytest.approx(1.60746, abs=1e-5)
    f = (0.5 / e) / (0.5 / e + 0.5)
    assert pl.proposing_share(4) == pytest.approx(f) == pytest.approx(0.19627, abs=1e-5)
    b, ctx, t = 32, 1000, 5
    x = C.speculative_at_batch(r, b, ctx, pl, 4)
    assert x["draft_s"] == 0.0 and x["draft_weights_bytes_per_gpu"] == 0.0
    bp, bd = b * f, b * (1 - f)  # drafting sequences verify 5 tokens, the others decode one
    verify = r.step_time_s(bp * t, bp * (t * ctx + t * (t + 1) / 2), bp * (ctx + t), bp * t, bd, bd * ctx)
    assert x["verify_step_s"] == pytest.approx(verify)
    assert x["speedup"] == pytest.approx(pl.expected_tokens(4) * x["plain_step_s"] / verify)
    # no quotes: nothing to propose, exactly plain decoding at every batch
    for batch in (1, 64, 256):
        assert C.speculative_at_batch(r, batch, ctx, C.PromptLookup(0.0, 10.0), 4)["speedup"] == 1.0
    # an answer that is one long quote: γ + 1 tokens a step, memory-bound at batch 1
    whole = C.speculative_at_batch(r, 1, ctx, C.PromptLookup(1.0, 1e9), 4)
    assert whole["expected_tokens"] == pytest.approx(5.0, rel=1e-6)
    assert whole["speedup"] == pytest.approx(5.0 * whole["plain_step_s"] / whole["verify_step_s"])


def test_assumed_cost_draft_is_theorem_3_8_and_drafters_are_checked():
    r = C.default_replica()
    x = C.spec_decode_at_batch(r, 1, 500, 0.6, 5, 0.05)  # c given: a what-if, γ·c plain steps
    assert x["drafter"] == "assumed-cost" and x["draft_s"] == pytest.approx(5 * 0.05 * x["plain_step_s"])
    assert x["speedup"] == pytest.approx(C.spec_walltime_speedup(0.6, 5, 0.05), rel=0.05)
    assert C.spec_decode_at_batch(r, 4, 500, 0.7, 0)["speedup"] == 1.0  # γ = 0: plain decoding
    with pytest.raises(ValueError, match="tokenizer"):  # Llama-2's 32,000-entry vocabulary
        C.DraftModel(0.8, "llama-2-7b").replica(r)
    with pytest.raises(ValueError, match="smaller"):
        C.DraftModel(0.8, "llama-3.1-70b").replica(sizing.Replica("llama-3.1-8b", "h100-sxm"))
    with pytest.raises(TypeError, match="drafter"):
        C.speculative_at_batch(r, 1, 500, 0.8, 4)
    with pytest.raises(ValueError, match="quote_fraction"):
        C.PromptLookup(1.5, 10.0)
    with pytest.raises(ValueError, match="mean_quote_tokens"):
        C.PromptLookup(0.5, 0.5)
    with pytest.raises(ValueError, match="gamma"):
        C.spec_decode_at_batch(r, 1, 500, 0.8, 10**6)
    with pytest.raises(ValueError, match="batch"):
        C.spec_decode_at_batch(r, 10**9, 500, 0.8, 4)


# ----------------------------------------------------------------------------- quantisation, interference

def test_quantisation_table_follows_bytes_per_element():
    rows = {(x["precision"], x["kv_precision"]): x for x in C.quantisation_table()}
    bf, f8 = rows[("bf16", "bf16")], rows[("fp8", "fp8")]
    assert f8["weights_bytes_per_gpu"] == pytest.approx(bf["weights_bytes_per_gpu"] / 2)
    assert f8["kv_bytes_per_token"] == bf["kv_bytes_per_token"] / 2 == 163_840
    assert f8["max_concurrent_sequences"] > bf["max_concurrent_sequences"]
    assert rows[("bf16", "fp8")]["max_concurrent_sequences"] > bf["max_concurrent_sequences"]
    assert rows[("int4", "bf16")]["tpot_s"] < bf["tpot_s"]


def test_prefill_interference_stretches_the_decode_step():
    r = C.default_replica()
    x = C.prefill_interference(r, TANVI.prompt_tokens_mean, 32, 3700)
    assert x["mixed_step_s"] > x["decode_step_s"] and x["stretch"] > 2


def test_break_even_cache_is_where_throughput_drops_below_no_cache():
    r = C.default_replica()
    isl, osl, k = TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean, TANVI.syllabus_prompt_tokens
    c = C.break_even_cache_bytes(r, isl, osl, k)
    base = C.saturated_throughput_with_cache(r, isl, osl)["output_tokens_per_s"]
    assert 0 < c < r.kv_budget_bytes
    assert C.saturated_throughput_with_cache(r, isl, osl, c, k)["output_tokens_per_s"] >= base
    assert C.saturated_throughput_with_cache(r, isl, osl, c + 2e6, k)["output_tokens_per_s"] < base


def test_cliff_sweep_floor_and_shares():
    trace = C.tutor_trace(120, seed=6, turns_mean=3, think_s_mean=5.0)
    r = C.default_replica()
    sizes = [0.0, 0.5e9, 40e9]
    cs = C.cliff_sweep(trace, sizes, r)
    fu = trace.kind == "follow-up"
    shared = (trace.shared_tokens[fu] // 16) * 16
    assert cs["floor"] == pytest.approx(shared.sum() / trace.prompt_tokens[fu].sum())
    assert cs["hit_rate"][0] == 0 and cs["gain_share"][-1] == pytest.approx(1.0)
    assert np.allclose(cs["gain_share"], (cs["hit_rate"] - cs["floor"]) / (cs["ceiling"] - cs["floor"]))
    assert cs["needed_bytes"] in sizes and np.all(cs["proportional"] <= 1)
    assert cs["gain_share"][0] < 0  # an empty cache wins nothing, not even the floor
    assert cs["edge_bytes"] == max(c for c, g in zip(sizes, cs["gain_share"], strict=True) if g < 0.2)
    assert cs["needed_fraction_of_kv_budget"] == pytest.approx(cs["needed_bytes"] / r.kv_budget_bytes)
    with pytest.raises(ValueError, match="kinds"):
        C.cliff_sweep(trace, sizes, r, kinds=("nothing",))


def test_spec_break_even_batch_is_the_first_losing_batch():
    r = C.default_replica()
    b = C.spec_break_even_batch(r, 500, 0.8, 4)
    assert b is not None and 1 < b < r.max_num_seqs
    assert C.spec_decode_at_batch(r, b, 500, 0.8, 4)["speedup"] < 1.0
    assert C.spec_decode_at_batch(r, b - 1, 500, 0.8, 4)["speedup"] >= 1.0
    assert C.spec_break_even_batch(r, 500, 0.99, 3, 0.0, max_batch=8) is None


def test_regular_think_times_make_the_cliff_memoryless_ones_a_slope():
    """The chapter's claim: LRU's cliff comes from students returning after similar times."""
    r = C.default_replica()
    sizes = [4e9, 7e9, 10e9, 40e9]
    share = {cv: C.cliff_sweep(C.tutor_trace(700, seed=1, turns_mean=4, think_s_mean=30.0,
                                             think_s_cv=cv), sizes, r)["gain_share"]
             for cv in (0.0, 1.0)}
    assert np.all(share[0.0][:3] < share[1.0][:3])
    assert share[0.0][0] < 0.1 < share[1.0][0]


# ----------------------------------------------------------------------------- the segment store

@pytest.mark.parametrize("block", [1, 7, 16])
def test_segment_tree_keys_equal_hashing_each_sequence_whole(block):
    """sequence_hashes joins per-segment keys; it must equal hashing prompt + answer from scratch."""
    trace = C.tutor_trace(60, seed=3, turns_mean=3, think_s_mean=5.0, upload_fraction=0.2,
                          upload_tokens=37, syllabus_tokens=45, subject_tokens=9,
                          question_tokens=11)
    keys = trace.sequence_hashes(block)
    assert len(keys) == len(trace)
    for i in range(len(trace)):
        whole = np.concatenate([trace.prompts[i], trace.answers[i]])
        assert keys[i] == C.block_hashes(whole, block)
        assert trace.prompts[i].size == trace.prompt_tokens[i]
        assert trace.answers[i].size == trace.answer_tokens[i]
    assert trace.tokens.size < (trace.prompt_tokens + trace.answer_tokens).sum()  # stored once


def test_from_prompts_replays_your_own_requests():
    prompts = [list(range(40)), list(range(40)) + [7, 8], list(range(100, 130))]
    answers = [[1, 2, 3], [4] * 20, []]
    trace = C.PromptTrace.from_prompts([2.0, 0.0, 1.0], prompts, answers)
    assert trace.prompts[0].tolist() == prompts[1] and trace.answers[0].tolist() == [4] * 20
    assert trace.sequence_hashes(4)[1] == C.block_hashes(prompts[2], 4)
    res = C.simulate(trace, cache_bytes=1e9, block_tokens=4, tpot_s=0.0)
    assert res.hit_tokens.tolist() == [0, 0, 36]  # the third arrival reuses nine blocks of the first
    with pytest.raises(ValueError, match="one entry per arrival"):
        C.PromptTrace.from_prompts([0.0], prompts, answers)
    with pytest.raises(ValueError, match="at least one token"):
        C.PromptTrace.from_prompts([0.0], [[]], [[1]])
    with pytest.raises(ValueError, match="kind"):
        C.PromptTrace.from_prompts([0.0], [[1]], [[1]], kind=["chat"])


# ----------------------------------------------------------------------------- issue 16: refusals

def test_sweep_refuses_unknown_kinds_by_name_like_cliff_sweep():
    trace = C.tutor_trace(30, seed=2, turns_mean=2, think_s_mean=5.0)
    for call in (C.sweep_cache_bytes, C.cliff_sweep):
        with pytest.raises(ValueError, match="kinds must be one of 'new', 'follow-up', 'upload'"):
            call(trace, [1e9], kinds=["nope"])
        with pytest.raises(ValueError, match="no requests of kinds"):  # none of them in this trace
            call(trace, [1e9], kinds=["upload"])
        with pytest.raises(TypeError, match="trace"):
            call([1, 2], [1e9])
    row = C.sweep_cache_bytes(trace, [1e9], kinds="follow-up")[0]  # one kind as a string
    assert 0 < row["kind_token_hit_rate"] <= 1
    with pytest.raises(ValueError, match="cache_bytes"):
        C.sweep_cache_bytes(trace, [float("nan")])


def test_trace_sizes_are_bounded_before_anything_is_drawn():
    with pytest.raises(ValueError, match=r"subjects must be an integer <= 100000"):
        C.tutor_trace(100, seed=0, subjects=10**7)
    with pytest.raises(ValueError, match="n_requests must be an integer <= 200000"):
        C.tutor_trace(C.MAX_TRACE_REQUESTS + 1, seed=0)
    with pytest.raises(ValueError, match=r"distinct tokens\) needs 2e\+09 tokens; the limit is 2e\+08"):
        C.tutor_trace(1000, seed=0, answer_tokens=2_000_000)
    with pytest.raises(ValueError, match="a replay walks.*the limit is 1.8e\\+09"):
        C.tutor_trace(100_000, seed=0, turns_mean=500.0, think_s_mean=1.0)
    with pytest.raises(ValueError, match="subjects x subject_tokens"):
        C.tutor_trace(10, seed=0, subjects=90_000, subject_tokens=10_000)
    with pytest.raises(TypeError, match="question_tokens"):
        C.tutor_trace(10, seed=0, question_tokens=1.5)


def test_bad_objects_and_flags_are_named():
    r = C.default_replica()
    for bad in (float("nan"), "abc", [1.5, 2.0], [1, float("nan")], np.zeros((2, 2), dtype=int)):
        with pytest.raises(TypeError, match="tokens"):
            C.block_hashes(bad, 4)
    assert C.block_hashes((np.int64(1), 2, 3, 4), 2) == C.block_hashes([1, 2, 3, 4], 2)
    with pytest.raises(TypeError, match="share_blocks must be True or False"):
        C.saturated_throughput_with_cache(r, 3550, 350, 1e9, 3000, share_blocks="False")
    with pytest.raises(TypeError, match="skip_cached_prefill must be True or False"):
        C.saturated_throughput_with_cache(r, 3550, 350, 1e9, 3000, skip_cached_prefill=0)
    with pytest.raises(TypeError, match="replica"):
        C.concurrency_with_cache({"tp": 4}, 1e9, 100)
    cache = C.PrefixCache(10, 4)
    with pytest.raises(TypeError, match="handle"):
        cache.release(None)
    with pytest.raises(TypeError, match="hashes"):
        cache.admit(5, 1)
    _, handle = cache.admit(C.block_hashes(list(range(8)), 4), 1)
    with pytest.raises(ValueError, match="another PrefixCache"):
        C.PrefixCache(10, 4).release(handle)
    with pytest.raises(TypeError, match="options"):
        C.quantisation_table(options=5)
    with pytest.raises(TypeError, match="model must be an id string"):
        C.default_replica(["llama"])
