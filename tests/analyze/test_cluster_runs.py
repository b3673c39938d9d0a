"""A cluster run is one object: the N runs of one launch, tagged with the cluster id rank 0 minted, read
whole by every reader (`cluster:<id>`, `latest`), reassembled by `kvbench import` from each rank's own
database, and compared link by link (`compare cluster:A cluster:B`). Results are stored through the
store API as the launcher stores them; the rates are synthetic — they test the analysis, they are not
measurements."""

from __future__ import annotations

import json

import pytest

from kvbench.analyze.runs import load_document
from kvbench.cluster.rank import cluster_tags
from kvbench.report.link_heatmap import run_matrices
from kvbench.store import open_store
from tests.inproc import run_in_process as cli

HOSTS = ("n0", "n1", "n2", "n3")
PAIRS = [(s, d) for s in HOSTS for d in HOSTS if s != d]


def add_cluster(store, cluster: str, rates: dict | None = None, host: str = "h" * 64, skip_rank: int | None = None,
                failed_rank: int | None = None) -> list[int]:
    """One launch of 4 ranks: each rank's run holds the pairs it initiated (net.write: it is the source),
    ~10 GB/s unless `rates` says otherwise; `failed_rank`'s pairs failed."""
    store.ensure_host(host, "n0", {})
    store.ensure_context("c" * 64, {})
    runs = []
    for rank, name in enumerate(HOSTS):
        if rank == skip_rank:
            continue
        run_id = store.begin_run(host_id=host, context_id="c" * 64, suite=None, suite_hash=None, kvbench_version="0",
                                 git_sha=None, git_dirty=None, tags=cluster_tags(cluster, rank, len(HOSTS)),
                                 system_state={}, cases_planned=3)
        for n, (src, dst) in enumerate(p for p in PAIRS if p[0] == name):
            rate = (rates or {}).get((src, dst), 10.0 + 0.05 * n)
            params = {"block_size": 1 << 20, "batch": 64, "peer": "remote", "src_host": src, "dst_host": dst,
                      "peer_port": 5555 + HOSTS.index(dst)}
            record = {"pattern": "pairs", "round": n, "src_host": src, "dst_host": dst, "src_rank": rank,
                      "dst_rank": HOSTS.index(dst), "concurrency": 2, "id": cluster}
            if rank == failed_rank:
                store.add_result(run_id, {"bench": "net.write", "params": params, "case_hash": f"{src}{dst}",
                                          "verified": False, "status": "failed", "reason": f"{dst} is gone",
                                          "warnings": [], "extra": {"cluster": record}}, [])
                continue
            store.add_result(run_id, {"bench": "net.write", "params": params, "case_hash": f"{src}{dst}",
                                      "gbps_median": rate, "gbps_p10": rate * 0.99, "gbps_p90": rate * 1.01,
                                      "verified": True, "status": "ok", "reason": None, "warnings": [],
                                      "extra": {"cluster": record}}, [1e-3] * 5)
        store.finish_run(run_id, "complete")
        runs.append(run_id)
    return runs


def pairs_json(db_url: str, run: str = "latest") -> dict:
    shown = cli("fleet", "--pairs", "--run", run, "--db", db_url, "--json", "-")
    assert shown.returncode == 0, shown.stderr
    (matrix,) = json.loads(shown.stdout)["matrices"]
    return matrix


def test_every_reader_sees_the_whole_launch_not_one_rank_s_share(db_url):
    store = open_store(db_url)
    runs = add_cluster(store, "A")
    for ref in ("latest", "cluster:A", str(runs[2])):  # a rank's run id stands for its launch too
        matrix = pairs_json(db_url, ref)
        assert matrix["run_id"] == "cluster:A"
        assert sum(c["status"] == "ok" for c in matrix["cells"]) == 12, matrix["cells"]
    doc = load_document("latest", lambda: store)
    assert doc["run"]["id"] == "cluster:A" and doc["run"]["partial"] is None and len(doc["results"]) == 12
    assert doc["run"]["system_state"]["cluster"]["runs"] == {str(r): run for r, run in enumerate(runs)}
    (m,) = run_matrices([{**r, "run_id": doc["run"]["id"]} for r in doc["results"]])  # the report: one panel
    assert len(m.cells) == 12 and m.run_id == "cluster:A"
    shown = cli("results", "cluster:A", "--db", db_url, "--json", "-")
    assert shown.returncode == 0 and len(json.loads(shown.stdout)["results"]) == 12, shown.stderr
    exported = cli("export", "cluster:A", "--db", db_url)
    assert exported.returncode == 0 and len(json.loads(exported.stdout)["ranks"]) == 4


def test_unknown_cluster_and_empty_id_are_one_line_errors(db_url):
    add_cluster(open_store(db_url), "A")
    for ref, said in (("cluster:B", "no cluster run 'B'"), ("cluster:", "give the cluster id after 'cluster:'")):
        shown = cli("results", ref, "--db", db_url)
        assert shown.returncode == 2 and said in shown.stderr, shown.stderr


def test_ranks_that_stored_apart_are_one_cluster_run_after_import_and_twice_stores_nothing_twice(tmp_path):
    exports = []
    for rank in range(4):  # each rank its own database: it holds its own run only
        url = f"sqlite:///{tmp_path / f'r{rank}.sqlite'}"
        add_cluster(open_store(url), "A", skip_rank=None)
        store = open_store(url)
        # keep only rank `rank`'s run in this database: the others' come from their own databases
        out = tmp_path / f"r{rank}.json"
        ids = [r["id"] for r in store.cluster_runs("A")]
        shown = cli("export", str(ids[rank]), "--db", url, "-o", str(out))
        assert shown.returncode == 0, shown.stderr
        exports.append(str(out))
    merged = f"sqlite:///{tmp_path / 'm.sqlite'}"
    first = cli("import", *exports[:3], "--db", merged)
    assert first.returncode == 0, first.stderr
    assert "cluster:A: rank(s) 3 of 4 stored no run here" in first.stdout, first.stdout
    assert sum(c["status"] == "ok" for c in pairs_json(merged)["cells"]) == 9
    again = cli("import", *exports, "--db", merged)
    assert again.returncode == 0 and again.stdout.count("already here") == 3 and "cluster:A: whole" in again.stdout
    assert cli("import", *exports, "--db", merged).stdout.count("already here") == 4
    assert sum(c["status"] == "ok" for c in pairs_json(merged)["cells"]) == 12
    assert len(open_store(merged).runs()) == 4
    # a cluster run's own export holds each rank's run: it imports as the same 4 runs, nothing new
    whole = tmp_path / "A.json"
    assert cli("export", "cluster:A", "--db", merged, "-o", str(whole)).returncode == 0
    assert cli("import", str(whole), "--db", merged).stdout.count("already here") == 4


def test_compare_two_launches_link_by_link_names_the_slow_link_and_its_host(db_url):
    store = open_store(db_url)
    add_cluster(store, "A")
    add_cluster(store, "B")  # the same again: nothing gates
    same = cli("compare", "cluster:A", "cluster:B", "--db", db_url)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stderr.strip().splitlines()[-1].startswith("PASS: 12 link(s) compared")
    slow = {("n2", "n0"): 4.0, ("n2", "n1"): 4.0, ("n3", "n2"): 4.0}
    add_cluster(store, "C", rates=slow)
    found = cli("compare", "cluster:A", "cluster:C", "--db", db_url)
    assert found.returncode == 1, found.stdout + found.stderr
    last = found.stderr.strip().splitlines()[-1]
    assert last.startswith("FAIL: link n3→n2 net.write -60% since cluster:A; "), last  # the largest drop first
    assert "link n2→n0 net.write -60%" in last and "link n2→n1 net.write -60%" in last, last
    assert last.endswith("; host n2 in 3 of 3 slow or lost links"), last
    # baseline on a cluster run: every rank's run is tagged, and `baseline` reads the whole launch
    tagged = cli("tag", "cluster:A", "baseline", "--db", db_url)
    assert tagged.returncode == 0 and "cluster:A: baseline=1" in tagged.stdout, tagged.stderr
    assert cli("compare", "baseline", "cluster:C", "--db", db_url).returncode == 1
    assert cli("compare", "baseline", "cluster:B", "--db", db_url).returncode == 0


@pytest.mark.parametrize("how", ["absent", "failed"])
def test_a_link_ok_in_the_base_and_failed_or_absent_in_the_new_launch_is_lost(db_url, how):
    """(failed: the verdict was rebuilt from Comparison.to_dict(), whose `allowed_drop` is no field: TypeError)"""
    store = open_store(db_url)
    add_cluster(store, "A")
    add_cluster(store, "B", **({"skip_rank": 3} if how == "absent" else {"failed_rank": 3}))
    found = cli("compare", "cluster:A", "cluster:B", "--db", db_url, "--json", "-")
    assert found.returncode == 1
    verdicts = {(c["params"]["src_host"], c["params"]["dst_host"]): c["verdict"]
                for c in json.loads(found.stdout)["comparisons"]}
    assert {p for p, v in verdicts.items() if v == "lost"} == {p for p in PAIRS if p[0] == "n3"}
    assert found.stderr.strip().splitlines()[-1].startswith("FAIL: link n3→n0 net.write lost")


def test_a_cluster_run_and_a_plain_run_are_not_compared(db_url):
    store = open_store(db_url)
    add_cluster(store, "A")
    run_id = store.begin_run(host_id="h" * 64, context_id="c" * 64, suite=None, suite_hash=None, kvbench_version="0",
                             git_sha=None, git_dirty=None, tags={}, system_state={})
    store.finish_run(run_id, "complete")
    shown = cli("compare", "cluster:A", str(run_id), "--db", db_url)
    assert shown.returncode == 2 and "cluster:A is a cluster run and run 5 is not" in shown.stderr, shown.stderr


@pytest.mark.parametrize("key", ["cluster", "cluster_rank"])
def test_the_tags_that_tie_a_launch_together_are_not_set_by_hand(db_url, key):
    add_cluster(open_store(db_url), "A")
    shown = cli("tag", "1", key, "x", "--db", db_url)
    assert shown.returncode == 2 and f"tag '{key}' ties a launch's runs together" in shown.stderr


# Issue 58.5: ranks that did not all end `complete`, and a pair both its ranks stored.
@pytest.mark.parametrize("status", ["crashed", "aborted", "failed"])
@pytest.mark.parametrize("rank", [1, 3])
def test_a_rank_other_than_rank_0_that_did_not_complete_is_the_cluster_run_s_status_in_every_reader(db_url, rank,
                                                                                                   status):
    store = open_store(db_url)
    runs = add_cluster(store, "A")
    store.finish_run(runs[rank], status, reason="killed")  # rank 0 and the others stay complete
    doc = load_document("cluster:A", lambda: store)
    assert doc["run"]["status"] == status, doc["run"]["status"]
    assert load_document("latest", lambda: store)["run"]["status"] == status
    shown = cli("results", "cluster:A", "--db", db_url, "--json", "-")
    assert shown.returncode == 0 and json.loads(shown.stdout)["run"]["status"] == status, shown.stdout[:500]
    exported = cli("export", "cluster:A", "--db", db_url)
    assert exported.returncode == 0 and json.loads(exported.stdout)["run"]["status"] == status


def _store_twice(store, runs: list[int], pair: tuple[str, str], by_rank: int, status: str) -> None:
    """`by_rank` records `pair` (another rank's initiated pair, same case and round) with `status`."""
    src, dst = pair
    n = [p for p in PAIRS if p[0] == src].index(pair)
    params = {"block_size": 1 << 20, "batch": 64, "peer": "remote", "src_host": src, "dst_host": dst,
              "peer_port": 5555 + HOSTS.index(dst)}
    record = {"pattern": "pairs", "round": n, "src_host": src, "dst_host": dst, "src_rank": HOSTS.index(src),
              "dst_rank": HOSTS.index(dst), "concurrency": 2, "id": "A"}
    ok = status == "ok"
    store.add_result(runs[by_rank], {"bench": "net.write", "params": params, "case_hash": f"{src}{dst}",
                                     **({"gbps_median": 3.0, "gbps_p10": 3.0, "gbps_p90": 3.0} if ok else {}),
                                     "verified": ok, "status": status, "reason": None if ok else f"{src} is gone",
                                     "warnings": [], "extra": {"cluster": record}}, [1e-3] * 5 if ok else [])


@pytest.mark.parametrize("failed_first", [True, False], ids=["failed-copy-first", "ok-copy-first"])
def test_a_pair_stored_twice_keeps_the_ok_copy_whichever_rank_stored_it_first(db_url, failed_first):
    store = open_store(db_url)
    if failed_first:  # n1 -> n0 initiated (ok) by rank 1; its target, rank 0, read first, stored it failed
        runs = add_cluster(store, "A")
        _store_twice(store, runs, ("n1", "n0"), 0, "failed")
        pair = ("n1", "n0")
    else:  # n0 -> n1: rank 0 (read first) has it ok; rank 1 stored a failed copy
        runs = add_cluster(store, "A")
        _store_twice(store, runs, ("n0", "n1"), 1, "failed")
        pair = ("n0", "n1")
    doc = load_document("cluster:A", lambda: store)
    kept = [r for r in doc["results"] if r["case"] == "".join(pair)]
    assert [r["status"] for r in kept] == ["ok"], kept
    assert len(doc["results"]) == 12 and all(r["status"] == "ok" for r in doc["results"])
    cells = {(c["src_host"], c["dst_host"]): c for c in pairs_json(db_url, "cluster:A")["cells"]}
    assert sum(c["status"] == "ok" for c in cells.values()) == 12 and cells[pair]["gbps"] > 9, cells[pair]
