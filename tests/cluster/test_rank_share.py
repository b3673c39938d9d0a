"""A rank's share of a pattern (kvbench/cluster/rank.py) with the rendezvous answered by hand: which pairs
it measures, which it records for a dead initiator, and that each directed pair is recorded once."""

import itertools
import json

from kvbench.benches import get_bench
from kvbench.cluster import rank as cluster
from kvbench.cluster.rank import RankShare, share
from kvbench.cluster.rendezvous import RendezvousLost
from kvbench.cluster.schedule import Pattern, schedule
from kvbench.plan.cases import Case
from kvbench.run.result import Result

WORLD = 4
ROSTER = [{"rank": r, "addr": f"10.0.0.{r + 1}", "port": 5555, "host": f"h{r}", "local_rank": 0} for r in range(WORLD)]
ROUNDS = schedule(Pattern("pairs"), WORLD)


class Answers:
    """Barrier k answers `dead[k]`, or raises from barrier `lost_at` on (rank 0 gone)."""

    def __init__(self, dead=None, lost_at=None):
        self.dead, self.lost_at = dead or {}, lost_at

    def barrier(self, k):
        if self.lost_at is not None and k >= self.lost_at:
            raise RendezvousLost("rank 0 at 10.0.0.1:5555 went silent")
        return self.dead.get(k, {})


def cases():
    spec = get_bench("net.write")
    return [Case("net.write", spec.canonical_params({"peer": "remote", "block_size": "64KiB", "batch": 8}))]


def outcomes(rank, answers, monkeypatch):
    """(initiator, target) → result of every slot of `rank` that records something; a pair it
    measures is "ok" here without a transfer (run_case replaced)."""
    monkeypatch.setattr(cluster, "run_case", lambda case, facts, settings: Result(case.bench, case.params,
                                                                                  case.case_hash, "ok"))
    mine = RankShare(rank, answers, ROSTER, ROUNDS, "pairs", {})
    got = {}
    for slot in share(cases(), ROUNDS, rank, ROSTER, "pairs"):
        said = []
        result = mine._one(slot, slot.case, None, None, lambda **kw: said.append(kw.get("unplanned", False)))
        if result is not None:
            assert (slot.initiator, slot.target) not in got
            got[(slot.initiator, slot.target)] = result
            # a pair this rank did not plan (a dead initiator's) says so: the progress count grows with it
            assert said == [not slot.measure], (slot, said)
    return got


def test_share_gives_each_rank_its_pairs_with_the_bytes_direction_in_params():
    slots = share(cases(), ROUNDS, 1, ROSTER, "pairs")
    measured = [(s.initiator, s.target) for s in slots if s.measure]
    assert sorted(measured) == [(1, 0), (1, 2), (1, 3)]
    for s in slots:
        assert s.case.params["src_host"] == f"h{s.initiator}" and s.case.params["dst_host"] == f"h{s.target}"
        assert s.case.params["peer_addr"] == f"10.0.0.{s.target + 1}"
        assert s.case.params["peer_name"] == f"kvbench-target-r{s.target}"
    assert [s.barrier for s in slots] == sorted(s.barrier for s in slots)


def test_rank_0_gone_each_rank_records_only_the_pairs_it_initiates(monkeypatch):
    recorded = {}
    for rank in range(1, WORLD):
        for pair, result in outcomes(rank, Answers(lost_at=0), monkeypatch).items():
            assert pair not in recorded  # each directed pair once, by its initiator (was twice: its target too)
            assert pair[0] == rank and result.status == "failed" and "went silent" in result.reason
            recorded[pair] = result
    assert set(recorded) == {p for p in itertools.permutations(range(WORLD), 2) if p[0] != 0}


def test_a_dead_initiator_s_pairs_are_recorded_failed_by_their_targets(monkeypatch):
    """Rank 2 reached barrier 1 and died in round 1: rank 1 learns it at barrier 2. Its pairs of round
    0 were its own to store; rank 1 records (2, 1) only if it fell in round 1 or later, and its own
    pairs into rank 2 from round 2 on fail without a transfer."""
    rounds_of = {p: k for k, pairs in enumerate(ROUNDS) for p in pairs}
    got = outcomes(1, Answers(dead={k: {2: 1} for k in range(2, len(ROUNDS) + 1)}), monkeypatch)
    assert ((2, 1) in got) == (rounds_of[(2, 1)] >= 1)
    if (2, 1) in got:
        assert got[(2, 1)].status == "failed"
        assert got[(2, 1)].reason.startswith(f"rank 2 (h2) died before it measured this pair in round {rounds_of[(2, 1)]}")
    for target in (0, 2, 3):
        result = got[(1, target)]
        if target == 2 and rounds_of[(1, 2)] >= 2:
            assert result.status == "failed" and "rank 2 (h2) is gone" in result.reason
        else:
            assert result.status == "ok"
    assert {p for p in got if 1 not in p} == set()


def test_a_pair_its_initiator_stored_before_it_died_is_not_recorded_failed_too(monkeypatch, db_url):
    """Rank 2 reached barrier k, measured and stored its pair (2, 1) of round k, and died before barrier
    k + 1: rank 1 (sharing the database) records no stand-in, so the pair is not both ok and failed."""
    from kvbench.metadata import CLUSTER
    from kvbench.store import open_store
    from tests.analyze.test_link_matrix import new_run

    rounds_of = {p: k for k, pairs in enumerate(ROUNDS) for p in pairs}
    k = rounds_of[(2, 1)]
    store = open_store(db_url)
    monkeypatch.setattr(cluster, "run_case", lambda case, facts, settings: Result(case.bench, case.params,
                                                                                  case.case_hash, "ok"))
    for stored_first in (False, True):
        mine = RankShare(1, Answers(dead={b: {2: k} for b in range(k + 1, len(ROUNDS) + 1)}), ROSTER, ROUNDS,
                         "pairs", {})
        mine.store, mine.floor = store, store.newest_result_id()
        (slot,) = [s for s in share(cases(), ROUNDS, 1, ROSTER, "pairs") if (s.initiator, s.target) == (2, 1)]
        if stored_first:  # what rank 2 stored, in its own run, before it died
            run_id = new_run(store)
            store.add_result(run_id, {"bench": slot.case.bench, "params": slot.case.params,
                                      "case_hash": slot.case.case_hash, "gbps_median": 1.0, "verified": True,
                                      "status": "ok", "reason": None, "warnings": [],
                                      "extra": {CLUSTER: cluster.cluster_record(slot, "pairs", ROUNDS,
                                                                                mine.hosts)}},
                             [1e-3] * 5)
        result = mine._one(slot, slot.case, None, None, lambda **_: None)
        if stored_first:
            assert result is None
        else:
            assert result.status == "failed" and "rank 2 (h2) died before it measured this pair" in result.reason


def test_a_target_that_never_joined_is_stored_with_its_rank_and_no_made_up_address(monkeypatch):
    """Rank 3 never joined: the roster has no entry for it, so nobody knows its host or address. Its pairs
    fail unmeasured and are stored with what is known (both ranks, the host that did join) and no
    address: no `peer_addr=0.0.0.0 peer_port=1`, no default `127.0.0.1:5555`, no `?` host."""
    from kvbench.analyze.links.link_matrix import pair_of
    from kvbench.metadata import CLUSTER

    roster = [*ROSTER[:3], None]
    got = {}
    for rank in range(3):
        monkeypatch.setattr(cluster, "run_case", lambda case, facts, settings: Result(case.bench, case.params,
                                                                                      case.case_hash, "ok"))
        mine = RankShare(rank, Answers(dead={k: {3: -1} for k in range(len(ROUNDS) + 1)}), roster, ROUNDS, "pairs",
                         {3: -1})
        for slot in share(cases(), ROUNDS, rank, roster, "pairs"):
            result = mine._one(slot, slot.case, None, None, lambda **_: None)
            if result is not None:
                got[(slot.initiator, slot.target)] = result
    assert len(got) == 12  # every directed pair once: 6 measured, 6 with rank 3 recorded failed
    for (initiator, target), result in got.items():
        record = result.metadata[CLUSTER]
        assert (record["src_rank"], record["dst_rank"]) == (initiator, target)
        if 3 not in (initiator, target):
            assert result.status == "ok" and result.params["peer_addr"] == f"10.0.0.{target + 1}"
            continue
        assert result.status == "failed"
        if target == 3:  # nobody knows where its target was
            assert "peer_addr" not in result.params and "peer_port" not in result.params, result.params
        else:  # rank 3 would have reached rank `target`'s target where the roster says it is
            assert result.params["peer_addr"] == f"10.0.0.{target + 1}", result.params
        assert "?" not in json.dumps(result.params) + json.dumps(record)
        known = initiator if target == 3 else target
        assert record["src_host" if known == initiator else "dst_host"] == f"h{known}"
        assert record["dst_host" if known == initiator else "src_host"] is None
        assert ("dst_host" if known == initiator else "src_host") not in result.params
        assert "rank 3 (host unknown: it never joined)" in result.reason, result.reason
        row = {"params": result.params, "extra": result.metadata}
        shown = (f"h{initiator}", "rank 3 (host unknown)") if target == 3 else ("rank 3 (host unknown)", f"h{target}")
        assert pair_of(row) == shown
    # two pairs into two ranks that never joined are two cases, not one
    hashes = {r.case_hash for (i, t), r in got.items() if 3 in (i, t)}
    assert len(hashes) == 6


def test_a_rank_that_joined_and_died_keeps_its_address_in_the_roster():
    from kvbench.cluster.coordinator import Coordinator

    c = Coordinator(3, timeout_s=10, now=0)
    for r in range(3):
        c.on_message(f"a{r}", ("JOIN:" + json.dumps({"rank": r, "addr": f"10.0.0.{r}", "host": f"h{r}"})).encode(),
                     now=1 if r < 2 else 0.0)
    c.dead.add(2)  # silent since its JOIN
    roster = json.loads(c._roster()[7:])
    assert roster["dead"] == [2] and roster["ranks"][2] == {"rank": 2, "addr": "10.0.0.2", "host": "h2"}
