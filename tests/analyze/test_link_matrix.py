"""The link matrix of a cluster run (`kvbench fleet --pairs`), from results stored through the store
API as the launcher stores them: the pair in params and in `extra["cluster"]`. The rates are
synthetic — they test the analysis, they are not measurements."""

from __future__ import annotations

import json

import pytest

from kvbench.analyze.spread import robust_spread
from kvbench.analyze.links.link_matrix import link_matrices
from kvbench.store import open_store
from tests.inproc import run_in_process as cli

HOSTS = ("node-a", "node-b", "node-c", "node-d")


def new_run(store) -> int:
    store.ensure_host("h" * 64, "node-a", {})
    store.ensure_context("c" * 64, {})
    return store.begin_run(host_id="h" * 64, context_id="c" * 64, suite=None, suite_hash=None, kvbench_version="0",
                           git_sha=None, git_dirty=None, tags={}, system_state={})


def add_pair(store, run_id, src, dst, gbps, status="ok", reason=None, bench="net.write", round_=1):
    params = {"block_size": 1 << 20, "batch": 64, "peer": "remote", "src_host": src, "dst_host": dst}
    cluster = {"pattern": "pairs", "round": round_, "src_host": src, "dst_host": dst,
               "src_rank": HOSTS.index(src), "dst_rank": HOSTS.index(dst), "concurrency": 2}
    store.add_result(run_id, {"bench": bench, "params": params, "case_hash": f"{src}{dst}"[:16],
                              "gbps_median": gbps if status == "ok" else None, "verified": status == "ok",
                              "status": status, "reason": reason, "warnings": [], "extra": {"cluster": cluster}},
                     [1e-3] * 5 if status == "ok" else [])


def cluster_run(store, slow=("node-c", "node-a"), failed=("node-d", "node-b"), missing=("node-b", "node-d")):
    """All 12 directed pairs of 4 hosts at ~10 GB/s but one slow, one failed and one not stored."""
    run_id = new_run(store)
    for n, (src, dst) in enumerate((s, d) for s in HOSTS for d in HOSTS if s != d):
        if (src, dst) == missing:
            continue
        if (src, dst) == failed:
            add_pair(store, run_id, src, dst, None, "failed", "rank 3 (node-d) died: peer did not answer within 30 s")
        else:
            add_pair(store, run_id, src, dst, 4.0 if (src, dst) == slow else 10.0 + 0.1 * (n % 3))
    store.finish_run(run_id, "complete")
    return run_id


def test_the_slow_link_is_flagged_and_failed_and_missing_pairs_keep_their_reason(db_url):
    store = open_store(db_url)
    run_id = cluster_run(store)
    (m,) = link_matrices(store.link_results(["net.write"], run_id), run_id)
    assert m.hosts == HOSTS and m.pattern == "pairs" and m.params == {"batch": 64, "block_size": 1 << 20,
                                                                        "peer": "remote"}
    assert len(m.cells) == 12  # every directed pair, the one never stored too
    assert [(c.src_host, c.dst_host) for c in m.cells if c.slow] == [("node-c", "node-a")]
    assert m.cell("node-c", "node-a").deviation < -0.5
    failed, missing = m.cell("node-d", "node-b"), m.cell("node-b", "node-d")
    assert failed.status == "failed" and failed.gbps is None and "died" in failed.reason
    assert missing.status == "missing" and missing.gbps is None and f"run {run_id}" in missing.reason
    assert m.slow_hosts == (("node-a", 1), ("node-c", 1))
    assert 9.9 < m.median_gbps < 10.3


def test_one_rule_for_hosts_and_links():
    """The matrix flags with the fleet's own rule: a cell slow exactly when robust_spread says so."""
    rows = [{"id": i, "run_id": 1, "bench": "net.write", "status": "ok", "reason": None, "gbps_median": rate,
             "params": {"src_host": s, "dst_host": d}, "extra": {}}
            for i, ((s, d), rate) in enumerate(zip([("a", "b"), ("b", "a"), ("a", "c"), ("c", "a")],
                                                   [10.0, 10.2, 9.6, 9.0], strict=True))]
    (m,) = link_matrices(rows, 1)
    spread = robust_spread([10.0, 10.2, 9.6, 9.0])
    assert [c.slow for c in m.cells if c.status == "ok"] == [o and d < 0 for o, d in
                                                               zip(spread.outliers, spread.deviations, strict=True)]


def test_across_runs_the_newest_result_of_each_pair_stands(db_url):
    store = open_store(db_url)
    cluster_run(store)
    later = new_run(store)
    add_pair(store, later, "node-c", "node-a", 10.1)  # the slow link, fixed and measured again
    add_pair(store, later, "node-a", "node-b", None, "failed", "UCX: connection reset")
    (m,) = link_matrices(store.link_results(["net.write"]))
    assert m.run_id is None and not m.cell("node-c", "node-a").slow
    assert m.cell("node-c", "node-a").run_id == later
    assert m.cell("node-a", "node-b").status == "failed"  # the newest says the link broke
    assert m.cell("node-b", "node-a").run_id == later - 1


def test_results_that_name_no_pair_make_no_matrix():
    rows = [{"id": 1, "run_id": 1, "bench": "net.write", "status": "ok", "gbps_median": 5.0,
             "params": {"peer": "inproc"}, "extra": {}}]
    assert link_matrices(rows, 1) == []


@pytest.fixture
def cluster_db(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'k.sqlite'}"
    cluster_run(open_store(url))
    return url


def test_fleet_pairs_prints_the_matrix_and_names_the_slow_link(cluster_db):
    proc = cli("fleet", "--pairs", "--run", "1", "--db", cluster_db)
    assert proc.returncode == 0, proc.stderr
    assert "SLOW" in proc.stdout and "FAILED" in proc.stdout and "missing" in proc.stdout
    assert "node-c → node-a" in proc.stdout and "most often in slow links: node-a (1 of 1), node-c (1 of 1)" \
        in proc.stdout
    assert "node-d → node-b: failed: rank 3 (node-d) died" in proc.stdout
    assert " 0.00 " not in proc.stdout  # a pair without a rate is never shown as 0


def test_fleet_pairs_json_has_booleans_numbers_and_nulls(cluster_db):
    proc = cli("fleet", "--pairs", "--bench", "net.write", "--json", "-", "--db", cluster_db)
    assert proc.returncode == 0, proc.stderr
    (m,) = json.loads(proc.stdout)["matrices"]
    cells = {(c["src_host"], c["dst_host"]): c for c in m["cells"]}
    assert cells[("node-c", "node-a")]["slow"] is True and isinstance(cells[("node-a", "node-b")]["gbps"], float)
    assert cells[("node-d", "node-b")]["gbps"] is None and cells[("node-b", "node-d")]["status"] == "missing"
    assert m["slow_links"] == 1 and m["run_id"] is None


@pytest.mark.parametrize("args,words", [
    (["--run", "1"], "add --pairs"),
    (["--pairs", "--outliers"], "give one of them"),
    (["--pairs", "--run", "9"], "run 9 does not exist"),
    (["--pairs", "--bench", "dram.copy"], "no results naming a source and destination host"),
])
def test_fleet_pairs_bad_input_is_one_line(cluster_db, args, words):
    proc = cli("fleet", *args, "--db", cluster_db)
    assert proc.returncode == 2 and words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_the_terminal_matrix_shows_host_names_as_they_are_and_keeps_rates_whole():
    """A host name is text, never rich markup; at 80 columns every rate stays on one line."""
    from rich.console import Console

    from kvbench.report.link_table import link_table

    rows = [{"id": i, "run_id": 1, "bench": "net.write", "status": "ok", "reason": None, "gbps_median": 12.345,
             "params": {"src_host": s, "dst_host": d}, "extra": {}}
            for i, (s, d) in enumerate([("rack[red]-1", "node-b"), ("node-b", "rack[red]-1")])]
    (m,) = link_matrices(rows, 1)
    console = Console(record=True, width=80)
    console.print(link_table(m))
    text = console.export_text()
    assert "rack[red]-1" in text and text.count("12.3") == 2


def test_a_burst_s_cells_carry_its_fraction_of_the_wire_ceiling_and_request_latency(db_url):
    """kv.restore requests=R stores its paired wire ceiling and request_ms; the matrix shows any of them
    (`--show`), and an ok pair that measured no such value says n/a, never 0."""
    store = open_store(db_url)
    run_id = new_run(store)
    for n, (src, dst) in enumerate([("node-a", "node-b"), ("node-b", "node-a"), ("node-a", "node-c")]):
        params = {"requests": 16, "mode": "pull", "src_host": src, "dst_host": dst}
        extra = {"cluster": {"pattern": "pairs", "round": n, "src_host": src, "dst_host": dst},
                 "paired": {"against": {"src_layout": "contiguous", "dst_layout": "contiguous"}, "median": 0.5 + n / 10},
                 "request_ms": {"p50": 2.0 + n, "p99": 9.0 + n}} if n < 2 else {
                     "cluster": {"pattern": "pairs", "round": n, "src_host": src, "dst_host": dst}}
        store.add_result(run_id, {"bench": "kv.restore", "params": params, "case_hash": f"k{n}", "gbps_median": 3.0,
                                  "verified": True, "status": "ok", "reason": None, "warnings": [], "extra": extra},
                         [1e-3] * 5)
    store.finish_run(run_id, "complete")
    (m,) = link_matrices(store.link_results(["kv.restore"], run_id), run_id)
    cell = m.cell("node-b", "node-a")
    assert (cell.wire_fraction, cell.request_p50_ms, cell.request_p99_ms) == (0.6, 3.0, 10.0)
    assert m.cell("node-a", "node-c").wire_fraction is None
    shown = cli("fleet", "--pairs", "--run", str(run_id), "--show", "fraction", "--db", db_url)
    assert shown.returncode == 0 and "0.60" in shown.stdout and "n/a" in shown.stdout, shown.stdout
    assert "fraction of the wire ceiling" in shown.stdout
    shown = cli("fleet", "--pairs", "--run", str(run_id), "--show", "p99", "--db", db_url, "--json", "-")
    cells = json.loads(shown.stdout)["matrices"][0]["cells"]
    assert {(c["src_host"], c["dst_host"]): c["request_p99_ms"] for c in cells if c["status"] == "ok"}[
        ("node-a", "node-b")] == 9.0
    bad = cli("fleet", "--pairs", "--show", "speed", "--db", db_url)
    assert bad.returncode == 2 and "bad --show 'speed': choose gbps, fraction, p50, p99" in bad.stderr
