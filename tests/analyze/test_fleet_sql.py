"""`fleet` answered by the database (store/fleet_spread.py) gives the rows the Python rule gives
(analyze/fleet.py `fleet` over every host's newest result): the same hosts, SKUs, medians, deviations
and flags, on a small synthetic fleet with odd and even groups, ties, a MAD of 0, a repeated case, a
failed newest result, a host with no row and a group too small to judge — on SQLite and PostgreSQL."""

from __future__ import annotations

import random

import pytest
import sqlalchemy as sa

from kvbench.analyze.fleet import fleet, fleet_in_database, sku_of
from kvbench.store import open_store

GPU_BOX = {"cpu_model": "Xeon", "sockets": 2, "gpus": [{"name": "NVIDIA H200"}] * 8}
CPU_BOX = {"cpu_model": "EPYC", "sockets": 2, "gpus": []}


def _result(case: str, gbps: float, status: str = "ok") -> tuple[dict, list[float]]:
    return ({"bench": "dram.copy" if case < "m" else "pcie.h2d", "params": {"case": case}, "case_hash": case,
             "gbps_median": gbps, "verified": status == "ok", "status": status, "warnings": [], "extra": {}}, [1e-3])


def _fill(store) -> None:
    rng = random.Random(7)
    store.ensure_context("c", {})
    hosts = ([(f"g{i}", GPU_BOX) for i in range(7)] + [(f"c{i}", CPU_BOX) for i in range(4)]
             + [("lone", {}), ("m0", {})])
    for host_id, facts in hosts:
        store.ensure_host(host_id, f"node-{host_id}", {"hostname": f"node-{host_id}", **facts})
    for r in range(3):
        for n, (host_id, _facts) in enumerate(hosts):
            run_id = store.begin_run(host_id=host_id, context_id="c", suite=None, suite_hash=None,
                                     kvbench_version="t", git_sha=None, git_dirty=None, tags={}, system_state={})
            items = [_result("a", round(rng.uniform(9.5, 10.5), 3) if n != 2 else 5.0),  # g2 slow
                     _result("b", 20.0),  # everyone agrees: MAD 0, nobody flagged
                     _result("c", 30.0 if n != 5 else 40.0),  # all agree but one: MAD 0, it is flagged
                     _result("n", rng.choice([50.0, 51.0, 52.0]))]  # ties
            if host_id == "g1":
                items.append(_result("a", 10.0 + r))  # a case repeated in one run: its last result counts
            if host_id == "g3" and r == 2:
                items = [_result("a", 1.0, status="failed")]  # the newest failed: the one before stands
            store.add_results(run_id, items)
            store.finish_run(run_id, "complete")
    with store.engine.begin() as conn:  # results stored under an id that has no host row (merged away meanwhile)
        conn.execute(sa.text("UPDATE result SET host_id = 'merged-away-host-id-0123456789' WHERE host_id = 'm0'"))


def _key(row) -> tuple:
    return (row.bench, row.case, row.host_id)


def _same(sql_rows, python_rows) -> None:
    assert [_key(r) for r in sql_rows] == [_key(r) for r in python_rows]
    for s, p in zip(sql_rows, python_rows, strict=True):
        assert (s.params, s.hostname, s.sku, s.outlier) == (p.params, p.hostname, p.sku, p.outlier), (s, p)
        assert (s.gbps, s.sku_median, s.deviation) == pytest.approx((p.gbps, p.sku_median, p.deviation),
                                                                    rel=1e-12, abs=1e-12), (s, p)


def test_the_database_answers_as_the_python_rule_does(db_url):
    store = open_store(db_url)
    _fill(store)
    python_rows = fleet(store.latest_ok_results(), store.hosts())
    sql_rows = fleet_in_database(store)
    _same(sql_rows, python_rows)
    flagged = {(r.case, r.host_id) for r in python_rows if r.outlier}
    assert ("a", "g2") in flagged and ("c", "g5") in flagged and not any(case == "b" for case, _ in flagged)
    assert {r.sku for r in sql_rows} == {sku_of(GPU_BOX), sku_of(CPU_BOX), sku_of({})}
    assert any(r.hostname.endswith("(unknown host)") for r in sql_rows)
    # --outliers: only the flagged rows come back, the same ones
    _same(fleet_in_database(store, outliers_only=True), [r for r in python_rows if r.outlier])
    # --bench: the database filters as the Python path's query does
    _same(fleet_in_database(store, ["pcie.h2d"]), fleet(store.latest_ok_results(["pcie.h2d"]), store.hosts()))
    for k, floor in ((1.0, 0.0), (5.0, 0.2)):
        _same(fleet_in_database(store, k=k, floor=floor),
              fleet(store.latest_ok_results(), store.hosts(), k=k, floor=floor))
    assert store.has_ok_results() and not store.has_ok_results(["hbm.read"])
    store.dispose()


def test_an_empty_database_has_no_fleet(db_url):
    store = open_store(db_url)
    assert fleet_in_database(store) == [] and not store.has_ok_results()
    store.dispose()
