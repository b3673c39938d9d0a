"""A fleet in one database (SQLite and a real PostgreSQL): the slow server stands out."""

from kvbench.analyze.fleet import fleet, sku_of
from kvbench.store import open_store


def h200_box(name):
    return {"hostname": name, "cpu_model": "Xeon", "sockets": 2,
            "gpus": [{"name": "NVIDIA H200", "index": i} for i in range(8)]}


def write_host(store, host_id, facts, gbps):
    store.ensure_host(host_id, facts["hostname"], facts)
    store.ensure_context("c" * 64, {})
    run_id = store.begin_run(host_id=host_id, context_id="c" * 64, suite="acceptance", suite_hash=None,
                             kvbench_version="0.1", git_sha=None, git_dirty=None, tags={}, system_state={})
    row = {"bench": "pcie.h2d", "params": {"size": 1 << 28, "gpu": 3}, "case_hash": "case0000pcieh2d3",
           "bytes_per_op": 1 << 28, "median_s": (1 << 28) / gbps / 1e9, "gbps_median": gbps, "gbps_p10": gbps,
           "gbps_p90": gbps, "verified": True, "status": "ok", "warnings": [], "extra": {}}
    store.add_result(run_id, row, [row["median_s"]] * 5)
    store.finish_run(run_id, "complete")


def test_the_gpu_trained_at_x8_stands_out(db_url):
    store = open_store(db_url)
    rates = [54.1, 53.8, 54.4, 53.9, 54.2, 26.9]  # the last host's GPU 3 runs at half the lanes
    for i, rate in enumerate(rates):
        write_host(store, f"{i:064d}", h200_box(f"gpu-{i:02d}"), rate)
    write_host(store, "f" * 64, {"hostname": "cpu-box", "cpu_model": "EPYC", "sockets": 1, "gpus": []}, 10.0)
    rows = fleet(store.latest_ok_results(), store.hosts())
    flagged = [r.hostname for r in rows if r.outlier]
    assert flagged == ["gpu-05"]
    slow = next(r for r in rows if r.hostname == "gpu-05")
    assert slow.sku == "8x NVIDIA H200" and slow.deviation < -0.4
    assert next(r for r in rows if r.hostname == "cpu-box").sku_median == 10.0  # its own SKU, not flagged


def test_latest_result_per_host_wins(db_url):
    store = open_store(db_url)
    for rate in (20.0, 40.0):
        write_host(store, "a" * 64, h200_box("gpu-a"), rate)
    (row,) = fleet(store.latest_ok_results(), store.hosts())
    assert row.gbps == 40.0 and not row.outlier


def test_sku_names():
    assert sku_of(h200_box("x")) == "8x NVIDIA H200"
    assert sku_of({"cpu_model": "EPYC", "sockets": 2}) == "2x EPYC"


def test_rows_come_sorted_by_benchmark_case_sku_and_host():
    hosts = {f"h{i}": {"hostname": f"node{9 - i}", "facts": {"gpus": []}} for i in range(4)}
    rows = [{"bench": bench, "params": {"size": size}, "case_hash": f"{bench}{size}", "host_id": f"h{i}",
             "run_id": 1, "gbps_median": 10.0, "status": "ok"}
            for bench in ("pcie.h2d", "dram.copy") for size in (2, 1) for i in range(4)]
    found = fleet(rows, hosts)
    keys = [(r.bench, r.params["size"], r.hostname) for r in found]
    assert keys == sorted(keys)


def test_an_unknown_rate_among_them_flags_no_one_and_nothing_is_not_a_fleet():
    from kvbench.analyze.spread import robust_spread

    for rates in ([10.0, 10.0, 10.0, float("nan"), 1.0], [10.0, None, 10.0, 1.0]):
        spread = robust_spread(rates)
        assert spread.median != spread.median and not any(spread.outliers)  # NaN: no level to stand out from
    empty = robust_spread([])
    assert empty.rates == () and empty.outliers == () and empty.median != empty.median
    assert robust_spread([10.0, 10.0, 10.0, 1.0]).outliers == (False, False, False, True)
