"""Runs of one synthetic dram.copy case stored straight into a database: what the comparison tests
(tests/test_compare_busy_box.py, tests/analyze/test_pooled.py) judge. The rates are the test's, never a
measurement; only these tests' temporary databases hold them."""

from kvbench.store import open_store

FACTS = {"hostname": "box", "cpu_model": "x", "sockets": 1, "cores": 2, "kernel": "6.1", "gpus": []}


def store_one_case_runs(db: str, host: str, context: str, case: str, suite: str,
                        runs: list[tuple[float, dict, dict]]) -> list[int]:
    """One complete run per (median GB/s, tags, result extra) of one 1 MiB dram.copy case, its samples
    within ±0.2 % of the median; the runs' ids."""
    store = open_store(db)
    store.ensure_host(host, "box", FACTS)
    store.ensure_context(context, {"numpy": "2"})
    ids = []
    for gbps, tags, extra in runs:
        run = store.begin_run(host_id=host, context_id=context, suite=suite, suite_hash="abc", kvbench_version="0.1",
                              git_sha=None, git_dirty=None, tags=tags, system_state={})
        seconds = (1 << 20) / gbps / 1e9
        row = {"bench": "dram.copy", "params": {"size": 1 << 20, "threads": 1}, "case_hash": case,
               "bytes_per_op": 1 << 20, "median_s": seconds, "gbps_median": gbps, "gbps_p10": gbps * 0.998,
               "gbps_p90": gbps * 1.002, "verified": True, "status": "ok", "warnings": [], "extra": extra}
        store.add_result(run, row, [seconds] * 5)
        store.finish_run(run, "complete")
        ids.append(run)
    store.dispose()
    return ids
