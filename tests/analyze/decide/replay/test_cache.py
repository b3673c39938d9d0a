"""The tiered prefix cache on traces worked by hand, and against the plain reference on random ones."""

import numpy as np
import pytest

from kvbench.analyze.decide.replay.cache import simulate, unbounded_hits
from kvbench.analyze.decide.replay.policies import POLICIES, policy_id
from kvbench.analyze.decide.replay.result import ratios
from tests.analyze.decide.replay.reference import ReferenceCache
from tests.analyze.decide.replay.traces import BLOCK, make_trace

A, B, C, D, X = 0, 1, 2, 3, 4  # block ids; dense ids follow first appearance, so keep them in that order


def run(requests, caps, policy="lru", tokens=None):
    trace = make_trace(requests, tokens)
    return trace, simulate(trace, caps, [policy_id(policy)] * len(caps))


def test_lru_evicts_a_requests_head_first_and_vllm_its_tail():
    # capacity 2: [A, B] then [C] then [A, B]. LRU touched A before B, so C evicts A and [A, B] misses at A;
    # vLLM frees tails first, so C evicts B, A survives and [A, B] reuses one block.
    requests = [[A, B], [C], [A, B]]
    _, lru = run(requests, [2], "lru")
    _, vllm = run(requests, [2], "vllm")
    assert lru.hit_blocks[:, 0].tolist() == [0, 0, 0]
    assert vllm.hit_blocks[:, 0].tolist() == [0, 0, 1]
    assert lru.order[0] == [A, B]  # next to be evicted first
    assert vllm.order[0] == [B, A]


def test_sglang_lfu_keeps_the_block_hit_most():
    # A is used twice, B once; C must evict one of them: LFU evicts B (fewer hits), LRU evicts A (older).
    requests = [[A], [A], [B], [C], [A]]
    _, lfu = run(requests, [2], "sglang-lfu")
    _, lru = run(requests, [2], "lru")
    assert lfu.hit_blocks[:, 0].tolist() == [0, 1, 0, 0, 1]
    assert lru.hit_blocks[:, 0].tolist() == [0, 1, 0, 0, 0]
    assert lfu.order[0] == [C, A]  # C (1 hit) goes before A (3)


def test_a_block_after_the_first_miss_is_a_miss_even_when_cached():
    _, r = run([[A, B, C], [X, B, C], [A, B, D]], [10])
    assert r.hit_blocks[:, 0].tolist() == [0, 0, 2]


def test_demotion_and_promotion_between_two_tiers():
    # one block each: B pushes A down into the second tier; A's hit there promotes it back and demotes B
    trace, r = run([[A], [B], [A]], [1, 1])
    assert r.hit_blocks.tolist() == [[0, 0], [0, 0], [0, 1]]
    assert r.written[:, 1].tolist() == [0, 1, 1]  # write-backs into the second tier
    assert r.written[:, 0].tolist() == [1, 1, 0]  # new blocks kept in the first
    assert r.where.tolist() == [0, 1]  # A back on top, B below
    assert r.dropped == 0


def test_the_last_tier_drops_what_it_evicts():
    _, r = run([[A], [B], [C]], [1, 1])
    assert r.dropped == 1 and r.where.tolist() == [-1, 1, 0]  # A fell out of the second tier
    _, again = run([[A], [B], [C], [A]], [1, 1])
    assert again.hit_blocks[3].tolist() == [0, 0]  # so A misses


def test_a_tier_of_size_zero_passes_blocks_through():
    _, r = run([[A], [A]], [0, 4])
    assert r.hit_blocks.tolist() == [[0, 0], [0, 1]]
    assert r.written[0].tolist() == [1, 1]  # inserted into the first tier, landed in the second
    _, alone = run([[A], [A]], [0])
    assert alone.hit_blocks.sum() == 0 and alone.dropped == 2


def test_hit_ratios_by_blocks_tokens_and_requests():
    # 10 tokens in 4-token blocks: two full blocks and a partial one of 2 tokens
    trace, r = run([[A, B, C], [A, B, C], [A, D]], [10], tokens=[10, 10, 8])
    assert r.hit_tokens[:, 0].tolist() == [0, 10, 4]
    got = ratios(r.hit_blocks.sum(axis=1), r.hit_tokens.sum(axis=1), np.diff(trace.offsets), trace.input_tokens)
    assert got["hit_ratio"] == pytest.approx(4 / 8)  # blocks served ÷ blocks requested
    assert got["token_hit_ratio"] == pytest.approx(14 / 28)
    assert got["request_hit_ratio"] == pytest.approx((0 + 1 + 0.5) / 3)  # the mean of each request's


def test_unbounded_hits_are_every_block_seen_before_up_to_the_first_new_one():
    trace = make_trace([[A, B], [A, C], [A, B, D]], [8, 8, 10])
    blocks, tokens = unbounded_hits(trace)
    assert blocks.tolist() == [0, 1, 2]
    assert tokens.tolist() == [0, 4, 8]


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(6))
def test_random_traces_match_the_reference(policy, seed):
    rng = np.random.default_rng(seed)
    requests, tokens = [], []
    for _ in range(300):
        n = int(rng.integers(1, 7))
        shared = int(rng.integers(0, n + 1))  # a prefix from a small pool of conversations, then new blocks
        start = int(rng.integers(0, 5)) * 10
        requests.append([start + i for i in range(shared)] + rng.integers(100, 160, n - shared).tolist())
        tokens.append(BLOCK * n - int(rng.integers(0, BLOCK)))
    caps = rng.integers(0, 12, int(rng.integers(1, 4))).tolist()
    trace = make_trace(requests, tokens)
    got = simulate(trace, caps, [policy_id(policy)] * len(caps))
    ref = ReferenceCache(caps, [policy] * len(caps))
    remap = {}
    for b in (b for r in requests for b in r):
        remap.setdefault(b, len(remap))
    for i, (req, n) in enumerate(zip(requests, tokens, strict=True)):
        hits, toks, written = ref.request([remap[b] for b in req], n, BLOCK)
        assert got.hit_blocks[i].tolist() == hits, f"request {i}"
        assert got.hit_tokens[i].tolist() == toks, f"request {i}"
        assert got.written[i].tolist() == written, f"request {i}"
    assert got.dropped == ref.dropped
    for t in range(len(caps)):
        assert got.order[t] == ref.order(t)
