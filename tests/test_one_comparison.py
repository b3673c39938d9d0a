"""`compare`, `report --baseline` and `history` judge one pair of stored runs by one code path and
give one verdict (issue 24: `compare 5 8` weighed four earlier runs while `report --baseline` for the
same pair assumed ±15 %)."""

import json
import os

from kvbench.analyze.regress.compare import compare_runs
from kvbench.analyze.regress.history import run_verdicts
from kvbench.store import open_store
from kvbench.store.records import ResultRecord
from tests.inproc import run_in_process as cli

HOST, CTX, CASE = "test-box-i24v", "c" * 64, "0123456789abcdef"
QUIET = [10.0, 10.03, 9.98, 10.02, 9.99]  # five earlier runs within ±0.3 %
DROP = 9.2  # -8 %: beyond the floor and far beyond this case's between-run noise


def _store_runs(db: str, medians: list[float]) -> None:
    store = open_store(db)
    store.ensure_host(HOST, "box", {"hostname": "box", "cpu_model": "x", "sockets": 1, "gpus": []})
    store.ensure_context(CTX, {"numpy": "2"})
    for gbps in medians:
        run = store.begin_run(host_id=HOST, context_id=CTX, suite="quick", suite_hash="abc", kvbench_version="0.1",
                              git_sha=None, git_dirty=None, tags={}, system_state={})
        seconds = (1 << 20) / gbps / 1e9
        row = {"bench": "dram.copy", "params": {"size": 1 << 20, "threads": 1}, "case_hash": CASE,
               "bytes_per_op": 1 << 20, "median_s": seconds, "gbps_median": gbps, "gbps_p10": gbps * 0.998,
               "gbps_p90": gbps * 1.002, "verified": True, "status": "ok", "warnings": [], "extra": {}}
        store.add_result(run, row, [seconds] * 5)
        store.finish_run(run, "complete")
    store.dispose()


def test_compare_report_and_history_give_one_verdict_for_one_pair(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, [*QUIET, DROP])
    env = {**os.environ, "KVBENCH_HOST_ID": HOST}
    proc = cli("compare", "5", "6", "--db", db, "--format", "json", env=env)
    (c,) = json.loads(proc.stdout)["comparisons"]
    assert proc.returncode == 1 and c["verdict"] == "slower" and c["history_runs"] == 5, c["note"]

    md = tmp_path / "r.md"
    proc = cli("report", "6", "--baseline", "5", "--format", "markdown", "-o", str(md), "--db", db, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "vs baseline run 5: 1 slower" in md.read_text()

    proc = cli("history", "dram.copy", "--db", db, "--json", "-", env=env)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)["cases"][0]["runs"]
    assert runs[-1]["verdict"] == "slower" and runs[0]["verdict"] is None
    assert [r["verdict"] for r in runs[1:-1]] == ["same"] * 4  # identical runs pass, as compare says

    # the same function, called directly, agrees with all three
    store = open_store(db, read_only=True)
    rows = store.host_results([HOST], "dram.copy")
    judged = run_verdicts(rows)
    base, new = (ResultRecord.from_row(r).to_json() for r in rows[-2:])
    direct = compare_runs({"run": {"id": 5, "host_id": HOST, "context_id": CTX}, "results": [base]},
                          {"run": {"id": 6, "host_id": HOST, "context_id": CTX}, "results": [new]},
                          history={CASE: QUIET})
    assert judged[-1].verdict == direct[0].verdict == "slower"
    assert judged[-1].allowance_ln == direct[0].allowance_ln == c["allowance_ln"]


def test_the_ci_recipe_builds_its_baseline_from_the_suite_it_compares():
    # issue 24: docs/github-actions.md made the baseline with the default (quick) suite and then
    # compared the acceptance suite: 11 cases `missing`, CI red on every run
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "github-actions.md").read_text()
    job_suites = set(re.findall(r"kvbench run --suite (\S+) --tag ci=", text))
    baseline_runs = re.findall(r"kvbench run[^\n`]*--tag baseline=1", text)
    assert job_suites == {"acceptance"} and baseline_runs
    for line in baseline_runs:
        assert re.search(r"--suite (\S+)", line) and re.search(r"--suite (\S+)", line).group(1) in job_suites, line
