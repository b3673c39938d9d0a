"""The pattern schedules, as pure functions of the pattern and the world size."""

import itertools

import pytest

from kvbench.cluster.schedule import Pattern, circle_rounds, parse_pattern, schedule
from kvbench.errors import BadInput


@pytest.mark.parametrize("world", [2, 3, 4, 5, 6, 7, 8, 16])
def test_circle_method_pairs_everyone_once_each_rank_once_per_round(world):
    rounds = circle_rounds(world)
    assert len(rounds) == (world - 1 if world % 2 == 0 else world)
    for one in rounds:
        ranks = [r for pair in one for r in pair]
        assert len(ranks) == len(set(ranks))  # each rank in at most one pair per round
        assert len(one) == world // 2  # an odd N leaves exactly one rank out (the bye)
    seen = [frozenset(p) for one in rounds for p in one]
    assert sorted(seen, key=sorted) == sorted({frozenset(p) for p in itertools.combinations(range(world), 2)},
                                              key=sorted)
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("world", [2, 3, 4, 5, 8])
def test_pairs_covers_every_ordered_pair_once_each_rank_in_one_pair_per_round(world):
    rounds = schedule(parse_pattern("pairs", world), world)
    assert len(rounds) == 2 * len(circle_rounds(world))
    directed = [p for one in rounds for p in one]
    assert sorted(directed) == sorted(itertools.permutations(range(world), 2))
    for one in rounds:
        ranks = [r for pair in one for r in pair]
        assert len(ranks) == len(set(ranks))


def test_four_ranks_pairs_is_six_rounds_of_two_and_twelve_directed_pairs():
    rounds = schedule(Pattern("pairs"), 4)
    assert [len(one) for one in rounds] == [2] * 6
    assert len({p for one in rounds for p in one}) == 12


def test_ring_is_one_round_of_i_to_i_plus_one():
    assert schedule(parse_pattern("ring", 4), 4) == [[(0, 1), (1, 2), (2, 3), (3, 0)]]
    assert schedule(parse_pattern("ring", 2), 2) == [[(0, 1), (1, 0)]]


def test_incast_sends_k_ranks_into_one_receiver_per_round():
    rounds = schedule(parse_pattern("incast:3", 4), 4)
    assert len(rounds) == 4
    for receiver, one in enumerate(rounds):
        assert len(one) == 3 and {t for _, t in one} == {receiver}
        assert len({s for s, _ in one}) == 3 and receiver not in {s for s, _ in one}
    assert schedule(parse_pattern("incast:1", 3), 3) == [[(1, 0)], [(2, 1)], [(0, 2)]]


@pytest.mark.parametrize("world,k", [(4, 1), (4, 2), (6, 2), (7, 3), (8, 3)])
def test_kbatch_runs_at_most_k_disjoint_pairs_and_covers_every_ordered_pair(world, k):
    rounds = schedule(parse_pattern(f"kbatch:{k}", world), world)
    assert all(1 <= len(one) <= k for one in rounds)
    for one in rounds:
        ranks = [r for pair in one for r in pair]
        assert len(ranks) == len(set(ranks))
    directed = [p for one in rounds for p in one]
    assert sorted(directed) == sorted(itertools.permutations(range(world), 2))


@pytest.mark.parametrize("text,world,message", [
    ("pair", 4, "choose one of pairs, ring, incast:K, kbatch:K"),
    ("incast", 4, "choose one of"),
    ("incast:4", 4, "with 4 ranks K goes from 1 to 3"),
    ("incast:x", 4, "K must be a whole number"),
    ("kbatch:3", 4, "with 4 ranks K goes from 1 to 2"),
    ("kbatch:0", 4, "K goes from 1"),
    ("ring:2", 4, "choose one of"),
    ("ring", 1, "needs at least 2 ranks"),
])
def test_a_bad_pattern_is_named(text, world, message):
    with pytest.raises(BadInput, match=message):
        parse_pattern(text, world)
