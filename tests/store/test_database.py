"""The store round trip, on SQLite and on a real PostgreSQL."""

import pytest
import sqlalchemy as sa

from kvbench.errors import BadInput
from kvbench.store import open_store, schema


def _begin(store, host="h" * 64, ctx="c" * 64):
    store.ensure_host(host, "box", {"cpu": "x"})
    store.ensure_context(ctx, {"numpy": "2"})
    return store.begin_run(host_id=host, context_id=ctx, suite="quick", suite_hash="abc", kvbench_version="0.1",
                           git_sha=None, git_dirty=None, tags={"purpose": "test"}, system_state={"governor": None})


ROW = {
    "bench": "dram.copy", "params": {"size": 1 << 20, "threads": 1}, "case_hash": "0123456789abcdef",
    "bytes_per_op": 1 << 20, "loops": 4, "timer": "perf_counter", "median_s": 1e-4, "p10_s": 9e-5, "p90_s": 1.1e-4,
    "mean_s": 1e-4, "stdev_s": 1e-6, "min_s": 9e-5, "max_s": 1.2e-4, "gbps_median": 10.48, "gbps_p10": 9.5,
    "gbps_p90": 11.6, "peak_gbps": None, "peak_source": "DRAM peak unknown", "efficiency": None, "verified": True,
    "status": "ok", "reason": None, "warnings": [], "extra": {"primitive": "memcpy"},
}


def test_round_trip_keeps_every_sample(db_url):
    store = open_store(db_url)
    run_id = _begin(store)
    samples = [1e-4 + i * 1e-7 for i in range(9)]
    result_id = store.add_result(run_id, ROW, samples)
    store.finish_run(run_id, "complete")
    assert store.resolve_run("latest") == run_id
    run = store.run(run_id)
    assert run["status"] == "complete" and run["tags"] == {"purpose": "test"} and run["ended_at"] is not None
    (row,) = store.results(run_id)
    assert row["params"] == {"size": 1 << 20, "threads": 1}
    assert row["gbps_median"] == pytest.approx(10.48) and row["verified"] is True
    assert row["extra"]["primitive"] == "memcpy"
    assert store.samples(result_id) == pytest.approx(samples)


def test_reopening_is_idempotent_and_hosts_are_written_once(db_url):
    first = open_store(db_url)
    _begin(first)
    _begin(open_store(db_url))
    with first.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(schema.host)).scalar() == 1
        assert conn.execute(sa.select(sa.func.count()).select_from(schema.run)).scalar() == 2


def test_a_newer_schema_is_refused_clearly(db_url):
    store = open_store(db_url)
    with store.engine.begin() as conn:
        conn.execute(schema.meta.update().where(schema.meta.c.key == "schema_version").values(value="99"))
    with pytest.raises(BadInput, match="schema version 99"):
        open_store(db_url)


def test_missing_runs_are_bad_input(db_url):
    store = open_store(db_url)
    with pytest.raises(BadInput, match="no runs yet"):
        store.resolve_run("latest")
    with pytest.raises(BadInput, match="no runs yet"):
        store.resolve_run("42")
    _begin(store)
    with pytest.raises(BadInput, match="run 42 does not exist"):
        store.resolve_run("42")


def test_sqlite_uses_wal(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'x.sqlite'}")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_unreachable_database_is_one_clear_line():
    with pytest.raises(BadInput, match=r"cannot reach database 'postgresql\+psycopg://u:\*\*\*@127.0.0.1:1/x'"):
        open_store("postgresql+psycopg://u:secret@127.0.0.1:1/x")


def test_malformed_url_is_bad_input():
    with pytest.raises(BadInput, match="bad database URL"):
        open_store("not a url")


def _whole_run(store, host="h" * 64) -> int:
    run_id = _begin(store, host)
    store.finish_run(run_id, "complete")
    return run_id


def test_the_baseline_is_the_run_tagged_last_and_a_removed_tag_is_gone(db_url):
    store = open_store(db_url)
    first, _second, third = (_whole_run(store) for _ in range(3))
    store.set_tag(third, "baseline", "1")
    store.set_tag(first, "baseline", "1")  # named last, though older
    assert store.tagged_run("baseline") == first
    assert store.remove_tag(first, "baseline") and not store.remove_tag(first, "baseline")
    assert store.tagged_run("baseline") == third
    assert "baseline" not in store.run(first)["tags"]


def test_latest_and_baseline_prefer_this_host_s_runs(db_url):
    store = open_store(db_url)
    mine, other = "a" * 64, "b" * 64
    my_run = _whole_run(store, mine)
    store.set_tag(my_run, "baseline", "1")
    other_run = _whole_run(store, other)
    store.set_tag(other_run, "baseline", "1")
    assert store.resolve_run("latest") == other_run and store.resolve_run("latest", [mine]) == my_run
    assert store.tagged_run("baseline", [mine]) == my_run and store.tagged_run("baseline") == other_run
    assert store.resolve_run("latest", ["c" * 64]) == other_run  # a host with no runs: the newest of any


def test_every_stored_moment_comes_back_in_utc_with_its_time_zone(db_url):
    store = open_store(db_url)
    run = store.run(_whole_run(store))
    for moment in (run["started_at"], run["ended_at"], run["heartbeat_at"]):
        assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0


def test_a_case_s_history_is_its_fast_end_in_every_run_contended_or_not(db_url):
    # issue 37: on a box that is always busy, leaving contended runs out left every case on "±15 %
    # assumed" although its runs existed; the fast end (p90) is what a neighbour disturbs least
    store = open_store(db_url)
    busy = {"contention": {"contended": ["other processes used 66% of the CPUs (1.32 of 2)"]}}
    for rate, fast, extra in [(10.0, 11.0, {}), (4.0, 9.0, busy), (10.2, 11.2, {}), (3.5, None, busy),
                              (9.9, 10.9, {"contention": {"contended": []}})]:
        run_id = _begin(store)
        store.add_result(run_id, {**ROW, "gbps_median": rate, "gbps_p90": fast, "extra": extra}, [1e-4])
        store.finish_run(run_id, "complete")
    history = store.case_fast_ends(["h" * 64], "c" * 64, [ROW["case_hash"]], before_run=None)
    assert history == {ROW["case_hash"]: pytest.approx([11.0, 9.0, 11.2, 3.5, 10.9])}  # no p90 stored: the median
