"""A fleet's database: many writer processes at once lose nothing, and the database picks the rows a
fleet command shows (the newest ok result of each host and case) — on SQLite and PostgreSQL."""

import subprocess
import sys

import sqlalchemy as sa

from kvbench.store import open_store
from tests.conftest import REPO

WRITER = """
import sys
sys.path.insert(0, {repo!r})
from benchmarks.fleet_scale import write_hosts
write_hosts(sys.argv[1], [int(h) for h in sys.argv[2].split(",")], runs=2, n_cases=10, samples=5)
"""


def test_many_writer_processes_at_once_lose_nothing(db_url):
    hosts = list(range(24))
    shares = [hosts[i::12] for i in range(12)]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(repo=str(REPO)), db_url,
                               ",".join(map(str, share))], cwd=REPO, stderr=subprocess.PIPE, text=True)
             for share in shares]
    errors = [p.communicate(timeout=300)[1] for p in procs if p.wait(timeout=300) != 0]
    assert not errors, errors[0][-2000:]
    store = open_store(db_url, read_only=True)
    with store.engine.connect() as conn:
        results = conn.execute(sa.text("SELECT count(*) FROM result")).scalar()
        samples = conn.execute(sa.text("SELECT count(*) FROM sample")).scalar()
        runs = conn.execute(sa.text("SELECT count(*) FROM run WHERE status = 'complete'")).scalar()
    assert (runs, results, samples) == (24 * 2, 24 * 2 * 10, 24 * 2 * 10 * 5)


def _result(store, run_id, case, gbps, status="ok"):
    store.add_result(run_id, {"bench": "dram.copy", "params": {"case": case}, "case_hash": case, "gbps_median": gbps,
                              "verified": status == "ok", "status": status, "warnings": [], "extra": {}}, [1e-3] * 5)


def test_the_database_picks_the_newest_ok_result_of_each_host_and_case(db_url):
    store = open_store(db_url)
    store.ensure_context("c", {})
    for host in ("a", "b"):
        store.ensure_host(host, host, {})
    runs = {}
    for n, host in enumerate(("a", "b", "a", "a")):
        runs[n] = store.begin_run(host_id=host, context_id="c", suite=None, suite_hash=None, kvbench_version="0",
                                  git_sha=None, git_dirty=None, tags={}, system_state={})
    _result(store, runs[0], "x", 1.0)
    _result(store, runs[0], "y", 2.0)
    _result(store, runs[1], "x", 5.0)
    _result(store, runs[2], "x", 3.0)
    _result(store, runs[3], "x", 0.0, status="failed")  # the newest run's case failed: the one before stands
    _result(store, runs[3], "y", 4.0)
    latest = {(r["host_id"], r["case_hash"]): r["gbps_median"] for r in store.latest_ok_results()}
    assert latest == {("a", "x"): 3.0, ("a", "y"): 4.0, ("b", "x"): 5.0}
    assert {r["params"]["case"] for r in store.latest_ok_results(["dram.copy"])} == {"x", "y"}
    assert store.latest_ok_results(["hbm.read"]) == []
