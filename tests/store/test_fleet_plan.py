"""The fleet's query is answered through the index on (host, case, run): the database groups the
newest result of each host and case by walking the index and looks each one's columns up by primary
key, on SQLite and on PostgreSQL, so `fleet --outliers` never sorts or scans a fleet's whole result table by hand. Checked on
the statements `latest_ok_results` really sends (captured as they execute), by EXPLAIN."""

from __future__ import annotations

import re
import sqlite3

import sqlalchemy as sa

from kvbench.store import open_store

INDEX = "ix_result_host_case_run"


def _fill(store, hosts: int = 6, runs: int = 3, cases: int = 4) -> None:
    for h in range(hosts):
        store.ensure_host(f"h{h}", f"node{h}", {"hostname": f"node{h}", "gpus": [], "cpu_model": "x", "sockets": 1})
    store.ensure_context("c", {})
    for r in range(runs):
        for h in range(hosts):
            run_id = store.begin_run(host_id=f"h{h}", context_id="c", suite=None, suite_hash=None,
                                     kvbench_version="t", git_sha=None, git_dirty=None, tags={}, system_state={})
            store.add_results(run_id, [({"bench": "dram.copy", "params": {"case": c}, "case_hash": f"case{c}",
                                         "gbps_median": 10.0 + r, "verified": True, "status": "ok", "warnings": [],
                                         "extra": {}}, [1e-3] * 5) for c in range(cases)])
            store.finish_run(run_id, "complete")


def _fleet_statement(store) -> tuple[str, object]:
    """The SELECT that picks each host's and case's newest ok result, as latest_ok_results sent it."""
    sent: list[tuple[str, object]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        sent.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", capture)
    try:
        rows = store.latest_ok_results()
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", capture)
    assert len(rows) == 6 * 4 and {r["gbps_median"] for r in rows} == {12.0}  # the newest run's, per host and case
    (query,) = [(s, p) for s, p in sent if "max(" in s.lower() and "group by" in s.lower()]
    return query


def test_the_newest_result_of_each_host_and_case_is_found_through_the_index(db_url):
    store = open_store(db_url)
    _fill(store)
    statement, parameters = _fleet_statement(store)
    with store.engine.connect() as conn:
        if store.engine.dialect.name == "sqlite":
            plan = [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)]
            # the grouping walks the index in order (no temporary B-tree to sort), the join-back seeks it
            assert any(f"SCAN result USING INDEX {INDEX}" in p or f"USING COVERING INDEX {INDEX}" in p
                       for p in plan), plan
            assert any(f"SEARCH result USING INDEX {INDEX} (host_id=? AND case_hash=? AND run_id=?" in p
                       for p in plan), plan
            assert not any("TEMP B-TREE" in p for p in plan), plan
            assert not any(p.strip() == "SCAN result" for p in plan), plan
        else:
            # a small table is cheaper to scan, so PostgreSQL's planner is asked whether indexes can serve
            # the query at all: with sequential scans priced out, the grouping walks the (host, case, run)
            # index in its order (no sort) and the join-back seeks an index too
            conn.exec_driver_sql("ANALYZE result")
            conn.exec_driver_sql("SET enable_seqscan = off")
            plan = "\n".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {statement}", parameters))
            assert f"Index Scan using {INDEX}" in plan or f"Index Only Scan using {INDEX}" in plan, plan
            assert "Seq Scan on result" not in plan and "Sort" not in plan, plan
    store.dispose()


def _spread_statement(store) -> tuple[str, object]:
    """The one SELECT `fleet` sends for the newest rate of each host and case (store/fleet_spread.py)."""
    from kvbench.analyze.fleet import fleet_in_database

    sent: list[tuple[str, object]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        sent.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", capture)
    try:
        rows = fleet_in_database(store)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", capture)
    assert len(rows) == 6 * 4 and {r.gbps for r in rows} == {12.0}
    (query,) = [(s, p) for s, p in sent if "newest" in s.lower()]  # the newest rate of each host and case
    return query


def test_the_fleet_arithmetic_in_sql_reads_the_newest_results_through_the_index(db_url):
    store = open_store(db_url)
    _fill(store)
    statement, parameters = _spread_statement(store)
    with store.engine.connect() as conn:
        if store.engine.dialect.name == "sqlite":
            rows = list(conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters))
            plan = [row[-1] for row in rows]
            (newest,) = [row[0] for row in rows if row[-1] in ("MATERIALIZE newest", "CO-ROUTINE newest")]
            under_newest = [row[-1] for row in rows if row[1] == newest]
            # the newest run of each host and case: the index walked in its order, nothing sorted
            assert f"SCAN result USING COVERING INDEX {INDEX}" in under_newest, plan
            assert not any("TEMP B-TREE" in p for p in under_newest), plan
            # the newest run's rows sought in the index (covering: it holds the status too)
            assert any(f"USING COVERING INDEX {INDEX} (host_id=? AND case_hash=? AND run_id=?" in p
                       for p in plan), plan
            # and its columns by primary key, the newest row's id sought once (`last` materialised)
            assert any(re.fullmatch(r"SEARCH \w+ USING INTEGER PRIMARY KEY \(rowid=\?\)", p) for p in plan), plan
            if sqlite3.sqlite_version_info >= (3, 35):
                assert "MATERIALIZE last" in plan, plan
            assert not any(p.strip() == "SCAN result" for p in plan), plan
            assert not any("SCAN skus" in p for p in plan), plan  # a SKU is looked up, never scanned per result
        else:
            conn.exec_driver_sql("ANALYZE result")
            conn.exec_driver_sql("SET enable_seqscan = off")
            plan = "\n".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {statement}", parameters))
            assert f"Index Scan using {INDEX}" in plan or f"Index Only Scan using {INDEX}" in plan, plan
            assert "Seq Scan on result" not in plan, plan
            # only the few newest rows are sorted (by case and SKU, for the medians): never the result
            # table by host and case
            assert "Sort Key: result.host_id" not in plan and "Sort Key: result_1.host_id" not in plan, plan
            assert "Sort Key: result_2.host_id" not in plan, plan
    store.dispose()


def test_a_database_with_the_older_three_column_index_gets_the_covering_one_when_opened_writable(db_url):
    store = open_store(db_url)
    _fill(store, hosts=2, runs=2, cases=2)
    with store.engine.begin() as conn:  # as a kvbench before the index held the status made it
        conn.exec_driver_sql(f"DROP INDEX {INDEX}")
        conn.exec_driver_sql(f"CREATE INDEX {INDEX} ON result (host_id, case_hash, run_id)")
    store.dispose()
    reader = open_store(db_url, read_only=True)  # read-only: the old index serves, the answer is the same
    assert len(reader.latest_ok_results()) == 2 * 2
    reader.dispose()
    store = open_store(db_url)
    with store.engine.connect() as conn:
        (columns,) = [ix["column_names"] for ix in sa.inspect(conn).get_indexes("result") if ix["name"] == INDEX]
    assert columns == ["host_id", "case_hash", "run_id", "status"]
    assert len(store.latest_ok_results()) == 2 * 2
    store.dispose()
